"""Health and readiness for a load balancer: ``GET /healthz`` and ``GET /readyz``, no token.

The contract (``serve --transport http|sse``, and ``proxy`` on HTTP/SSE):

- ``GET /healthz`` (or ``HEAD``): ``200`` and the body ``ok`` while the process serves HTTP
  (live). Nothing else is read.
- ``GET /readyz`` (or ``HEAD``): ``200`` and ``ready`` once the server can decide: the hooks of
  its default project are loaded (the first probe loads them) and, with a shared ``--state``,
  the store answers one bounded call now; else ``503`` and ``not ready``. Why it is not ready
  goes to the server's log, never into the answer.
- Both answer without ``Authorization`` (``bearer.BearerTokenMiddleware`` lets exactly
  these two paths through, for ``GET`` and ``HEAD``) and say nothing but that one word:
  no version, no hook, no folder, no store URL. Answers are ``Cache-Control: no-store``.

``health_routes(ready)`` builds them; ``ready`` is an async callable that returns True when
ready and logs why not otherwise (default ``serving``: ready once listening, the proxy's case,
whose engine is loaded before it listens). ``store_ready`` is the store half of ``serve``'s
check.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from mcp_hooks.state.spool import store_fault

if TYPE_CHECKING:
    from starlette.routing import Route

    from mcp_hooks.state.store import StateStore

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
PROBE_PATHS = (HEALTH_PATH, READY_PATH)
PROBE_METHODS = ("GET", "HEAD")

logger = logging.getLogger("mcp_hooks.server.health")

Ready = Callable[[], Awaitable[bool]]


def is_probe(method: str, path: str) -> bool:
    """Whether a request is a health or readiness probe (answered without a token)."""
    return path in PROBE_PATHS and method in PROBE_METHODS


def store_ready(store: StateStore) -> str | None:
    """None when ``store`` answers now (the file store always does), else what broke. One
    bounded call (two while the store is known lost: ``store_fault`` asks first, and replays
    the spool when it answers); blocking: run it off the event loop."""
    fault = store_fault(store)
    if fault is not None:
        return fault
    probe = getattr(store, "probe", None)
    return probe() if callable(probe) else None


async def serving() -> bool:
    """Ready as soon as it serves: for a server whose hooks are loaded before it listens
    (``proxy``: its engine is entered before it starts)."""
    return True


def health_routes(ready: Ready = serving) -> list[Route]:
    """The ``/healthz`` and ``/readyz`` routes; ``ready`` says whether the server can decide
    (and logs why not)."""
    # lazy: 340 ms (starlette) of cold start for every command that reads serve's flags
    from starlette.requests import Request

    # lazy: 340 ms (starlette) of cold start for every command that reads serve's flags
    from starlette.responses import PlainTextResponse, Response

    # lazy: 340 ms (starlette) of cold start for every command that reads serve's flags
    from starlette.routing import Route

    headers = {"Cache-Control": "no-store"}

    async def live(request: Request) -> Response:
        return PlainTextResponse("ok\n", headers=headers)

    async def readiness(request: Request) -> Response:
        try:
            ok = await ready()
        except Exception:  # a probe must answer, and say nothing of why
            logger.exception("readiness check failed")
            ok = False
        if ok:
            return PlainTextResponse("ready\n", headers=headers)
        return PlainTextResponse("not ready\n", status_code=503, headers=headers)

    methods = list(PROBE_METHODS)
    return [Route(HEALTH_PATH, live, methods=methods),
            Route(READY_PATH, readiness, methods=methods)]


__all__ = ["HEALTH_PATH", "PROBE_PATHS", "READY_PATH", "health_routes", "is_probe",
           "serving", "store_ready"]
