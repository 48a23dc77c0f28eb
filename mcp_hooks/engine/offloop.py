"""Where an engine runs blocking work: a hooks.yaml oracle, and every call of its state store
(around each event in ``Engine._fire``, and an async hook's record and aid in ``launch.py``).

A long-lived engine (``serve``, the proxy, ``Hooks``' worker loop) runs it in a worker thread
(``call_off_loop``), so a slow oracle or a slow store never holds another client's event;
the store calls around an event run in place for a local store, files or memory, whose calls
take less than the thread's hop, and on a shared store's asyncio client for Redis and
PostgreSQL (``LaneCaller``: ``state/bridge.py``), where a call waiting on the store suspends
only its own event (``store_caller``);
a one-shot engine (``fire``, the host bridges), which never suspends, runs it in place
(``call_here``); and so does a long-lived engine whose chain is driven with no event loop at
all (``Hooks.fire``'s inline chain of sync callables, driven by ``run_unsuspended``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from mcp_hooks.state.files import FileStore
from mcp_hooks.state.memory import MemoryStore
from mcp_hooks.state.store import StateStore

if TYPE_CHECKING:
    from mcp_hooks.state.lane import Lane

_T = TypeVar("_T")


class Caller(Protocol):
    def __call__(self, work: Callable[[], _T], session: str | None = None) -> Awaitable[_T]:
        ...


def store_caller(store: StateStore, one_shot: bool) -> Caller:
    """Where an engine's store calls around each event run: on the store's asyncio client for
    a shared store that has one (Redis, PostgreSQL: ``LaneCaller``; a slow one holds no other
    session), else off the event loop; in place for a local one (files, memory: it answers in
    µs, less than a worker thread's hop; bench/RESULTS.md ``## fast lane: engine``) and in a
    one-shot engine."""
    if one_shot or isinstance(store, (FileStore, MemoryStore)):
        return call_here
    if callable(getattr(store, "lane", None)) and find_spec("greenlet") is not None:
        return LaneCaller(store)
    return call_off_loop


async def call_here(work: Callable[[], _T], session: str | None = None) -> _T:
    """A one-shot engine never suspends: blocking work runs in place."""
    return work()


async def call_off_loop(work: Callable[[], _T], session: str | None = None) -> _T:
    """``work`` in a worker thread of the running event loop; in place when none runs."""
    if not _on_a_loop():
        return work()
    import anyio  # lazy: 2.2 ms of a one-shot `fire`, which never calls this (-X importtime)

    return await anyio.to_thread.run_sync(work)


class LaneCaller:
    """A shared store's calls around each event on its asyncio client (``state/bridge.py``):
    the store's sync code in a greenlet, each wait on the store a suspension of this event's
    task only (PostgreSQL's: one call of a session at a time, ``Lane.gate``). The client
    (the store's ``lane()``) is made on the loop of the first call and closed by ``aclose``
    (the engine's exit); a call on no asyncio loop (an inline chain, trio) runs as
    ``call_off_loop``."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self._lane: Lane | None = None
        self._loop: object = None

    async def __call__(self, work: Callable[[], _T], session: str | None = None) -> _T:
        asyncio = sys.modules.get("asyncio")  # not imported: no asyncio loop runs
        loop = asyncio._get_running_loop() if asyncio is not None else None
        if loop is None or (self._lane is not None and loop is not self._loop):
            return await call_off_loop(work)
        # lazy: greenlet (2 ms, -X importtime), which a one-shot engine never needs
        from mcp_hooks.state import bridge

        if self._lane is None:
            self._lane, self._loop = self._store.lane(), loop  # type: ignore[attr-defined]
            await self._lane.open()
        return await bridge.run(self._lane, work, session)

    async def aclose(self) -> None:
        """Close the asyncio client (on its loop; the next call makes another)."""
        lane, self._lane = self._lane, None
        if lane is not None:
            await lane.aclose()


async def close_caller(caller: Caller) -> None:
    """Close what ``caller`` holds (a ``LaneCaller``'s asyncio client); on the engine's exit."""
    if isinstance(caller, LaneCaller):
        await caller.aclose()


async def pause(seconds: float) -> None:
    """Wait ``seconds``: suspended on a running event loop, in place where none runs (an
    inline chain, which must never suspend)."""
    if not _on_a_loop():
        time.sleep(seconds)
        return
    import anyio  # lazy: 2.2 ms of a one-shot `fire`, which never calls this (-X importtime)

    await anyio.sleep(seconds)


def _on_a_loop() -> bool:
    """Whether an event loop (asyncio's, or trio's as sniffio tells) runs this thread now."""
    sniffio = sys.modules.get("sniffio")
    if sniffio is not None:
        try:
            sniffio.current_async_library()
        except sniffio.AsyncLibraryNotFoundError:
            return False
        return True
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and asyncio._get_running_loop() is not None


def run_unsuspended(step: Coroutine[Any, Any, _T]) -> _T | None:
    """Drive a coroutine (``Engine.fire``'s) to its end in this thread, with no event loop:
    its result, or None (the coroutine closed) if it tried to wait on a loop."""
    try:
        step.send(None)
    except StopIteration as done:
        result: _T = done.value
        return result
    step.close()
    return None


__all__ = ["Caller", "LaneCaller", "call_here", "call_off_loop", "close_caller", "pause",
           "run_unsuspended", "store_caller"]
