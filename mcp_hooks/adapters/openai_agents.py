"""mcp-hooks in the OpenAI Agents SDK (``pip install mcp-hooks[openai-agents]``).

::

    from agents import Agent
    from mcp_hooks.adapters.openai_agents import AgentsHooks

    hooks = AgentsHooks(project_dir=".", trust_project_hooks=True)  # your own project
    result = await hooks.run(Agent(name="a", tools=[...]), "do the task")  # or hooks.run_sync

What fires where:

==================  ==========================================================================
event               SDK hook, and what the outcome does
==================  ==========================================================================
``before_tool``     each ``FunctionTool``'s ``on_invoke_tool``, wrapped (``wrap_tool``,
                    ``wrap_agent``): a deny returns the reason as the tool's output instead of
                    calling it (the model reads it next); ``modified_input`` becomes the
                    arguments' JSON the tool is called with
``after_tool``      the same wrapper, after the tool: ``modified_output`` replaces the output;
                    a deny replaces it by the reason; hook context is appended to a text output
``before_stop``     ``run``/``run_sync``, after ``Runner.run`` produced a final output: a deny
                    runs the agent again on the conversation so far plus the reason as a user
                    message; the engine's loop guard (``stop_block_cap``) ends it at its cap
==================  ==========================================================================

Why these and not the SDK's ``RunHooks`` or tool guardrails: ``RunHooks`` only observe (a
``on_tool_start`` cannot stop the tool), and a tool input guardrail can reject a call but not
rewrite its arguments; wrapping the tool's invoker does both, and is where a deny is sure to
keep the side effect from happening. The SDK has no hook that sends a finished agent back to
work, so the stop gate wraps the run. Tools of other kinds (hosted tools, MCP servers' tools)
are not wrapped: gate an MCP server's tools with ``mcp-hooks proxy``.

Not fired here yet: ``before_model``/``after_model`` (the SDK lets a ``RunConfig`` filter the
model input, but has no hook that replaces a response or skips a call; it would take a
wrapped ``Model``).

Events go through a ``mcp_hooks.Hooks`` (``api.py``, ``afire`` on the run's event loop): an
event no hook wants costs its fast path, and Python callables registered on the ``Hooks``
run in the same chain. A fault of ours is a deny saying what broke (``on_fault``), as
everywhere in mcp-hooks.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_hooks.adapters import requires_framework
from mcp_hooks.adapters._firing import Firing, framework_asks_for_tools
from mcp_hooks.api import Hooks
from mcp_hooks.engine.stopguard import DEFAULT_STOP_BLOCK_CAP
from mcp_hooks.spec.asking import AskRequest
from mcp_hooks.spec.outcome import OnFault, Outcome
from mcp_hooks.state.eventlog import EventLog

# the framework is an optional extra: mypy may run where it is not installed
with requires_framework(__name__):
    from agents import (  # type: ignore[import-not-found, unused-ignore]
        Agent,
        FunctionTool,
        Runner,
    )


class AgentsHooks:
    """Fires mcp-hooks events from OpenAI Agents SDK runs.

    Args:
        project_dir: the project whose ``.agents/hooks`` run (and the hooks' cwd); None for
            user hooks only, run in the current folder.
        user_dir: the user hooks folder; None for the default (``~/.config/agents/hooks``).
        log: the event log, as ``Hooks`` takes it (a path, an ``EventLog``, True for the
            default one); None for no log.
        on_fault: ``block`` (default) or ``warn``, as ``Hooks``.
        stop_block_cap: consecutive ``before_stop`` blocks before the stop is let through.
        session_id: the session the hooks see; default a fresh id per instance.
        hooks: a ``mcp_hooks.Hooks`` to fire through instead of one made from the above
            (then ``close`` leaves it open).
        trust_project_hooks: run ``project_dir``'s hooks without ``mcp-hooks trust`` (your
            own project: the code building this lives there too); None reads
            ``MCP_HOOKS_TRUST_PROJECT_HOOKS``. A hook held back for want of trust, or one that
            failed, is logged (once per session) through the framework's logger.
        approve: how a hook's ask reaches a person (``Hooks(approve=...)``, docs/ask.md): a
            callback, sync or async, given the ``AskRequest``; an ask refused (or unanswered)
            is a deny the model reads as the tool's output.
        native_approval: a hook's ask becomes the SDK's own tool approval instead: each
            wrapped tool's ``needs_approval`` fires ``before_tool``, an ask there makes the
            run stop with ``result.interruptions``; ``state.approve(item)`` and a new
            ``Runner.run(agent, state)`` run exactly that call (the approval is stored on the
            ask: channel ``openai-agents``), ``state.reject(item)`` never runs it (the ask is
            left to expire). Not with ``approve=`` or ``hooks=``.
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
        if native_approval and (approve is not None or hooks is not None):
            raise ValueError("native_approval is the SDK's own approval step: give it without "
                             "approve= and hooks= (the adapter makes its Hooks for it)")
        self.firing = Firing(project_dir, user_dir=user_dir, log=log, on_fault=on_fault,
                             stop_block_cap=stop_block_cap, session_id=session_id,
                             hooks=hooks, framework="openai-agents",
                             trust_project_hooks=trust_project_hooks,
                             approve=framework_asks_for_tools if native_approval else approve)
        self.hooks, self.session_id = self.firing.hooks, self.firing.session_id
        self.native_approval = native_approval

    # -- the one place that talks to the engine (adapters/_firing.py) ----------------------

    async def afire(self, event_type: str, **fields: Any) -> Outcome:
        """Fire one event; a fault of ours is ``fault_outcome`` (a deny that says what broke)."""
        return await self.firing.fire(event_type, **fields)

    def close(self) -> None:
        """Stop the hook processes of the ``Hooks`` this object made (not of one given)."""
        self.firing.close()

    # -- tools -------------------------------------------------------------------------------

    def wrap_tool(self, tool: Any) -> Any:
        """A copy of a ``FunctionTool`` whose calls fire ``before_tool`` and ``after_tool``;
        any other tool is returned as it is."""
        if not isinstance(tool, FunctionTool) or getattr(tool, "_mcp_hooks", None) is self:
            return tool
        wrapped = copy.copy(tool)
        invoke = wrapped.on_invoke_tool
        asked: dict[str, Outcome] = {}  # native approval: before_tool fired, by call id

        async def needs_approval(ctx: Any, params: dict[str, Any], call_id: str) -> bool:
            if len(asked) > 1000:  # rejected calls never come back for theirs
                asked.clear()
            outcome = asked[call_id] = await self.afire(
                "before_tool", tool_name=wrapped.name, tool_input=dict(params),
                tool_use_id=call_id)
            return outcome.ask is not None and not outcome.denied

        async def on_invoke_tool(ctx: Any, arguments: str) -> Any:
            return await self._invoke(invoke, wrapped.name, asked, ctx, arguments)

        wrapped.on_invoke_tool = on_invoke_tool
        if self.native_approval:
            wrapped.needs_approval = needs_approval
        wrapped.__dict__["_mcp_hooks"] = self  # a mark, not a field: wrapped once
        return wrapped

    async def _invoke(self, invoke: Any, name: str, asked: dict[str, Outcome], ctx: Any,
                      arguments: str) -> Any:
        """One call of a wrapped tool: ``before_tool`` (or the approval the SDK asked for),
        the tool unless denied, then ``after_tool``; what the model reads back."""
        fields = {"tool_name": name, "tool_input": _tool_input(arguments),
                  "tool_use_id": getattr(ctx, "tool_call_id", None)}
        before = asked.pop(str(fields["tool_use_id"]), None)
        if before is not None and before.ask is not None:  # approved in the SDK
            await asyncio.to_thread(self.firing.answered_natively, before.ask)
            before = None  # fired again: the stored approval is taken
        if before is None:
            before = await self.afire("before_tool", **fields)
        if self.native_approval and before.ask is not None and not before.denied:
            # an ask the SDK's approval step never saw (deferred to it): not run
            return (f"a person must approve this call (ask {before.ask.id}, "
                    f"{before.ask.reason}); it was not run")
        if before.denied:
            return before.reason or f"blocked by hook {before.blocked_by}"
        if before.modified_input is not None:
            arguments = json.dumps(before.modified_input)
            fields["tool_input"] = before.modified_input
        output = await invoke(ctx, arguments)
        after = await self.afire("after_tool", **fields, tool_output=_jsonable(output))
        return _judged(output, before, after)

    def wrap_agent(self, agent: Any) -> Any:
        """A clone of ``agent`` whose function tools, and those of its handoff agents, are
        wrapped (``wrap_tool``); the agent given is left as it was."""
        return self._wrap_agent(agent, {})

    def _wrap_agent(self, agent: Any, done: dict[int, Any]) -> Any:
        if id(agent) in done:
            return done[id(agent)]
        clone = agent.clone(tools=[self.wrap_tool(t) for t in agent.tools])
        done[id(agent)] = clone
        clone.handoffs = [self._wrap_agent(h, done) if isinstance(h, Agent) else h
                          for h in agent.handoffs]
        return clone

    # -- runs with the stop gate -------------------------------------------------------------

    async def run(self, agent: Any, input: str | list[Any], **options: Any) -> Any:
        """``Runner.run`` on the wrapped agent, with ``before_stop`` as a gate on its final
        output. ``options`` go to ``Runner.run`` (``max_turns``, ``run_config``, ``session``...).
        Returns the last ``RunResult``."""
        agent = self.wrap_agent(agent)
        while True:  # until a stop passes: the engine's loop guard lets one through at its cap
            result = await Runner.run(agent, input, **options)
            outcome = await self.afire("before_stop", payload={
                "stop_reason": "final_output", "step_count": len(result.raw_responses),
                "final_message": _text(result.final_output)})
            if not outcome.continue_working:
                return result
            reason = outcome.reason or f"a before_stop hook ({outcome.blocked_by}) said go on"
            again = {"role": "user", "content": reason}
            # with an SDK session the conversation is kept there; else it is handed back
            input = [again] if options.get("session") else [*result.to_input_list(), again]
            agent = self.wrap_agent(result.last_agent)

    def run_sync(self, agent: Any, input: str | list[Any], **options: Any) -> Any:
        """``run`` for code without an event loop (``asyncio.run``)."""
        return asyncio.run(self.run(agent, input, **options))


# -- translation ------------------------------------------------------------------------------




def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {"arguments": arguments}  # the hooks still see what the model sent
    return value if isinstance(value, dict) else {"arguments": value}


def _jsonable(output: Any) -> Any:
    if output is None or isinstance(output, (str, int, float, bool, list, dict)):
        return output
    dump = getattr(output, "model_dump", None)
    return dump(mode="json") if callable(dump) else str(output)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(_jsonable(value), ensure_ascii=False, default=str)


def _judged(output: Any, before: Outcome, after: Outcome) -> Any:
    """The tool's output as the model gets it: rewritten, refused, or with hook context."""
    if after.denied:
        return after.reason or f"output rejected by hook {after.blocked_by}"
    if after.modified_output is not None:
        output = after.modified_output
    context = [*before.additional_context, *after.additional_context]
    if context and isinstance(output, str):
        output = "\n\n".join([output, *context])
    return output
