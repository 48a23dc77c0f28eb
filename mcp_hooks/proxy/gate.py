"""The gate: one ``tools/call`` through the hooks, on either path (SDK server or stdio fast
path). The result is in wire form (``results``).

1. ``before_tool`` fires with ``tool_name`` as the client sees it, ``tool_input``,
   ``tool_use_id``, and ``mcp_server`` / ``mcp_tool`` (the upstream's own names) in the
   payload. A deny answers with an ``isError`` result carrying the hook's reason; the
   upstream is never called. ``modified_input`` is what the upstream receives.

   One vocabulary: a tool name in ``vocabulary.MCP_CLIENTS`` (``Bash``, ``Edit``, ...) reaches
   the hooks of every event as its canonical tool (``Shell``, ``EditFile``, ...) with canonical
   input keys, the client's own name and arguments under ``host``; a ``modified_input`` goes
   back to the tool's own keys (one that cannot is dropped, with a warning in the log). Other
   names (``git_status``, ``write_file``) reach the hooks as the client sees them.
2. The upstream call, bounded by the timeout (the start of a stopped upstream included).
3. Success -> ``after_tool`` with ``tool_output`` = ``{content, structuredContent}``; a hook's
   ``modified_output`` replaces the result, a deny withholds it, and the
   ``additional_context`` of both events is appended as one text block. An ``isError``
   result, a protocol error or an upstream fault -> ``after_tool_failure`` with ``error``; the
   client sees the upstream's error as it was, and the proxy's own faults (timeout, upstream
   down) as ``isError`` results that say what happened. A call the client cancels fires
   ``after_tool_failure`` too (shielded) before the cancellation goes on.

Faults of the gate itself (a hook in scope that does not load, input nested deeper than hooks
are handed, anything the engine raises) are ``engine.fault_outcome`` under the engine's
``on_fault``: with ``block`` the call is refused with an ``isError`` result saying what broke,
and the upstream is not called. ``Gate.fire`` is the proxy's one guard (``guard.py``): it
never raises but for the call's own cancellation.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import anyio
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from mcp_hooks.engine.engine import Engine
from mcp_hooks.guard import named, passes_through
from mcp_hooks.proxy.catalog import Catalog
from mcp_hooks.proxy.relay import Peer, approvers, ask_round
from mcp_hooks.proxy.results import (
    append_context,
    apply_modified_output,
    clean_result,
    deny_text,
    error_result,
    error_text,
    tool_output,
)
from mcp_hooks.proxy.sessions import DownstreamSession
from mcp_hooks.proxy.upstream import UpstreamError
from mcp_hooks.spec.asking import Approver
from mcp_hooks.spec.outcome import Event, Outcome, fault_outcome
from mcp_hooks.spec.toolcall import CallerTool, caller_tool, unexpressible
from mcp_hooks.spec.vocabulary import MCP_CLIENTS

logger = logging.getLogger("mcp_hooks.proxy")


class Gate:
    """Fires the hooks around every tool call.

    Args:
        engine: the entered engine.
        catalog: routes the client's tool names to upstreams.
    """

    def __init__(self, engine: Engine, catalog: Catalog) -> None:
        self.engine = engine
        self.catalog = catalog

    async def fire(self, event: Event | Callable[[], Event], kind: str | None = None,
                   approve: Approver | None = None) -> Outcome:
        """Fire an event (or build it, then fire it: ``kind`` names it for a fault);
        ``approve``: the client's way to ask a person when a hook asks (``relay.Peer``).

        The proxy's one guard (``guard.py``): whatever building or firing raises, but the
        cancellation of the call, is a fault (``fault_outcome`` under the engine's policy:
        a deny for an event that can block), never a crash of the proxy."""
        name = event.event_type if isinstance(event, Event) else kind or "before_tool"
        try:
            return await self.engine.fire(event if isinstance(event, Event) else event(),
                                          approve=approve)
        except BaseException as exc:  # an event that cannot fire never takes the proxy down
            if passes_through(exc):  # the client cancelled the call, or the proxy stops
                raise
            logger.error("cannot fire %s: %s", name, named(exc), exc_info=exc)
            return fault_outcome(name, f"the proxy failed: {named(exc)}",
                                 on_fault=self.engine.on_fault)

    async def call_tool(
        self,
        session: DownstreamSession,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressFnT | None = None,
        peer: Peer | None = None,
    ) -> dict[str, Any]:
        """One ``tools/call`` through the hooks; the result in wire form. ``peer``: the
        client, asked what the upstream asks of the user during the call (``relay``).

        Raises:
            MCPError: the upstream answered with a protocol error (after
                ``after_tool_failure``), passed on as it is.
        """
        session.steps += 1
        route = self.catalog.tool_routes.get(name)
        if route is None:
            return error_result(f"Unknown tool {name!r}: no upstream server of this proxy has "
                                "it (see tools/list and the resource hooks://proxy/status).")
        upstream, tool = route
        use_id = f"proxy-{uuid.uuid4().hex}"
        origin = {"mcp_server": upstream.name, "mcp_tool": tool}

        def event(kind: str, call: CallerTool, **data: Any) -> Event:
            return Event.create(event_type=kind, session_id=session.id,
                                tool_name=call.tool_name, tool_input=call.tool_input,
                                tool_use_id=use_id, payload=call.payload(origin), **data)

        call = caller_tool(MCP_CLIENTS, name, arguments)  # what the hooks see
        # the gate itself broken is a deny: fail closed rather than run the tool unchecked
        approve, approve_after = approvers(peer)  # the client asks a person when a hook asks
        before = await self.fire(lambda: event("before_tool", call), "before_tool", approve)
        if before.denied:
            return error_result(deny_text(before, name, ran=False))
        asking = ask_round(peer, before)
        if asking is not None:  # a 2026-07-28 client's form: it retries with the answer
            return asking
        if before.modified_input is not None:
            rewritten, why = call.to_caller(before.modified_input)  # back to the tool's keys
            if rewritten is None:  # never run the input a hook replaced: a fault of ours
                before = unexpressible("before_tool", before, why or "", self.engine.on_fault)
                logger.warning("%s: %s", name, why)
                if before.denied:
                    return error_result(deny_text(before, name, ran=False))
            else:
                arguments = rewritten
                call = caller_tool(MCP_CLIENTS, name, arguments)

        try:
            result = clean_result(await upstream.call_tool(tool, arguments, progress, peer))
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self.fire(lambda: event("after_tool_failure", call,
                                              error="the client cancelled the call"),
                                "after_tool_failure")
            raise
        except UpstreamError as exc:
            failed = str(exc)
            await self.fire(lambda: event("after_tool_failure", call, error=failed),
                            "after_tool_failure")
            return error_result(str(exc))
        except MCPError as exc:
            failed = f"MCP error {exc.error.code}: {exc.error.message}"
            await self.fire(lambda: event("after_tool_failure", call, error=failed),
                            "after_tool_failure")
            raise
        if result.get("isError"):
            await self.fire(lambda: event("after_tool_failure", call, error=error_text(result),
                                          tool_output=tool_output(result)),
                            "after_tool_failure")
            return result

        # the upstream's result that cannot be made an event is a fault too (``fire``)
        after = await self.fire(lambda: event("after_tool", call,
                                              tool_output=tool_output(result)), "after_tool",
                                approve_after)
        if after.denied:
            return error_result(deny_text(after, name, ran=True))
        if after.modified_output is not None:
            result = apply_modified_output(result, after.modified_output)
        return append_context(result, [*before.additional_context, *after.additional_context])
