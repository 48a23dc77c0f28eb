"""The Pending page's buttons: a person approves or refuses a waiting ask.

``POST /api/asks/<id>/approve`` and ``POST /api/asks/<id>/refuse`` with a JSON body
``{"for_session": bool, "reason": "...", "by": "name"}`` (``spec.asking.answer_of``: a
refusal needs its reason; ``by`` is the name the person gave the page, else "dashboard").
The rules, on top of the dashboard's token (``guard.py``, checked before this runs):

- **A token**: a dashboard without one (a loopback bind) shows the asks but answers none
  (403): whoever reaches a loopback port, the agent on that machine too, could approve its
  own ask, as ``serve`` mounts ``/asks`` only with a token.

- **CSRF**: the request must carry the header ``X-MCP-Hooks-Answer: 1`` and a JSON body,
  which a form or a link of another site cannot send (a script of another origin could only
  after a CORS preflight the dashboard never grants), and its ``Origin``, when given, must
  be this host (``guard.same_origin``). Else 403.
- One answer wins (``state.asks.answer``): 404 an unknown id, 410 an expired one, 409 one
  answered already (a second click, another person, the CLI); 400 a body that is not the
  answer; 413 one over ``MAX_BODY``; 503 a store that cannot be reached. Every error is
  ``{"error": "..."}`` saying what is wrong.
- Each answer is logged by the store (``ask_answer``, channel ``dashboard``, ``by``) and seen
  by the waiting door within its poll.
"""

from __future__ import annotations

import json

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcp_hooks.dashboard.body import MAX_ANSWER_BODY, read_capped
from mcp_hooks.dashboard.guard import HEADERS, same_origin
from mcp_hooks.dashboard.source import Source
from mcp_hooks.spec.asking import answer_of
from mcp_hooks.state.store import AskAnswered, AskExpired, UnknownAsk

CHANNEL = "dashboard"
CSRF_HEADER = "x-mcp-hooks-answer"
MAX_BODY = MAX_ANSWER_BODY  # bytes of an answer's body
VERBS = ("approve", "refuse")
NO_TOKEN = ("this dashboard answers no ask: it has no token, so the agent on this machine "
            "could approve its own; start it with --token (or MCP_HOOKS_TOKEN) to answer "
            "here, or use mcp-hooks approve / refuse")


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=HEADERS)


def _forged(request: Request) -> str | None:
    """Why ``request`` may come from another site, or None."""
    if request.headers.get(CSRF_HEADER) != "1":
        return (f"refused: an answer must carry the header {CSRF_HEADER}: 1, which only "
                "the dashboard's own page sends")
    if request.headers.get("content-type", "").partition(";")[0].strip() != \
            "application/json":
        return "refused: an answer's body must be JSON (Content-Type: application/json)"
    if not same_origin(request):
        return "refused: the answer was sent from another site"
    return None


async def answer_from_page(request: Request, source: Source, token: str | None) -> Response:
    """Answer the ask the path names with the body's answer (see the module docstring);
    ``token``: the dashboard's (None: it answers no ask)."""
    verb, ask_id = request.path_params["verb"], request.path_params["ask_id"]
    if verb not in VERBS:
        return _error("use /api/asks/<id>/approve or /api/asks/<id>/refuse", 404)
    if token is None:
        return _error(NO_TOKEN, 403)
    forged = _forged(request)
    if forged is not None:
        return _error(forged, 403)
    raw = await read_capped(request, MAX_BODY)  # never read past the cap
    if raw is None:
        return _error(f"the body is over {MAX_BODY} bytes", 413)
    try:
        given = answer_of(json.loads(raw) if raw.strip() else {}, verb == "approve",
                          channel=CHANNEL)
    except (ValueError, RecursionError) as exc:
        return _error(str(exc), 400)
    try:
        done = await run_in_threadpool(source.answer, ask_id, given)
    except (UnknownAsk, AskExpired, AskAnswered) as exc:
        return _error(str(exc), exc.http_status)
    return JSONResponse({("approved" if given.approved else "refused"): done.id,
                         "session_id": done.session_id, "tool_name": done.tool_name,
                         "for_session": given.for_session, "by": given.by},
                        headers=HEADERS)


__all__ = ["CHANNEL", "CSRF_HEADER", "NO_TOKEN", "answer_from_page"]
