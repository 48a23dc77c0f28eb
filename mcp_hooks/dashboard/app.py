"""The dashboard as a Starlette app: five pages, their JSON endpoints, login, ``/metrics``.

``dashboard_app(config)`` is served by ``mcp-hooks dashboard`` and mounted by ``serve
--transport http --dashboard`` at ``/dashboard``. Routes (relative to where it is mounted):

- ``GET /`` redirects to ``activity``; ``GET /activity|hooks|sessions|pending|fleet`` are the
  pages: one HTML shell (``static/page.html``) that holds no value from the log; the page's
  script (``static/dashboard.js``) fetches the JSON and writes every value as text.
- ``GET /api/events`` (``limit``, ``session``, ``hook``, ``decision``, ``door``, ``since``,
  ``until``, ``after``: the cursor of the previous answer, for the new events only),
  ``/api/hooks`` (``window``), ``/api/session`` (``id``), ``/api/pending`` (the asks and
  the signals waiting for a person), ``/api/fleet``: JSON.
- ``POST /api/asks/<id>/approve|refuse``: the Pending page's buttons (``answers.py``).
  A bad parameter is 400 ``{"error": ...}`` naming it; a store that cannot be read is
  503 ``{"error": ...}`` saying what is wrong and the fix (a page shows the same, as text).
- ``GET /login`` the form, ``POST /login`` checks the token and sets the session cookie
  (``guard.py``); ``GET /metrics`` when metrics are on.

Reading the store is blocking: every endpoint reads in a worker thread.
"""

from __future__ import annotations

import html
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from mcp_hooks.dashboard import views
from mcp_hooks.dashboard.answers import NO_TOKEN, answer_from_page
from mcp_hooks.dashboard.guard import (
    COOKIE,
    HEADERS,
    authorized,
    base_path,
    cookie_value,
    same_origin,
)
from mcp_hooks.dashboard.params import ParamError, event_filters, hooks_window, limit_of
from mcp_hooks.dashboard.source import Filters, Source, SourceError
from mcp_hooks.metrics import CONTENT_TYPE, Metrics
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.registry.trust import TrustStore

PAGES = {"activity": "Activity", "hooks": "Hooks", "sessions": "Sessions",
         "pending": "Pending", "fleet": "Fleet"}
HOOKS_RECORDS = 20000  # events the Hooks page counts at most (the latest)
Handler = Callable[[Request], Awaitable[Response]]


@dataclass
class DashboardConfig:
    """What the dashboard shows and who may see it.

    Attributes:
        source: the store read.
        token: the token a request must carry (None: a loopback bind, none needed).
        roots: the project folders whose hooks the Hooks page lists.
        user_dir: the user hooks folder (None: the default).
        metrics: serve ``/metrics`` from these (None: no ``/metrics``).
        trust_project_hooks: list every project hook as trusted (``Registry``'s flag).
        trust_store: the trust store project hooks are listed against (the door's:
            ``options.trust_store_of``, a shared ``--state``'s digests too); None: not said,
            the environment's file.
        managed_dir: the managed hooks folder (``Settings``'; False: none; None: not said).
        allowed_hosts: the ``Host`` names answered (DNS rebinding; empty: any).
    """

    source: Source
    token: str | None = field(default=None, repr=False)
    roots: tuple[Path, ...] = ()
    user_dir: Path | None = None
    trust_project_hooks: bool = False
    trust_store: TrustStore | None = None
    managed_dir: Path | Literal[False] | None = None
    metrics: Metrics | None = None
    allowed_hosts: tuple[str, ...] = ()  # answer only these Host names (empty: any)


def _static(name: str) -> str:
    return (resources.files("mcp_hooks.dashboard") / "static" / name).read_text("utf-8")


def _page(title: str, page: str, body: str = "") -> str:
    """The HTML shell of a page (``body``: server-made HTML, already escaped)."""
    nav = "".join(f'<a href="{p}"{" class=here" if p == page else ""}>{t}</a>'
                  for p, t in PAGES.items())
    return (_static("page.html").replace("{{title}}", html.escape(title))
            .replace("{{page}}", page).replace("{{nav}}", nav).replace("{{body}}", body))


def _problem(message: str, status: int) -> HTMLResponse:
    body = (f'<section class="problem"><h2>The dashboard cannot show this</h2>'
            f"<p>{html.escape(message)}</p></section>")
    return HTMLResponse(_page("Problem", "problem", body), status_code=status, headers=HEADERS)


def _login(request: Request, message: str = "", status: int = 401) -> HTMLResponse:
    note = f'<p class="problem">{html.escape(message)}</p>' if message else ""
    body = (f'<section class="login"><h2>Sign in</h2>{note}<p>This dashboard needs the '
            f"server's token (--token or MCP_HOOKS_TOKEN).</p>"
            f'<form method="post" action="{html.escape(base_path(request))}/login">'
            f'<input type="password" name="token" autocomplete="current-password" '
            f'aria-label="token" required> <button type="submit">Sign in</button></form>'
            f"</section>")
    return HTMLResponse(_page("Sign in", "login", body), status_code=status, headers=HEADERS)


class Dashboard:
    """The endpoints, over one ``DashboardConfig``."""

    def __init__(self, config: DashboardConfig) -> None:
        self.config = config
        self._registries: list[tuple[Path, Registry]] | None = None

    # -- guards ----------------------------------------------------------------------------

    def guarded(self, handler: Handler, *, api: bool) -> Handler:
        """``handler`` behind the token: 401 (the login form for a page) without it."""
        async def endpoint(request: Request) -> Response:
            if not authorized(request, self.config.token):
                if not api:
                    return _login(request)
                return JSONResponse({"error": "this dashboard needs its token: send "
                                     "'Authorization: Bearer <token>' or sign in"},
                                    status_code=401, headers={
                                        **HEADERS, "WWW-Authenticate": 'Bearer realm="mcp-hooks"'})
            try:
                return await handler(request)
            except ParamError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400, headers=HEADERS)
            except SourceError as exc:
                if api:
                    return JSONResponse({"error": str(exc)}, status_code=503, headers=HEADERS)
                return _problem(str(exc), 503)
        return endpoint

    # -- pages -----------------------------------------------------------------------------

    async def root(self, request: Request) -> Response:
        return RedirectResponse(f"{base_path(request)}/activity", status_code=303,
                                headers=HEADERS)

    async def page(self, request: Request) -> Response:
        name = request.url.path.rstrip("/").rpartition("/")[2]
        problem = await run_in_threadpool(self.config.source.health)
        if problem is not None:
            return _problem(problem, 503)
        return HTMLResponse(_page(PAGES[name], name), headers=HEADERS)

    async def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        kinds = {"dashboard.css": "text/css", "dashboard.js": "text/javascript"}
        if name not in kinds:
            return Response("not found\n", status_code=404, headers=HEADERS)
        return Response(_static(name), media_type=kinds[name],
                        headers={**HEADERS, "Cache-Control": "no-cache"})

    async def login_form(self, request: Request) -> Response:
        return _login(request, status=200)

    async def login(self, request: Request) -> Response:
        if not same_origin(request):
            return _problem("sign-in refused: the form was sent from another site", 403)
        token = self.config.token
        if token is None:
            return await self.root(request)
        body = (await request.body())[:4096].decode("utf-8", errors="replace")
        given = (parse_qs(body).get("token") or [""])[0]
        if cookie_value(given) != cookie_value(token):
            return _login(request, "That is not this server's token.")
        answer = await self.root(request)
        answer.set_cookie(COOKIE, cookie_value(token), httponly=True, samesite="strict",
                          path=f"{base_path(request)}/",
                          secure=request.url.scheme == "https")
        return answer

    async def metrics(self, request: Request) -> Response:
        metrics = self.config.metrics
        if metrics is None:
            return Response("not found\n", status_code=404, headers=HEADERS)
        data = await run_in_threadpool(metrics.render)
        return Response(data, media_type=CONTENT_TYPE, headers={"Cache-Control": "no-store"})

    # -- JSON ------------------------------------------------------------------------------

    async def events(self, request: Request) -> Response:
        params = request.query_params
        keep = event_filters(params)
        limit = limit_of(params)
        after = params.get("after")
        source = self.config.source
        if after is not None:
            records, cursor = await run_in_threadpool(source.newer, after, keep)
            records = records[-limit:]
        else:
            records, cursor = await run_in_threadpool(source.recent, limit, keep)
        return JSONResponse({"events": [views.activity_row(r) for r in records],
                             "cursor": cursor, "store": source.name}, headers=HEADERS)

    async def hooks(self, request: Request) -> Response:
        since = hooks_window(request.query_params)
        records, _ = await run_in_threadpool(self.config.source.recent, HOOKS_RECORDS,
                                             Filters(since=since))
        registries = await run_in_threadpool(self._hook_registries)
        return JSONResponse({"hooks": views.hook_table(registries, records),
                             "chart": views.decisions_over_time(records),
                             "events": len(records)}, headers=HEADERS)

    async def session(self, request: Request) -> Response:
        session_id = event_filters(request.query_params).session
        if session_id is None:
            raise ParamError("id: name the session (?id=SESSION_ID); the Activity page "
                             "links each session")
        events, signals = await run_in_threadpool(self.config.source.session, session_id)
        return JSONResponse({"session": session_id,
                             "timeline": views.timeline(events, signals)}, headers=HEADERS)

    async def pending(self, request: Request) -> Response:
        source = self.config.source
        signals = await run_in_threadpool(source.signals)
        asks = await run_in_threadpool(source.asks)
        at = time.time()
        return JSONResponse({"signals": views.pending(signals),
                             "asks": [views.ask_row(r, at) for r in asks],
                             "can_answer": self.config.token is not None,
                             "cannot_answer": None if self.config.token else NO_TOKEN},
                            headers=HEADERS)

    async def answer(self, request: Request) -> Response:
        """``POST /api/asks/<id>/approve|refuse``: a person's answer from the Pending page
        (see ``answers.py`` for the rules)."""
        return await answer_from_page(request, self.config.source, self.config.token)

    async def fleet(self, request: Request) -> Response:
        source = self.config.source
        records, _ = await run_in_threadpool(source.recent, HOOKS_RECORDS, Filters())
        health = await run_in_threadpool(source.health)
        return JSONResponse({**views.fleet(records), "store": source.name,
                             "health": health or "ok"}, headers=HEADERS)

    def _hook_registries(self) -> list[tuple[Path, Registry]]:
        if self._registries is None:
            config = self.config
            self._registries = [
                (root, Registry(config.user_dir, root, watch=False,
                                trust_project_hooks=config.trust_project_hooks,
                                trust_store=config.trust_store,
                                managed_dir=config.managed_dir))
                for root in config.roots]
        for _, registry in self._registries:
            registry.refresh()
        return self._registries

    def routes(self) -> list[Route]:
        g = self.guarded
        routes = [Route("/", g(self.root, api=False)),
                  Route("/static/{name}", self.asset),
                  Route("/login", self.login_form, methods=["GET"]),
                  Route("/login", self.login, methods=["POST"]),
                  Route("/metrics", g(self.metrics, api=True)),
                  Route("/api/events", g(self.events, api=True)),
                  Route("/api/hooks", g(self.hooks, api=True)),
                  Route("/api/session", g(self.session, api=True)),
                  Route("/api/pending", g(self.pending, api=True)),
                  Route("/api/asks/{ask_id}/{verb}", g(self.answer, api=True),
                        methods=["POST"]),
                  Route("/api/fleet", g(self.fleet, api=True))]
        routes += [Route(f"/{name}", g(self.page, api=False)) for name in PAGES]
        return routes


def pending_count(source: Source) -> int:
    """How many asks and block/prompt signals wait for a person's answer
    (``mcp_hooks_asks_pending``)."""
    return len(views.pending(source.signals())) + len(source.asks())


def dashboard_app(config: DashboardConfig) -> Starlette:
    """The dashboard's ASGI app (mount it, or serve it alone)."""
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=list(config.allowed_hosts))
                  ] if config.allowed_hosts else []
    return Starlette(routes=Dashboard(config).routes(), middleware=middleware)


__all__ = ["PAGES", "DashboardConfig", "dashboard_app", "pending_count"]
