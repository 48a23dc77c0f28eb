"""The PostgreSQL store's asyncio side (``lane.Lane``): psycopg's ``AsyncConnection`` in a
pool made on the serving loop, which ``postgres.py``'s sync code uses as it uses
``pgpool.Pool`` (``with pool.connection() as conn: conn.execute(...).fetchone()``), each
wait on the server a ``bridge.wait``. Made by ``PostgresStore.lane``, closed with the engine
that made it.

The same rules as ``pgpool.Pool``: at most ``size`` autocommit connections, made on demand
(a refused connect fails the call at once: no worker retries it in the background, which is
why this is not ``psycopg_pool.AsyncConnectionPool``, whose waiting callers see a refused
server only as its timeout), no task of its own; an idle connection the server closed (a
restart) is replaced when taken (``pgpool.stale``); each use of a connection ends by its
deadline, past which the connection is closed and ``TimeoutError`` raised (the store is
lost), never a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

from mcp_hooks.state.bridge import wait
from mcp_hooks.state.lane import Lane
from mcp_hooks.state.pgpool import CONNECT_TIMEOUT, stale
from mcp_hooks.state.remote import require

_T = TypeVar("_T")


class PgLane(Lane):
    """``store``'s asyncio connections on the running loop (``conninfo`` as the sync
    pool's, at most ``size``, each use bounded by ``deadline`` seconds)."""

    gated = True  # ``size`` connections: a session waiting on a row lock holds one at most

    def __init__(self, store: object, conninfo: str, size: int, deadline: float) -> None:
        super().__init__(store)
        psycopg = require("psycopg", "postgres", "psycopg 3", "the PostgreSQL state store")
        self._connect = psycopg.AsyncConnection.connect
        self._conninfo = conninfo
        self._deadline = deadline
        self._idle: list[Any] = []
        self._slots = asyncio.Semaphore(size)
        self.pool = self  # what postgres.py calls: connection(), drop_idle()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                await conn.close()

    @contextlib.contextmanager
    def connection(self) -> Iterator[_Conn]:
        """A connection for one use, as ``pgpool.Pool.connection`` gives one."""
        if not wait(_acquired(self._slots)):
            raise OSError(f"no connection of the {len(self._idle)} free within "
                          f"{CONNECT_TIMEOUT:g} s")
        try:
            conn = self._take_idle() or wait(self._connect(self._conninfo, autocommit=True))
            face = _Conn(conn, self._deadline)
            try:
                yield face
            finally:
                if conn.closed or conn.broken or conn.info.transaction_status != 0:
                    wait(conn.close())  # IDLE is 0: anything else is not handed out again
                else:
                    self._idle.append(conn)
        finally:
            self._slots.release()

    def _take_idle(self) -> Any:
        while self._idle:
            conn = self._idle.pop()
            if not (conn.closed or stale(conn)):
                return conn
            with contextlib.suppress(Exception):
                wait(conn.close())
        return None

    def drop_idle(self) -> None:
        """Close the idle connections (the store was lost: they are dead)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                wait(conn.close())


async def _acquired(slots: asyncio.Semaphore) -> bool:
    try:
        await asyncio.wait_for(slots.acquire(), CONNECT_TIMEOUT)
    except asyncio.TimeoutError:
        return False
    return True


class _Conn:
    """One use of an ``AsyncConnection`` as ``postgres.py`` uses a sync one; every wait
    within ``seconds`` of the first, else the connection is closed and ``TimeoutError``
    raised."""

    def __init__(self, conn: Any, seconds: float) -> None:
        self._conn = conn
        self._seconds = seconds
        self._ends = time.monotonic() + seconds

    def execute(self, query: Any, args: Any = None) -> _Cursor:
        return _Cursor(self, self.within(self._conn.execute(query, args)))

    def within(self, step: Awaitable[_T]) -> _T:
        try:
            return wait(asyncio.wait_for(step, max(0.0, self._ends - time.monotonic())))
        except asyncio.TimeoutError:
            wait(self._conn.close())
            raise TimeoutError(f"no answer within {self._seconds:g} s (the connection was "
                               "dropped)") from None


class _Cursor:
    def __init__(self, conn: _Conn, cursor: Any) -> None:
        self._conn = conn
        self._cursor = cursor

    def fetchone(self) -> Any:
        return self._conn.within(self._cursor.fetchone())

    def fetchall(self) -> Any:
        return self._conn.within(self._cursor.fetchall())


__all__ = ["PgLane"]
