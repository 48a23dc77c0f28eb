"""``mcp-hooks fire`` answered by a running server (``POST /hooks/fire``), standard library only.

``fire`` is one process per event: a persistent hook would start and end with it. When a
server is configured (``--server URL`` or ``MCP_HOOKS_SERVER``), ``fire`` sends the event
there instead, where the engine, and every resident hook process, stay warm. The request
carries a random nonce; the answer counts only with the HMAC of nonce and body keyed by the
token (``forward.sign``), so only the server that holds the token can answer. Anything else
(no token, no server, a refusal, a timeout, an unsigned or forged answer, a ``4xx``/``5xx``)
is ``Forwarded(None, why)``: the caller runs the event itself and says why on stderr, so the
answer is never lost and never forged.

A plain ``http://`` URL is spoken to over a socket by hand (one POST, ``Connection:
close``); ``https://`` goes through ``http.client``.
"""

from __future__ import annotations

import hmac
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import SplitResult, quote, urlsplit

from mcp_hooks.errors import ConfigError
from mcp_hooks.hosts.base import HOOK_TIMEOUT_S
from mcp_hooks.hosts.forward import (
    FIRE_PATH,
    NONCE_HEADER,
    PROJECT_DIR_HEADER,
    SIGNATURE_HEADER,
    USER_DIR_HEADER,
    sign,
)
from mcp_hooks.outcome import Outcome

SERVER_ENV = "MCP_HOOKS_SERVER"
TOKEN_ENV = "MCP_HOOKS_TOKEN"
CONNECT_TIMEOUT_S = 5.0  # a server that is there accepts at once; then wait for the hooks
ANSWER_TIMEOUT_S = HOOK_TIMEOUT_S  # what the event's hooks may take on the server
MAX_ANSWER = 16 << 20  # bytes; an outcome is capped far below this


@dataclass(frozen=True)
class Server:
    """Where to send events: the server's base URL (``/mcp`` is dropped) and its token."""

    url: str
    token: str | None


class Forwarded(NamedTuple):
    """The server's verified outcome, or None and why the caller must run the event itself."""

    outcome: Outcome | None
    why: str = ""


def configured(url: str | None, token: str | None, *, no_server: bool = False) -> Server | None:
    """The server ``fire`` should use: ``url`` (``--server``), else ``MCP_HOOKS_SERVER``;
    None when neither is set or ``no_server``. The token: ``token`` (``--token``), else
    ``MCP_HOOKS_TOKEN``, else the one ``install --via server`` wrote beside its script."""
    if no_server:
        return None
    url = (url or os.environ.get(SERVER_ENV, "")).strip()
    if not url:
        return None
    if not token:
        token = os.environ.get(TOKEN_ENV, "").strip() or None
    if not token:
        from mcp_hooks.hosts.forward_script import read_token

        token = read_token()
    base = url.rstrip("/")
    if base.endswith("/mcp"):  # the address `serve` announces
        base = base[: -len("/mcp")]
    return Server(base, token)


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
    nonce = os.urandom(16).hex()
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json",
               NONCE_HEADER: nonce, USER_DIR_HEADER: quote(str(user_dir)),
               PROJECT_DIR_HEADER: quote(str(project_dir))}
    payload = json.dumps(fields, ensure_ascii=True).encode()
    path = parts.path.rstrip("/") + FIRE_PATH
    try:
        post = _post_plain if parts.scheme == "http" else _post_library
        status, answer_headers, body = post(parts, path, headers, payload)
    except (OSError, ValueError) as exc:
        return Forwarded(None, f"no answer from {server.url} ({type(exc).__name__}: {exc})")
    if status != 200:
        said = body.decode("utf-8", "replace").strip().splitlines()
        return Forwarded(None, f"{server.url} answered {status}"
                         + (f": {said[0][:300]}" if said else ""))
    signature = answer_headers.get(SIGNATURE_HEADER.lower(), "")
    if not hmac.compare_digest(signature.encode(), sign(server.token, nonce, body).encode()):
        return Forwarded(None, f"the answer from {server.url} does not prove it comes from the "
                         "mcp-hooks server holding the token (no valid signature)")
    try:
        return Forwarded(Outcome.from_json(body))
    except ConfigError as exc:
        return Forwarded(None, f"{server.url} answered something that is not an outcome: {exc}")


def _post_library(parts: SplitResult, path: str, headers: dict[str, str],
                  payload: bytes) -> tuple[int, dict[str, str], bytes]:
    from http.client import HTTPConnection, HTTPSConnection

    kind = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    conn = kind(parts.hostname or "127.0.0.1", parts.port, timeout=ANSWER_TIMEOUT_S)
    try:
        conn.request("POST", path, body=payload, headers=headers)
        response = conn.getresponse()
        body = response.read(MAX_ANSWER + 1)
        if len(body) > MAX_ANSWER:
            raise ValueError(f"answer over {MAX_ANSWER} bytes")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        conn.close()


def _post_plain(parts: SplitResult, path: str, headers: dict[str, str],
                payload: bytes) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 POST over a socket: (status, headers by lowercase name, body).

    Raises:
        OSError: no connection, or it broke or timed out.
        ValueError: the answer is not a complete HTTP response.
    """
    lines = [f"POST {path or '/'} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}",
             "Connection: close", f"Content-Length: {len(payload)}",
             *(f"{name}: {value}" for name, value in headers.items())]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload
    received = bytearray()
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80),
                                  timeout=CONNECT_TIMEOUT_S) as sock:
        sock.settimeout(ANSWER_TIMEOUT_S)
        sock.sendall(request)
        while chunk := sock.recv(65536):
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
