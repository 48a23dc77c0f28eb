"""One hook as a subprocess: payload on stdin, capped output, timeout, process-group kill.

The child runs in a session (and so a process group) of its own, with the payload on stdin
and stdout/stderr on separate pipes, never through a shell. Pipes are pumped by event-loop
callbacks rather than tasks, and the child's exit is watched through a pidfd that joins an
epoll set the loop's running hooks share (``_ExitWatcher``), so a run costs little more than
the spawn itself, and a child that exits while a grandchild still holds its stdout does not
hang the event. On timeout the whole group gets SIGTERM, a short grace, then
SIGKILL; the leader is reaped only after the group is killed, so its pid (the group's id)
cannot be reused in between.

Spawning uses ``posix_spawn`` (a vfork-style spawn, the cheapest Python offers) when the
child's working folder can be set safely: when it is already the process's own, or when this
is the only thread (the folder is switched around the spawn). Otherwise ``subprocess.Popen``
with ``cwd``.

Nothing here raises for a hook's failure: a spawn error, a timeout or a crash is a
``RunResult`` with the matching fields set.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import select
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import asyncio

OUTPUT_CAP = 1 << 20  # bytes kept per stream; the rest is drained and counted
KILL_GRACE = 0.2  # seconds between SIGTERM and SIGKILL
_CHUNK = 1 << 16
_PIPE_ROOM = 1 << 16  # a payload this small fits an empty pipe: write it in one go
# With a pidfd to tell us the child exited, its output waits in the pipes (64 KiB each) and is
# read once at exit: no wake-up per pipe for a quick hook. A hook still running after this
# long gets readers, so one that writes more than a pipe holds is drained, never stuck.
_READ_DELAY = 0.005
_HAS_PIDFD = hasattr(os, "pidfd_open")
_HAS_SPAWN = hasattr(os, "posix_spawn") and hasattr(os, "POSIX_SPAWN_DUP2")


class RunResult(NamedTuple):
    """What one run of a hook produced (a tuple: it costs a hook's run the least).

    Attributes:
        exit_code: the exit status; negative for a signal; None if it never ran or timed out.
        stdout, stderr: the first ``OUTPUT_CAP`` bytes of each stream.
        stdout_size, stderr_size: how many bytes each stream carried in all.
        duration_ms: wall time from spawn to reaping.
        timed_out: the run hit its timeout and its process group was killed.
        spawn_error: why the script could not be started (missing, not executable, ...).
    """

    exit_code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_size: int = 0
    stderr_size: int = 0
    duration_ms: float = 0.0
    timed_out: bool = False
    spawn_error: str | None = None


class _Child:
    """A spawned child: its pid and our ends of its three pipes."""

    __slots__ = ("err_fd", "in_fd", "out_fd", "pid", "popen", "returncode")

    def __init__(self, pid: int, in_fd: int, out_fd: int, err_fd: int,
                 popen: subprocess.Popen[bytes] | None = None) -> None:
        self.pid = pid
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.err_fd = err_fd
        self.popen = popen
        self.returncode: int | None = None

    def wait(self) -> int:
        while self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # reaped elsewhere
                self.returncode = -1
                break
            except InterruptedError:
                continue
            self._set(status)
        assert self.returncode is not None
        return self.returncode

    def _set(self, status: int) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)
        if self.popen is not None:
            self.popen.returncode = self.returncode  # it must not wait for it again


def _spawn(argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> _Child:
    """Start ``argv`` in a new session with three pipes; raises OSError."""
    if _HAS_SPAWN:
        here = _cwd_or_none()
        if here == cwd:
            return _posix_spawn(argv, env)
        if threading.active_count() == 1 and here is not None:
            os.chdir(cwd)  # no other thread can see the switch
            try:
                return _posix_spawn(argv, env)
            finally:
                os.chdir(here)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True,
                            bufsize=0)
    assert proc.stdin and proc.stdout and proc.stderr
    fds = (os.dup(proc.stdin.fileno()), os.dup(proc.stdout.fileno()),
           os.dup(proc.stderr.fileno()))
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    return _Child(proc.pid, *fds, popen=proc)


def _cwd_or_none() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def _posix_spawn(argv: Sequence[str], env: Mapping[str, str]) -> _Child:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        pid = os.posix_spawn(
            argv[0], list(argv), env,
            file_actions=[(os.POSIX_SPAWN_DUP2, in_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1),
                          (os.POSIX_SPAWN_DUP2, err_w, 2)],
            setsid=True,
        )
    except BaseException:
        for fd in (in_w, out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    return _Child(pid, in_w, out_r, err_r)


class _Stream:
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
        """One read of our (non-blocking) end of the pipe.

        Returns True at end of file (or on an error), False after reading data, None when
        the pipe is empty for now (a grandchild may still hold its other end).
        """
        try:
            data = os.read(self.fd, _CHUNK)
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


class _ExitWatcher:
    """What the running hooks of one event loop share: an epoll set for their pidfds, and
    one timer for starting their readers.

    The loop watches the set's one descriptor; a hook's pidfd joins and leaves the set with
    a C call each, where ``loop.add_reader`` would cost a handle, a selector key and an
    ``epoll_ctl`` through Python per run. Every hook starts its readers ``_READ_DELAY``
    after its spawn, so those moments come in order: one queue and one loop timer serve
    them all, where a timer per run would cost a handle and a cancel each. (The watcher
    keeps no reference to the loop, so the loop can be collected; see ``_watchers``.)
    """

    __slots__ = ("armed", "epoll", "pumps", "runs", "soon")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.epoll = select.epoll()
        self.pumps: dict[int, _Pump] = {}
        # (when, pidfd, run number) of the runs whose readers are due then: the pidfd alone
        # may have been closed and reused by a later run since
        self.soon: collections.deque[tuple[float, int, int]] = collections.deque()
        self.runs = 0
        self.armed = False
        loop.add_reader(self.epoll.fileno(), self._on_exit)

    def watch(self, loop: asyncio.AbstractEventLoop, pidfd: int, pump: _Pump) -> None:
        self.epoll.register(pidfd, select.EPOLLIN)
        self.pumps[pidfd] = pump
        self.runs += 1
        pump.run = self.runs
        when = loop.time() + _READ_DELAY
        self.soon.append((when, pidfd, self.runs))
        if not self.armed:
            loop.call_at(when, self._on_due, loop)
            self.armed = True

    def forget(self, pidfd: int) -> None:
        if self.pumps.pop(pidfd, None) is not None:
            self.epoll.unregister(pidfd)

    def _on_exit(self) -> None:
        for pidfd, _ in self.epoll.poll(0):
            pump = self.pumps.pop(pidfd, None)
            if pump is not None:
                self.epoll.unregister(pidfd)
                pump.on_exit()

    def _on_due(self, loop: asyncio.AbstractEventLoop) -> None:
        soon = self.soon
        now = loop.time() + 0.001  # the loop runs a timer up to its clock resolution early
        try:
            while soon and soon[0][0] <= now:
                _, pidfd, run = soon.popleft()
                pump = self.pumps.get(pidfd)
                if pump is not None and pump.run == run:
                    pump.start_reading()
        finally:  # whatever happened, the runs still queued keep their timer
            if soon:
                loop.call_at(soon[0][0], self._on_due, loop)
            else:
                self.armed = False


# One watcher per loop, dropped with its loop.
_watchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _ExitWatcher] = (
    weakref.WeakKeyDictionary())


def _exit_watcher(loop: asyncio.AbstractEventLoop) -> _ExitWatcher:
    watcher = _watchers.get(loop)
    if watcher is None:
        watcher = _watchers[loop] = _ExitWatcher(loop)
    return watcher


class _Pump:
    """Feeds stdin and drains stdout/stderr from loop callbacks until the child exits.

    ``done`` resolves when the child has exited (not yet reaped), or when the timeout fires
    first (``timed_out`` set). With a pidfd, the child's output waits in its pipes and is
    read once, at exit; readers are added only for a child still running after
    ``_READ_DELAY``, so one that writes more than a pipe holds is drained, never stuck.
    """

    __slots__ = ("child", "deadline", "done", "err", "exited", "loop", "out", "payload",
                 "pidfd", "reading", "run", "stdin_fd", "timed_out", "timer", "watcher",
                 "writing")

    def __init__(self, loop: asyncio.AbstractEventLoop, child: _Child, payload: bytes,
                 cap: int, timeout: float) -> None:
        self.loop = loop
        self.child = child
        self.done: asyncio.Future[None] = loop.create_future()
        self.exited = False
        self.timed_out = False
        self.deadline = loop.time() + timeout
        self.timer: asyncio.TimerHandle | None = None  # armed when the readers start
        self.reading = False  # readers registered on the two pipes
        self.writing = False  # a writer registered on stdin
        self.stdin_fd: int | None = child.in_fd
        if len(payload) <= _PIPE_ROOM:  # fits the empty pipe: one write that cannot block
            self.payload = memoryview(b"")
            try:  # noqa: SIM105 (contextlib.suppress costs a run more than this does)
                os.write(child.in_fd, payload)
            except OSError:  # the child closed stdin or exited: not an error
                pass
            os.close(child.in_fd)
            self.stdin_fd = None
        else:
            self.payload = memoryview(payload)
            self._feed()
        self.out = _Stream(child.out_fd, cap)
        self.err = _Stream(child.err_fd, cap)
        self.pidfd = -1
        self.run = 0  # its number at the watcher
        self.watcher: _ExitWatcher | None = None
        if _HAS_PIDFD:
            try:
                self.pidfd = os.pidfd_open(child.pid)
            except OSError:
                self.pidfd = -1
        if self.pidfd >= 0:
            self.watcher = _exit_watcher(loop)
            self.watcher.watch(loop, self.pidfd, self)  # it starts the readers after a delay
        if self.pidfd < 0 or timeout <= _READ_DELAY:
            self.start_reading()  # at once: nothing else tells us of the exit, or of time up

    def start_reading(self) -> None:
        """Register readers on both pipes, and arm the timeout."""
        if self.timer is not None or self.done.done():
            return
        self.timer = self.loop.call_at(self.deadline, self._on_timeout)
        if not self.exited:
            for stream in (self.out, self.err):
                self.loop.add_reader(stream.fd, self._on_readable, stream)
            self.reading = True

    def _feed(self) -> None:
        fd = self.stdin_fd
        if fd is None:
            return
        if len(self.payload) > _PIPE_ROOM and os.get_blocking(fd):
            os.set_blocking(fd, False)  # a large payload goes in as the child reads it
        while self.payload:
            try:
                n = os.write(fd, self.payload)
            except BlockingIOError:
                if not self.writing:
                    self.loop.add_writer(fd, self._feed)
                    self.writing = True
                return
            except OSError:  # the child closed stdin or exited: not an error
                break
            self.payload = self.payload[n:]
        self._close_stdin()

    def _close_stdin(self) -> None:
        if self.stdin_fd is not None:
            if self.writing:
                self.loop.remove_writer(self.stdin_fd)
                self.writing = False
            os.close(self.stdin_fd)
            self.stdin_fd = None

    def _on_readable(self, stream: _Stream) -> None:
        if stream.read_once():
            self.loop.remove_reader(stream.fd)
            stream.eof = True
            if self.pidfd == -1 and self.out.eof and self.err.eof:
                self._finish()  # no pidfd: end of both pipes stands for the child's exit

    def on_exit(self) -> None:
        """The child exited (its pidfd is readable, and the watcher let it go)."""
        os.close(self.pidfd)
        self.pidfd = -2  # watched, and done with (-1: never watched)
        self.exited = True
        self._stop_reading()
        # What the child wrote before exiting is in the pipes now; take it and stop
        # listening, so a grandchild holding the pipes open cannot hang the event.
        self.out.drain()
        self.err.drain()
        self._finish()

    def _on_timeout(self) -> None:
        self.timed_out = True
        self._finish()

    def _finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    async def wait_exit(self, limit: float) -> None:
        """Wait up to ``limit`` seconds for the child to exit (without reaping it)."""
        deadline = self.loop.time() + limit
        while not self.exited and self.loop.time() < deadline:
            if _has_exited(self.child.pid, self.pidfd):
                return
            await _sleep(0.01)

    def _stop_reading(self) -> None:
        if self.reading:
            for stream in (self.out, self.err):
                if not stream.eof:
                    self.loop.remove_reader(stream.fd)
            self.reading = False

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self._close_stdin()
        self._stop_reading()
        os.close(self.out.fd)
        os.close(self.err.fd)
        if self.pidfd >= 0:
            if self.watcher is not None:
                self.watcher.forget(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = -1


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def _has_exited(pid: int, pidfd: int) -> bool:
    """Whether a child has exited, leaving it unreaped (its group id stays reserved)."""
    if pidfd >= 0:
        return bool(select.select([pidfd], [], [], 0)[0])
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except OSError as exc:
        if exc.errno not in (errno.ESRCH, errno.EPERM):
            raise


def _spawn_error(argv: Sequence[str], exc: OSError) -> str:
    target = exc.filename or argv[0]
    if exc.errno == errno.ENOENT:
        return f"{target}: not found (a missing script, or a missing interpreter in its #! line)"
    if exc.errno == errno.EACCES:
        return f"{target}: permission denied (chmod +x it)"
    if exc.errno == errno.ENOEXEC:
        return f"{target}: not an executable format (add a #! line)"
    return f"{target}: {exc.strerror or exc}"


def _not_started(argv: Sequence[str], exc: OSError, start: float) -> RunResult:
    return RunResult(exit_code=None, duration_ms=(time.perf_counter() - start) * 1000,
                     spawn_error=_spawn_error(argv, exc))


def _finished(child: _Child, out: _Stream, err: _Stream, start: float,
              timed_out: bool) -> RunResult:
    return RunResult(
        exit_code=None if timed_out else child.returncode,
        stdout=out.value(), stderr=err.value(), stdout_size=out.size, stderr_size=err.size,
        duration_ms=(time.perf_counter() - start) * 1000, timed_out=timed_out,
    )


async def run_hook(
    argv: Sequence[str],
    payload: bytes,
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    output_cap: int = OUTPUT_CAP,
    kill_grace: float = KILL_GRACE,
) -> RunResult:
    """Run one hook to completion or timeout.

    Args:
        argv: the command, an absolute path first (never run through a shell).
        payload: bytes for stdin; a child that never reads them is fine.
        cwd: the working directory.
        env: the whole environment of the child.
        timeout: seconds before the process group is terminated.
        output_cap: bytes kept of each of stdout and stderr.
        kill_grace: seconds between SIGTERM and SIGKILL on timeout.

    Returns:
        The result; never raises for anything the hook does. Cancelled from outside, it
        kills the process group and reaps the child before the cancellation goes on.
    """
    start = time.perf_counter()
    try:
        child = _spawn(argv, cwd, env)
    except OSError as exc:
        return _not_started(argv, exc, start)
    import asyncio  # here, not at the top: one-shot callers run hooks without a loop

    pump = _Pump(asyncio.get_running_loop(), child, payload, output_cap, timeout)
    try:
        await pump.done
        if pump.timed_out and not pump.exited:
            _killpg(child.pid, signal.SIGTERM)
            await pump.wait_exit(kill_grace)
            _killpg(child.pid, signal.SIGKILL)
        else:
            pump.timed_out = False
        child.wait()
    finally:
        if child.returncode is None:  # cancelled from outside: leave nothing behind
            _killpg(child.pid, signal.SIGKILL)
            child.wait()
        pump.close()
    return _finished(child, pump.out, pump.err, start, pump.timed_out)


def run_hook_blocking(
    argv: Sequence[str],
    payload: bytes,
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    output_cap: int = OUTPUT_CAP,
    kill_grace: float = KILL_GRACE,
) -> RunResult:
    """``run_hook`` without an event loop, for one-shot processes (``mcp-hooks fire``, the
    host bridges): the same spawn, caps, timeout and process-group kill, waiting in ``poll``.
    Importing asyncio alone costs such a process 15-45 ms here.
    """
    start = time.perf_counter()
    try:
        child = _spawn(argv, cwd, env)
    except OSError as exc:
        return _not_started(argv, exc, start)
    out, err = _Stream(child.out_fd, output_cap), _Stream(child.err_fd, output_cap)
    poller = select.poll()
    view = memoryview(payload)
    in_fd: int | None = child.in_fd
    if len(view) > _PIPE_ROOM:
        os.set_blocking(child.in_fd, False)  # fed as the child reads, never stuck
        poller.register(child.in_fd, select.POLLOUT)
    else:
        with contextlib.suppress(OSError):  # a child that never reads stdin is fine
            os.write(child.in_fd, view)
        os.close(child.in_fd)
        in_fd = None
    streams = {out.fd: out, err.fd: err}
    for fd in streams:
        poller.register(fd, select.POLLIN)
    pidfd = -1
    if _HAS_PIDFD:
        with contextlib.suppress(OSError):
            pidfd = os.pidfd_open(child.pid)
            poller.register(pidfd, select.POLLIN)
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            exited = False
            for fd, _ in poller.poll(left * 1000):
                if fd == pidfd:
                    exited = True
                elif fd == in_fd:
                    try:
                        view = view[os.write(fd, view):]
                    except BlockingIOError:
                        continue
                    except OSError:
                        view = view[:0]
                    if not view:
                        poller.unregister(fd)
                        os.close(fd)
                        in_fd = None
                elif fd in streams and streams[fd].read_once():
                    poller.unregister(fd)
                    del streams[fd]
            if exited or (pidfd < 0 and not streams):
                out.drain()  # what the child wrote is here; a grandchild cannot hang us
                err.drain()
                break
        if timed_out:
            _killpg(child.pid, signal.SIGTERM)
            _wait_exit_unreaped(child.pid, pidfd, kill_grace)
            _killpg(child.pid, signal.SIGKILL)  # the leader is not reaped: its group id holds
        child.wait()
    finally:
        if child.returncode is None:  # interrupted: leave nothing behind
            _killpg(child.pid, signal.SIGKILL)
            child.wait()
        for fd in (out.fd, err.fd, pidfd, -1 if in_fd is None else in_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
    return _finished(child, out, err, start, timed_out)


def _wait_exit_unreaped(pid: int, pidfd: int, limit: float) -> None:
    """Wait up to ``limit`` seconds for a child to exit, leaving it to be reaped later."""
    if pidfd >= 0:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll(limit * 1000)
        return
    end = time.monotonic() + limit
    while time.monotonic() < end and not _has_exited(pid, -1):
        time.sleep(0.01)
