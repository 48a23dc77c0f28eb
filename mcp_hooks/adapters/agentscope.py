# mypy: allow-subclassing-any
"""mcp-hooks as AgentScope 1.0.x hooks (``pip install mcp-hooks[agentscope]``).

::

    from mcp_hooks.adapters.agentscope import AgentScopeHooks   # first: see below
    # isort: split
    from agentscope.agent import ReActAgent

    hooks = AgentScopeHooks(project_dir=".", trust_project_hooks=True)  # your own project
    hooks.install(agent)                 # this agent (instance hooks), or
    hooks.install_class(ReActAgent)      # every agent of the class (class hooks)
    ...
    await hooks.aclose()                 # stops the hook processes it started (or close())

Import this module before anything of AgentScope: AgentScope 1.0.x imports mcp 1.x's
``streamablehttp_client`` as it is imported, which mcp 2 (mcp-hooks' own) renamed, so
``import agentscope`` on its own fails; this module puts a stand-in in place first. No code of
ours runs before an ``import agentscope`` that comes first, so the order is the caller's; import
sorting (isort, ruff's ``I`` rules) puts ``agentscope`` first unless an ``# isort: split`` line
follows this module's import, as above.

AgentScope 1.0.x runs ``pre_*``/``post_*`` functions around ``reply``, ``_reasoning`` and
``_acting``: a pre hook may return new keyword arguments, a post hook a new output; instance
hooks run before class hooks, each in registration order (2.0 replaced them by middleware:
``agentscope_middleware.py``). What fires where:

==================  ==========================================================================
event               AgentScope hook, and what the outcome does
==================  ==========================================================================
``before_agent``    ``pre_reply``: a deny raises ``PermissionError`` with the reason (a pre
                    hook cannot skip ``reply``; raising is AgentScope's own way to refuse)
``before_tool``     ``pre_acting``: ``modified_input`` replaces the call's ``input``; a deny
                    marks the call, and the toolkit middleware answers it with the reason
                    instead of running the tool (the model reads it as the tool result)
``after_tool``      the toolkit middleware (``Toolkit.register_middleware``), on the tool's
                    last response: ``modified_output`` replaces its text, a deny replaces it by
                    the reason; hook context is appended
``before_stop``     ``post_reply`` (the ReAct loop ended with a text answer): a deny hands the
                    reason to the same agent as a user message and replies again, until a stop
                    passes or the engine's loop guard (``stop_block_cap``) lets it through
==================  ==========================================================================

A pre hook cannot skip ``_acting``, and a post hook on ``_acting`` never sees the tool's
result, so the tool side goes through the toolkit's middleware, which ``pre_acting`` adds to
the acting agent's toolkit on first use (once per toolkit). Install either per instance or
per class, not both, or every event fires twice. The engine use is ``_firing.Firing``,
through a ``mcp_hooks.Hooks`` (pass ``hooks=`` to share one, Python callables and all);
``close()``/``aclose()`` stop the hook processes of one it made (never of one given).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

from mcp_hooks.adapters import requires_framework


def _let_agentscope_import() -> None:
    """AgentScope 1.0.x imports mcp 1.x's ``streamablehttp_client`` when it is imported;
    mcp-hooks needs mcp 2.x, which renamed it. A stand-in lets ``import agentscope`` work and
    says, if AgentScope's own HTTP MCP client is ever called, why it cannot run here."""
    try:
        # here for the ImportError (AgentScope imports the MCP SDK anyway).
        # lazy: the MCP SDK, 900 ms of cold fire (python -X importtime)
        import mcp.client.streamable_http as streamable_http
    except ImportError:  # no mcp at all: AgentScope's own import error says what is missing
        return
    if hasattr(streamable_http, "streamablehttp_client"):
        return

    def streamablehttp_client(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "AgentScope 1.0.x's HTTP MCP client needs mcp 1.x, and mcp-hooks needs mcp 2.x: "
            "use AgentScope 2.0.11 or later (mcp-hooks[agentscope2]) for MCP over HTTP")

    streamable_http.streamablehttp_client = streamablehttp_client  # type: ignore[attr-defined]


_let_agentscope_import()

with requires_framework(__name__):
    from agentscope.agent import AgentBase, ReActAgentBase  # type: ignore[import-not-found, unused-ignore]
    from agentscope.message import Msg, TextBlock  # type: ignore[import-not-found, unused-ignore]
    from agentscope.tool import Toolkit, ToolResponse  # type: ignore[import-not-found, unused-ignore]

from mcp_hooks.adapters._firing import (  # noqa: E402
    Firing,
    refusal,
    stop_feedback,
    tool_input,
    with_context,
)
from mcp_hooks.api import Hooks  # noqa: E402
from mcp_hooks.engine.stopguard import DEFAULT_STOP_BLOCK_CAP  # noqa: E402
from mcp_hooks.spec.outcome import OnFault  # noqa: E402
from mcp_hooks.state.eventlog import EventLog  # noqa: E402

HOOK_NAME = "mcp_hooks"
_DENY = "_mcp_hooks_deny"  # keys the pre_acting hook adds to a tool call for the middleware
_BEFORE = "_mcp_hooks_before"
_CONTINUING = "_mcp_hooks_continuing"  # set on an agent while a stop gate makes it reply again
_MIDDLEWARE = "_mcp_hooks_middleware"  # set on a toolkit that has ours


class AgentScopeHooks:
    """HOOK.md hooks as AgentScope 1.0.x agent hooks. Arguments as ``_firing.Firing``."""

    def __init__(
        self,
        project_dir: str | Path | None = None,
        *,
        user_dir: str | Path | None = None,
        log: str | Path | EventLog | bool | None = None,
        on_fault: OnFault = "block",
        stop_block_cap: int = DEFAULT_STOP_BLOCK_CAP,
        session_id: str | None = None,
        hooks: Hooks | None = None,
        trust_project_hooks: bool | None = None,
    ) -> None:
        self.firing = Firing(project_dir, user_dir=user_dir, log=log, on_fault=on_fault,
                             stop_block_cap=stop_block_cap, session_id=session_id,
                             hooks=hooks, framework="agentscope",
                             trust_project_hooks=trust_project_hooks)

    async def aclose(self) -> None:
        """Stop the hook processes of the ``Hooks`` this adapter made (not of one given)."""
        await self.firing.aclose()

    def close(self) -> None:
        """``aclose`` from synchronous code."""
        self.firing.close()

    def _hooks(self) -> list[tuple[str, Callable[..., Any]]]:
        return [("pre_reply", self.pre_reply), ("post_reply", self.post_reply),
                ("pre_acting", self.pre_acting)]

    def install(self, agent: ReActAgentBase) -> ReActAgentBase:
        """Register the hooks on this agent only (``register_instance_hook``)."""
        for hook_type, fn in self._hooks():
            agent.register_instance_hook(hook_type, HOOK_NAME, fn)
        if isinstance(getattr(agent, "toolkit", None), Toolkit):
            self.install_toolkit(agent.toolkit)
        return agent

    def install_class(self, cls: type[ReActAgentBase] = ReActAgentBase) -> None:
        """Register the hooks on every agent of ``cls`` (``register_class_hook``).

        AgentScope 1.0.x keeps class hooks in one dict on ``ReActAgentBase``, so they reach
        every ReAct agent whatever the class they were registered through.
        """
        for hook_type, fn in self._hooks():
            cls.register_class_hook(hook_type, HOOK_NAME, fn)

    def uninstall(self, agent: AgentBase | None = None,
                  cls: type[ReActAgentBase] = ReActAgentBase) -> None:
        """Remove what ``install(agent)`` (or, without an agent, ``install_class``) added;
        the toolkit middleware stays and passes every call through unhooked."""
        for hook_type, _ in self._hooks():
            if agent is not None:
                agent.remove_instance_hook(hook_type, HOOK_NAME)
            else:
                cls.remove_class_hook(hook_type, HOOK_NAME)

    def install_toolkit(self, toolkit: Toolkit) -> None:
        """Add the middleware that answers refused calls and judges tool output (once)."""
        if getattr(toolkit, _MIDDLEWARE, False):
            return
        if not hasattr(toolkit, "register_middleware"):
            raise RuntimeError("mcp-hooks' AgentScope adapter needs Toolkit.register_middleware"
                               " (AgentScope 1.0.21 or later): pip install 'agentscope>=1.0.21,<2'")
        toolkit.register_middleware(self.tool_middleware)
        setattr(toolkit, _MIDDLEWARE, True)

    # -- the hooks ---------------------------------------------------------------------------

    async def pre_reply(self, agent: AgentBase, kwargs: dict[str, Any]) -> None:
        if getattr(agent, _CONTINUING, False):
            return None
        outcome = await self.firing.fire("before_agent", payload={
            "prompt": _text(kwargs.get("msg")), "agent_name": getattr(agent, "name", None)})
        if outcome.denied:
            raise PermissionError(refusal(outcome, "input"))
        return None

    async def pre_acting(self, agent: AgentBase, kwargs: dict[str, Any]) -> dict[str, Any]:
        toolkit = getattr(agent, "toolkit", None)
        if isinstance(toolkit, Toolkit):
            self.install_toolkit(toolkit)
        call = kwargs["tool_call"]
        outcome = await self.firing.fire(
            "before_tool", tool_name=call.get("name"), tool_input=tool_input(call.get("input")),
            tool_use_id=call.get("id"))
        if outcome.denied:
            call[_DENY] = refusal(outcome)
        elif outcome.modified_input is not None:
            call["input"] = outcome.modified_input
        call[_BEFORE] = list(outcome.additional_context)
        return kwargs

    async def post_reply(self, agent: AgentBase, kwargs: dict[str, Any], output: Any) -> Any:
        if getattr(agent, _CONTINUING, False):
            return None
        reply = output
        while True:  # until a stop passes: the engine's loop guard lets one through at its cap
            outcome = await self.firing.fire("before_stop", payload={
                "stop_reason": "end_turn", "final_message": _text(reply)})
            if not outcome.continue_working:
                break
            setattr(agent, _CONTINUING, True)
            try:
                reply = await agent.reply(Msg("user", stop_feedback(outcome), "user"))
            finally:
                setattr(agent, _CONTINUING, False)
        return None if reply is output else reply

    async def tool_middleware(
        self, kwargs: dict[str, Any], next_handler: Callable[..., Any],
    ) -> AsyncGenerator[ToolResponse, None]:
        call = dict(kwargs["tool_call"])
        denied, before = call.pop(_DENY, None), call.pop(_BEFORE, None)
        if denied is not None:
            yield ToolResponse(content=[TextBlock(type="text", text=denied)])
            return
        last: ToolResponse | None = None
        async for chunk in await next_handler(**{**kwargs, "tool_call": call}):
            if last is not None:
                yield last
            last = chunk
        if last is None:
            return
        if before is None:  # a call our pre_acting did not see (hooks uninstalled)
            yield last
            return
        yield await self._judged(call, last, before)

    async def _judged(self, call: dict[str, Any], last: ToolResponse,
                      before: list[str]) -> ToolResponse:
        output = _text(last.content)
        after = await self.firing.fire(
            "after_tool", tool_name=call.get("name"), tool_input=tool_input(call.get("input")),
            tool_use_id=call.get("id"), tool_output=output)
        if after.denied:
            text = refusal(after, "tool output")
        elif after.modified_output is not None:
            new = after.modified_output
            text = with_context(new if isinstance(new, str) else _text(new), after)
        elif after.additional_context or before:
            text = with_context(output, after)
        else:
            return last
        if before and not after.denied:
            text = "\n\n".join([text, *before])
        last.content = [TextBlock(type="text", text=text)]
        return last


def _text(value: Any) -> str:
    """The text of a ``Msg``, a list of content blocks, or anything else."""
    if value is None:
        return ""
    if isinstance(value, Msg):
        return value.get_text_content() or ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (_text(v) for v in value) if t)
    if isinstance(value, dict):
        if value.get("type") == "text":
            return str(value.get("text", ""))
        return str(value.get("text") or value.get("output") or "")
    return str(value)

