"""The bearer-token check of every HTTP/SSE request a server of ours answers (``serve``,
``proxy``): ``BearerTokenMiddleware`` and the requests it lets through unchecked, each because
something else checks it (the forwarding endpoints' signed requests, the dashboard, the load
balancer's probes). ``transport.build_http_app`` puts it in front of the app when a token is set.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

from mcp_hooks.server.health import is_probe

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_ENV = "MCP_HOOKS_TOKEN"

AUTH_HINT = (f"set the 'Authorization: Bearer <token>' header (the token is {TOKEN_ENV} on "
             "the server)")
NOT_OAUTH = f"this server takes a static bearer token, not OAuth: {AUTH_HINT}"
# What an OAuth client asks for after a 401: protected-resource metadata (RFC 9728),
# authorization-server metadata (RFC 8414, OpenID discovery), and the endpoints the MCP
# TypeScript SDK falls back to when it finds no metadata (dynamic registration at /register).
_OAUTH_PREFIXES = ("/.well-known/oauth-protected-resource",
                   "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")
_OAUTH_FALLBACKS = ("/register", "/authorize", "/token")
# Requests the routes authenticate themselves: a POST to a forwarding endpoint
# (server/forward.py: /hooks/fire, /hooks/bridge/<host>) carrying X-MCP-Hooks-Auth (forward
# protocol v2: a MAC over the request, its time and a nonce, checked there before the body
# is read) needs no bearer token here. Any other request, under /hooks/ or not, needs the
# bearer (Claude Code's own http hooks send it to /hooks/bridge/).
SELF_AUTHENTICATED_PATH = "/hooks/fire"  # hosts/forward.py FIRE_PATH (a test checks)
SELF_AUTHENTICATED_PREFIX = "/hooks/bridge/"  # + <host>: FORWARD_PATH
SELF_AUTHENTICATED_HEADER = b"x-mcp-hooks-auth"
DASHBOARD_PATH = "/dashboard"  # serve --dashboard: the dashboard checks the token itself
_PROBLEMS = {  # what is wrong with a request's credentials (BearerTokenMiddleware._problem)
    "missing": "this mcp-hooks server needs a bearer token and the request sent none",
    "scheme": "the Authorization header is not a bearer token",
    "wrong": "the bearer token is not this server's",
}


def is_oauth_path(path: str) -> bool:
    """Whether ``path`` is one an OAuth client probes (discovery or the legacy fallbacks)."""
    return path in _OAUTH_FALLBACKS or any(
        path == prefix or path.startswith(prefix + "/") for prefix in _OAUTH_PREFIXES)


class BearerTokenMiddleware:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``.

    The contract, chosen so that MCP clients with a static token just work and clients
    without one are told what to set instead of being sent into OAuth:

    - The token is compared in constant time (``hmac.compare_digest``).
    - A missing or wrong token gets 401 with ``WWW-Authenticate: Bearer realm="mcp-hooks"``
      (plus ``error="invalid_token"`` when a token was sent, RFC 6750 section 3.1) and *no*
      ``resource_metadata``: nothing in the answer points at an authorization server. The
      JSON body (``{"error", "error_description"}``, which the MCP SDKs show) says to set
      the ``Authorization`` header and where the token comes from (``AUTH_HINT``).
    - The OAuth discovery documents and fallback endpoints (``is_oauth_path``) answer 404
      with ``NOT_OAUTH`` as an OAuth error body, token or not: no protected-resource
      metadata is published, so a client finds no OAuth to start, and one that tries dynamic
      registration anyway reports our message.
    - Lifespan events pass through, and so do forward protocol v2 POSTs to the forwarding
      endpoints (``_self_authenticated``: ``/hooks/fire``, ``/hooks/bridge/<host>``, with
      ``SELF_AUTHENTICATED_HEADER``): they check the request themselves, before reading its
      body, and a client that must not send its token to whoever holds the port never does.
    - The load balancer's probes pass through: ``GET``/``HEAD`` of ``/healthz`` and
      ``/readyz`` (``health.is_probe``), which answer one status word and nothing else.
    - ``/dashboard`` and below pass to the dashboard (``serve --dashboard``), which requires
      the same token itself: this header, or its sign-in cookie (``dashboard/guard.py``).
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        # lazy: 340 ms (starlette) of cold start for every command that reads serve's flags
        from starlette.responses import JSONResponse

        if scope["type"] == "http" and is_oauth_path(scope.get("path", "")):
            await JSONResponse(
                {"error": "invalid_request", "error_description": NOT_OAUTH},
                status_code=404,
            )(scope, receive, send)
            return
        problem = None if _self_authenticated(scope) or _dashboard(scope) or is_probe(
            scope.get("method", ""), scope.get("path", "")) else self._problem(scope)
        if problem is None:
            await self.app(scope, receive, send)
            return
        challenge = 'Bearer realm="mcp-hooks"'
        error = "unauthorized"
        if problem != "missing":
            challenge += ', error="invalid_token"'
            error = "invalid_token"
        await JSONResponse(
            {"error": error, "error_description": f"{_PROBLEMS[problem]}: {AUTH_HINT}"},
            status_code=401, headers={"WWW-Authenticate": challenge},
        )(scope, receive, send)

    def _problem(self, scope: Scope) -> str | None:
        """None when authorized, else ``missing``, ``scheme`` or ``wrong``."""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, given = bytes(value).partition(b" ")
                if scheme.lower() != b"bearer":
                    return "scheme"
                return None if hmac.compare_digest(given.strip(), self._token) else "wrong"
        return "missing"


def _dashboard(scope: Scope) -> bool:
    """Whether the request is for the dashboard (``serve --dashboard``), which checks the
    token itself: as this bearer header, or as the cookie its sign-in form sets
    (``dashboard/guard.py``). Without the dashboard mounted the path is a plain 404."""
    path = str(scope.get("path", ""))
    return path == DASHBOARD_PATH or path.startswith(DASHBOARD_PATH + "/")


def _self_authenticated(scope: Scope) -> bool:
    """Whether the request is a signed forwarding request (its route checks it): a POST to
    ``/hooks/fire`` or ``/hooks/bridge/<host>`` (one segment) with ``X-MCP-Hooks-Auth``."""
    if scope["type"] != "http" or scope.get("method") != "POST":
        return False
    path = str(scope.get("path", ""))
    host = path[len(SELF_AUTHENTICATED_PREFIX):] if path.startswith(
        SELF_AUTHENTICATED_PREFIX) else ""
    if path != SELF_AUTHENTICATED_PATH and (not host or "/" in host):
        return False
    return any(name == SELF_AUTHENTICATED_HEADER for name, _ in scope.get("headers", ()))
