"""The set of a pool's resident processes: which it keeps, handing a freed one on, stopping.

``ResidentSet`` holds the processes of a ``persistent.PersistentPool`` by (HOOK.md, project
root) in ``Slot`` s (``resident.py``) and answers for their life outside an event:

- **Handing on**: a process that comes free or goes is handed to the next event waiting in
  line for one (reserved for it), or that event looks again when there is room to start one.
- **Generations**: when the registry's generation moves every process is stopped
  (``_follow``); ``prune`` stops only those whose hook the registry no longer has (removed,
  changed, held back by trust, replaced, its entry script edited, ``_stamp``).
- **Idle**: a process that answered no event for ``idle_timeout`` is stopped as at close.
- **Stopping**: gracefully (stdin closed, ``close_grace`` to exit, then the group killed,
  reaped and swept) or at once; a process being stopped stays in ``_stopping`` until killed,
  so a close meanwhile kills it too. ``aclose`` and ``kill_now`` close the set for good.

``persistent.py`` runs events through the processes (taking one, starting, answering,
backoff); the contract of both is that module's docstring.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mcp_hooks.runner.resident import CLOSED, Resident, Slot, wait_exit
from mcp_hooks.spec.hookfile import HookSpec

if TYPE_CHECKING:
    import asyncio

Key = tuple[Path, str]


class LiveHooks(Protocol):
    """What ``prune`` reads of a registry (``discovery.Registry`` is one)."""

    @property
    def generation(self) -> object: ...

    def get(self, name: str) -> HookSpec | None: ...


def stamp_of(hook: HookSpec) -> object:
    """What tells an edited entry script: its stat (a HOOK.md edit makes a new spec)."""
    try:
        st = os.stat(hook.entry[-1])
    except (OSError, IndexError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class ResidentSet:
    """The resident processes of one pool, kept by (HOOK.md, root) (see the module docstring).

    Args:
        close_grace: seconds a process gets to exit on EOF when stopped gracefully.
        idle_timeout: seconds a process may go without an event before it is stopped; None
            keeps it until the set closes.
    """

    def __init__(self, *, close_grace: float, idle_timeout: float | None) -> None:
        self.close_grace = close_grace
        self.idle_timeout = idle_timeout
        self._slots: dict[Key, Slot] = {}
        self._stopping: set[Resident] = set()  # taken out of ``_slots``, being stopped
        self._idle_stops: set[asyncio.Task[None]] = set()
        self._generation: object = None
        self.closed = False

    def processes(self) -> list[Resident]:
        """Every resident process the pool keeps now (busy or not)."""
        return [proc for slot in self._slots.values() for proc in slot.procs]

    def pids(self) -> dict[str, int]:
        """The running processes: hook name (and folder, when two share a name; ``#2``, ...
        for a hook's second and later process) -> pid."""
        found: dict[str, int] = {}
        for key, slot in self._slots.items():
            live = [proc for proc in slot.procs if not proc.dead]
            for n, proc in enumerate(live, 1):
                found[f"{key[0].parent.name}@{key[1]}{f'#{n}' if n > 1 else ''}"] = proc.pid
        return found

    def _hand_on(self, key: Key) -> None:
        """A process of ``key`` came free or went: the events waiting for one get the idle
        ones (reserved), and one more looks again when there is room for a new process."""
        slot = self._slots.get(key)
        if slot is None:
            return
        while slot.waiters:
            proc = slot.idle()
            room = proc is None and (len(slot.procs) < slot.cap or self.closed
                                     or any(p.dead and not p.busy for p in slot.procs))
            if proc is None and not room:
                return
            waiter = slot.waiters.popleft()
            if waiter.done():
                continue
            if proc is not None:
                proc.busy = True
            waiter.set_result(proc)
            if proc is None:
                return

    def _retire(self, proc: Resident) -> None:
        """Take ``proc`` out of its slot (its place is free; the caller stops it)."""
        slot = self._slots.get(proc.key)
        if slot is not None and proc in slot.procs:
            slot.procs.remove(proc)

    async def _follow(self, generation: object) -> None:
        """Stop every process when the registry's generation moved (see ``run``)."""
        if generation != self._generation:
            if self._slots:
                await self._stop_all(graceful=False)
            self._generation = generation

    # -- idle ------------------------------------------------------------------------------

    def _idle(self, proc: Resident) -> None:
        """The idle timer of ``proc``: stop it if no event came for ``idle_timeout``."""
        proc.idle = None
        slot = self._slots.get(proc.key)
        if self.closed or slot is None or proc not in slot.procs or self.idle_timeout is None:
            return
        left = proc.last_used + self.idle_timeout - time.monotonic()
        if proc.busy or left > 0:
            proc.idle = proc.loop.call_later(self.idle_timeout if proc.busy else left,
                                             self._idle, proc)
            return
        slot.procs.remove(proc)
        task = proc.loop.create_task(self._stop_many([proc], graceful=True))
        self._idle_stops.add(task)
        task.add_done_callback(self._idle_stops.discard)

    # -- stopping --------------------------------------------------------------------------

    async def _stop(self, proc: Resident, *, graceful: bool) -> None:
        self._retire(proc)
        if graceful and not proc.dead:
            proc.close_stdin()
            await wait_exit([proc], self.close_grace)
        proc.kill()
        await proc.run.reaper.sweep_async()

    async def _stop_all(self, *, graceful: bool) -> None:
        """Stop every process: at once, or (``graceful``) after EOF and ``close_grace``. One
        busy with an event is left to finish it (then stopped, being no longer registered),
        except on close, where its event fails."""
        procs = [*self.processes(), *self._stopping]  # a prune's too: the loop may end
        self._clear()
        await self._stop_many(procs, graceful=graceful)

    async def _stop_many(self, procs: list[Resident], *, graceful: bool) -> None:
        """``_stop_all`` for processes already taken out of ``_slots``; until they are
        killed they are in ``_stopping`` (a close or ``kill_now`` meanwhile kills them too)."""
        idle = [proc for proc in procs if not proc.busy]
        self._stopping.update(idle)
        try:
            if self.closed:
                for proc in procs:
                    proc._wake(CLOSED)
            if graceful:
                for proc in idle:
                    proc.close_stdin()
                await wait_exit(idle, self.close_grace)
        finally:
            for proc in idle:
                proc.kill()
                self._stopping.discard(proc)
        if idle:
            await idle[0].run.reaper.sweep_async()

    def _clear(self) -> None:
        """Forget every slot; the events waiting in one look again (and find the pool
        closed, or a new slot)."""
        slots = list(self._slots.values())
        self._slots.clear()
        for slot in slots:
            slot.wake_all()

    async def aclose(self) -> None:
        """Close every process (EOF, ``close_grace``, then kill) and sweep; idempotent. Later
        runs are one-shot."""
        self.closed = True
        await self._stop_all(graceful=True)
        if self._idle_stops:
            import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

            await asyncio.gather(*self._idle_stops, return_exceptions=True)

    async def prune(self, hooks: LiveHooks) -> None:
        """Stop the processes whose hook ``hooks`` no longer has (see the module docstring);
        one comparison when its generation has not moved since the last ``run`` or ``prune``.
        A process busy with an event finishes it, then stops."""
        generation = hooks.generation
        if generation == self._generation or self.closed:
            return
        self._generation = generation
        stale = [proc for proc in self.processes()
                 if hooks.get(proc.spec.name) is not proc.spec or proc.stamp != stamp_of(proc.spec)]
        for proc in stale:
            self._retire(proc)
            self._hand_on(proc.key)  # an event waiting for it starts a new one
        if stale:
            await self._stop_many(stale, graceful=True)

    def kill_now(self) -> None:
        """Kill every process group and reap it at once, with no wait on an event loop (for an
        owner whose loop has closed, or that cannot await); idempotent. Later runs are
        one-shot. Call it from the pool's loop thread, or when that loop no longer runs."""
        self.closed = True
        procs = [*self.processes(), *self._stopping]
        self._clear()
        self._stopping.clear()
        for proc in procs:
            if not proc.loop.is_closed():
                proc._wake(CLOSED)  # an event in flight on a loop still there fails
            proc.kill()
        for task in list(self._idle_stops):
            if not task.get_loop().is_closed():
                task.cancel()
        if procs:
            procs[0].run.reaper.sweep()
