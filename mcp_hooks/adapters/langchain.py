# mypy: allow-subclassing-any, allow-untyped-decorators
"""mcp-hooks as LangChain 1.x agent middleware (``pip install mcp-hooks[langchain]``).

::

    from langchain.agents import create_agent
    from mcp_hooks.adapters.langchain import HooksMiddleware

    # your project's ./.agents/hooks run without `mcp-hooks trust` (trust_project_hooks=True;
    # leave it out and they run once trusted); user hooks always run
    middleware = HooksMiddleware(project_dir=".", trust_project_hooks=True)
    agent = create_agent(model, tools, middleware=[middleware])
    agent.invoke({"messages": [{"role": "user", "content": "..."}]})

    hooks = Hooks(".")                      # or share a mcp_hooks.Hooks, callables and all
    agent = create_agent(model, tools, middleware=[HooksMiddleware(hooks=hooks)])

What fires where (``invoke``/``stream`` and ``ainvoke``/``astream`` alike):

==================  ==========================================================================
event               LangChain hook, and what the outcome does
==================  ==========================================================================
``before_model``    ``wrap_model_call``, before the model: the hooks see ``messages`` in the
                    OpenAI chat format (the system message first); ``modified_input``
                    ``{"messages": [...]}`` replaces them; a deny answers for the model with
                    an ``AIMessage`` carrying the reason (the model is not called)
``after_model``     ``wrap_model_call``, after it: ``response`` is the model's messages in
                    that format; ``modified_output`` (a text, a message or a list of them)
                    replaces them; a deny replaces them by an ``AIMessage`` with the reason
``before_tool``     ``wrap_tool_call``, before the tool: a deny returns an error
                    ``ToolMessage`` carrying the reason instead of running the tool (the model
                    reads it next); ``modified_input`` replaces the call's ``args``
``after_tool``      ``wrap_tool_call``, after the tool (a ``ToolMessage`` result only):
                    ``modified_output`` replaces its content; a deny replaces it by the reason
                    (status ``error``); hook context is appended to it
``before_stop``     ``after_agent`` (the model answered without a tool call): a deny appends
                    the reason as a user message and jumps back to the model; the engine's
                    loop guard (``stop_block_cap``) lets the stop through at its cap
==================  ==========================================================================

Events go through a ``mcp_hooks.Hooks`` (``api.py``): ``fire`` from a sync graph, ``afire``
from an async one; an event no hook wants costs its fast path, and Python callables
registered on the ``Hooks`` run in the same chain. A fault of ours (an event that cannot be
built, the engine failing) is a deny saying what broke, as everywhere in mcp-hooks
(``on_fault``).
The session id is the LangGraph thread id (``config["configurable"]["thread_id"]``) when there
is one, else one id per middleware instance.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp_hooks.adapters import requires_framework
from mcp_hooks.adapters._firing import Firing, framework_asks_for_tools, stop_feedback
from mcp_hooks.api import Hooks
from mcp_hooks.engine.stopguard import DEFAULT_STOP_BLOCK_CAP
from mcp_hooks.spec.asking import AskRequest
from mcp_hooks.spec.outcome import OnFault, Outcome
from mcp_hooks.state.eventlog import EventLog

# the framework is an optional extra: mypy may run where it is not installed
with requires_framework(__name__):
    from langchain.agents.middleware import (  # type: ignore[import-not-found, unused-ignore]
        AgentMiddleware,
        hook_config,
    )
    from langchain.agents.middleware.types import (  # type: ignore[import-not-found, unused-ignore]
        ModelResponse,
    )
    from langchain_core.messages import (  # type: ignore[import-not-found, unused-ignore]
        AIMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        convert_to_messages,
        convert_to_openai_messages,
    )
    from langgraph.types import interrupt  # type: ignore[import-not-found, unused-ignore]


class HooksMiddleware(AgentMiddleware):  # type: ignore[type-arg, unused-ignore]
    """Fires mcp-hooks events from a ``create_agent`` loop.

    Args:
        project_dir: the project whose ``.agents/hooks`` run (and the hooks' cwd); None for
            user hooks only, run in the current folder.
        user_dir: the user hooks folder; None for the default (``~/.config/agents/hooks``).
        log: the event log, as ``Hooks`` takes it (a path, an ``EventLog``, True for the
            default one); None for no log.
        on_fault: ``block`` (default) or ``warn``, as ``Hooks``.
        stop_block_cap: consecutive ``before_stop`` blocks before the stop is let through.
        session_id: the session the hooks see; default the thread id, else a fresh id.
        hooks: a ``mcp_hooks.Hooks`` to fire through instead of one made from the above
            (then ``close`` leaves it open).
        trust_project_hooks: run ``project_dir``'s hooks without ``mcp-hooks trust`` (your
            own project: the code building this lives there too); None reads
            ``MCP_HOOKS_TRUST_PROJECT_HOOKS``. A hook held back for want of trust, or one that
            failed, is logged (once per session) through the framework's logger.
        approve: how a hook's ask reaches a person (``Hooks(approve=...)``, docs/ask.md): a
            callback, sync or async, given the ``AskRequest``; an ask refused (or unanswered)
            is a deny the model reads as the tool's result.
        native_approval: a tool call's ask becomes LangGraph's human-in-the-loop
            ``interrupt`` instead (the agent needs a checkpointer): the run pauses with the
            ask (``mcp_hooks_ask``, ``tool``, ``arguments``, ``reason``, ``hook``) and is
            resumed with ``Command(resume=True | False | {"approve": bool, "reason": ...})``;
            the answer is stored on the ask (channel ``langchain``) and the call fires again:
            approved, exactly that call runs; refused, the model reads the reason. Not with
            ``approve=`` or ``hooks=``.
    """

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
        approve: Callable[[AskRequest], Any] | None = None,
        native_approval: bool = False,
    ) -> None:
        super().__init__()
        if native_approval and (approve is not None or hooks is not None):
            raise ValueError("native_approval is LangGraph's interrupt: give it without "
                             "approve= and hooks= (the middleware makes its Hooks for it)")
        self.firing = Firing(project_dir, user_dir=user_dir, log=log, on_fault=on_fault,
                             stop_block_cap=stop_block_cap, session_id=session_id,
                             hooks=hooks, framework="langchain",
                             trust_project_hooks=trust_project_hooks,
                             approve=framework_asks_for_tools if native_approval else approve)
        self.hooks, self.session_id = self.firing.hooks, self.firing.session_id
        self.native_approval = native_approval

    # -- the one place that talks to the engine (adapters/_firing.py) ----------------------

    def fire(self, event_type: str, **fields: Any) -> Outcome:
        """Fire one event; a fault of ours is ``fault_outcome`` (a deny that says what broke)."""
        return self.firing.fire_sync(event_type, **fields)

    async def afire(self, event_type: str, **fields: Any) -> Outcome:
        return await self.firing.fire(event_type, **fields)

    def close(self) -> None:
        """Stop the hook processes of the ``Hooks`` this middleware made (not of one given)."""
        self.firing.close()

    # -- the model ---------------------------------------------------------------------------

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        session = _session(request.runtime, self.session_id)
        before = self.fire("before_model", session_id=session, messages=_model_input(request))
        if before.denied:
            return _model_refused(before)
        request = _model_rewritten(request, before)
        response = handler(request)
        after = self.fire("after_model", session_id=session, messages=_model_input(request),
                          response=_response_messages(response))
        return _model_judged(response, after)

    async def awrap_model_call(self, request: Any,
                               handler: Callable[[Any], Awaitable[Any]]) -> Any:
        session = _session(request.runtime, self.session_id)
        before = await self.afire("before_model", session_id=session,
                                  messages=_model_input(request))
        if before.denied:
            return _model_refused(before)
        request = _model_rewritten(request, before)
        response = await handler(request)
        after = await self.afire("after_model", session_id=session,
                                 messages=_model_input(request),
                                 response=_response_messages(response))
        return _model_judged(response, after)

    # -- tools -------------------------------------------------------------------------------

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        session = _session(request.runtime, self.session_id)
        before = self.fire("before_tool", **_tool_fields(request, session))
        for _ in range(MAX_ROUNDS):  # each deferred ask: the graph's interrupt, then again
            if not self._interrupts(before):
                break
            assert before.ask is not None
            self.firing.answered_natively(before.ask, *_resumed(interrupt(_shown(before.ask))))
            before = self.fire("before_tool", **_tool_fields(request, session))
        if before.denied:
            return _refused(request, before)
        request = _rewritten(request, before)
        result = handler(request)
        if not isinstance(result, ToolMessage):
            return result  # a Command steers the graph; there is no output to judge
        after = self.fire("after_tool", **_tool_fields(request, session),
                          tool_output=result.content)
        return _judged(result, before, after)

    async def awrap_tool_call(self, request: Any,
                              handler: Callable[[Any], Awaitable[Any]]) -> Any:
        session = _session(request.runtime, self.session_id)
        before = await self.afire("before_tool", **_tool_fields(request, session))
        for _ in range(MAX_ROUNDS):  # as in wrap_tool_call
            if not self._interrupts(before):
                break
            assert before.ask is not None
            given = _resumed(interrupt(_shown(before.ask)))
            await asyncio.to_thread(self.firing.answered_natively, before.ask, *given)
            before = await self.afire("before_tool", **_tool_fields(request, session))
        if before.denied:
            return _refused(request, before)
        request = _rewritten(request, before)
        result = await handler(request)
        if not isinstance(result, ToolMessage):
            return result
        after = await self.afire("after_tool", **_tool_fields(request, session),
                                 tool_output=result.content)
        return _judged(result, before, after)

    def _interrupts(self, outcome: Outcome) -> bool:
        """Whether ``outcome`` holds an ask deferred to LangGraph's interrupt."""
        return self.native_approval and outcome.ask is not None and not outcome.denied

    # -- the stop gate -----------------------------------------------------------------------

    @hook_config(can_jump_to=["model"])
    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        session = _session(runtime, self.session_id)
        return _gate(self.fire("before_stop", **_stop_fields(state, session)))

    @hook_config(can_jump_to=["model"])
    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        session = _session(runtime, self.session_id)
        return _gate(await self.afire("before_stop", **_stop_fields(state, session)))


MAX_ROUNDS = 4  # interrupts one tool call may raise (each a hook's ask, answered in turn)


def _shown(ask: AskRequest) -> dict[str, Any]:
    """What the interrupt shows the person: the exact call, who asks, why."""
    return {"mcp_hooks_ask": ask.id, "tool": ask.tool_name, "arguments": ask.tool_input,
            "reason": ask.reason, "hook": ask.hook}


def _resumed(value: Any) -> tuple[bool, str]:
    """The person's answer in a resume value: ``True``/``False``, or ``{"approve": bool,
    "reason": ...}`` (also the HITL middleware's ``{"type": "approve"|"reject", "message":
    ...}``); anything else refuses, saying so."""
    if isinstance(value, bool):
        return value, ""
    if isinstance(value, dict):
        approved = value.get("approve") is True or value.get("type") == "approve"
        return approved, str(value.get("reason") or value.get("message") or "")
    return False, f"the resume value {str(value)[:80]!r} is not an answer; nothing approved"


def _gate(outcome: Outcome) -> dict[str, Any] | None:
    """Back to the model with the reason, or None to stop. The engine's loop guard is the one
    count of consecutive blocks (faults of ours included): at its cap the stop passes."""
    if not outcome.continue_working:
        return None
    return {"messages": [HumanMessage(content=stop_feedback(outcome))], "jump_to": "model"}


# -- translation: LangChain objects <-> event fields ----------------------------------------


def _model_input(request: Any) -> list[dict[str, Any]]:
    head = [request.system_message] if request.system_message is not None else []
    return list(convert_to_openai_messages([*head, *request.messages]))


def _model_rewritten(request: Any, outcome: Outcome) -> Any:
    new = (outcome.modified_input or {}).get("messages")
    if not isinstance(new, list):
        return request
    messages = convert_to_messages(new)
    system = next((m for m in messages if isinstance(m, SystemMessage)), None)
    return request.override(system_message=system,
                            messages=[m for m in messages if not isinstance(m, SystemMessage)])


def _model_refused(outcome: Outcome) -> Any:
    reason = outcome.reason or f"blocked by hook {outcome.blocked_by}"
    return ModelResponse(result=[AIMessage(content=reason)])


def _response_messages(response: Any) -> list[dict[str, Any]]:
    inner = getattr(response, "model_response", response)  # an ExtendedModelResponse
    result = inner.result if hasattr(inner, "result") else [inner]
    return list(convert_to_openai_messages(result))


def _model_judged(response: Any, outcome: Outcome) -> Any:
    if outcome.denied:
        return _model_refused(outcome)
    new = outcome.modified_output
    if new is None:
        return response
    if isinstance(new, str):
        return ModelResponse(result=[AIMessage(content=new)])
    return ModelResponse(result=convert_to_messages(new if isinstance(new, list) else [new]))


def _session(runtime: Any, default: str) -> str:
    config = getattr(runtime, "config", None)
    if isinstance(config, dict):
        thread = (config.get("configurable") or {}).get("thread_id")
        if thread is not None:
            return str(thread)
    return default


def _tool_fields(request: Any, session: str) -> dict[str, Any]:
    call = request.tool_call
    args = call.get("args")
    return {"session_id": session, "tool_name": call.get("name"),
            "tool_input": dict(args) if isinstance(args, dict) else {"input": args},
            "tool_use_id": call.get("id")}


def _refused(request: Any, outcome: Outcome) -> ToolMessage:
    """The tool does not run; the model reads why in its result."""
    call = request.tool_call
    reason = outcome.reason or f"blocked by hook {outcome.blocked_by}"
    return ToolMessage(content=reason, tool_call_id=call.get("id") or "", name=call.get("name"),
                       status="error")


def _rewritten(request: Any, outcome: Outcome) -> Any:
    if outcome.modified_input is None:
        return request
    return request.override(tool_call={**request.tool_call, "args": outcome.modified_input})


def _judged(result: ToolMessage, before: Outcome, after: Outcome) -> ToolMessage:
    """The tool's message as the model gets it: rewritten, refused, or with hook context."""
    update: dict[str, Any] = {}
    if after.denied:
        update = {"content": after.reason or f"output rejected by hook {after.blocked_by}",
                  "status": "error"}
    elif after.modified_output is not None:
        output = after.modified_output
        update["content"] = output if isinstance(output, (str, list)) else str(output)
    context = [*before.additional_context, *after.additional_context]
    if context and not after.denied:
        content = update.get("content", result.content)
        if isinstance(content, str):
            update["content"] = "\n\n".join([content, *context])
    return result.model_copy(update=update) if update else result


def _stop_fields(state: Any, session: str) -> dict[str, Any]:
    messages = state.get("messages", []) if isinstance(state, dict) else []
    replies = [m for m in messages if isinstance(m, AIMessage)]
    return {"session_id": session, "payload": {
        "stop_reason": "end_turn", "step_count": len(replies),
        "final_message": str(replies[-1].text) if replies else None}}
