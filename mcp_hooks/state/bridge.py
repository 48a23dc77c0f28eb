"""A shared store's asyncio path: its own sync code, its I/O through asyncio clients.

A serving engine (``serve``, the proxy, ``Hooks``' loop) makes a shared store's calls around
each event on its event loop, through the store's asyncio client (``redis.asyncio``;
psycopg's ``AsyncConnection`` in ``pglane.py``'s pool, which says why not ``psycopg_pool``'s):
no worker thread per call, and a call waiting on the store (a row lock, a slow reply) only
suspends its own event.

The store's operations stay written once, in sync code (``redis.py``, ``postgres.py``):
:func:`run` runs such code (the engine's store calls around an event: ``Engine._fire``) in a
greenlet of its own (the ``greenlet`` package, the bridge SQLAlchemy's asyncio support is
built on); where that code reaches the store, the store asks ``lane.lane_of`` for the asyncio
side this greenlet runs with, and its client's calls :func:`wait` there: the greenlet hands
the awaitable to the loop's task that drives it, which awaits it and hands back the result
(or throws in the error). Outside :func:`run` (a thread, a one-shot CLI) ``lane_of`` is None
and the store uses its sync client: one code, two ways to wait.

A ``lane.Lane`` is one store's asyncio side on one event loop: made on that loop by the
first call (``LaneCaller``, ``engine/offloop.py``), closed with the engine that made it.
PostgreSQL's lane runs one session's calls one after another (``Lane.gate``): a session
whose call waits (its row locked by another connection) holds at most one of the pool's
connections, never the others' events (Redis's client grows its pool as needed: no gate).
The calls run with the task's context (``contextvars``), so a call that fails is counted
for its own event (``spool.Mark``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import greenlet  # type: ignore[import-untyped]  # greenlet ships no types

from mcp_hooks.state.lane import Lane

_T = TypeVar("_T")


class _Bridged(greenlet.greenlet):  # type: ignore[misc]  # an untyped base
    """A greenlet running sync store code for ``lane``; its parent awaits for it."""

    def __init__(self, work: Callable[[], Any], lane: Lane) -> None:
        super().__init__(work)
        self.lane = lane


def wait(awaitable: Awaitable[_T]) -> _T:
    """The result of ``awaitable``, awaited on the loop by the task that drives this
    greenlet (only in :func:`run`); its error raised here."""
    current = greenlet.getcurrent()
    if not isinstance(current, _Bridged):
        raise RuntimeError("state.bridge.wait outside state.bridge.run: a store's asyncio "
                           "client was reached from sync code that no event loop drives")
    result: _T = current.parent.switch(awaitable)
    return result


async def run(lane: Lane, work: Callable[[], _T], session: str | None = None) -> _T:
    """``work()`` (sync code) with ``lane``'s store on its asyncio client, one call of
    ``session`` at a time: each awaitable it waits on is awaited here, in this task."""
    async with lane.gate(session):
        child = _Bridged(work, lane)
        child.gr_context = contextvars.copy_context()  # the event's mark (spool.Mark)
        step = child.switch()
        while not child.dead:
            try:
                value = await step
            except BaseException as exc:  # the awaitable's error, or our cancellation
                step = child.throw(exc)
            else:
                step = child.switch(value)
        result: _T = step
        return result


__all__ = ["run", "wait"]
