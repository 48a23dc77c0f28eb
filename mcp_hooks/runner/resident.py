"""One resident hook process and the line protocol it speaks (``persistent`` keeps the pool).

``Resident`` owns one ``core.Run`` of a persistent hook: it writes one event line at a time,
reads stdout lines, and hands the event in flight the one line that echoes its id (or why it
ended: the process died, the event timed out, a line outgrew the cap, the pool closed). The
rules of the protocol (the id, what other lines are, the result) are ``persistent``'s module
docstring; this module is where they are carried out.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple

from mcp_hooks.runner.core import Run, RunResult, killpg
from mcp_hooks.runner.spawn import has_exited, open_pidfd
from mcp_hooks.runner.tree import CHUNK
from mcp_hooks.spec.hookfile import HookSpec

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable
    from pathlib import Path

ID_FIELD = "_mcp_hooks_event_id"  # the event's id, in the line sent and in its answer
EXIT_POLL = 0.02  # seconds between exit checks where no pidfd tells of the exit
STRAY_KEPT = 4096  # bytes kept of the stdout lines that answered nothing, per report
_STRAY_LINE = 300  # bytes kept of each such line
_ID_KEY = json.dumps(ID_FIELD).encode()
_DENY_WORDS = ("deny", "block")

Key = tuple["Path", str]
Answer = dict[str, Any]

# what an event in flight ended with (besides its answer)
DEAD = "dead"  # the process exited or closed its stdout
TIMEOUT = "timeout"
OVERSIZE = "oversize"  # a stdout line outgrew the output cap
CLOSED = "closed"  # the pool closed under it


class Resident:
    """One resident hook process: its ``core.Run``, line buffer, and the event in flight."""

    __slots__ = ("buf", "busy", "dead", "err", "err_size", "expect", "expect_id", "generation",
                 "idle", "key", "last_used", "loop", "on_gone", "pending", "pidfd", "run", "spec",
                 "stamp", "stray_count", "strays", "waiter", "writing")

    def __init__(self, run: Run, spec: HookSpec, stamp: object, generation: object,
                 key: Key, loop: asyncio.AbstractEventLoop) -> None:
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
        self.on_gone: Callable[[], None] | None = None  # told when it exits or closes stdout
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
            self._wake(DEAD)
            self._gone()
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
                self._wake(OVERSIZE)
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
        self._wake(DEAD)
        self._gone()

    def _gone(self) -> None:
        if self.on_gone is not None and not self.busy:  # an event in flight is told by DEAD
            self.on_gone()

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
            self._wake(DEAD)
        else:
            self.loop.call_later(EXIT_POLL, self._poll_exit)

    # -- one event -----------------------------------------------------------------------

    async def ask(self, line: bytes, event_id: str, timeout: float) -> Answer | str:
        """Send one event line; its answer (the JSON object echoing ``event_id``), or
        ``DEAD``/``TIMEOUT``/``OVERSIZE``/``CLOSED``. Cancelled from outside, the process
        is killed (its answer would come out of turn)."""
        self.busy = True
        self.err.clear()
        self.err_size = 0
        waiter: asyncio.Future[Answer | str] = self.loop.create_future()
        self.waiter = waiter
        self.expect_id, self.expect = event_id, event_id.encode()
        timer = self.loop.call_later(timeout, self._wake, TIMEOUT)
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


class Slot:
    """The resident processes of one hook and folder (at most ``cap``: ``metadata.processes``),
    and the events waiting for one of them, first come first served (``persistent``)."""

    __slots__ = ("cap", "procs", "waiters")

    def __init__(self) -> None:
        self.cap = 1
        self.procs: list[Resident] = []
        self.waiters: deque[asyncio.Future[Resident | None]] = deque()

    def idle(self) -> Resident | None:
        for proc in self.procs:
            if not proc.busy and not proc.dead:
                return proc
        return None

    def wake_all(self) -> None:
        """Every waiting event looks again (the slot was emptied, or the pool closed)."""
        while self.waiters:
            settle(self.waiters.popleft(), None)


def settle(waiter: asyncio.Future[Resident | None], value: Resident | None) -> None:
    if not waiter.done() and not waiter.get_loop().is_closed():
        waiter.set_result(value)


class Taken(NamedTuple):
    """What the pool's ``_take`` found for an event: ``how`` is ``take`` (``proc``, reserved),
    ``start`` (room for a new process), ``busy`` (processes: 1, busy), ``backoff``, ``expired`` (the
    hook's timeout passed waiting) or ``closed``; ``note`` what happened on the way."""

    how: str
    proc: Resident | None = None
    note: str | None = None


def with_id(stdin: bytes, event_id: str) -> bytes:
    """The event line: the payload object with ``ID_FIELD`` as its last member, and ``\\n``."""
    if _ID_KEY in stdin:  # the caller's payload has the field: ours must be the only one
        stdin = without_id(stdin)
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


def without_id(stdin: bytes) -> bytes:
    try:
        data: Any = json.loads(stdin)
    except (ValueError, RecursionError):
        return stdin
    if isinstance(data, dict) and data.pop(ID_FIELD, None) is not None:
        return json_bytes(data)
    return stdin


def json_bytes(data: Any) -> bytes:
    """``data`` as JSON in UTF-8; with ``\\u`` escapes where it holds a lone surrogate (a
    ``?`` in its place, as ``"replace"`` would put, is a shell glob in a rewritten command)."""
    try:
        return json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate: escaped, it round-trips
        return json.dumps(data).encode()


async def wait_exit(procs: list[Resident], limit: float) -> None:
    import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

    deadline = time.monotonic() + limit
    while any(not p.exited() for p in procs) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


def from_answer(data: Answer, stderr: bytes, size: int, ms: float, log: bytes) -> RunResult:
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
    stdout = json_bytes(data) if data else b""
    return RunResult(exit_code=code, stdout=stdout, stderr=stderr, stdout_size=len(stdout),
                     stderr_size=size, duration_ms=ms)


__all__ = ["CLOSED", "DEAD", "ID_FIELD", "OVERSIZE", "TIMEOUT", "Answer", "Key", "Resident",
           "Slot", "Taken", "from_answer", "settle", "wait_exit", "with_id", "without_id"]
