"""The raw streamable-HTTP channel to an upstream: ``tools/call`` POSTed by the proxy itself.

A streamable-HTTP upstream that speaks 2026-07-28 answers each request on its own POST, with
no session. The SDK's client builds, validates and re-reads full models for every call;
``HttpChannel`` instead POSTs the request on the SDK transport's own pooled ``httpx2``
client (its connections kept alive, shared by every downstream session), stamped exactly as
the client's session stamps it (the envelope in ``params._meta``, the routing headers;
``sdk_compat.request_stamp``), and reads the answer (JSON, or an SSE stream up to the
request's answer) with ``json`` only. ``raw_call`` picks the channel of a connection: this
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
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_hooks.proxy.upstream_stdio import Channel, RawChannel
from mcp_hooks.server import wire
from mcp_hooks.server.sdk_compat import request_stamp

_ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class HttpChannel:
    """``tools/call`` requests POSTed straight to a 2026-07-28 streamable-HTTP upstream.

    Args:
        http: the SDK transport's ``httpx2`` client (its pool, its headers, its timeouts).
        url: the upstream's endpoint.
        lost: set when a POST cannot reach the upstream (the connection's ``Run.closed``:
            the upstream is then dead, and started again on the next call, as when the SDK
            transport loses it).
    """

    closed = False  # a POST fails on its own; there is no stream to lose

    def __init__(self, http: httpx2.AsyncClient, url: str, lost: anyio.Event) -> None:
        self._http = http
        self._url = url
        self._lost = lost
        self._ids = itertools.count(1)

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
        request = self._http.build_request("POST", self._url, content=body,
                                           headers={**_ACCEPT, **opts.get("headers", {})})
        try:
            response = await self._http.send(request, stream=True, follow_redirects=False)
            try:
                answer = await _answer(response, rid)
            finally:
                await response.aclose()
        except httpx2.TransportError as exc:
            self._lost.set()
            raise MCPError(types.CONNECTION_CLOSED, f"Connection closed: {exc}") from None
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


async def _answer(response: httpx2.Response, rid: str) -> dict[str, Any]:
    """The JSON-RPC answer to ``rid`` in a POST's response."""
    kind = response.headers.get("content-type", "").lower()
    if response.status_code >= 300:
        if kind.startswith("application/json"):
            answer = _message(await response.aread())
            if answer is not None and "error" in answer:
                return answer
        code, text = ((types.METHOD_NOT_FOUND, "Not Found") if response.status_code == 404
                      else (types.INTERNAL_ERROR, "Server returned an error response"))
        raise MCPError(code, text)
    if kind.startswith("application/json"):
        answer = _message(await response.aread())
        if answer is None:
            raise MCPError(types.PARSE_ERROR, "Failed to parse JSON response")
        return answer
    if kind.startswith("text/event-stream"):
        try:
            async for event in httpx2.EventSource(response,
                                                  max_event_size=DEFAULT_MAX_SSE_EVENT_SIZE):
                message = _message(event.data.encode()) if event.data else None
                # notifications (logging) are dropped, as the proxy's SDK client drops them
                if message is not None and message.get("id") == rid and "method" not in message:
                    return message
        except httpx2.SSEError as exc:
            raise MCPError(types.CONNECTION_CLOSED, f"SSE stream failed: {exc}") from None
        raise MCPError(types.CONNECTION_CLOSED, "Connection closed")
    raise MCPError(types.INVALID_REQUEST, f"Unexpected content type: {kind}")


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
