"""One hook as a subprocess: payload on stdin, capped output, timeout, process-group kill.

The child runs in a session (and process group) of its own, with the payload on stdin and
stdout/stderr on separate pipes. Pipes are pumped by event-loop callbacks rather than tasks,
and the child's exit is watched through a pidfd, so a run costs little more than the spawn
itself, and a child that exits while a grandchild still holds its stdout does not hang the
event. On timeout the whole group gets SIGTERM, a short grace, then SIGKILL; the leader is
reaped only after the group is killed, so its pid cannot be reused in between.

Nothing here raises for a hook's failure: a spawn error, a timeout or a crash is a
``RunResult`` with the matching fields set.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import anyio

OUTPUT_CAP = 1 << 20  # bytes kept per stream; the rest is drained and counted
KILL_GRACE = 0.2  # seconds between SIGTERM and SIGKILL
_CHUNK = 1 << 16
_HAS_PIDFD = hasattr(os, "pidfd_open")


@dataclass(frozen=True)
class RunResult:
    """What one run of a hook produced.

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


class _Stream:
    __slots__ = ("cap", "chunks", "fd", "kept", "size")

    def __init__(self, fd: int, cap: int) -> None:
        self.fd = fd
        self.cap = cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.size = 0

    def read_available(self) -> bool:
        """Read until the pipe is empty; True at end of file."""
        while True:
            try:
                data = os.read(self.fd, _CHUNK)
            except BlockingIOError:
                return False
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

    def value(self) -> bytes:
        return b"".join(self.chunks)


class _Pump:
    """Feeds stdin and drains stdout/stderr from loop callbacks until the child exits."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes], payload: bytes,
        cap: int,
    ) -> None:
        assert proc.stdin and proc.stdout and proc.stderr
        self.loop = loop
        self.proc = proc
        self.done: asyncio.Future[None] = loop.create_future()
        self.exited = False
        self.out = _Stream(proc.stdout.fileno(), cap)
        self.err = _Stream(proc.stderr.fileno(), cap)
        self.open_streams = 2
        self.pidfd = -1
        self.payload = memoryview(payload)
        self.stdin_fd: int | None = proc.stdin.fileno()
        for fd in (self.out.fd, self.err.fd, self.stdin_fd):
            os.set_blocking(fd, False)
        self._feed()
        loop.add_reader(self.out.fd, self._on_readable, self.out)
        loop.add_reader(self.err.fd, self._on_readable, self.err)
        if _HAS_PIDFD:
            try:
                self.pidfd = os.pidfd_open(proc.pid)
            except OSError:
                self.pidfd = -1
        if self.pidfd >= 0:
            loop.add_reader(self.pidfd, self._on_exit)

    def _feed(self) -> None:
        fd = self.stdin_fd
        if fd is None:
            return
        while self.payload:
            try:
                n = os.write(fd, self.payload)
            except BlockingIOError:
                self.loop.add_writer(fd, self._on_writable)
                return
            except OSError:  # the child closed stdin or exited: not an error
                break
            self.payload = self.payload[n:]
        self._close_stdin()

    def _on_writable(self) -> None:
        if self.stdin_fd is not None:
            self.loop.remove_writer(self.stdin_fd)
        self._feed()

    def _close_stdin(self) -> None:
        if self.stdin_fd is not None:
            self.loop.remove_writer(self.stdin_fd)
            self.stdin_fd = None
            assert self.proc.stdin is not None
            self.proc.stdin.close()

    def _on_readable(self, stream: _Stream) -> None:
        if stream.read_available():
            self.loop.remove_reader(stream.fd)
            self.open_streams -= 1
            self._maybe_done()

    def _on_exit(self) -> None:
        self.loop.remove_reader(self.pidfd)
        self.exited = True
        # What the child wrote before exiting is in the pipes now; take it and stop
        # listening, so a grandchild holding the pipes open cannot hang the event.
        for stream in (self.out, self.err):
            stream.read_available()
        self._finish()

    def _maybe_done(self) -> None:
        if self.open_streams == 0 and self.pidfd < 0:
            self._finish()  # no pidfd: end of both pipes stands for the child's exit

    def _finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def wait_exit(self) -> asyncio.Future[None]:
        """A future that resolves when the child has exited (not reaped)."""
        if self.exited or self.pidfd < 0:
            fut: asyncio.Future[None] = self.loop.create_future()
            if self.exited:
                fut.set_result(None)
            else:
                self._poll_exit(fut)
            return fut
        if self.done.done():
            self.done = self.loop.create_future()
        return self.done

    def _poll_exit(self, fut: asyncio.Future[None]) -> None:
        if fut.done():
            return
        if self.proc.poll() is not None:
            fut.set_result(None)
        else:
            self.loop.call_later(0.01, self._poll_exit, fut)

    def close(self) -> None:
        self._close_stdin()
        for stream in (self.out, self.err):
            self.loop.remove_reader(stream.fd)
        if self.pidfd >= 0:
            self.loop.remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = -1
        assert self.proc.stdout and self.proc.stderr
        self.proc.stdout.close()
        self.proc.stderr.close()


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
        argv: the command (never run through a shell).
        payload: bytes for stdin; a child that never reads them is fine.
        cwd: the working directory.
        env: the whole environment of the child.
        timeout: seconds before the process group is terminated.
        output_cap: bytes kept of each of stdout and stderr.
        kill_grace: seconds between SIGTERM and SIGKILL on timeout.

    Returns:
        The result; never raises for anything the hook does.
    """
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
            bufsize=0,
        )
    except OSError as exc:
        return RunResult(
            exit_code=None,
            duration_ms=(time.perf_counter() - start) * 1000,
            spawn_error=_spawn_error(argv, exc),
        )
    pump = _Pump(asyncio.get_running_loop(), proc, payload, output_cap)
    timed_out = False
    reaped = False
    try:
        with anyio.move_on_after(timeout) as scope:
            await pump.done
        if scope.cancelled_caught:
            timed_out = True
            _killpg(proc.pid, signal.SIGTERM)
            with anyio.CancelScope(shield=True), anyio.move_on_after(kill_grace):
                await pump.wait_exit()
            _killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        reaped = True
    finally:
        if not reaped:  # cancelled from outside: leave nothing behind
            _killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        pump.close()
    return RunResult(
        exit_code=None if timed_out else proc.returncode,
        stdout=pump.out.value(),
        stderr=pump.err.value(),
        stdout_size=pump.out.size,
        stderr_size=pump.err.size,
        duration_ms=(time.perf_counter() - start) * 1000,
        timed_out=timed_out,
    )
