# mypy: allow-subclassing-any
"""mcp-hooks as an AgentScope 2.x middleware (``pip install mcp-hooks[agentscope2]``).

::

    from agentscope.agent import Agent
    from mcp_hooks.adapters.agentscope_middleware import HooksMiddleware

    agent = Agent(name="a", system_prompt="...", model=model, toolkit=toolkit,
                  middlewares=[HooksMiddleware(project_dir=".", trust_project_hooks=True)])

AgentScope 2.0 replaced 1.0.x's pre/post hooks (``agentscope.py``) by onion-style middleware;
index 0 of ``middlewares`` is the outermost layer. What fires where:

==================  ==========================================================================
event               middleware point, and what the outcome does
==================  ==========================================================================
``before_tool``     ``on_check_permission``, before AgentScope's own permission step: a deny
                    is a ``DENY`` decision carrying the reason (the tool does not run and the
                    user is never asked to approve it; the model reads the reason as the
                    ``DENIED`` tool result); an allow hands the call on to the permission
                    step (a plain ``FunctionTool`` still asks the user), with a rewritten
                    input, if any, as what it judges. ``on_acting`` then applies the rewrite
                    (``modified_input`` replaces the call's JSON ``input``) with the same
                    outcome (a call approved by the user passes the permission step, and
                    so the hooks, again when it resumes); a call whose permission step an
                    outer middleware answered without us fires ``before_tool`` there
                    ``native_approval=True``: a hook's ask is an ``ASK`` decision (the
                    user confirms through AgentScope); a confirmed call comes back to the
                    permission step, where its approval is stored on the ask (channel
                    ``agentscope2``) and ``before_tool`` fires again and takes it
``after_tool``      ``on_acting``, on the final ``ToolResponse``: ``modified_output`` replaces
                    its text, a deny replaces it by the reason; hook context is appended
``before_stop``     ``on_reply``, on a ``ReplyEndEvent`` of a completed reply: a deny appends
                    the reason to the agent's context as a user message and swallows the
                    event, which makes the agent reason again (AgentScope's own protocol);
                    the engine's loop guard (``stop_block_cap``) lets the stop through at
                    its cap
==================  ==========================================================================

The engine use is ``_firing.Firing``, through a ``mcp_hooks.Hooks`` (pass ``hooks=`` to
share one, Python callables and all); ``close()``/``aclose()`` stop the hook processes of
one it made (never of one given); a fault of ours is a deny saying what broke.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp_hooks.adapters import requires_framework
from mcp_hooks.adapters._firing import (
    Firing,
    framework_asks_for_tools,
    refusal,
    stop_feedback,
    tool_input,
    with_context,
)
from mcp_hooks.api import Hooks
from mcp_hooks.engine.stopguard import DEFAULT_STOP_BLOCK_CAP
from mcp_hooks.spec.outcome import OnFault, Outcome
from mcp_hooks.state.eventlog import EventLog

with requires_framework(__name__):
    from agentscope.event import ReplyEndEvent, ReplyFinishedReason  # type: ignore[import-not-found, unused-ignore]
    from agentscope.message import Msg, TextBlock, ToolResultState  # type: ignore[import-not-found, unused-ignore]
    from agentscope.middleware import MiddlewareBase  # type: ignore[import-not-found, unused-ignore]
    from agentscope.permission import PermissionBehavior, PermissionDecision  # type: ignore[import-not-found, unused-ignore]
    from agentscope.tool import ToolResponse  # type: ignore[import-not-found, unused-ignore]

_CHECKED_CAP = 1024  # before_tool outcomes kept from the permission step for on_acting


class HooksMiddleware(MiddlewareBase):  # type: ignore[misc, unused-ignore]
    """HOOK.md hooks as an AgentScope 2.x middleware. Arguments as ``_firing.Firing``."""

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
        native_approval: bool = False,
    ) -> None:
        super().__init__()
        if native_approval and hooks is not None:
            raise ValueError("native_approval is AgentScope's own permission step: give it "
                             "without hooks= (the middleware makes its Hooks for it)")
        self.firing = Firing(project_dir, user_dir=user_dir, log=log, on_fault=on_fault,
                             stop_block_cap=stop_block_cap, session_id=session_id,
                             hooks=hooks, framework="agentscope2",
                             trust_project_hooks=trust_project_hooks,
                             approve=framework_asks_for_tools if native_approval else None)
        self.native_approval = native_approval
        self._checked: dict[str, Outcome] = {}  # tool call id -> its before_tool outcome

    async def on_check_permission(self, agent: Any, input_kwargs: dict[str, Any],
                                  next_handler: Callable[..., Awaitable[Any]]) -> Any:
        """``before_tool`` ahead of AgentScope's permission step: a deny is a ``DENY``
        decision (no approval is asked for a call the hooks refuse)."""
        call = input_kwargs["tool_call"]
        given = input_kwargs.get("tool_input")
        args = tool_input(given if isinstance(given, dict) else _parsed(call.input))
        before = await self.firing.fire("before_tool", tool_name=call.name, tool_input=args,
                                        tool_use_id=call.id)
        asked = self._checked.get(call.id) if call.id is not None else None
        if self._native(before) and asked is not None and asked.ask == before.ask:
            # the same call back at the permission step: the user confirmed it (a rejected
            # call never comes back); stored on the ask, it fires again and is taken
            assert before.ask is not None
            await asyncio.to_thread(self.firing.answered_natively, before.ask)
            before = await self.firing.fire("before_tool", tool_name=call.name,
                                            tool_input=args, tool_use_id=call.id)
        if self._native(before):
            assert before.ask is not None
            self._keep(call.id, before)
            return PermissionDecision(behavior=PermissionBehavior.ASK,
                                      message=f"{before.ask.reason} (mcp-hooks ask "
                                      f"{before.ask.id}, hook {before.ask.hook})",
                                      decision_reason="mcp-hooks")
        if before.denied:
            return PermissionDecision(behavior=PermissionBehavior.DENY,
                                      message=refusal(before), decision_reason="mcp-hooks")
        self._keep(call.id, before)
        if before.modified_input is not None:  # the permission step judges what will run
            return await next_handler(tool_input=before.modified_input)
        return await next_handler()

    def _keep(self, call_id: str | None, before: Outcome) -> None:
        """``before`` for ``on_acting`` (or the confirmed call's return), by call id."""
        if call_id is not None:
            if len(self._checked) >= _CHECKED_CAP:  # calls asked about and never resumed
                self._checked.pop(next(iter(self._checked)))
            self._checked[call_id] = before

    def _native(self, outcome: Outcome) -> bool:
        """Whether ``outcome`` holds an ask deferred to AgentScope's permission step."""
        return self.native_approval and outcome.ask is not None and not outcome.denied

    async def aclose(self) -> None:
        """Stop the hook processes of the ``Hooks`` this middleware made (not of one given)."""
        await self.firing.aclose()

    def close(self) -> None:
        """``aclose`` from synchronous code."""
        self.firing.close()

    async def on_acting(self, agent: Any, input_kwargs: dict[str, Any],
                        next_handler: Callable[..., AsyncGenerator[Any, None]],
                        ) -> AsyncGenerator[Any, None]:
        call = input_kwargs["tool_call"]
        args = tool_input(_parsed(call.input))
        before = self._checked.pop(call.id, None) if call.id is not None else None
        if before is None:  # an outer middleware answered the permission step without us
            before = await self.firing.fire("before_tool", tool_name=call.name,
                                            tool_input=args, tool_use_id=call.id)
        if self._native(before):  # an ask the user was never shown: the call does not run
            assert before.ask is not None
            yield ToolResponse(content=[TextBlock(
                text=f"a person must approve this call ({before.ask.reason}; mcp-hooks ask "
                f"{before.ask.id}); the permission step did not ask, so it was not run")],
                state=ToolResultState.DENIED)
            return
        if before.denied:
            yield ToolResponse(content=[TextBlock(text=refusal(before))],
                               state=ToolResultState.DENIED)
            return
        if before.modified_input is not None:
            args = before.modified_input
            call = call.model_copy(update={"input": json.dumps(args, ensure_ascii=False)})
        final = None
        async for item in next_handler(tool_call=call):
            if isinstance(item, ToolResponse):
                final = item
            else:
                yield item
        if final is None:
            return
        after = await self.firing.fire("after_tool", tool_name=call.name, tool_input=args,
                                       tool_use_id=call.id, tool_output=_text(final.content))
        yield _judged(final, before.additional_context, after)

    async def on_reply(self, agent: Any, input_kwargs: dict[str, Any],
                       next_handler: Callable[..., AsyncGenerator[Any, None]],
                       ) -> AsyncGenerator[Any, None]:
        async for item in next_handler():  # the engine's loop guard ends the gate at its cap
            if (isinstance(item, ReplyEndEvent)
                    and item.finished_reason == ReplyFinishedReason.COMPLETED):
                context = getattr(getattr(agent, "state", None), "context", None)
                final = _text(context[-1]) if context else ""
                outcome = await self.firing.fire("before_stop", payload={
                    "stop_reason": "end_turn", "final_message": final})
                if outcome.continue_working and isinstance(context, list):
                    context.append(Msg(name="user", role="user",
                                           content=[TextBlock(text=stop_feedback(outcome))]))
                    continue  # swallowed: the agent reasons again
            yield item


def _judged(final: ToolResponse, before: list[str], after: Any) -> ToolResponse:
    """The tool's response as the model gets it: refused, rewritten, or with hook context."""
    if after.denied:
        text = refusal(after, "tool output")
    elif after.modified_output is not None:
        new = after.modified_output
        text = with_context(new if isinstance(new, str) else json.dumps(new), after)
    elif after.additional_context or before:
        text = with_context(_text(final.content), after)
    else:
        return final
    if before and not after.denied:
        text = "\n\n".join([text, *before])
    return final.model_copy(update={"content": [TextBlock(text=text)]})


def _parsed(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def _text(value: Any) -> str:
    """The text of a ``Msg``, a list of blocks, or anything else."""
    if value is None:
        return ""
    if isinstance(value, Msg):
        getter = getattr(value, "get_text_content", None)
        return (getter() if callable(getter) else None) or _text(value.content)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (_text(v) for v in value) if t)
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return text
    if isinstance(value, dict):
        return str(value.get("text") or "")
    return ""
