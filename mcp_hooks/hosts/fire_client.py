"""``mcp-hooks fire`` answered by a running server (``POST /hooks/fire``), standard library only.

``fire`` is one process per event: a persistent hook would start and end with it. When a
server is configured (``--server URL`` or ``MCP_HOOKS_SERVER``), ``fire`` sends the event
there instead, where the engine, and every resident hook process, stay warm. The request is
signed as forward protocol v2 (``forward_auth``): it proves the client holds the token without
sending it, so whatever listens on the port learns nothing it could reuse; the answer counts
only when it is signed over that very request, so only the server holding the token can
answer it. Anything else (no token, no server, a refused connection, an unsigned or
forged ``200``, a signed ``422``, no answer within ``MCP_HOOKS_FORWARD_TIMEOUT`` seconds,
default 5, for the whole exchange) is ``Forwarded(None, why)``: the caller runs the event
itself and says why on stderr, so the answer is never lost and never forged. But an error
status from the server's address (unsigned and not 200, or signed and neither 200 nor 422:
a proxy's 404 for a path it does not route, a 401 for a wrong token, a 5xx) is
``Forwarded(None, why, refused=True)``: the policy server is configured and its path is
broken, so the caller denies the event naming the URL, the status and the fix, instead of
deciding quietly on this machine.

A plain ``http://`` URL is spoken to over a socket by hand (one POST, ``Connection:
close``); ``https://`` goes through ``http.client``, with a watchdog that cuts the connection
at the deadline.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
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
    forward_timeout,
    sign_request,
)
from mcp_hooks.settings import env_value
from mcp_hooks.spec.outcome import Outcome

SERVER_ENV = "MCP_HOOKS_SERVER"
TOKEN_ENV = "MCP_HOOKS_TOKEN"
MAX_ANSWER = 16 << 20  # bytes; an outcome is capped far below this


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


def configured(url: str | None, token: str | None, *, no_server: bool = False) -> Server | None:
    """The server ``fire`` should use: ``url`` (``--server``), else ``MCP_HOOKS_SERVER``;
    None when neither is set or ``no_server``. The token: ``token`` (``--token``), else
    ``MCP_HOOKS_TOKEN``, else the one ``install --via server`` wrote beside its script. The
    deadline: ``MCP_HOOKS_FORWARD_TIMEOUT`` (an invalid value is said on stderr, and the
    default used)."""
    if no_server:
        return None
    url = (url or env_value(SERVER_ENV)).strip()
    if not url:
        return None
    if not token:
        token = env_value(TOKEN_ENV) or None
    if not token:
        # lazy: 28 ms of cold `fire` when the token is in the environment
        from mcp_hooks.hosts.forward_script import read_token

        token = read_token()
    base = url.rstrip("/")
    if base.endswith("/mcp"):  # the address `serve` announces
        base = base[: -len("/mcp")]
    timeout, warning = forward_timeout()
    if warning:
        print(f"mcp-hooks fire: {warning}", file=sys.stderr)
    return Server(base, token, timeout)


def _said(body: bytes) -> str:
    """The first line of an answer's text, short and printable (for one stderr line)."""
    lines = body.decode("utf-8", "replace").strip().splitlines()
    text = "".join(c if c.isprintable() else "?" for c in lines[0][:300]) if lines else ""
    return f": {text}" if text else ""


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
    target = parts.path.rstrip("/") + FIRE_PATH
    signed = sign_request(server.token, target, payload, user_dir=quote(str(user_dir)),
                          project_dir=quote(str(project_dir)))
    headers = {"Content-Type": "application/json", **signed.headers}
    deadline = time.monotonic() + server.timeout
    try:
        post = _post_plain if parts.scheme == "http" else _post_library
        status, answer_headers, body = post(parts, target, headers, payload, deadline)
    except (OSError, ValueError) as exc:
        if time.monotonic() >= deadline:
            return Forwarded(None, f"no answer from {server.url} within {server.timeout:g} s "
                             f"({FORWARD_TIMEOUT_ENV})")
        return Forwarded(None, f"no answer from {server.url} ({type(exc).__name__}: {exc})")
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


def _left(deadline: float) -> float:
    """Seconds left before ``deadline``; TimeoutError when none."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the forward's deadline passed")
    return left


def _post_library(parts: SplitResult, path: str, headers: dict[str, str], payload: bytes,
                  deadline: float) -> tuple[int, dict[str, str], bytes]:
    # lazy: 55 ms of cold `fire` (http.client) when it runs in process
    from http.client import HTTPConnection, HTTPSConnection

    kind = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    conn = kind(parts.hostname or "127.0.0.1", parts.port, timeout=_left(deadline))

    def cut() -> None:  # wakes a read blocked past the deadline (a drip-feeding listener)
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # under TLS: the raw socket
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    watchdog = threading.Timer(_left(deadline), cut)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.request("POST", path, body=payload, headers=headers)
        response = conn.getresponse()
        body = response.read(MAX_ANSWER + 1)
        _left(deadline)
        if len(body) > MAX_ANSWER:
            raise ValueError(f"answer over {MAX_ANSWER} bytes")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    except Exception as exc:  # http.client and ssl raise more than OSError when cut
        if isinstance(exc, (OSError, ValueError)):
            raise
        raise ValueError(f"{type(exc).__name__}: {exc}") from None
    finally:
        watchdog.cancel()
        conn.close()


def _post_plain(parts: SplitResult, path: str, headers: dict[str, str], payload: bytes,
                deadline: float) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 POST over a socket: (status, headers by lowercase name, body).

    Raises:
        OSError: no connection, or it broke, or the deadline passed (TimeoutError).
        ValueError: the answer is not a complete HTTP response.
    """
    lines = [f"POST {path or '/'} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}",
             "Connection: close", f"Content-Length: {len(payload)}",
             *(f"{name}: {value}" for name, value in headers.items())]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload
    received = bytearray()
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80),
                                  timeout=_left(deadline)) as sock:
        sock.settimeout(_left(deadline))
        sock.sendall(request)
        while True:
            sock.settimeout(_left(deadline))  # the whole exchange, not each read, is bounded
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
            if len(received) > MAX_ANSWER:
                raise ValueError(f"answer over {MAX_ANSWER} bytes")
    head, sep, body = bytes(received).partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("the answer ended before its headers did")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    version, _, rest = status_line.partition(" ")
    if not version.startswith("HTTP/") or not rest[:3].isdigit():
        raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
    fields: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if fields.get("transfer-encoding", "").lower() == "chunked":
        body = _dechunk(body)
    elif "content-length" in fields:
        length = int(fields["content-length"])
        if len(body) < length:
            raise ValueError("the answer was cut short")
        body = body[:length]
    return int(rest[:3]), fields, body


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, sep, data = data.partition(b"\r\n")
        if not sep:
            raise ValueError("a chunk was cut short")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        if len(data) < size + 2:
            raise ValueError("a chunk was cut short")
        out += data[:size]
        data = data[size + 2:]


__all__ = ["SERVER_ENV", "TOKEN_ENV", "Forwarded", "Server", "configured", "forward_fire"]
