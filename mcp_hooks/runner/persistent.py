"""Persistent hooks: one long-lived process per hook and project, one event per line.

A hook whose HOOK.md says ``metadata.persistent: true`` is started lazily by a long-lived
engine (``serve``, ``proxy``, an in-process ``Engine``) and kept while it is used. What a
caller may rely on:

- **Start**: the same argv (``HookSpec.entry``), clean environment and ``metadata.limits`` as a
  one-shot run, through the same code (``core.Run``: spawned in a session of its own, marked
  with a run id, limited), plus ``MCP_HOOKS_PERSISTENT=1``. One process per (HOOK.md, project
  root): its working folder is the project the engine serves (``root``), whatever folder of it
  an event comes from; an owner that names no root gets one per event working folder. The
  process serves every session and every folder of the project, so ``AGENT_HOOKS_SESSION_ID``
  and ``AGENT_HOOKS_WORK_DIR`` are left out of its environment: each event's payload carries
  ``session_id`` and ``work_dir``.
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
  During the backoff, and while the process is busy with another event, the hook runs
  one-shot (the engine's runner, without ``MCP_HOOKS_PERSISTENT``): an event is never denied
  or skipped for it; the run's stderr says so (unless it denied: its stderr is the reason).
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
event (a process that reaches it is killed, and restarted for the next event); only one
event at a time is sent to a process.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mcp_hooks.hookfile import HookSpec
from mcp_hooks.limits import Limits
from mcp_hooks.runner.core import KILL_GRACE, OUTPUT_CAP, Run, RunResult, killpg
from mcp_hooks.runner.spawn import has_exited, open_pidfd
from mcp_hooks.runner.tree import CHUNK

if TYPE_CHECKING:
    import asyncio

PERSISTENT_VAR = "MCP_HOOKS_PERSISTENT"
ID_FIELD = "_mcp_hooks_event_id"  # the event's id, in the line sent and in its answer
BACKOFF = (0.0, 0.1, 0.5, 2.0, 5.0, 10.0)  # seconds before the n-th restart in a row
CLOSE_GRACE = 0.5  # seconds a closed process gets to exit on EOF before it is killed
IDLE_TIMEOUT = 600.0  # seconds without an event before a process is stopped
EXIT_POLL = 0.02  # seconds between exit checks where no pidfd tells of the exit
STRAY_KEPT = 4096  # bytes kept of the stdout lines that answered nothing, per report
_STRAY_LINE = 300  # bytes kept of each such line
_ID_KEY = json.dumps(ID_FIELD).encode()
_DENY_WORDS = ("deny", "block")
_PER_EVENT_VARS = ("AGENT_HOOKS_SESSION_ID", "AGENT_HOOKS_WORK_DIR")  # in each payload instead

OneShot = Callable[..., Awaitable[RunResult]]
_Key = tuple[Path, str]
Answer = dict[str, Any]


class LiveHooks(Protocol):
    """What ``prune`` reads of a registry (``discovery.Registry`` is one)."""

    @property
    def generation(self) -> object: ...

    def get(self, name: str) -> HookSpec | None: ...

# what an event in flight ended with (besides its answer)
_DEAD = "dead"  # the process exited or closed its stdout
_TIMEOUT = "timeout"
_OVERSIZE = "oversize"  # a stdout line outgrew the output cap
_CLOSED = "closed"  # the pool closed under it


class _Proc:
    """One resident hook process: its ``core.Run``, line buffer, and the event in flight."""

    __slots__ = ("buf", "busy", "dead", "err", "err_size", "expect", "expect_id", "generation",
                 "idle", "key", "last_used", "loop", "pending", "pidfd", "run", "spec", "stamp",
                 "stray_count", "strays", "waiter", "writing")

    def __init__(self, run: Run, spec: HookSpec, stamp: object, generation: object,
                 key: _Key, loop: asyncio.AbstractEventLoop) -> None:
        self.run = run
        self.spec = spec
        self.stamp = stamp
        self.generation = generation
        self.key = key
        self.loop = loop
        self.buf = bytearray()
        self.err = bytearray()
        self.err_size = 0
        self.busy = False
        self.dead = False
        self.expect_id = ""  # the id of the event in flight
        self.expect = b""  # the same, as bytes: a line without it is no answer
        self.strays = bytearray()  # stdout lines that answered nothing, since the last report
        self.stray_count = 0
        self.last_used = time.monotonic()
        self.idle: asyncio.TimerHandle | None = None
        self.waiter: asyncio.Future[Answer | str] | None = None
        self.pending = memoryview(b"")
        self.writing = -1
        assert run.child is not None
        if run.in_fd is not None:
            os.set_blocking(run.in_fd, False)
        loop.add_reader(run.out.fd, self._on_out)
        loop.add_reader(run.err.fd, self._on_err)
        self.pidfd = open_pidfd(run.child.pid)
        if self.pidfd >= 0:
            loop.add_reader(self.pidfd, self._on_exit)

    @property
    def pid(self) -> int:
        assert self.run.child is not None
        return self.run.child.pid

    # -- loop callbacks ------------------------------------------------------------------

    def _wake(self, value: Answer | str) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(value)

    def _waiting(self) -> bool:
        return self.waiter is not None and not self.waiter.done()

    def _on_out(self) -> None:
        self._read_out()

    def _read_out(self) -> bool:
        """One read of stdout: each whole line is the answer or a stray; False when nothing
        was read."""
        try:
            data = os.read(self.run.out.fd, CHUNK)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            self.loop.remove_reader(self.run.out.fd)
            self.run.out.eof = True
            self.dead = True
            self._wake(_DEAD)
            return False
        buf = self.buf
        start = len(buf)
        buf += data
        at = buf.find(b"\n", start)
        if at >= 0:
            begin = 0
            while at >= 0:
                self._line(bytes(buf[begin:at]))
                begin = at + 1
                at = buf.find(b"\n", begin)
            del buf[:begin]
        if len(buf) > self.run.output_cap:
            if self._waiting():
                self._wake(_OVERSIZE)
            else:  # out of turn: nobody waits on it, and it cannot become an answer
                self._stray(bytes(buf[:_STRAY_LINE]) + b" [... over the output cap]")
                buf.clear()
        return True

    def _line(self, line: bytes) -> None:
        """One whole stdout line: the answer of the event in flight if it echoes its id."""
        if self.expect and self.expect in line and self._waiting():
            try:
                data: Any = json.loads(line.decode())
            except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
                data = None
            if isinstance(data, dict) and data.get(ID_FIELD) == self.expect_id:
                assert self.waiter is not None
                self.waiter.set_result(data)
                self.expect, self.expect_id = b"", ""  # a second copy of it is a stray
                return
        self._stray(line)

    def _stray(self, line: bytes) -> None:
        self.stray_count += 1
        room = STRAY_KEPT - len(self.strays)
        if room > 0:
            self.strays += (repr(line[:_STRAY_LINE])[1:] + "\n").encode()[:room]

    def stray_note(self) -> bytes:
        """What stdout carried besides answers since the last note (then forgotten)."""
        if not self.stray_count:
            return b""
        count = self.stray_count
        kept = bytes(self.strays)
        self.stray_count = 0
        self.strays.clear()
        head = (f"[mcp-hooks] ignored {count} stdout line(s) that answered no event in "
                f"flight (an answer is one JSON object line echoing the event's {ID_FIELD}; "
                "see docs/hookkit.md):\n").encode()
        return head + kept

    def _on_err(self) -> None:
        if self._read_err() is True:
            self.loop.remove_reader(self.run.err.fd)
            self.run.err.eof = True

    def _read_err(self) -> bool | None:
        """One read of stderr, kept (capped) while an event is in flight; True at its end."""
        try:
            data = os.read(self.run.err.fd, CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            return True
        if not data:
            return True
        if self.busy:
            self.err_size += len(data)
            room = self.run.output_cap - len(self.err)
            if room > 0:
                self.err += data[:room]
        return False

    def _on_exit(self) -> None:
        self.loop.remove_reader(self.pidfd)
        self.dead = True
        # an answer written just before the exit may still wait in the pipe: it counts
        while not self.run.out.eof and self._waiting() and self._read_out():
            pass
        self._wake(_DEAD)

    def _feed(self) -> None:
        fd = self.run.in_fd
        while self.pending and fd is not None:
            try:
                n = os.write(fd, self.pending)
            except BlockingIOError:
                return
            except OSError:  # it closed stdin or died: the exit or EOF tells the rest
                break
            self.pending = self.pending[n:]
        self.pending = memoryview(b"")
        self._stop_writing()

    def _stop_writing(self) -> None:
        if self.writing >= 0:
            self.loop.remove_writer(self.writing)
            self.writing = -1

    def _poll_exit(self) -> None:
        if not self._waiting():
            return
        if has_exited(self.pid, -1):
            self.dead = True
            self._wake(_DEAD)
        else:
            self.loop.call_later(EXIT_POLL, self._poll_exit)

    # -- one event -----------------------------------------------------------------------

    async def ask(self, line: bytes, event_id: str, timeout: float) -> Answer | str:
        """Send one event line; its answer (the JSON object echoing ``event_id``), or
        ``_DEAD``/``_TIMEOUT``/``_OVERSIZE``/``_CLOSED``. Cancelled from outside, the process
        is killed (its answer would come out of turn)."""
        self.busy = True
        self.err.clear()
        self.err_size = 0
        waiter: asyncio.Future[Answer | str] = self.loop.create_future()
        self.waiter = waiter
        self.expect_id, self.expect = event_id, event_id.encode()
        timer = self.loop.call_later(timeout, self._wake, _TIMEOUT)
        if self.pidfd < 0:
            self.loop.call_later(EXIT_POLL, self._poll_exit)
        finished = False
        try:
            self.pending = memoryview(line)
            self._feed()
            if self.pending and self.run.in_fd is not None:
                self.writing = self.run.in_fd
                self.loop.add_writer(self.writing, self._feed)
            answer: Answer | str = await waiter
            while self._read_err() is False:  # what it wrote to stderr before answering
                pass
            finished = True
            return answer
        finally:
            timer.cancel()
            self._stop_writing()
            self.busy = False
            self.waiter = None
            self.expect, self.expect_id = b"", ""
            self.last_used = time.monotonic()
            if not finished:
                self.kill()

    # -- the end -------------------------------------------------------------------------

    def close_stdin(self) -> None:
        self._stop_writing()
        self.run.close_stdin()

    def kill(self) -> None:
        """Kill the group and reap the leader now (the caller sweeps); idempotent."""
        child = self.run.child
        assert child is not None
        self.dead = True
        self._detach()
        if child.returncode is None:
            killpg(child.pid, signal.SIGKILL)
            child.wait()
            self.run.retire()
        self.run.close()

    def _detach(self) -> None:
        self._stop_writing()
        if self.idle is not None:
            self.idle.cancel()
            self.idle = None
        for stream in (self.run.out, self.run.err):
            if not stream.eof and stream.fd >= 0:
                self.loop.remove_reader(stream.fd)
                stream.eof = True
        if self.pidfd >= 0:
            self.loop.remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = -1

    def exited(self) -> bool:
        child = self.run.child
        assert child is not None
        return child.returncode is not None or has_exited(child.pid, self.pidfd)

    def returncode(self) -> int | None:
        child = self.run.child
        assert child is not None
        return child.returncode


def _stamp(hook: HookSpec) -> object:
    """What tells an edited entry script: its stat (a HOOK.md edit makes a new spec)."""
    try:
        st = os.stat(hook.entry[-1])
    except (OSError, IndexError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _note(result: RunResult, note: str) -> RunResult:
    """``note`` added to a run's stderr, unless the run denied (its stderr may be the reason)."""
    if result.exit_code == 2 or result.spawn_error is not None:
        return result
    text = f"[mcp-hooks] {note}\n".encode()
    return result._replace(stderr=result.stderr + text, stderr_size=result.stderr_size + len(text))


def _with_id(stdin: bytes, event_id: str) -> bytes:
    """The event line: the payload object with ``ID_FIELD`` as its last member, and ``\\n``."""
    if _ID_KEY in stdin:  # the caller's payload has the field: ours must be the only one
        stdin = _without_id(stdin)
    if stdin.endswith(b"}}"):  # an object with members, its last one an object: a payload
        return b"".join((memoryview(stdin)[:-1], b",", _ID_KEY, b':"', event_id.encode(),
                         b'"}\n'))
    end = len(stdin)
    while end and stdin[end - 1] in b" \t\r\n":
        end -= 1
    if not end or stdin[end - 1] != 0x7D:  # not an object: no answer can echo an id
        return stdin + b"\n"
    before = end - 2
    while before >= 0 and stdin[before] in b" \t\r\n":
        before -= 1
    comma = b"" if before >= 0 and stdin[before] == 0x7B else b","
    return b"".join((memoryview(stdin)[:end - 1], comma, _ID_KEY, b':"', event_id.encode(),
                     b'"}\n'))


def _without_id(stdin: bytes) -> bytes:
    try:
        data: Any = json.loads(stdin)
    except (ValueError, RecursionError):
        return stdin
    if isinstance(data, dict) and data.pop(ID_FIELD, None) is not None:
        try:
            return json.dumps(data, ensure_ascii=False).encode()
        except UnicodeEncodeError:  # a lone surrogate: escaped, it round-trips
            return json.dumps(data).encode()
    return stdin


class PersistentPool:
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
            from mcp_hooks.runner.eventloop import run_hook

            one_shot = run_hook
        self._one_shot = one_shot
        self.output_cap = output_cap
        self.kill_grace = kill_grace
        self.close_grace = close_grace
        self.backoff = backoff or (0.0,)
        self.idle_timeout = idle_timeout
        self._procs: dict[_Key, _Proc] = {}
        self._stopping: set[_Proc] = set()  # taken out of ``_procs``, being stopped
        self._failures: dict[_Key, tuple[int, float]] = {}  # failures in a row, not before
        self._idle_stops: set[asyncio.Task[None]] = set()
        self._ids = itertools.count()  # an event's id: this pool's random prefix, a number
        self._id_prefix = os.urandom(4).hex()
        self._generation: object = None
        self.closed = False

    def pids(self) -> dict[str, int]:
        """The running processes: hook name (and folder, when two share a name) -> pid."""
        return {f"{key[0].parent.name}@{key[1]}": proc.pid for key, proc in self._procs.items()
                if not proc.dead}

    async def run(self, hook: HookSpec, stdin: bytes, *, cwd: str, env: Mapping[str, str],
                  timeout: float, limits: Limits | None = None,
                  generation: object = None, root: str | os.PathLike[str] | None = None,
                  ) -> RunResult:
        """Run one event through the hook's resident process (started if need be).

        ``stdin`` is the event's payload, a JSON object (the pool adds the event's id).
        ``cwd`` is the event's working folder (a one-shot run's); ``root`` the project the
        owner serves: the process runs there and serves every event of the project (None:
        one process per ``cwd``). ``generation``: the registry's generation; when it moves,
        every process is stopped (a hook changed or was trusted again) and started afresh
        when next needed.

        Returns:
            The run's result, as ``run_hook`` would give it; never raises for the hook.
        """
        if self.closed:
            return await self._fallback(hook, stdin, cwd, env, timeout, limits, None)
        if generation != self._generation:
            if self._procs:
                await self._stop_all(graceful=False)
            self._generation = generation
        home = cwd if root is None else os.fspath(root)
        key = (hook.hook_file, home)
        stamp = _stamp(hook)
        proc = self._procs.get(key)
        note = None
        if proc is not None and proc.busy:
            return await self._fallback(hook, stdin, cwd, env, timeout, limits,
                                        "its resident process was busy with another event; "
                                        "this event ran one-shot")
        if proc is not None and (proc.dead or proc.spec is not hook or proc.stamp != stamp):
            if proc.dead:
                note = self._failed(key, f"its resident process (pid {proc.pid}) had exited "
                                    f"between events (status {proc.returncode()})")
            await self._stop(proc, graceful=False)
            proc = None
        if proc is None:
            waited = self._waiting(key)
            if waited is not None:
                return await self._fallback(hook, stdin, cwd, env, timeout, limits,
                                            f"{note + '; ' if note else ''}its resident process "
                                            f"is restarted in {waited:.1f} s (backoff); this "
                                            "event ran one-shot")
            started = self._start(hook, key, stamp, home if os.path.isdir(home) else cwd, env,
                                  limits)
            if isinstance(started, RunResult):
                return started
            proc = started
        began = time.perf_counter()
        event_id = f"{self._id_prefix}{next(self._ids):08x}"
        answer = await proc.ask(_with_id(stdin, event_id), event_id, timeout)
        result = await self._result(proc, key, answer, began)
        return _note(result, note) if note else result

    def _start(self, hook: HookSpec, key: _Key, stamp: object, cwd: str,
               env: Mapping[str, str], limits: Limits | None) -> _Proc | RunResult:
        import asyncio

        penv = dict(env)
        for var in _PER_EVENT_VARS:  # one process serves every session and folder
            penv.pop(var, None)
        penv[PERSISTENT_VAR] = "1"
        run = Run.start(hook.entry, cwd, penv, limits, self.output_cap)
        if isinstance(run, RunResult):
            return run
        loop = asyncio.get_running_loop()
        proc = self._procs[key] = _Proc(run, hook, stamp, self._generation, key, loop)
        if self.idle_timeout is not None:
            proc.idle = loop.call_later(self.idle_timeout, self._idle, proc)
        return proc

    async def _result(self, proc: _Proc, key: _Key, answer: Answer | str,
                      began: float) -> RunResult:
        ms = (time.perf_counter() - began) * 1000
        if not isinstance(answer, str):
            self._failures.pop(key, None)
            if self._procs.get(key) is not proc:  # retired while it answered
                await self._stop(proc, graceful=False)
            return _from_answer(answer, bytes(proc.err), proc.err_size, ms, proc.stray_note())
        stderr, size = bytes(proc.err), proc.err_size
        strays = proc.stray_note()
        stderr, size = stderr + strays, size + len(strays)
        if answer == _TIMEOUT:
            note = self._failed(key, "it timed out without answering this event (one JSON "
                                f"object line echoing its {ID_FIELD}); its resident process "
                                "was killed")
            proc.run.terminate()
            deadline = time.monotonic() + self.kill_grace
            import asyncio

            while not proc.exited() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            await self._stop(proc, graceful=False)
            return _note(RunResult(exit_code=None, stderr=stderr, stderr_size=size,
                                   duration_ms=(time.perf_counter() - began) * 1000,
                                   timed_out=True), note)
        if answer == _OVERSIZE:
            note = self._failed(key, f"it wrote a stdout line over {self.output_cap} bytes; "
                                "its resident process was stopped")
            out = bytes(proc.buf[:self.output_cap])
            await self._stop(proc, graceful=False)
            return _note(RunResult(exit_code=0, stdout=out, stdout_size=len(proc.buf),
                                   stderr=stderr, stderr_size=size, duration_ms=ms), note)
        # dead (or the pool closed under it): the event in flight failed
        await self._stop(proc, graceful=False)
        code = proc.returncode()
        what = ("the pool closed" if answer == _CLOSED
                else f"its resident process exited (status {code}) before answering")
        note = self._failed(key, what)
        return _note(RunResult(exit_code=1 if code in (0, 2, None) else code, stderr=stderr,
                               stderr_size=size, duration_ms=ms), note)

    # -- backoff ---------------------------------------------------------------------------

    def _failed(self, key: _Key, what: str) -> str:
        count, _ = self._failures.get(key, (0, 0.0))
        delay = self.backoff[min(count, len(self.backoff) - 1)]
        self._failures[key] = (count + 1, time.monotonic() + delay)
        return f"{what}; restarted for a later event (backoff {delay:g} s)"

    def _waiting(self, key: _Key) -> float | None:
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

    # -- idle ------------------------------------------------------------------------------

    def _idle(self, proc: _Proc) -> None:
        """The idle timer of ``proc``: stop it if no event came for ``idle_timeout``."""
        proc.idle = None
        if self.closed or self._procs.get(proc.key) is not proc or self.idle_timeout is None:
            return
        left = proc.last_used + self.idle_timeout - time.monotonic()
        if proc.busy or left > 0:
            proc.idle = proc.loop.call_later(self.idle_timeout if proc.busy else left,
                                             self._idle, proc)
            return
        del self._procs[proc.key]
        task = proc.loop.create_task(self._stop_many([proc], graceful=True))
        self._idle_stops.add(task)
        task.add_done_callback(self._idle_stops.discard)

    # -- stopping --------------------------------------------------------------------------

    async def _stop(self, proc: _Proc, *, graceful: bool) -> None:
        if self._procs.get(proc.key) is proc:
            del self._procs[proc.key]
        if graceful and not proc.dead:
            proc.close_stdin()
            await _wait_exit([proc], self.close_grace)
        proc.kill()
        await proc.run.reaper.sweep_async()

    async def _stop_all(self, *, graceful: bool) -> None:
        """Stop every process: at once, or (``graceful``) after EOF and ``close_grace``. One
        busy with an event is left to finish it (then stopped, being no longer registered),
        except on close, where its event fails."""
        procs = [*self._procs.values(), *self._stopping]  # a prune's too: the loop may end
        self._procs.clear()
        await self._stop_many(procs, graceful=graceful)

    async def _stop_many(self, procs: list[_Proc], *, graceful: bool) -> None:
        """``_stop_all`` for processes already taken out of ``_procs``; until they are
        killed they are in ``_stopping`` (a close or ``kill_now`` meanwhile kills them too)."""
        idle = [proc for proc in procs if not proc.busy]
        self._stopping.update(idle)
        try:
            if self.closed:
                for proc in procs:
                    proc._wake(_CLOSED)
            if graceful:
                for proc in idle:
                    proc.close_stdin()
                await _wait_exit(idle, self.close_grace)
        finally:
            for proc in idle:
                proc.kill()
                self._stopping.discard(proc)
        if idle:
            await idle[0].run.reaper.sweep_async()

    async def aclose(self) -> None:
        """Close every process (EOF, ``close_grace``, then kill) and sweep; idempotent. Later
        runs are one-shot."""
        self.closed = True
        await self._stop_all(graceful=True)
        if self._idle_stops:
            import asyncio

            await asyncio.gather(*self._idle_stops, return_exceptions=True)

    async def prune(self, hooks: LiveHooks) -> None:
        """Stop the processes whose hook ``hooks`` no longer has (see the module docstring);
        one comparison when its generation has not moved since the last ``run`` or ``prune``.
        A process busy with an event finishes it, then stops."""
        generation = hooks.generation
        if generation == self._generation or self.closed:
            return
        self._generation = generation
        stale = [proc for proc in self._procs.values()
                 if hooks.get(proc.spec.name) is not proc.spec or proc.stamp != _stamp(proc.spec)]
        for proc in stale:
            del self._procs[proc.key]
        if stale:
            await self._stop_many(stale, graceful=True)

    def kill_now(self) -> None:
        """Kill every process group and reap it at once, with no wait on an event loop (for an
        owner whose loop has closed, or that cannot await); idempotent. Later runs are
        one-shot. Call it from the pool's loop thread, or when that loop no longer runs."""
        self.closed = True
        procs = [*self._procs.values(), *self._stopping]
        self._procs.clear()
        self._stopping.clear()
        for proc in procs:
            if not proc.loop.is_closed():
                proc._wake(_CLOSED)  # an event in flight on a loop still there fails
            proc.kill()
        for task in list(self._idle_stops):
            if not task.get_loop().is_closed():
                task.cancel()
        if procs:
            procs[0].run.reaper.sweep()


async def _wait_exit(procs: list[_Proc], limit: float) -> None:
    import asyncio

    deadline = time.monotonic() + limit
    while any(not p.exited() for p in procs) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


def _from_answer(data: Answer, stderr: bytes, size: int, ms: float, log: bytes) -> RunResult:
    """The answer of one event -> its ``RunResult`` (see the module docstring); ``log`` is
    added to its stderr unless that stderr is a deny's reason."""
    del data[ID_FIELD]
    code: Any = data.pop("exit_code", 0)
    if code is None:
        code = 0
    if not isinstance(code, int) or isinstance(code, bool):
        note = f"[mcp-hooks] exit_code must be 0 or 2, got {code!r}\n".encode()
        stderr, size, code = stderr + note, size + len(note), 1
    word = data.get("decision")
    denies = isinstance(word, str) and word.strip().lower() in _DENY_WORDS
    if denies and code == 0:
        code = 2  # a deny exits 2, as the hook's one-shot run does
    elif code == 2 and word is None and isinstance(data.get("reason"), str) and data["reason"]:
        data["decision"] = "deny"  # the reason travels in the answer, stderr stays the log
        denies = True
    if log and (code != 2 or denies):  # else judge reads stderr as the reason: left alone
        stderr, size = stderr + log, size + len(log)
    stdout = json.dumps(data, ensure_ascii=False).encode("utf-8", "replace") if data else b""
    return RunResult(exit_code=code, stdout=stdout, stderr=stderr, stdout_size=len(stdout),
                     stderr_size=size, duration_ms=ms)
