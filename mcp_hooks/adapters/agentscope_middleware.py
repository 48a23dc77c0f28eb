# mypy: allow-subclassing-any
"""mcp-hooks as an AgentScope 2.x middleware (``pip install mcp-hooks[agentscope2]``).

::

    from agentscope.agent import Agent
    from mcp_hooks.adapters.agentscope_middleware import HooksMiddleware

    agent = Agent(name="a", system_prompt="...", model=model, toolkit=toolkit,
                  middlewares=[HooksMiddleware(project_dir=".")])

AgentScope 2.0 replaced 1.0.x's pre/post hooks (``agentscope.py``) by onion-style middleware;
index 0 of ``middlewares`` is the outermost layer. What fires where:

==================  ==========================================================================
event               middleware point, and what the outcome does
==================  ==========================================================================
``before_tool``     ``on_acting``, before the tool: a deny answers the call with a
                    ``DENIED`` ``ToolResponse`` carrying the reason instead of running the tool
                    (the model reads it as the tool result); ``modified_input`` replaces the
                    call's JSON ``input``. (``on_check_permission`` gets copies of the call,
                    so it could refuse but never rewrite: one event at one point instead.)
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

import json
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

from mcp_hooks.adapters import requires_framework
from mcp_hooks.adapters._firing import Firing, refusal, stop_feedback, tool_input, with_context
from mcp_hooks.api import Hooks
from mcp_hooks.eventlog import EventLog
from mcp_hooks.outcome import OnFault
from mcp_hooks.stopguard import DEFAULT_STOP_BLOCK_CAP

with requires_framework(__name__):
    from agentscope.event import ReplyEndEvent, ReplyFinishedReason  # type: ignore[import-not-found, unused-ignore]
    from agentscope.message import Msg, TextBlock, ToolResultState  # type: ignore[import-not-found, unused-ignore]
    from agentscope.middleware import MiddlewareBase  # type: ignore[import-not-found, unused-ignore]
    from agentscope.tool import ToolResponse  # type: ignore[import-not-found, unused-ignore]


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
    ) -> None:
        super().__init__()
        self.firing = Firing(project_dir, user_dir=user_dir, log=log, on_fault=on_fault,
                             stop_block_cap=stop_block_cap, session_id=session_id,
                             hooks=hooks, framework="agentscope2")

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
        before = await self.firing.fire("before_tool", tool_name=call.name, tool_input=args,
                                        tool_use_id=call.id)
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
        blocks = 0
        async for item in next_handler():
            if (isinstance(item, ReplyEndEvent) and blocks < self.firing.stop_cap
                    and item.finished_reason == ReplyFinishedReason.COMPLETED):
                context = getattr(getattr(agent, "state", None), "context", None)
                final = _text(context[-1]) if context else ""
                outcome = await self.firing.fire("before_stop", payload={
                    "stop_reason": "end_turn", "final_message": final})
                if outcome.continue_working and isinstance(context, list):
                    blocks += 1
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
