"""The raw streamable-HTTP channel to an upstream: ``tools/call`` POSTed by the proxy itself.

A streamable-HTTP upstream that speaks 2026-07-28 answers each request on its own POST, with
no session. The SDK's client builds, validates and re-reads full models for every call;
``HttpChannel`` instead POSTs the request itself, stamped exactly as the client's session
stamps it (the envelope in ``params._meta``, the routing headers;
``sdk_compat.request_stamp``), on kept-alive connections shared by every downstream session
(``http_wire.HttpWire`` for a plain ``http://`` upstream, the SDK transport's ``httpx2``
pool for ``https://``), and reads the whole answer (JSON, or an SSE stream, which ends with
the request's answer) with ``json`` only. ``raw_call`` picks the channel of a connection: this
one, the stdio upstream's ``RawChannel``, or none (the SDK client then calls).

Left to the SDK client: a call with a progress callback, an upstream of the handshake era
(its session id and its requests during a call live in the SDK transport), and an
``input_required`` answer (the upstream asks the user: the SDK client's rounds run the
call again, with the answers). A call the caller gives up on (the proxy's deadline, the
client's cancellation) closes its POST, which is how a 2026-07-28 server hears it.
Errors read as the SDK client reads them: a JSON-RPC error in the body (whatever the HTTP
status) is the upstream's ``MCPError``; another status >= 400 is the SDK's stand-in error.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_hooks.proxy.config import UpstreamSpec
from mcp_hooks.proxy.http_wire import HttpWire, plain_http
from mcp_hooks.proxy.upstream_stdio import Channel, RawChannel, Run
from mcp_hooks.server import wire
from mcp_hooks.server.sdk_compat import request_stamp

_EVENT_END = re.compile(rb"\r?\n\r?\n")
_LINE_END = re.compile(rb"\r?\n")
_ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class HttpChannel:
    """``tools/call`` requests POSTed straight to a 2026-07-28 streamable-HTTP upstream.

    Args:
        http: the SDK transport's ``httpx2`` client (``https://`` upstreams).
        url: the upstream's endpoint; a plain ``http://`` one is reached by ``HttpWire``.
        headers: the upstream's configured headers.
        run: the connection: a POST that cannot reach the upstream closes it (the upstream
            is then dead, and started again on the next call, as when the SDK transport
            loses it), and the call's error waits until the state says so.
    """

    closed = False  # a POST fails on its own; there is no stream to lose

    def __init__(self, http: httpx2.AsyncClient, url: str, headers: dict[str, str],
                 run: Run) -> None:
        self._http = http
        self._url = url
        self._wire = HttpWire(url, headers) if plain_http(url, headers) else None
        self._run = run
        self._ids = itertools.count(1)

    def close(self) -> None:
        if self._wire is not None:
            self._wire.close()

    async def call_tool(self, client: Any, tool: str, arguments: dict[str, Any]
                        ) -> dict[str, Any] | None:
        """The upstream's result in wire form, or None when it asks for input (the SDK
        client then makes the call).

        Raises:
            MCPError: the upstream's JSON-RPC error, or the SDK's stand-in for a failed POST.
        """
        rid = f"mcp-hooks-{next(self._ids)}"
        data: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                "params": {"name": tool, "arguments": arguments}}
        opts: dict[str, Any] = {}
        request_stamp(client)(data, opts)
        try:
            body = wire.encode(data)
        except (RecursionError, ValueError):
            raise MCPError(types.INVALID_PARAMS, "the arguments nest too deep to be sent "
                           "upstream; the request was not sent") from None
        headers = {**_ACCEPT, **opts.get("headers", {})}
        try:
            status, kind, answered = await self._post(body, headers)
        except (httpx2.TransportError, OSError, ValueError) as exc:
            self._run.closed.set()
            with anyio.move_on_after(5):
                await self._run.settled.wait()
            raise MCPError(types.CONNECTION_CLOSED, f"Connection closed: {exc}") from None
        answer = _answer(status, kind, answered, rid)
        error = answer.get("error")
        if error is not None:
            if not isinstance(error, dict):
                error = {"code": types.INTERNAL_ERROR, "message": str(error)}
            raise MCPError(int(error.get("code", types.INTERNAL_ERROR)),
                           str(error.get("message", "")), error.get("data"))
        result = answer.get("result")
        if not isinstance(result, dict):
            raise MCPError(types.INTERNAL_ERROR, "tools/call returned no result object")
        return None if result.get("resultType") == "input_required" else result

    async def _post(self, body: bytes, headers: dict[str, str]) -> tuple[int, str, bytes]:
        """The answer's status, content type and whole body."""
        if self._wire is not None:
            status, head, data = await self._wire.post(body, headers)
            return status, head.get("content-type", "").lower(), data
        request = self._http.build_request("POST", self._url, content=body, headers=headers)
        response = await self._http.send(request, stream=True, follow_redirects=False)
        try:
            data = await response.aread()
        finally:
            await response.aclose()
        return response.status_code, response.headers.get("content-type", "").lower(), data


@asynccontextmanager
async def raw_channel(http: httpx2.AsyncClient, spec: UpstreamSpec, run: Run, on: bool
                      ) -> AsyncIterator[None]:
    """``run.channel``: an ``HttpChannel`` while the SDK transport is up (``on``)."""
    channel = HttpChannel(http, spec.url or "", dict(spec.headers or {}), run) \
        if on else None
    run.channel = channel
    try:
        yield
    finally:
        if channel is not None:
            channel.close()


def _answer(status: int, kind: str, data: bytes, rid: str) -> dict[str, Any]:
    """The JSON-RPC answer to ``rid`` in a POST's answer, read as the SDK client reads it."""
    if status >= 300:
        answer = _message(data) if kind.startswith("application/json") else None
        if answer is not None and "error" in answer:
            return answer
        code, text = ((types.METHOD_NOT_FOUND, "Not Found") if status == 404
                      else (types.INTERNAL_ERROR, "Server returned an error response"))
        raise MCPError(code, text)
    if kind.startswith("application/json"):
        answer = _message(data)
        if answer is None:
            raise MCPError(types.PARSE_ERROR, "Failed to parse JSON response")
        return answer
    if kind.startswith("text/event-stream"):
        return _sse_answer(data, rid)
    raise MCPError(types.INVALID_REQUEST, f"Unexpected content type: {kind}")


def _sse_answer(data: bytes, rid: str) -> dict[str, Any]:
    """The answer to ``rid`` among the events of a whole SSE stream."""
    for event in _EVENT_END.split(data):
        lines = [line[5:].removeprefix(b" ") for line in _LINE_END.split(event)
                 if line.startswith(b"data:")]
        payload = b"\n".join(lines)
        if len(payload) > DEFAULT_MAX_SSE_EVENT_SIZE:
            raise MCPError(types.CONNECTION_CLOSED, "SSE stream failed: an event exceeds "
                           f"{DEFAULT_MAX_SSE_EVENT_SIZE} bytes")
        message = _message(payload) if payload else None
        # notifications (logging) are dropped, as the proxy's SDK client drops them
        if message is not None and message.get("id") == rid and "method" not in message:
            return message
    raise MCPError(types.CONNECTION_CLOSED, "Connection closed")


def _message(data: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


async def raw_call(channel: Channel | None, client: Any, version: str | None,
                   tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """A ``tools/call`` on the connection's raw channel: its result, or None when the SDK
    client must make the call (no channel for this era, or the upstream asks for input).

    Raises:
        MCPError: the upstream's protocol error (or the connection closed).
    """
    if isinstance(channel, HttpChannel):
        if version not in MODERN_PROTOCOL_VERSIONS:
            return None
        return await channel.call_tool(client, tool, arguments)
    if not isinstance(channel, RawChannel) or channel.closed \
            or version in MODERN_PROTOCOL_VERSIONS:
        return None
    result = await channel.request("tools/call", {"name": tool, "arguments": arguments})
    if not isinstance(result, dict):
        raise MCPError(types.INTERNAL_ERROR, "tools/call returned no result object")
    return result
