"""The PostgreSQL store's connections (``postgres.py``): a small pool of our own, each use of
a connection bounded by a client-side deadline, stale idle connections replaced.

- :class:`Pool`: at most ``size`` autocommit connections, made on demand, no threads of its
  own (``psycopg-pool``'s workers could not be collected with a store dropped without
  ``close()``). A connection that failed, went past its deadline, or went stale while idle is
  dropped, never handed out again.
- :func:`bounded`: one use of a connection for at most ``seconds`` (``deadline.py``): past
  that its socket is shut down and ``TimeoutError`` raised, so a server (or a path) that
  accepts a query and never answers costs the call its deadline, never a hang.
- A connection taken from the idle list that has something to read was closed by the server
  while it sat there (a restart: "terminating connection due to administrator command"):
  it is closed and another one taken or made, so a restart between two events fails none.
"""

from __future__ import annotations

import contextlib
import functools
import select
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from mcp_hooks.state.deadline import cut_connection, within

CONNECT_TIMEOUT = 10.0  # seconds to wait for a free connection of the pool
DEADLINE = 6.0  # seconds a call may take (client side) before the store counts as lost


def _close_all(idle: list[Any]) -> None:
    while idle:
        with contextlib.suppress(Exception):
            idle.pop().close()


def stale(conn: Any) -> bool:
    """An idle connection with something to read: the server closed it (a restart, an idle
    timeout) or it broke; a live idle connection has nothing to say."""
    try:
        poller = select.poll()  # not select(): a descriptor past 1023 is fine
        poller.register(conn.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


@contextlib.contextmanager
def bounded(conn: Any, seconds: float) -> Iterator[Any]:
    """Use ``conn`` for at most ``seconds`` (``deadline.py``): past that its socket is shut
    down, and ``TimeoutError`` (an ``OSError``: the store is lost) is raised in place of what
    the cut gave."""
    with within(seconds, functools.partial(cut_connection, conn)) as deadline:
        try:
            yield conn
        except Exception as exc:
            if deadline.passed:
                raise TimeoutError(f"no answer within {seconds:g} s (the connection was "
                                   "dropped)") from exc
            raise
        finally:
            if deadline.passed:
                conn.close()


class Pool:
    """At most ``size`` autocommit connections, made on demand; a connection that failed,
    went past its ``deadline`` or went stale while idle is dropped, not reused. Closed by
    ``close()`` or when the pool is collected."""

    def __init__(self, psycopg: Any, url: str, size: int, deadline: float = DEADLINE) -> None:
        self._psycopg = psycopg
        self._url = url
        self._deadline = deadline
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(size)
        self._finalizer = weakref.finalize(self, _close_all, self._idle)

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        if not self._slots.acquire(timeout=CONNECT_TIMEOUT):
            raise OSError(f"no connection of the {len(self._idle)} free within "
                          f"{CONNECT_TIMEOUT:g} s")
        try:
            conn = self._take_idle() or self._psycopg.connect(self._url, autocommit=True)
            try:
                with bounded(conn, self._deadline):
                    yield conn
            finally:
                if conn.closed or conn.broken or conn.info.transaction_status != 0:
                    conn.close()  # IDLE is 0: anything else is not handed out again
                else:
                    with self._lock:
                        self._idle.append(conn)
        finally:
            self._slots.release()

    def _take_idle(self) -> Any:
        """An idle connection that is still open, or None (the stale ones closed)."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None or not (conn.closed or stale(conn)):
                return conn
            with contextlib.suppress(Exception):
                conn.close()

    def drop_idle(self) -> None:
        """Close the idle connections (the store was lost: they are dead)."""
        with self._lock:
            idle, self._idle[:] = list(self._idle), []
        _close_all(idle)

    def close(self) -> None:
        self._finalizer()


__all__ = ["CONNECT_TIMEOUT", "DEADLINE", "Pool", "bounded", "stale"]
