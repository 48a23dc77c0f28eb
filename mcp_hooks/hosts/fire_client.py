"""``mcp-hooks fire`` answered by a running server (``POST /hooks/fire``), standard library only.

``fire`` is one process per event: a persistent hook would start and end with it. When a
server is configured (``--server URL`` or ``MCP_HOOKS_SERVER``), ``fire`` sends the event
there instead, where the engine, and every resident hook process, stay warm. The request is
signed as forward protocol v2 (``forward_auth``): it proves the client holds the token without
sending it, so whatever listens on the port learns nothing it could reuse; the answer counts
only when it is signed over that very request, so only the server holding the token can
answer it. Anything else (no token, no server, a refused connection, an unsigned or
forged ``200``, a signed ``422``, no answer within ``MCP_HOOKS_FORWARD_TIMEOUT`` seconds,
default 5, for the whole exchange, an answer over ``forward_http.MAX_ANSWER_BYTES``, an event
over ``MAX_REQUEST_BYTES``) is ``Forwarded(None, why)``: the caller runs the event itself and
says why on stderr, so the answer is never lost and never forged. But an error status from
the server's address (unsigned and not 200, or signed and neither 200 nor 422: a proxy's 404
for a path it does not route, a 401 for a wrong token, a 5xx) is
``Forwarded(None, why, refused=True)``: the policy server is configured and its path is
broken, so the caller denies the event naming the URL, the status and the fix, instead of
deciding quietly on this machine.

The exchange itself (``forward_http``, shared with the forward script): a plain ``http://``
URL is spoken to over a socket by hand (one POST, ``Connection: close``); ``https://`` goes
through ``http.client``, with a watchdog that cuts the connection at the deadline.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import SplitResult, quote, urlsplit

from mcp_hooks.errors import ConfigError
from mcp_hooks.hosts.forward import FIRE_PATH
from mcp_hooks.hosts.forward_auth import (
    DEFAULT_FORWARD_TIMEOUT_S,
    FORWARD_TIMEOUT_ENV,
    answer_problem,
    sign_request,
)
from mcp_hooks.hosts.forward_http import MAX_REQUEST_BYTES, post_library, post_plain
from mcp_hooks.spec.outcome import Outcome

SERVER_ENV = "MCP_HOOKS_SERVER"  # named in messages (Settings.server reads it)
TOKEN_ENV = "MCP_HOOKS_TOKEN"  # named in the fix of a 401


@dataclass(frozen=True)
class Server:
    """Where to send events: the server's base URL (``/mcp`` is dropped), its token, and the
    deadline of one whole forward in seconds."""

    url: str
    token: str | None
    timeout: float = DEFAULT_FORWARD_TIMEOUT_S


class Forwarded(NamedTuple):
    """The server's verified outcome, or None and why the caller must run the event itself;
    ``refused``: the server's address answered with an error status (a proxy's 404, a 401
    for a wrong token, a 5xx): the caller denies, naming ``why``, instead."""

    outcome: Outcome | None
    why: str = ""
    refused: bool = False


UNSIGNED = "no signature"  # answer_problem's word for an answer without one
_FIXES = {404: f"nothing answers {FIRE_PATH} there: route /hooks/ to the server (a proxy "
               "that forwards only /mcp answers 404: docs/deploy.md), and serve it with --token",
          401: "the server refused the request's signature: give fire the server's token "
               f"(--token, {TOKEN_ENV})"}


def refused(url: str, status: int, body: bytes) -> str:
    """Why an error status from the server's address is a deny: the URL, the status, what
    it said, and the fix."""
    fix = _FIXES.get(status, "fix the server, or the --server URL (MCP_HOOKS_SERVER), or run "
                             "the hooks here with --no-server")
    return f"the policy server {url}{FIRE_PATH} answered HTTP {status}{_said(body)}; {fix}"


def configured(url: str | None, token: str | None, timeout: float = DEFAULT_FORWARD_TIMEOUT_S,
               *, warning: str | None = None, no_server: bool = False) -> Server | None:
    """The server ``fire`` should use: ``url`` (``Settings.server``: ``--server``, else
    ``MCP_HOOKS_SERVER``); None when it is not set or ``no_server``. The token: ``token``
    (``Settings.token``: ``--token``, else ``MCP_HOOKS_TOKEN``), else the one ``install --via
    server`` wrote beside its script. The deadline: ``timeout`` (``Settings.forward_timeout``:
    ``MCP_HOOKS_FORWARD_TIMEOUT``); ``warning``, what was wrong with it, is said on stderr."""
    url = (url or "").strip()
    if no_server or not url:
        return None
    if not token:
        # lazy: 28 ms of cold `fire` when the token is in the environment
        from mcp_hooks.hosts.forward_script import read_token

        token = read_token()
    base = url.rstrip("/")
    if base.endswith("/mcp"):  # the address `serve` announces
        base = base[: -len("/mcp")]
    if warning:
        print(f"mcp-hooks fire: {warning}", file=sys.stderr)
    return Server(base, token, timeout)


def _said(body: bytes) -> str:
    """The first line of an answer's text, short and printable (for one stderr line)."""
    lines = body.decode("utf-8", "replace").strip().splitlines()
    text = "".join(c if c.isprintable() else "?" for c in lines[0][:300]) if lines else ""
    return f": {text}" if text else ""


def _exchange(server: Server, parts: SplitResult, target: str, headers: dict[str, str],
              payload: bytes, deadline: float) -> tuple[int, dict[str, str], bytes] | Forwarded:
    """POST ``payload`` to ``server`` within ``deadline``: the answer's status, headers and
    body, or the ``Forwarded(None, why)`` of an exchange that failed."""
    host, port = parts.hostname or "", parts.port or (80 if parts.scheme == "http" else 443)
    try:
        if parts.scheme == "http":
            return post_plain(host, port, target, headers, payload, deadline)
        return post_library(parts.scheme, host, port, target, headers, payload, deadline)
    except (OSError, ValueError) as exc:
        if time.monotonic() >= deadline:
            return Forwarded(None, f"no answer from {server.url} within {server.timeout:g} s "
                             f"({FORWARD_TIMEOUT_ENV})")
        if isinstance(exc, ValueError):
            return Forwarded(None, f"no usable answer from {server.url}: {exc}")
        return Forwarded(None, f"no answer from {server.url} ({type(exc).__name__}: {exc})")


def forward_fire(server: Server, fields: dict[str, Any], *, user_dir: Path,
                 project_dir: Path) -> Forwarded:
    """Fire the event ``fields`` (``Event`` fields) at ``server``; never raises.

    ``user_dir`` and ``project_dir`` are the hooks folders a local run would load: the server
    answers only if it loads the same ones (else ``422``, and the caller runs them).
    """
    if not server.token:
        return Forwarded(None, f"no token for {server.url}: pass --token, set {TOKEN_ENV}, or "
                         "run `mcp-hooks install HOST --via server --token ...`")
    parts = urlsplit(server.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return Forwarded(None, f"{server.url} is not an http:// or https:// URL (--server, "
                         f"{SERVER_ENV})")
    payload = json.dumps(fields, ensure_ascii=True).encode()
    if len(payload) > MAX_REQUEST_BYTES:
        return Forwarded(None, f"the event is {len(payload)} bytes of JSON, over the cap of "
                         f"{MAX_REQUEST_BYTES} bytes the server reads")
    # ask=now: a hook's ask is the deny naming the pending id at once (fire_ask.py), never a
    # wait on the server that outlives this client's deadline
    target = parts.path.rstrip("/") + FIRE_PATH + "?ask=now"
    signed = sign_request(server.token, target, payload, user_dir=quote(str(user_dir)),
                          project_dir=quote(str(project_dir)))
    deadline = time.monotonic() + server.timeout
    exchanged = _exchange(server, parts, target, {"Content-Type": "application/json",
                                                  **signed.headers}, payload, deadline)
    if isinstance(exchanged, Forwarded):
        return exchanged
    status, answer_headers, body = exchanged
    problem = answer_problem(server.token, signed, status, answer_headers, body)
    if problem and (status == 200 or problem != UNSIGNED):
        return Forwarded(None, f"{server.url} answered {status} with {problem}, so it is not "
                         f"believed{_said(body)}")
    if status == 422 and not problem:  # the server's own "run it yourself"
        return Forwarded(None, f"{server.url} answered {status}{_said(body)}")
    if status != 200:
        return Forwarded(None, refused(server.url, status, body), refused=True)
    try:
        return Forwarded(Outcome.from_json(body))
    except ConfigError as exc:
        return Forwarded(None, f"{server.url} answered something that is not an outcome: {exc}")


__all__ = ["SERVER_ENV", "TOKEN_ENV", "Forwarded", "Server", "configured", "forward_fire"]
