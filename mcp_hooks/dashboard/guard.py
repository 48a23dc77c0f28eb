"""Who may look: the dashboard's token rules, and what every answer carries.

The rules (``serve``'s, for a browser):

- Without a token (a loopback bind: ``dashboard`` and ``serve`` refuse to listen off loopback
  without one) every request is served.
- With a token, a request must carry it as ``Authorization: Bearer <token>`` (scripts,
  Prometheus) or carry the session cookie ``COOKIE`` that ``POST login`` sets after a person
  typed the token into the login form. The cookie holds an HMAC of the token, never the token;
  it is ``HttpOnly``, ``SameSite=Strict`` and scoped to the dashboard's path. Comparisons are
  constant-time. The token never appears in a page, a URL or a log line.
- A page asked for without it answers 401 with the login form; a JSON endpoint or
  ``/metrics`` answers 401 with ``WWW-Authenticate: Bearer``.
- ``POST login`` is refused (403) when its ``Origin`` names another site (login CSRF).
- Every answer is ``Cache-Control: no-store`` and carries a Content-Security-Policy that
  allows only the dashboard's own script and style (no inline script, no other origin).
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

from starlette.requests import Request

COOKIE = "mcp_hooks_dashboard"
_COOKIE_PURPOSE = b"mcp-hooks dashboard session v1"
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; "
    "base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # a sign-in form's Origin is then sent
    "X-Frame-Options": "DENY",
}


def cookie_value(token: str) -> str:
    """The session cookie's value for ``token``: its HMAC, from which the token cannot be
    read back."""
    return hmac.new(token.encode(), _COOKIE_PURPOSE, hashlib.sha256).hexdigest()


def authorized(request: Request, token: str | None) -> bool:
    """Whether ``request`` may see the dashboard (always, without a token)."""
    if token is None:
        return True
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                          token.encode()):
        return True
    cookie = request.cookies.get(COOKIE, "")
    return bool(cookie) and hmac.compare_digest(cookie.encode(), cookie_value(token).encode())


def same_origin(request: Request) -> bool:
    """Whether a state-changing request comes from the dashboard's own pages: its ``Origin``
    (or, without one, its ``Referer``) names this host, or it names none (not a browser)."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin:
        return True
    return urlsplit(origin).netloc == request.headers.get("host", "")


def base_path(request: Request) -> str:
    """Where the dashboard is mounted (``/dashboard`` under ``serve``; empty standalone)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


__all__ = ["COOKIE", "HEADERS", "authorized", "base_path", "cookie_value", "same_origin"]
