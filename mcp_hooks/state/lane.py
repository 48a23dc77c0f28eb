"""A shared store's asyncio side on one event loop (``Lane``), and which side the running
code is on (``lane_of``): the sync code of ``redis.py`` and ``postgres.py`` asks it at each
call, and waits through the lane's asyncio client when ``bridge.run`` runs it, through its sync
client otherwise (``bridge.py`` says how).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio


class Lane:
    """One store's asyncio side on one event loop (``redislane.py``, ``pglane.py``).
    ``gated``: its connections are few (PostgreSQL's pool), so a session's calls run one
    at a time; a client whose pool grows as needed (redis.asyncio's) needs no gate."""

    gated = False

    def __init__(self, store: object) -> None:
        self.store = store
        self._sessions: dict[str | None, asyncio.Lock] = {}

    async def open(self) -> None:
        """Ready the asyncio client (on the loop that made it)."""

    async def aclose(self) -> None:
        """Close the asyncio client (on the loop that made it)."""

    def waiting(self, session: str) -> int:
        """How many calls of ``session`` wait at the gate now (behind the one that runs)."""
        lock = self._sessions.get(session)
        return 0 if lock is None else len(getattr(lock, "_waiters", None) or ())

    @asynccontextmanager
    async def gate(self, session: str | None) -> AsyncIterator[None]:
        """One call of ``session`` at a time (no session: never gated): a session waiting on
        the store holds at most one connection."""
        if session is None or not self.gated:
            yield
            return
        # a gated lane runs on an event loop, so asyncio is loaded by then; a cold bridge
        # imports this module and never gates
        import asyncio  # lazy: 25 ms of a cold bridge (python -X importtime)

        lock = self._sessions.get(session)
        if lock is None:
            lock = self._sessions[session] = asyncio.Lock()
        try:
            async with lock:
                yield
        finally:  # none runs nor waits (a woken waiter is not yet running: still waiting)
            if (not lock.locked() and not self.waiting(session)
                    and self._sessions.get(session) is lock):
                del self._sessions[session]


def lane_of(store: object) -> Any:
    """The asyncio side of ``store`` this code runs with (in ``bridge.run``), else None."""
    glet = sys.modules.get("greenlet")
    if glet is None:  # nothing bridged in this process
        return None
    lane = getattr(glet.getcurrent(), "lane", None)
    return lane if lane is not None and lane.store is store else None


__all__ = ["Lane", "lane_of"]
