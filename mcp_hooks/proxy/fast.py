"""The stdio fast path's own answers: plain ``tools/call`` requests the proxy answers itself,
straight off the wire, instead of the SDK server (``stdio.FastPath``).

Taken only for plain calls (no progress token, no 2026 input rounds, no 2026 client that
declared elicitation: its asks are input rounds) to a known tool, on a
connection whose era the SDK server has already settled: a handshake-era connection after
``initialize`` (at a version with structured content), or a 2026-07-28 request with its
envelope, after the SDK has served one. Everything else (and anything unusual) is left to
the SDK server. The call goes through the same ``Gate`` as on the SDK path, so hooks, results
and errors are the same on either path; only the JSON-RPC envelope is written here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_hooks.proxy.catalog import Catalog
from mcp_hooks.proxy.gate import Gate
from mcp_hooks.proxy.relay import Peer, connection_peer, modern_peer
from mcp_hooks.proxy.sessions import DownstreamSession, Sessions

_FAST_PARAMS = frozenset(("name", "arguments", "_meta"))
_STRUCTURED_SINCE = "2025-06-18"  # the first handshake version with structuredContent


def _elicits(meta: dict[str, Any]) -> bool:
    """Whether a 2026-07-28 request's client declared elicitation: a hook's ask is then an
    ``input_required`` round, whose ``requestState`` only the SDK server seals."""
    capabilities = meta.get(types.CLIENT_CAPABILITIES_META_KEY)
    return isinstance(capabilities, dict) and capabilities.get("elicitation") is not None


def _plain_call(message: dict[str, Any]
                ) -> tuple[str | int, str, dict[str, Any], dict[str, Any]] | None:
    """A ``tools/call`` request's id, tool name, arguments and ``_meta``, when it is plain:
    a string or integer id, no params but those, no progress token; None otherwise."""
    rid = message.get("id")
    if message.get("method") != "tools/call" or isinstance(rid, bool) \
            or not isinstance(rid, (str, int)):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not _FAST_PARAMS.issuperset(params):
        return None
    name, arguments = params.get("name"), params.get("arguments") or {}
    meta = params.get("_meta") or {}
    if not isinstance(name, str) or not isinstance(arguments, dict) \
            or not isinstance(meta, dict) or "progressToken" in meta:
        return None
    return rid, name, arguments, meta


class FastPath:
    """Answers eligible ``tools/call`` requests (call it with the parsed message).

    Args:
        catalog: the tools the proxy serves.
        sessions: the downstream sessions (and what the SDK server has settled).
        gate: runs the call through the hooks.
        server_stamp: the server-info stamp 2026-07-28 results carry (read once, on first
            use).
    """

    def __init__(
        self, catalog: Catalog, sessions: Sessions, gate: Gate,
        server_stamp: Callable[[], dict[str, Any]],
    ) -> None:
        self._catalog = catalog
        self._sessions = sessions
        self._gate = gate
        self._server_stamp = server_stamp
        self._stamp: dict[str, Any] | None = None
        self.served = 0  # calls answered here (``hooks://proxy/status``: ``fast_path_calls``)

    def __call__(self, message: dict[str, Any], *, http: bool = False
                 ) -> Awaitable[dict[str, Any]] | None:
        """The JSON-RPC response to ``message``, to be awaited, or None: the SDK answers.
        ``http``: a streamable-HTTP POST (``http_fast``): only 2026-07-28 requests, whose
        handshake-era connections elsewhere on the server do not matter."""
        call = _plain_call(message)
        if call is None or call[1] not in self._catalog.tool_routes:
            return None
        rid, name, arguments, meta = call
        route = self._route(meta, http)
        if route is None:
            return None
        session, modern, peer = route
        return self._answer(rid, session, name, dict(arguments), modern, peer)

    def _route(self, meta: dict[str, Any], http: bool
               ) -> tuple[DownstreamSession, bool, Peer] | None:
        """The session, era (modern or not) and peer of a plain call, or None: the SDK
        answers (an era it has not settled, or a client it must serve itself)."""
        sessions = self._sessions
        version = meta.get(types.PROTOCOL_VERSION_META_KEY)
        if version is None:
            return None if http else self._handshake_route()
        if version in MODERN_PROTOCOL_VERSIONS and sessions.modern_seen \
                and types.CLIENT_CAPABILITIES_META_KEY in meta \
                and (http or not sessions.connections) and not _elicits(meta):
            session = sessions.shared(None)
            return session, True, modern_peer(session.id)
        return None

    def _handshake_route(self) -> tuple[DownstreamSession, bool, Peer] | None:
        """The one handshake-era connection's session, once ``initialize`` settled it at a
        version with structured content; None otherwise."""
        sessions = self._sessions
        if len(sessions.connections) != 1:
            return None
        connection = next(iter(sessions.connections.values()))
        session = sessions.on_connection(connection)
        if session is None or not connection.initialize_accepted \
                or connection.protocol_version < _STRUCTURED_SINCE:
            return None
        return session, False, connection_peer(connection, session.id)

    async def _answer(
        self, rid: str | int, session: DownstreamSession, name: str,
        arguments: dict[str, Any], modern: bool, peer: Peer,
    ) -> dict[str, Any]:
        self.served += 1
        try:
            result = await self._gate.call_tool(session, name, arguments, peer=peer)
        except MCPError as exc:
            return {"jsonrpc": "2.0", "id": rid,
                    "error": exc.error.model_dump(mode="json", exclude_none=True)}
        if modern:
            if self._stamp is None:
                self._stamp = self._server_stamp()
            result["resultType"] = "complete"
            meta = result.get("_meta")
            result["_meta"] = {**(meta if isinstance(meta, dict) else {}),
                               types.SERVER_INFO_META_KEY: self._stamp}
        return {"jsonrpc": "2.0", "id": rid, "result": result}
