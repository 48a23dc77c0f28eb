"""The asks over HTTP on ``serve --transport http|sse`` (issue 30, ``docs/ask.md``): a phone,
a chat bot or a dashboard answers a hook's ask out of band.

=======================================  ==================================================
route                                    what
=======================================  ==================================================
``GET /asks``                            ``{"asks": [AskRequest..., with age_seconds]}``:
                                         the asks waiting, oldest first
``POST /asks/<id>/approve``              body (optional) ``{"for_session": bool, "by":
                                         "name"}``: approve; ``{"approved": id, ...}``
``POST /asks/<id>/refuse``               body ``{"reason": "...", "by": "name"}`` (reason
                                         required): refuse; ``{"refused": id, ...}``
=======================================  ==================================================

Mounted only when the server has a token, behind the same bearer check as every route
(``bearer.BearerTokenMiddleware``): an ask must never be answerable by whoever reaches the
port (the agent itself could). Errors: ``404`` an unknown id, ``410`` an expired one, ``409``
one answered already (the first answer stands), ``400`` a body that is not that JSON object,
``503`` a store that cannot be reached; each with a one-line message. Each answer is logged
(``ask_answer``, channel ``http``) and seen by the waiting door within its poll.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from mcp_hooks.dashboard.body import MAX_ANSWER_BODY, read_capped
from mcp_hooks.errors import RunError
from mcp_hooks.spec.asking import AskAnswer, answer_of
from mcp_hooks.state.asks import answer
from mcp_hooks.state.store import AskAnswered, AskExpired, StateStore, UnknownAsk

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

ASKS_PATH = "/asks"
MAX_BODY = MAX_ANSWER_BODY  # bytes of an answer's body


def ask_routes(store: StateStore, token: str | None) -> list[Route]:
    """``GET /asks`` and ``POST /asks/<id>/approve|refuse`` over ``store``; empty without a
    token (see the module docstring)."""
    # lazy: 170 ms of cold `fire` and `bridge` (starlette); only the server routes
    from starlette.responses import JSONResponse, PlainTextResponse

    # lazy: 170 ms of cold `fire` and `bridge` (starlette); only the server routes
    from starlette.routing import Route

    if not token:
        return []

    async def pending(request: Request) -> Response:
        try:
            waiting = await anyio.to_thread.run_sync(store.pending_asks)
        except RunError as exc:
            return PlainTextResponse(f"{exc}\n", status_code=503)
        at = time.time()
        return JSONResponse({"asks": [{**r.as_dict(), "age_seconds": round(at - r.created, 3)}
                                      for r in waiting]})

    async def answering(request: Request) -> Response:
        verb = request.path_params["verb"]
        if verb not in ("approve", "refuse"):
            return PlainTextResponse("use /asks/<id>/approve or /asks/<id>/refuse\n", 404)
        raw = await read_capped(request, MAX_BODY)  # never read past the cap
        if raw is None:
            return PlainTextResponse(f"the body is over {MAX_BODY} bytes\n", 413)
        try:
            data = json.loads(raw) if raw.strip() else {}
            given = answer_of(data, verb == "approve", channel="http")
        except (ValueError, RecursionError) as exc:
            return PlainTextResponse(f"{exc}\n", status_code=400)
        ask_id = request.path_params["ask_id"]
        try:
            done = await anyio.to_thread.run_sync(answer, store, ask_id, given)
        except RunError as exc:
            return PlainTextResponse(f"{exc}\n", status_code=503)
        except (UnknownAsk, AskExpired, AskAnswered) as exc:
            return PlainTextResponse(f"{exc}\n", status_code=exc.http_status)
        key = "approved" if given.approved else "refused"
        return JSONResponse({key: done.id, "session_id": done.session_id,
                             "tool_name": done.tool_name, "for_session": given.for_session})

    return [Route(ASKS_PATH, pending, methods=["GET"]),
            Route(ASKS_PATH + "/{ask_id}/{verb}", answering, methods=["POST"])]


def register_ask_tools(server: Any, store: StateStore) -> None:
    """Add ``pending_asks``, ``approve_ask`` and ``refuse_ask`` to a high-level ``MCPServer``
    (``serve --ask-tools``): an operator's MCP client answers asks as ``mcp-hooks approve``
    does. Never on a server the agents use: any client of it could approve its own ask."""
    # lazy: 2,200 ms (the MCP SDK) of cold `fire` and `bridge`; only the server
    from mcp.server.mcpserver.exceptions import ToolError

    def settle(ask_id: str, given: AskAnswer) -> dict[str, Any]:
        try:
            done = answer(store, ask_id, given)
        except (UnknownAsk, AskExpired, AskAnswered, RunError) as exc:
            raise ToolError(str(exc)) from None
        return {("approved" if given.approved else "refused"): done.id,
                "session_id": done.session_id, "tool_name": done.tool_name,
                "tool_input": done.tool_input, "for_session": given.for_session}

    async def pending_asks() -> dict[str, Any]:
        """The asks waiting for a person, oldest first: id, session, tool, its exact
        arguments, the hook's reason, age and expiry."""
        try:
            waiting = await anyio.to_thread.run_sync(store.pending_asks)
        except RunError as exc:
            raise ToolError(str(exc)) from None
        at = time.time()
        return {"asks": [{**r.as_dict(), "age_seconds": round(at - r.created, 3)}
                         for r in waiting]}

    async def approve_ask(ask_id: str, for_session: bool = False,
                          by: str = "mcp") -> dict[str, Any]:
        """Approve the ask ``ask_id`` (its exact call; ``for_session``: the same call again
        in its session). The first answer stands: a second is an error."""
        given = AskAnswer(True, by=by or "mcp", channel="mcp", for_session=for_session)
        return await anyio.to_thread.run_sync(settle, ask_id, given)

    async def refuse_ask(ask_id: str, reason: str, by: str = "mcp") -> dict[str, Any]:
        """Refuse the ask ``ask_id``; ``reason`` reaches the agent."""
        if not reason.strip():
            raise ToolError('a refusal needs a "reason" for the agent')
        given = AskAnswer(False, reason=reason, by=by or "mcp", channel="mcp")
        return await anyio.to_thread.run_sync(settle, ask_id, given)

    server.add_tool(pending_asks, title="Asks waiting for a person")
    server.add_tool(approve_ask, title="Approve one exact call a hook asked about")
    server.add_tool(refuse_ask, title="Refuse one exact call a hook asked about")


__all__ = ["ASKS_PATH", "ask_routes", "register_ask_tools"]
