"""The streamable-HTTP fast path: plain 2026-07-28 ``tools/call`` POSTs the proxy answers
itself, in front of the SDK's streamable-HTTP app (``HttpFastPath``, an ASGI wrapper).

A POST to the MCP endpoint is taken only when it is a 2026-07-28 ``tools/call`` the SDK would
serve as it is: its headers (``MCP-Protocol-Version`` of that era, ``Mcp-Method:
tools/call``, no ``Mcp-Param-*``, no duplicated routing header, a body within the SDK's
limit), the SDK's own checks passing (DNS-rebinding and content type, ``Accept``, the
envelope and its agreement with the headers: ``classify_inbound_request``), and ``FastPath``
finding it eligible (a known tool, no progress token, no ``requestState``, a client that did
not declare elicitation: its asks are ``input_required`` rounds the SDK seals). Anything
else, including every request that the SDK would refuse, goes to the SDK's app with its body
replayed, so refusals are the SDK's own. The bearer check wraps both (``transport``).

The call runs through the same ``Gate`` as on the SDK path (hooks, rewrites, results and
errors the same); the answer is written as the SDK writes a 2026-07-28 answer: JSON (an
error with the SDK's HTTP status for its code) when it is ready within the SDK's 15 s
window, else an SSE stream that pings until the answer. A client that goes away cancels the
call, as on the SDK path. ``MCP_HOOKS_PROXY_HTTP=sdk`` turns this path (and the upstreams'
raw channel, ``upstream_http``) off.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_hooks.proxy.fast import FastPath
from mcp_hooks.server import wire

PING_INTERVAL = 15.0  # s before an answer switches to SSE and pings (the SDK's window)
_MODERN = frozenset(v.encode() for v in MODERN_PROTOCOL_VERSIONS)
_JSON = [(b"content-type", b"application/json")]
_SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform"),
        (b"connection", b"keep-alive"), (b"x-accel-buffering", b"no")]


class HttpFastPath:
    """ASGI: answers eligible ``tools/call`` POSTs to ``path``; the rest goes to ``app``.

    Args:
        app: the SDK's streamable-HTTP app.
        fast: the proxy's ``FastPath`` (eligibility and the call through the gate).
        security: the SDK app's DNS-rebinding settings (None: the SDK's default checks).
        path: the MCP endpoint.
    """

    def __init__(self, app: ASGIApp, fast: FastPath,
                 security: TransportSecuritySettings | None, path: str) -> None:
        self._app = app
        self._fast = fast
        self._security = TransportSecurityMiddleware(security)
        self._path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" \
                or scope.get("path") != self._path or not _candidate(scope["headers"]):
            await self._app(scope, receive, send)
            return
        body, whole = await _read(receive)
        planned = await self._plan(scope, body) if whole else None
        if planned is None:
            await self._app(scope, _replay(body, whole, receive), send)
            return
        await _serve(*planned, receive, send)

    async def _plan(self, scope: Scope, body: bytes
                    ) -> tuple[Any, Awaitable[dict[str, Any]]] | None:
        """The request's id and its answer (to await), or None when the SDK must answer."""
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        request = Request(scope)
        if await self._security.validate_request(request, is_post=True) is not None \
                or check_accept_headers(request) != (True, True) \
                or find_duplicated_routing_header(request.headers.items()) is not None \
                or isinstance(classify_inbound_request(message, headers=dict(request.headers)),
                              InboundLadderRejection):
            return None
        answer = self._fast(message, http=True)
        return None if answer is None else (message["id"], answer)


def _candidate(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the headers are those of a plain 2026-07-28 ``tools/call`` within the limit."""
    version = method = length = None
    for name, value in headers:
        if name == b"mcp-protocol-version":
            version = value
        elif name == b"mcp-method":
            method = value
        elif name == b"content-length":
            length = value
        elif name.startswith(b"mcp-param-"):
            return False
    return version in _MODERN and method == b"tools/call" and length is not None \
        and length.isdigit() and int(length) <= DEFAULT_MAX_REQUEST_BODY_SIZE


async def _read(receive: Receive) -> tuple[bytes, bool]:
    """The request's body, and whether it is whole (False: the client went away first)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE:  # the SDK's limit answers it
            return b"".join(chunks), False


def _replay(body: bytes, whole: bool, receive: Receive) -> Receive:
    """``receive`` for the SDK's app: the body read so far, then the rest of the stream."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": not whole}
        return await receive()

    return replay


async def _serve(rid: Any, answer: Awaitable[dict[str, Any]], receive: Receive,
                 send: Send) -> None:
    """Run the call and write its answer as the SDK writes a 2026-07-28 one."""
    done = anyio.Event()
    result: list[dict[str, Any]] = []

    async def run() -> None:
        try:
            result.append(await answer)
        except Exception as exc:  # what the SDK answers for a handler's fault
            error = modern_error_data(exc).model_dump(mode="json", exclude_none=True)
            result.append({"jsonrpc": "2.0", "id": rid, "error": error})
        finally:
            done.set()

    async def watch_disconnect(scope: anyio.CancelScope) -> None:
        while (await receive()).get("type") != "http.disconnect":
            pass
        scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        tg.start_soon(watch_disconnect, tg.cancel_scope)
        with anyio.move_on_after(PING_INTERVAL):
            await done.wait()
        if done.is_set():
            await _write_json(result[0], send)
        else:
            await send({"type": "http.response.start", "status": 200, "headers": _SSE})
            while not done.is_set():
                await send({"type": "http.response.body", "body": b": ping\r\n\r\n",
                            "more_body": True})
                with anyio.move_on_after(PING_INTERVAL):
                    await done.wait()
            data = wire.encode_answer(result[0]).rstrip(b"\n")
            await send({"type": "http.response.body", "more_body": False,
                        "body": b"event: message\r\ndata: " + data + b"\r\n\r\n"})
        tg.cancel_scope.cancel()


async def _write_json(message: dict[str, Any], send: Send) -> None:
    error = message.get("error")
    status = ERROR_CODE_HTTP_STATUS.get(error.get("code", types.INTERNAL_ERROR), 200) \
        if isinstance(error, dict) else 200
    body = wire.encode_answer(message).rstrip(b"\n")
    await send({"type": "http.response.start", "status": status,
                "headers": [*_JSON, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})
