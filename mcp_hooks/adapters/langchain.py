# mypy: allow-subclassing-any, allow-untyped-decorators
"""mcp-hooks as LangChain 1.x agent middleware (``pip install mcp-hooks[langchain]``).

::

    from langchain.agents import create_agent
    from mcp_hooks.adapters.langchain import HooksMiddleware

    agent = create_agent(model, tools, middleware=[HooksMiddleware(project_dir=".")])
    agent.invoke({"messages": [{"role": "user", "content": "..."}]})

What fires where (``invoke``/``stream`` and ``ainvoke``/``astream`` alike):

==================  ==========================================================================
event               LangChain hook, and what the outcome does
==================  ==========================================================================
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

The engine is a one-shot ``Engine`` (hooks run without an event loop of ours; async hooks
in a detached process), so the sync and the async graph run the same code: the async hooks
of the middleware run ``fire`` in a worker thread. A fault of ours (an event that cannot be
built, the engine failing) is a deny saying what broke, as everywhere in mcp-hooks (``on_fault``).
The session id is the LangGraph thread id (``config["configurable"]["thread_id"]``) when there
is one, else one id per middleware instance.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# the framework is an optional extra: mypy may run where it is not installed
from langchain.agents.middleware import (  # type: ignore[import-not-found, unused-ignore]
    AgentMiddleware,
    hook_config,
)
from langchain_core.messages import (  # type: ignore[import-not-found, unused-ignore]
    AIMessage,
    HumanMessage,
    ToolMessage,
)

from mcp_hooks.discovery import Registry
from mcp_hooks.engine import Engine
from mcp_hooks.eventlog import EventLog
from mcp_hooks.outcome import Event, OnFault, Outcome, cap_text, fault_outcome
from mcp_hooks.stopguard import DEFAULT_STOP_BLOCK_CAP


class HooksMiddleware(AgentMiddleware):  # type: ignore[type-arg, unused-ignore]
    """Fires mcp-hooks events from a ``create_agent`` loop.

    Args:
        project_dir: the project whose ``.agents/hooks`` run (and the hooks' cwd); None for
            user hooks only, run in the current folder.
        user_dir: the user hooks folder; None for the default (``~/.config/agents/hooks``).
        log: where events are logged; None for no log.
        on_fault: ``block`` (default) or ``warn``, as ``Engine``.
        stop_block_cap: consecutive ``before_stop`` blocks before the stop is let through.
        session_id: the session the hooks see; default the thread id, else a fresh id.
        engine: a one-shot ``Engine`` to use instead of building one from the above.
    """

    def __init__(
        self,
        project_dir: str | Path | None = None,
        *,
        user_dir: str | Path | None = None,
        log: EventLog | None = None,
        on_fault: OnFault = "block",
        stop_block_cap: int = DEFAULT_STOP_BLOCK_CAP,
        session_id: str | None = None,
        engine: Engine | None = None,
    ) -> None:
        super().__init__()
        if engine is None:
            registry = Registry(Path(user_dir) if user_dir is not None else None,
                                Path(project_dir) if project_dir is not None else None)
            engine = Engine(registry, log=log, on_fault=on_fault, one_shot=True,
                            stop_block_cap=stop_block_cap)
        elif not engine.one_shot:
            raise ValueError("HooksMiddleware(engine=...) needs an Engine made with "
                             "one_shot=True (it fires from sync and async graphs alike)")
        self.engine = engine
        self.session_id = session_id or f"langchain-{uuid.uuid4().hex[:12]}"
        self._stop_blocks: dict[str, int] = {}

    # -- the one place that talks to the engine --------------------------------------------

    def fire(self, event_type: str, **fields: Any) -> Outcome:
        """Fire one event; a fault of ours is ``fault_outcome`` (a deny that says what broke)."""
        try:
            return self.engine.fire_blocking(Event.create(event_type=event_type, **fields))
        except Exception as exc:
            return fault_outcome(
                event_type, f"the LangChain adapter could not fire {event_type}: "
                f"{type(exc).__name__}: {cap_text(str(exc), 300)}", on_fault=self.engine.on_fault)

    async def afire(self, event_type: str, **fields: Any) -> Outcome:
        return await asyncio.to_thread(self.fire, event_type, **fields)

    # -- tools -------------------------------------------------------------------------------

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        session = _session(request.runtime, self.session_id)
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
        if before.denied:
            return _refused(request, before)
        request = _rewritten(request, before)
        result = await handler(request)
        if not isinstance(result, ToolMessage):
            return result
        after = await self.afire("after_tool", **_tool_fields(request, session),
                                 tool_output=result.content)
        return _judged(result, before, after)

    # -- the stop gate -----------------------------------------------------------------------

    @hook_config(can_jump_to=["model"])
    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        session = _session(runtime, self.session_id)
        return self._gate(session, self.fire("before_stop", **_stop_fields(state, session)))

    @hook_config(can_jump_to=["model"])
    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        session = _session(runtime, self.session_id)
        return self._gate(session,
                          await self.afire("before_stop", **_stop_fields(state, session)))

    def _gate(self, session: str, outcome: Outcome) -> dict[str, Any] | None:
        """Back to the model with the reason, or None to stop. The engine's stop guard caps
        hook blocks; this count also caps faults of ours, which the guard does not see."""
        blocks = self._stop_blocks.get(session, 0)
        if not outcome.continue_working or blocks >= self.engine.stop_guard.cap:
            self._stop_blocks.pop(session, None)
            return None
        self._stop_blocks[session] = blocks + 1
        reason = outcome.reason or f"a before_stop hook ({outcome.blocked_by}) said keep working"
        return {"messages": [HumanMessage(content=reason)], "jump_to": "model"}


# -- translation: LangChain objects <-> event fields ----------------------------------------


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
