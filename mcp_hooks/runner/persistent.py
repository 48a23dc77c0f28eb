"""Persistent hooks: long-lived processes per hook and project, one event per line each.

A hook whose HOOK.md says ``metadata.persistent: true`` is started lazily by a long-lived
engine (``serve``, ``proxy``, an in-process ``Engine``) and kept while it is used. What a
caller may rely on:

- **Start**: the same argv (``HookSpec.entry``), clean environment and ``metadata.limits`` as a
  one-shot run, through the same code (``core.Run``: spawned in a session of its own, marked
  with a run id, limited), plus ``MCP_HOOKS_PERSISTENT=1``. Processes per (HOOK.md, project
  root): their working folder is the project the engine serves (``root``), whatever folder of it
  an event comes from; an owner that names no root gets one per event working folder. The
  process serves every session and every folder of the project, so ``AGENT_HOOKS_SESSION_ID``
  and ``AGENT_HOOKS_WORK_DIR`` are left out of its environment: each event's payload carries
  ``session_id`` and ``work_dir``.
- **Processes** (``metadata.processes``, 1..32; the owner's default otherwise: 1, or
  ``default_processes`` for a replica on a shared store): at most that many processes of a
  hook and root, each sent one event at a time. An event takes an idle process, else starts
  one while under the cap, else (cap 2 or more) waits in line, first come first served, for
  the first one another event frees, or for room when one dies or is stopped. The wait is
  bounded by the hook's timeout: an event still in line then is a timed-out run (judged by
  ``metadata.on_error``; its stderr says why), never one-shot; an event that got a process
  has the whole timeout for its answer (a long line never gets a healthy process killed).
  With a cap of 1 an event finding the process busy runs one-shot, as below. A caller
  interrupted (cancelled, Ctrl-C) while in line leaves the line; one interrupted with a
  process handed to it hands it on; one interrupted during its event kills that process,
  whose place frees. A stray line is the stray of the process that wrote it: it never
  answers an event of another process.
- **Protocol** (``docs/hookkit.md``): per event the pool writes the payload a one-shot run gets
  on stdin, with one more field, ``"_mcp_hooks_event_id"`` (``ID_FIELD``: hex digits, new for
  every event: the pool's random prefix and a count; a caller's field of that name is
  dropped), then ``\\n``. The
  answer is the one stdout line that is a JSON object echoing that id: the object a one-shot
  hook prints, plus ``"exit_code": 0 or 2`` standing in for the exit status (missing: 0;
  any other value is a hook failure). Every other stdout line (a banner, a heartbeat, a blank
  line, an answer without the id or with another event's: a late one) is ignored, counted and
  kept (``STRAY_KEPT`` bytes) for the next answered event's stderr; the event waits on for its
  own answer until its timeout. What the hook writes to stderr while the event is in flight
  is that run's stderr (capped); stderr between events is dropped.
- **Result**: a ``RunResult`` as a one-shot run's, so ``judge`` is unchanged: ``stdout`` the
  answer re-encoded without ``exit_code`` and the id (empty for a plain allow); ``exit_code``
  from the field, except that an answer whose ``decision`` is deny (or block) is exit 2, as
  the hook's one-shot run exits, and an ``exit_code`` 2 answer with a ``reason`` carries
  ``decision: deny``: ``judge`` then reads the reason from the answer, and stderr stays the
  log. An exit 2 with neither takes what the hook wrote to stderr for that event as its
  reason, as a one-shot exit 2 does.
- **Per event**: the hook's timeout (on expiry the process group gets TERM, a grace, KILL; the
  event is a timed-out run: a hook that never echoes the id times out, never allows); the
  output cap (a stdout line over it is a failure, as an oversized one-shot stdout is, and the
  process is restarted). A process that exits or closes stdout while an event is in flight
  fails that event (never a deny: an exit status of 0 or 2 is reported as 1, its real status
  in stderr). A failure is judged by ``metadata.on_error`` as a one-shot failure is.
- **Restarts**: a process that crashed, hung or sent an oversized line is restarted for a
  later event after a backoff (``BACKOFF``: 0, 0.1, 0.5, 2, 5, 10 s; reset by a good answer).
  During the backoff (when no live process of the hook is left to wait for), and while the
  process is busy with another event (``processes`` 1), the hook runs one-shot (the engine's
  runner, without ``MCP_HOOKS_PERSISTENT``): an event is never denied or skipped for it;
  the run's stderr says so (unless it denied: its stderr is the reason).
- **Idle**: a process that has answered no event for ``idle_timeout`` seconds (default
  ``IDLE_TIMEOUT``, 10 minutes; None keeps it) is stopped as at close (EOF, ``CLOSE_GRACE``,
  kill the group, sweep); the next event starts a new one.
- **Changes**: a process belongs to one ``HookSpec`` object, its entry script as last stat'ed
  and the registry generation it started under; when any of these changes (a HOOK.md or
  script edited, a hook trusted again) the old process is killed and a new one started. An
  untrusted project hook is never selected, so never started.
- **Pruning** (``prune``, called by the owner on each event and when it notices a reload):
  when the registry's generation has moved, every process whose hook is no longer the
  registry's (removed, changed into a new ``HookSpec``, held back by trust, replaced by a
  project hook of its name, or its entry script edited) is stopped as at close, without
  waiting for that hook's next event; the processes of hooks still there are kept.
  Otherwise it costs one comparison.
- **Process tree**: the process's run id stays active for its life (its children are left
  alone by other runs' sweeps); stopping it kills its group, reaps it, then sweeps.
- **Close** (``aclose``): stdin is closed (a hook exits 0 on EOF), ``CLOSE_GRACE`` to exit,
  then the group is killed and reaped, and a sweep made. The pool then runs hooks one-shot.
  ``kill_now`` is the close of an owner that cannot await any more (its event loop closed):
  every group killed and reaped at once, from any thread that is not running another loop's
  callbacks on it.

Known limits: ``metadata.limits.cpu_seconds`` counts over the life of the process, not per
event (a process that reaches it is killed, and restarted for the next event).

This module runs an event through the processes (taking one, starting, the answer, the
backoff); the set of processes itself (handing on, pruning, idle, stopping, close) is
``residentset.ResidentSet``, which ``PersistentPool`` extends.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from mcp_hooks.runner.core import KILL_GRACE, OUTPUT_CAP, Run, RunResult
from mcp_hooks.runner.eventloop import run_hook
from mcp_hooks.runner.resident import (
    CLOSED,
    ID_FIELD,
    OVERSIZE,
    TIMEOUT,
    Answer,
    Resident,
    Slot,
    Taken,
    from_answer,
    settle,
    with_id,
)
from mcp_hooks.runner.residentset import Key, LiveHooks, ResidentSet, stamp_of
from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.spec.limits import Limits

if TYPE_CHECKING:
    import asyncio

PERSISTENT_VAR = "MCP_HOOKS_PERSISTENT"
BACKOFF = (0.0, 0.1, 0.5, 2.0, 5.0, 10.0)  # seconds before the n-th restart in a row
CLOSE_GRACE = 0.5  # seconds a closed process gets to exit on EOF before it is killed
IDLE_TIMEOUT = 600.0  # seconds without an event before a process is stopped
_PER_EVENT_VARS = ("AGENT_HOOKS_SESSION_ID", "AGENT_HOOKS_WORK_DIR")  # in each payload instead

OneShot = Callable[..., Awaitable[RunResult]]


def _note(result: RunResult, note: str) -> RunResult:
    """``note`` added to a run's stderr, unless the run denied (its stderr may be the reason)."""
    if result.exit_code == 2 or result.spawn_error is not None:
        return result
    text = f"[mcp-hooks] {note}\n".encode()
    return result._replace(stderr=result.stderr + text, stderr_size=result.stderr_size + len(text))


def default_processes(shared_state: bool) -> int:
    """``metadata.processes`` when a hook does not say: 1, or ``min(4, cores)`` for a replica
    of a server on a shared store (``--state`` not ``file:``), which is meant to be busy."""
    return min(4, os.cpu_count() or 1) if shared_state else 1


class PersistentPool(ResidentSet):
    """The resident processes of one engine's persistent hooks (see the module docstring).

    Args:
        one_shot: runs a hook one-shot (``run_hook``'s signature) during a backoff, while its
            process is busy, and after ``aclose``; default ``runner.run_hook``.
        output_cap: bytes kept of an answer line and of a run's stderr.
        kill_grace: seconds between TERM and KILL when an event times out.
        close_grace: seconds a process gets to exit on EOF at ``aclose`` (and when idle).
        backoff: seconds before the 1st, 2nd, ... restart in a row (the last repeats).
        idle_timeout: seconds a process may go without an event before it is stopped (the
            next event starts a new one); None keeps it until the pool closes.
    """

    def __init__(self, *, one_shot: OneShot | None = None, output_cap: int = OUTPUT_CAP,
                 kill_grace: float = KILL_GRACE, close_grace: float = CLOSE_GRACE,
                 backoff: tuple[float, ...] = BACKOFF,
                 idle_timeout: float | None = IDLE_TIMEOUT) -> None:
        if one_shot is None:
            one_shot = run_hook
        super().__init__(close_grace=close_grace, idle_timeout=idle_timeout)
        self._one_shot = one_shot
        self.output_cap = output_cap
        self.kill_grace = kill_grace
        self.backoff = backoff or (0.0,)
        self._failures: dict[Key, tuple[int, float]] = {}  # failures in a row, not before
        self._ids = itertools.count()  # an event's id: this pool's random prefix, a number
        self._id_prefix = os.urandom(4).hex()

    async def run(self, hook: HookSpec, stdin: bytes, *, cwd: str, env: Mapping[str, str],
                  timeout: float, limits: Limits | None = None,
                  generation: object = None, root: str | os.PathLike[str] | None = None,
                  processes: int = 1) -> RunResult:
        """Run one event through one of the hook's resident processes (started if need be).

        ``stdin`` is the event's payload, a JSON object (the pool adds the event's id).
        ``cwd`` is the event's working folder (a one-shot run's); ``root`` the project the
        owner serves: the processes run there and serve every event of the project (None:
        one set per ``cwd``). ``generation``: the registry's generation; when it moves,
        every process is stopped (a hook changed or was trusted again) and started afresh
        when next needed. ``processes``: at most this many processes of this hook and
        folder; with more than 1 an event finding them all busy waits for one (up to
        ``timeout``; then the answer has its own ``timeout``), with 1 it runs one-shot.

        Returns:
            The run's result, as ``run_hook`` would give it; never raises for the hook.
        """
        if self.closed:
            return await self._fallback(hook, stdin, cwd, env, timeout, limits, None)
        began = time.perf_counter()
        await self._follow(generation)
        home = cwd if root is None else os.fspath(root)
        key = (hook.hook_file, home)
        stamp = stamp_of(hook)
        taken = await self._take(hook, key, stamp, max(1, processes), time.monotonic() + timeout)
        proc = taken.proc
        if taken.how == "start":
            started = self._start(hook, key, stamp, taken.note,
                                  home if os.path.isdir(home) else cwd, env, limits)
            if isinstance(started, RunResult):
                return started
            proc = started
        if proc is None:
            return await self._not_taken(taken, hook, stdin, cwd, env, timeout, limits)
        event_id = f"{self._id_prefix}{next(self._ids):08x}"
        try:  # the whole timeout for its answer: a long line never gets a process killed
            answer = await proc.ask(with_id(stdin, event_id), event_id, timeout)
            result = await self._result(proc, key, answer, began)
        except BaseException:  # the caller's interruption: it is killed, its place frees
            self._retire(proc)
            proc.kill()
            raise
        finally:
            self._hand_on(key)
        return _note(result, taken.note) if taken.note else result

    async def _not_taken(self, taken: Taken, hook: HookSpec, stdin: bytes, cwd: str,
                         env: Mapping[str, str], timeout: float,
                         limits: Limits | None) -> RunResult:
        """An event no process took: run one-shot (busy, backoff, closed) or timed out."""
        note = f"{taken.note}; " if taken.note else ""
        if taken.how == "expired":
            return _note(RunResult(exit_code=None, timed_out=True, duration_ms=timeout * 1000,
                                   stderr=b""),
                         f"{note}every resident process of it stayed busy with other events "
                         f"for its whole timeout ({timeout:g} s; metadata.processes caps "
                         "them); this event did not run")
        if taken.how == "busy":
            note += ("its resident process was busy with another event; this event ran "
                     "one-shot (metadata.processes: 2 or more lets events wait for a process)")
        elif taken.how == "backoff":
            note += "this event ran one-shot"
        return await self._fallback(hook, stdin, cwd, env, timeout, limits, note or None)

    async def _take(self, hook: HookSpec, key: Key, stamp: object, cap: int,
                    deadline: float) -> Taken:
        """A process for one event (see ``Taken``): an idle one, room for a new one, else
        (``cap`` > 1) the first one another event frees, waiting until ``deadline``."""
        notes: list[str] = []
        while True:
            slot = self._slots.setdefault(key, Slot())
            died = await self._sweep(slot, hook, key, stamp)
            if died:
                notes.append(died)
            note = "; ".join(notes) or None
            slot = self._slots.setdefault(key, Slot())  # emptied meanwhile: a new one
            slot.cap = cap
            chosen = self._choose(slot, key, cap, note)
            if chosen is not None:
                return chosen
            got = await self._wait(slot, deadline)
            if got is not None and not got.dead:
                return Taken("take", got, note)
            if got is not None:  # it died after it was handed over: the sweep stops it
                got.busy = False
            if time.monotonic() >= deadline:
                return Taken("expired", note=note)

    def _choose(self, slot: Slot, key: Key, cap: int, note: str | None) -> Taken | None:
        """``_take``'s step without waiting: what the event gets now, or None to wait."""
        if self.closed:
            return Taken("closed", note=note)
        proc = slot.idle()
        if proc is not None:
            proc.busy = True  # its own from here (``ask`` follows with no await between)
            return Taken("take", proc, note)
        if cap == 1 and slot.procs:
            return Taken("busy", note=note)
        if len(slot.procs) < cap:
            waited = self._waiting(key)
            if waited is None:
                return Taken("start", note=note)
            if not any(not p.dead for p in slot.procs):
                return Taken("backoff", note=f"{note + '; ' if note else ''}its resident "
                              f"process is restarted in {waited:.1f} s (backoff)")
        return None

    async def _wait(self, slot: Slot, deadline: float) -> Resident | None:
        """Wait in line for a process of ``slot``: the one handed over (reserved for this
        event), or None to look again (room was made, or ``deadline`` came)."""
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Resident | None] = loop.create_future()
        slot.waiters.append(waiter)
        timer = loop.call_later(max(deadline - time.monotonic(), 0.0), settle, waiter, None)
        try:
            return await waiter
        except BaseException:  # the caller went: a process handed over goes to the next one
            if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
                proc = waiter.result()
                assert proc is not None
                proc.busy = False
                self._hand_on(proc.key)
            elif waiter in slot.waiters:
                slot.waiters.remove(waiter)
            raise
        finally:
            timer.cancel()

    async def _sweep(self, slot: Slot, hook: HookSpec, key: Key, stamp: object) -> str | None:
        """Stop the idle processes of ``slot`` that died or whose hook changed (a busy one
        whose hook changed is taken out, and stops after its event); the note of a death
        between events (it counts as a failure for the backoff)."""
        note = None
        stale: list[Resident] = []
        for proc in list(slot.procs):
            changed = proc.spec is not hook or proc.stamp != stamp
            if proc.busy:
                if changed:
                    slot.procs.remove(proc)
                continue
            if proc.dead or changed:
                slot.procs.remove(proc)
                stale.append(proc)
                if proc.dead:
                    note = self._failed(key, f"its resident process (pid {proc.pid}) had "
                                        f"exited between events (status {proc.returncode()})")
        for proc in stale:
            await self._stop(proc, graceful=False)
        return note

    def _start(self, hook: HookSpec, key: Key, stamp: object, note: str | None, cwd: str,
               env: Mapping[str, str], limits: Limits | None) -> Resident | RunResult:
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        penv = dict(env)
        for var in _PER_EVENT_VARS:  # one process serves every session and folder
            penv.pop(var, None)
        penv[PERSISTENT_VAR] = "1"
        run = Run.start(hook.entry, cwd, penv, limits, self.output_cap)
        if isinstance(run, RunResult):
            return _note(run, note) if note else run
        loop = asyncio.get_running_loop()
        proc = Resident(run, hook, stamp, self._generation, key, loop)
        proc.busy = True  # its first event follows with no await between
        self._slots.setdefault(key, Slot()).procs.append(proc)
        proc.on_gone = lambda: self._hand_on(key)
        if self.idle_timeout is not None:
            proc.idle = loop.call_later(self.idle_timeout, self._idle, proc)
        return proc

    async def _result(self, proc: Resident, key: Key, answer: Answer | str,
                      began: float) -> RunResult:
        ms = (time.perf_counter() - began) * 1000
        if not isinstance(answer, str):
            self._failures.pop(key, None)
            slot = self._slots.get(key)
            if slot is None or proc not in slot.procs:  # retired while it answered
                await self._stop(proc, graceful=False)
            return from_answer(answer, bytes(proc.err), proc.err_size, ms, proc.stray_note())
        self._retire(proc)  # its place is free before any wait (a waiting event starts anew)
        stderr, size = bytes(proc.err), proc.err_size
        strays = proc.stray_note()
        stderr, size = stderr + strays, size + len(strays)
        if answer == TIMEOUT:
            note = self._failed(key, "it timed out without answering this event (one JSON "
                                f"object line echoing its {ID_FIELD}); its resident process "
                                "was killed")
            proc.run.terminate()
            deadline = time.monotonic() + self.kill_grace
            import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

            while not proc.exited() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            await self._stop(proc, graceful=False)
            return _note(RunResult(exit_code=None, stderr=stderr, stderr_size=size,
                                   duration_ms=(time.perf_counter() - began) * 1000,
                                   timed_out=True), note)
        if answer == OVERSIZE:
            note = self._failed(key, f"it wrote a stdout line over {self.output_cap} bytes; "
                                "its resident process was stopped")
            out = bytes(proc.buf[:self.output_cap])
            await self._stop(proc, graceful=False)
            return _note(RunResult(exit_code=0, stdout=out, stdout_size=len(proc.buf),
                                   stderr=stderr, stderr_size=size, duration_ms=ms), note)
        # dead (or the pool closed under it): the event in flight failed
        await self._stop(proc, graceful=False)
        code = proc.returncode()
        what = ("the pool closed" if answer == CLOSED
                else f"its resident process exited (status {code}) before answering")
        note = self._failed(key, what)
        return _note(RunResult(exit_code=1 if code in (0, 2, None) else code, stderr=stderr,
                               stderr_size=size, duration_ms=ms), note)

    # -- backoff ---------------------------------------------------------------------------

    def _failed(self, key: Key, what: str) -> str:
        count, _ = self._failures.get(key, (0, 0.0))
        delay = self.backoff[min(count, len(self.backoff) - 1)]
        self._failures[key] = (count + 1, time.monotonic() + delay)
        return f"{what}; restarted for a later event (backoff {delay:g} s)"

    def _waiting(self, key: Key) -> float | None:
        failed = self._failures.get(key)
        if failed is None:
            return None
        left = failed[1] - time.monotonic()
        return left if left > 0 else None

    async def _fallback(self, hook: HookSpec, stdin: bytes, cwd: str, env: Mapping[str, str],
                        timeout: float, limits: Limits | None, note: str | None) -> RunResult:
        result = await self._one_shot(hook.entry, stdin, cwd=cwd, env=env, timeout=timeout,
                                      limits=limits)
        return _note(result, note) if note else result


__all__ = [
    "BACKOFF",
    "CLOSE_GRACE",
    "IDLE_TIMEOUT",
    "ID_FIELD",
    "PERSISTENT_VAR",
    "LiveHooks",
    "OneShot",
    "PersistentPool",
    "default_processes",
]
