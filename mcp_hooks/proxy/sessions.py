"""Downstream sessions: which client a request comes from, and its ``session_start`` and
``session_end`` events.

A handshake-era connection (stdio, SSE, stateful streamable HTTP) is one session from its
``initialize`` until it closes; its session is kept in the connection's own state and ended
by the connection's exit stack. Requests of the 2026-07-28 era carry no session: they share
one, from the first such request until the proxy stops. The SDK keeps the connection object
private; ``sdk_compat.session_connection`` is the one place that reaches it.

Session events fire in the background (in the task group given to ``bind``), never on the
path of a request; ``session_end`` waits (up to 5 s) for its ``session_start`` to finish, so
hooks see them in order.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_hooks.proxy.upstream import now_iso
from mcp_hooks.server.sdk_compat import session_connection
from mcp_hooks.spec.outcome import Event, Outcome

if TYPE_CHECKING:
    from mcp.server.connection import Connection

logger = logging.getLogger("mcp_hooks.proxy")

_SESSION_KEY = "mcp_hooks.proxy.session"


@dataclass
class DownstreamSession:
    """One connected client, from ``session_start`` to ``session_end``."""

    id: str
    transport: str
    client: str | None = None
    client_version: str | None = None
    steps: int = 0
    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=now_iso)
    start_fired: anyio.Event = field(default_factory=anyio.Event)
    ended: bool = False


class Sessions:
    """The proxy's downstream sessions.

    Args:
        fire: fires an event and never raises (the gate's ``fire``).
        transport: how the proxy is served (``stdio``, ``http``, ``sse``), for the events.
        upstreams: the names of the upstreams, for ``session_start``.
    """

    def __init__(
        self,
        fire: Callable[[Event], Awaitable[Outcome]],
        *,
        transport: str,
        upstreams: list[str],
    ) -> None:
        self.active: dict[str, DownstreamSession] = {}
        self.connections: dict[int, Connection] = {}
        self.shutdown_reason: str | None = None
        self.modern_seen = False  # a 2026-07-28 request has been served by the SDK
        self._fire = fire
        self._transport = transport
        self._upstreams = upstreams
        self._shared: DownstreamSession | None = None
        self._tg: TaskGroup | None = None

    def bind(self, tg: TaskGroup | None) -> None:
        """Fire session events in ``tg`` (None: not at all, once the proxy stops)."""
        self._tg = tg

    def of(self, ctx: ServerRequestContext[Any, Any]) -> DownstreamSession:
        """The downstream session a request belongs to, opened on first sight."""
        connection = session_connection(ctx)
        if connection is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            session: DownstreamSession | None = connection.state.get(_SESSION_KEY)
            if session is None:
                session = self._open(connection.session_id, _client_of(ctx))
                connection.state[_SESSION_KEY] = session
                key = id(connection)
                self.connections[key] = connection

                def closed(session: DownstreamSession = session) -> None:
                    self.connections.pop(key, None)
                    self.close(session, self.shutdown_reason or "client_disconnected")

                connection.exit_stack.callback(closed)
            return session
        self.modern_seen = True
        return self.shared(_client_of(ctx))

    @staticmethod
    def on_connection(connection: Connection) -> DownstreamSession | None:
        """The session a handshake-era connection has opened, if any."""
        session: DownstreamSession | None = connection.state.get(_SESSION_KEY)
        return session

    def shared(self, client: types.Implementation | None) -> DownstreamSession:
        """The one session of the 2026-07-28 era requests (opened anew after it ended)."""
        if self._shared is None or self._shared.ended:
            self._shared = self._open(None, client)
        return self._shared

    def _open(
        self, session_id: str | None, client: types.Implementation | None
    ) -> DownstreamSession:
        session = DownstreamSession(
            id=session_id or f"proxy-{uuid.uuid4().hex[:16]}",
            transport=self._transport,
            client=client.name if client else None,
            client_version=client.version if client else None,
        )
        self.active[session.id] = session
        if self._tg is not None:
            self._tg.start_soon(self._fire_start, session)
        else:
            session.start_fired.set()
        return session

    def close(self, session: DownstreamSession, reason: str) -> None:
        """End a session: ``session_end`` fires in the background with ``reason``."""
        if session.ended:
            return
        session.ended = True
        self.active.pop(session.id, None)
        if self._tg is not None:
            self._tg.start_soon(self._fire_end, session, reason)

    def close_all(self, reason: str) -> None:
        """End every open session with ``reason`` (the proxy is stopping)."""
        for session in list(self.active.values()):
            self.close(session, reason)

    def status(self) -> list[dict[str, Any]]:
        """The open sessions, as ``hooks://proxy/status`` shows them."""
        return [{"id": s.id, "client": s.client, "started_at": s.started_at, "steps": s.steps}
                for s in self.active.values()]

    async def _fire_start(self, session: DownstreamSession) -> None:
        try:
            await self._fire(Event.create(
                event_type="session_start", session_id=session.id,
                payload={"args": {
                    "source": "mcp-hooks proxy", "transport": session.transport,
                    "client": session.client, "client_version": session.client_version,
                    "upstreams": list(self._upstreams),
                }},
            ))
        finally:
            session.start_fired.set()

    async def _fire_end(self, session: DownstreamSession, reason: str) -> None:
        with anyio.move_on_after(5):
            await session.start_fired.wait()
        await self._fire(Event.create(
            event_type="session_end", session_id=session.id,
            payload={
                "duration_seconds": round(time.monotonic() - session.started, 3),
                "total_steps": session.steps,
                "exit_reason": reason,
            },
        ))


class SessionMiddleware:
    """Opens a downstream session at a connection's first request (its ``initialize`` on the
    handshake era) and closes it when the connection closes."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        self.sessions.of(ctx)
        return await call_next(ctx)


def _client_of(ctx: ServerRequestContext[Any, Any]) -> types.Implementation | None:
    params = ctx.session.client_params
    if params is not None:
        return params.client_info
    if ctx.method == "initialize" and ctx.params:
        info = ctx.params.get("clientInfo")
        if isinstance(info, dict):
            return types.Implementation(name=str(info.get("name", "")),
                                        version=str(info.get("version", "")))
    meta = ctx.params.get("_meta") if ctx.params else None
    if isinstance(meta, dict):
        info = meta.get(types.CLIENT_INFO_META_KEY)
        if isinstance(info, dict):
            return types.Implementation(name=str(info.get("name", "")),
                                        version=str(info.get("version", "")))
    return None
