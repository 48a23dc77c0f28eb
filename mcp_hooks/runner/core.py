"""The rules of one run, shared by every driver: spawn marked and limited, stdin, capped
output, the deadline's TERM -> grace -> KILL, the group kill and reaping, the result.

A driver (``blocking``: ``poll``; ``eventloop``: loop callbacks; ``library``: asyncio's
subprocess) only decides how to *wait*: for the pipes, for the child's exit, for the
deadline. Everything it does to the process and its output is a method of ``Run``:

1. ``Run.start`` numbers the run and marks a copy of its environment (``tree``), spawns
   (``spawn``, or the driver's own spawner through ``Run.prepare`` and ``Run.adopt``),
   and applies the hook's limits (``rlimits``). A child that cannot be started, or limited,
   is a ``RunResult`` with ``spawn_error`` set: nothing here raises for a hook's failure.
2. ``Run.begin_stdin`` / ``Run.feed`` write the payload: in one go when it fits an empty pipe
   (``PIPE_ROOM``), else without blocking as the child reads it. A child that closes stdin
   or exits first is normal, never an error.
3. ``Stream`` keeps the first ``output_cap`` bytes of stdout and of stderr apart and counts
   the rest; ``Run.drain`` takes what is in the pipes at the child's exit without waiting
   for their end, so a grandchild holding them open cannot hang the event (it is killed by
   the sweep).
4. On the deadline: ``Run.terminate`` (SIGTERM to the group), the driver waits up to
   ``kill_grace`` for the exit, then ``Run.end`` (SIGKILL to the group).
5. ``Run.end`` kills what is left of the group and reaps the leader only afterwards, so its
   pid (the group's id) cannot be reused in between; ``Run.abandon`` does the same for a run
   interrupted from outside (cancellation, KeyboardInterrupt). The driver then sweeps
   (``Reaper.sweep``) and returns ``Run.result``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from mcp_hooks.runner import rlimits
from mcp_hooks.runner.spawn import Child, spawn
from mcp_hooks.runner.tree import CHUNK, Reaper, reaper
from mcp_hooks.spec.limits import DEFAULT_LIMITS, Limits

OUTPUT_CAP = 1 << 20  # bytes kept per stream; the rest is drained and counted
KILL_GRACE = 0.2  # seconds between SIGTERM and SIGKILL
PIPE_ROOM = 1 << 16  # a payload this small fits an empty pipe: write it in one go
EXIT_POLL = 0.02  # seconds between exit checks where no pidfd tells of the exit

Spawner = Callable[[Sequence[str], str, Mapping[str, str], "int | None"], Child]


class RunResult(NamedTuple):
    """What one run of a hook produced (a tuple: it costs a hook's run the least).

    Attributes:
        exit_code: the exit status; negative for a signal; None if it never ran or timed out.
        stdout, stderr: the first ``OUTPUT_CAP`` bytes of each stream.
        stdout_size, stderr_size: how many bytes each stream carried in all.
        duration_ms: wall time from spawn to reaping.
        timed_out: the run hit its timeout and its process group was killed.
        spawn_error: why the script could not be started (missing, not executable, ...).
        limit: which ``metadata.limits`` the hook hit, when that can be told, e.g.
            "hit metadata.limits.cpu_seconds (5 s)"; None otherwise.
    """

    exit_code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_size: int = 0
    stderr_size: int = 0
    duration_ms: float = 0.0
    timed_out: bool = False
    spawn_error: str | None = None
    limit: str | None = None


class Stream:
    """Our non-blocking end of a stdout or stderr pipe, and what it carried (capped)."""

    __slots__ = ("cap", "chunks", "eof", "fd", "kept", "size")

    def __init__(self, fd: int, cap: int) -> None:
        os.set_blocking(fd, False)  # drained at exit without waiting on a grandchild
        self.fd = fd
        self.eof = False
        self.cap = cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.size = 0

    def read_once(self) -> bool | None:
        """One read of the pipe.

        Returns True at end of file (or on an error), False after reading data, None when
        the pipe is empty for now (a grandchild may still hold its other end).
        """
        try:
            data = os.read(self.fd, CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            return True
        if not data:
            return True
        self.size += len(data)
        room = self.cap - self.kept
        if room > 0:
            kept = data[:room]
            self.chunks.append(kept)
            self.kept += len(kept)
        return False

    def drain(self) -> None:
        """Read what is in the pipe now, without waiting for more."""
        while self.read_once() is False:
            pass

    def value(self) -> bytes:
        return b"".join(self.chunks)


def killpg(pgid: int, sig: int) -> None:
    """Signal a process group; one that is gone (or not ours) is not an error."""
    try:
        os.killpg(pgid, sig)
    except OSError as exc:
        if exc.errno not in (errno.ESRCH, errno.EPERM):
            raise


def spawn_error(argv: Sequence[str], exc: OSError | ValueError) -> str:
    """Why ``argv`` could not be started, in words that say how to fix it."""
    if isinstance(exc, ValueError):  # a NUL byte or an unencodable character in argv or env
        return f"{argv[0] if argv else '(no command)'}: cannot be started: {exc}"
    target = exc.filename or argv[0]
    if exc.errno == errno.ENOENT:
        return f"{target}: not found (a missing script, or a missing interpreter in its #! line)"
    if exc.errno == errno.EACCES:
        return f"{target}: permission denied (chmod +x it)"
    if exc.errno == errno.ENOEXEC:
        return f"{target}: not an executable format (add a #! line)"
    if exc.errno == errno.E2BIG:
        return f"{target}: its arguments and environment are too big for exec (E2BIG)"
    return f"{target}: {exc.strerror or exc}"


class Run:
    """One run of a hook, from its spawn to its ``RunResult`` (see the module docstring).

    Attributes:
        child: the spawned leader (None until ``adopt``).
        out, err: its stdout and stderr, capped.
        in_fd: our end of its stdin while the payload is still being written, else None.
        env: the run's environment (the caller's copy, marked with the run's id).
    """

    __slots__ = ("argv", "child", "env", "err", "in_fd", "limits", "number", "out",
                 "output_cap", "payload", "plan", "reaper", "started")

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], limits: Limits | None,
                 output_cap: int) -> None:
        self.started = time.perf_counter()
        self.argv = argv
        self.limits = DEFAULT_LIMITS if limits is None else limits
        self.output_cap = output_cap
        self.reaper: Reaper = reaper()
        self.number, self.env = self.reaper.begin(env)
        self.plan = rlimits.plan_limits(self.limits)
        self.child: Child | None = None
        self.in_fd: int | None = None
        self.payload = memoryview(b"")

    @classmethod
    def start(cls, argv: Sequence[str], cwd: str, env: Mapping[str, str],
              limits: Limits | None, output_cap: int,
              spawner: Spawner = spawn) -> Run | RunResult:
        """Spawn a run's child, marked and limited; a ``RunResult`` when it could not be."""
        run = cls(argv, env, limits, output_cap)
        try:
            child = spawner(argv, cwd, run.env, run.nofile())
        except (OSError, ValueError) as exc:
            return run.not_started(spawn_error(argv, exc))
        return run.adopt(child)

    def nofile(self) -> int | None:
        """The soft RLIMIT_NOFILE a spawn should start the child with, if any (within this
        process's hard limit, as the plan has it)."""
        if self.limits.open_files is None:
            return None

        return next((soft for res, soft, _ in self.plan if res == resource.RLIMIT_NOFILE), None)

    def not_started(self, error: str) -> RunResult:
        self.reaper.end(self.number)
        return RunResult(exit_code=None, spawn_error=error,
                         duration_ms=(time.perf_counter() - self.started) * 1000)

    def adopt(self, child: Child) -> Run | RunResult:
        """Take a spawned child into the run: limit it, and set up its output streams."""
        self.child = child
        self.reaper.leaders.add(child.pid)
        before = None
        if child.nofile_set:
            before = resource.RLIMIT_NOFILE
        # Only the open-files limit, and it was set before exec: the hook started with it. Its
        # hard limit is left as the engine's (the default is a sane start, not a boundary), so
        # the common run pays no prlimit.
        plan = self.plan
        pre_exec_only = child.limits_set or (
            len(plan) == 1 and before is not None and plan[0][0] == before)
        if plan and not pre_exec_only:
            try:
                rlimits.apply_limits(child.pid, plan, before)
            except OSError as exc:  # EPERM: a setuid program; the run must not go on unlimited
                killpg(child.pid, signal.SIGKILL)
                child.wait()
                for fd in (child.in_fd, child.out_fd, child.err_fd):
                    if fd >= 0:
                        os.close(fd)
                self.retire()
                self.reaper.sweep()
                return self.not_started(f"{self.argv[0]}: could not apply metadata.limits: "
                                        f"{exc.strerror or exc}")
        self.out = Stream(child.out_fd, self.output_cap)
        self.err = Stream(child.err_fd, self.output_cap)
        self.in_fd = child.in_fd if child.in_fd >= 0 else None
        return self

    # -- stdin ------------------------------------------------------------------------

    def begin_stdin(self, payload: bytes) -> bool:
        """Start writing the payload; True when it is all written (stdin closed), False
        when the rest must be fed with ``feed`` as the pipe has room."""
        fd = self.in_fd
        if fd is None:
            return True
        if len(payload) <= PIPE_ROOM:  # fits the empty pipe: one write that cannot block
            try:  # noqa: SIM105 (contextlib.suppress costs a run more than this does)
                os.write(fd, payload)
            except OSError:  # the child closed stdin or exited: not an error
                pass
            os.close(fd)
            self.in_fd = None
            return True
        os.set_blocking(fd, False)  # a large payload goes in as the child reads it
        self.payload = memoryview(payload)
        if self.feed():
            self.close_stdin()
            return True
        return False

    def feed(self) -> bool:
        """Write what the pipe takes now; True once nothing is left to write (the driver
        stops watching ``in_fd``, then calls ``close_stdin``)."""
        fd = self.in_fd
        if fd is None:
            return True
        while self.payload:
            try:
                n = os.write(fd, self.payload)
            except BlockingIOError:
                return False
            except OSError:  # the child closed stdin or exited: not an error
                break
            self.payload = self.payload[n:]
        self.payload = memoryview(b"")
        return True

    def close_stdin(self) -> None:
        if self.in_fd is not None:
            os.close(self.in_fd)
            self.in_fd = None

    # -- the end ----------------------------------------------------------------------

    def drain(self) -> None:
        """At the child's exit: what it wrote is in the pipes; take it, without waiting."""
        self.out.drain()
        self.err.drain()

    def terminate(self) -> None:
        """The deadline passed: SIGTERM to the group (the driver then waits the grace)."""
        assert self.child is not None
        killpg(self.child.pid, signal.SIGTERM)

    def end(self, timed_out: bool) -> None:
        """Kill what is left of the run's group and reap its leader (not yet the sweep)."""
        child = self.child
        assert child is not None
        if timed_out:
            killpg(child.pid, signal.SIGKILL)
        child.wait_exit()  # its orphans are ours once it has exited
        killpg(child.pid, signal.SIGKILL)  # still unreaped: the group id cannot be reused
        child.wait()
        self.retire()

    def retire(self) -> None:
        """The leader is reaped: the run is over (its leftovers are fair game for a sweep)."""
        assert self.child is not None
        self.reaper.leaders.discard(self.child.pid)
        self.reaper.end(self.number)

    def abandon(self) -> None:
        """A run interrupted from outside leaves nothing behind: its group is killed, the
        leader reaped, and one sweep made (a later run's sweep reaps what is still dying)."""
        child = self.child
        assert child is not None
        killpg(child.pid, signal.SIGKILL)
        child.wait()
        self.retire()
        self.reaper.sweep_pass(set())

    def close(self) -> None:
        """Close our ends of the pipes (idempotent)."""
        self.close_stdin()
        for stream in (self.out, self.err):
            if stream.fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(stream.fd)
                stream.fd = -1

    def result(self, timed_out: bool) -> RunResult:
        child = self.child
        assert child is not None
        stderr = self.err.value()
        return RunResult(
            exit_code=None if timed_out else child.returncode,
            stdout=self.out.value(), stderr=stderr, stdout_size=self.out.size,
            stderr_size=self.err.size,
            duration_ms=(time.perf_counter() - self.started) * 1000, timed_out=timed_out,
            limit=None if timed_out else rlimits.limit_hit(self.limits, child, stderr),
        )
