"""Where a ``Hooks``' chains run when they need an event loop (``api.py``'s contract).

``afire`` runs a chain on the caller's running loop, in that loop's ``Lane`` (an engine and
the pool of its persistent hook processes, made on first use, one per loop); ``fire`` runs
it on the ``Worker``: a thread of the ``Hooks``' own with its own loop and lane, started on
first need. Async hooks are tasks of the lane's loop (``LoopLauncher``).

``Worker.run`` is called from any number of threads at once; each waits for its own chain. A
hook that calls ``fire`` on the worker thread itself would wait for itself: ``ReentryError``.
A ``KeyboardInterrupt`` (Ctrl-C) that reaches a thread while it waits is the caller's own,
not the hooks': the chain is cancelled and the interrupt goes on (``guard.callers_own``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from mcp_hooks.engine.engine import Engine
from mcp_hooks.engine.launch import AsyncJob, InProcessLauncher
from mcp_hooks.engine.offloop import run_unsuspended
from mcp_hooks.errors import RunError
from mcp_hooks.guard import mark_callers_own
from mcp_hooks.runner.persistent import PersistentPool
from mcp_hooks.spec.outcome import OnFault, Outcome, fault_outcome
from mcp_hooks.state.eventlog import EventLog

if TYPE_CHECKING:
    import asyncio
    import concurrent.futures
    from collections.abc import Coroutine

    from mcp_hooks.state.store import StateStore

__all__ = ["Lane", "LoopLauncher", "ReentryError", "Worker", "run_inline"]


class ReentryError(RunError, RuntimeError):
    """A hook called back into the ``Hooks`` running it in a way that would deadlock or pull
    its chain from under it (``fire`` on the worker thread, ``close`` inside a hook)."""


class LoopLauncher(InProcessLauncher):
    """Async hooks as tasks of the running loop: unlike a task group, it needs no ``async
    with`` around the caller's whole life (the library's engines are made on first use)."""

    def __init__(self, log: EventLog | None, store: StateStore | None = None) -> None:
        super().__init__(log, store)
        self._tasks: set[asyncio.Task[None]] = set()

    async def open(self) -> None:
        return None

    def launch(self, event: str, session_id: str | None, jobs: list[AsyncJob]) -> None:
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        loop = asyncio.get_running_loop()
        for job in jobs:
            task = loop.create_task(self._run(event, session_id, job))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def close(self, exc: BaseException | None) -> None:
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        tasks = list(self._tasks)
        if exc is not None:
            for task in tasks:
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class Lane(NamedTuple):
    """The engine of one event loop and the pool of its persistent hook processes (kept
    here: a lane whose loop closed cannot be awaited, so its pool is killed in place)."""

    engine: Engine
    pool: PersistentPool

    async def prune(self) -> None:
        """Hooks changed on disk: stop the processes of those gone (``prune``)."""
        self.engine.registry.refresh()
        await self.pool.prune(self.engine.registry)

    async def aclose(self) -> None:
        try:
            await self.engine.__aexit__(None, None, None)
        finally:
            await self.pool.aclose()

    def drop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Its loop is closed or busy elsewhere: kill its processes without awaiting."""
        if loop.is_closed() or not loop.is_running() or _running() is loop:
            self.pool.kill_now()
        else:  # running in another thread: killed there, between its callbacks
            loop.call_soon_threadsafe(self.pool.kill_now)


def _running() -> asyncio.AbstractEventLoop | None:
    import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Worker:
    """A thread running an event loop, for ``fire`` chains that need one."""

    def __init__(self, lane: Lane) -> None:
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        self.lane = lane
        self.engine = lane.engine
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                       name="mcp-hooks-worker")
        self.thread.start()

    def run(self, step: Callable[[], Coroutine[Any, Any, Outcome]]) -> Outcome:
        """Run the coroutine ``step()`` makes on the worker loop and wait for its outcome."""
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        if threading.current_thread() is self.thread:
            raise ReentryError("Hooks.fire was called from a hook running on its own worker "
                               "thread, which would deadlock; use `await hooks.afire(...)` there")
        # The try opens before the chain is handed over: the worker may start the hooks
        # before this thread runs again, and a Ctrl-C in that gap is the caller's too.
        future: concurrent.futures.Future[Outcome] | None = None
        try:
            future = asyncio.run_coroutine_threadsafe(step(), self.loop)
            return future.result()
        except BaseException as exc:
            if future is None or not future.done():  # Ctrl-C while this thread waited
                if future is not None:  # the chain stops with it, and the interrupt goes on
                    future.cancel()
                mark_callers_own(exc)
            elif future.cancelled() or future.exception() is not exc:
                mark_callers_own(exc)  # raised here (Ctrl-C) just as the chain ended: ours
            raise

    def close(self) -> None:
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        try:
            asyncio.run_coroutine_threadsafe(self.lane.aclose(), self.loop).result()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
            self.loop.close()


def run_inline(step: Coroutine[Any, Any, Outcome], name: str, on_fault: OnFault) -> Outcome:
    """Run a chain of sync callables to its end in the caller's thread (``fire``'s inline
    lane: it never suspends); one that tried to wait on an event loop is a fault."""
    outcome = run_unsuspended(step)
    if outcome is not None:
        return outcome
    return fault_outcome(name, "a callable hook waited on an event loop inside Hooks.fire; "
                         "make it `async def` (fire then runs it on the worker loop)",
                         on_fault=on_fault)
