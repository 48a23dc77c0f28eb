"""The event log: one JSON line per fired event, and one per finished async hook.

Writing. Lines are appended on an ``O_APPEND`` descriptor under an exclusive ``flock``, so
concurrent writers (threads, tasks, other processes) never tear or interleave a line. A write
cut short (disk full, ``EFBIG``, a signal) leaves no torn record: the rest of the line is
retried, and if it cannot be written the log is truncated back to where the line began (the
lock makes that offset the record's own). Where truncating is not possible (no lock on this
file system, ``ftruncate`` refused) the fragment is ended with a newline right away or,
failing that, by the next writer, who finds the log not ending in one and starts its record
on a line of its own. A writer killed mid-line leaves such a fragment too. So readers skip
lines that are not JSON objects, and a lost record costs only itself. Strings that cannot be
UTF-8 (lone surrogates, file names that were not UTF-8) are written as JSON ``\\u`` escapes.
A log that cannot be written is reported once on stderr and never fails the event that
wanted to log. The log is opened non-blocking and must be a regular file or a character
device (``/dev/null``); a folder, FIFO or socket is refused, so no log can hang a writer.

Reading. ``read`` and ``follow`` take only a regular file (anything else is a
``ConfigError`` naming it: a FIFO or ``/dev/full`` would hang or never end), and ``read``
reads at most ``READ_LIMIT`` bytes, from the end: the most recent records, the first
(partial) line of that window skipped.

Records carry ``ts`` (``now()``: ISO 8601 UTC with milliseconds) and ``kind``: ``event``
(written by the engine) or ``async_result`` (``async_record``: one finished async hook,
written by the engine's task group or by the detached runner).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp_hooks import paths
from mcp_hooks.errors import ConfigError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the O_APPEND write alone
    fcntl = None  # type: ignore[assignment]

READ_LIMIT = 16 << 20  # bytes a reader reads at most, from the end of a log


def default_log_path() -> Path:
    """``$XDG_STATE_HOME/mcp-hooks/events.jsonl`` (default ``~/.local/state/...``)."""
    return paths.log_path()


# the last millisecond and the last whole second formatted, each with its text (one tuple:
# threads read and replace it whole)
_MILLI: list[tuple[int, str]] = [(-1, "")]
_SECOND: list[tuple[int, str]] = [(-1, "")]


def now() -> str:
    """ISO 8601 UTC with milliseconds, e.g. 2026-01-15T10:30:00.123Z (formatted once a
    millisecond, ``strftime`` once a second: this is on every event's path)."""
    milli = int(time.time() * 1000)
    cached = _MILLI[0]
    if cached[0] == milli:
        return cached[1]
    second, fraction = divmod(milli, 1000)
    day = _SECOND[0]
    if day[0] != second:
        day = _SECOND[0] = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    text = f"{day[1]}.{fraction:03d}Z"
    _MILLI[0] = (milli, text)
    return text


class EventLog:
    """Appends JSON records to a file, one line each."""

    what = "event log"  # how messages name it

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._warned = False
        self._held: tuple[int, bool, int, int, int] | None = None  # fd, readable, dev, ino, pid

    def append(self, record: dict[str, Any]) -> None:
        """Append one record; never raises.

        The descriptor stays open between appends (an open and a close per event saved); it
        is opened afresh when the path names another file (moved away, removed, replaced)
        or in a forked child. The line is still written before ``append`` returns."""
        try:
            line = encode_record(record)
            with self._lock:
                fd, readable = self._descriptor()
                locked = _lock(fd)
                try:
                    _write_line(fd, line, readable, locked=locked)
                finally:
                    if locked:
                        _unlock(fd)
        except Exception as exc:  # a failing log never fails an event
            if not self._warned:
                self._warned = True
                print(f"mcp-hooks: not logging: {exc}" if isinstance(exc, ConfigError) else
                      f"mcp-hooks: cannot write the {self.what} {self.path}: {exc}",
                      file=sys.stderr)

    def read(self, session_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Records in the log, oldest first: those of its last ``READ_LIMIT`` bytes (lines
        that are not JSON objects are skipped; a missing log has none).

        Raises:
            ConfigError: the log is not a regular file, or cannot be opened.
        """
        try:
            fd = _open_to_read(self.path, self.what)
        except FileNotFoundError:
            return
        try:
            for line in _tail(fd, READ_LIMIT):
                record = _parse(line)
                if record is not None and _wanted(record, session_id):
                    yield record
        finally:
            os.close(fd)

    def follow(self, session_id: str | None = None, poll: float = 0.2) -> Iterator[dict[str, Any]]:
        """Records as they are appended, from the current end of the log, until interrupted.

        Raises:
            ConfigError: the log is not a regular file, or cannot be opened.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        try:
            fd = _open_to_read(self.path, self.what)
        except FileNotFoundError:  # a dangling symbolic link
            raise ConfigError(f"cannot follow the {self.what} {self.path}: it does not exist "
                              "(a link to nothing?)") from None
        try:
            offset, pending = os.fstat(fd).st_size, bytearray()
            while True:
                chunk = os.pread(fd, 1 << 16, offset)
                if not chunk:
                    if os.fstat(fd).st_size < offset:  # truncated (a torn record taken back)
                        offset = os.fstat(fd).st_size
                        pending.clear()
                    time.sleep(poll)
                    continue
                offset += len(chunk)
                whole = _split(pending, chunk)
                if len(pending) > READ_LIMIT:  # no record is that long: a fragment, dropped
                    pending.clear()
                for raw in whole:
                    record = _parse(raw.decode("utf-8", errors="replace"))
                    if record is not None and _wanted(record, session_id):
                        yield record
        finally:
            os.close(fd)

    def _descriptor(self) -> tuple[int, bool]:
        """The held descriptor if the path still names its file in this process, else the
        log opened afresh (the old descriptor closed)."""
        held = self._held
        if held is not None:
            try:
                info = os.stat(self.path)
            except OSError:
                info = None
            if (info is not None and info.st_ino == held[3] and info.st_dev == held[2]
                    and held[4] == os.getpid()):
                return held[0], held[1]
            self.close()
        fd, readable = self._open_file()
        info = os.fstat(fd)
        self._held = (fd, readable, info.st_dev, info.st_ino, os.getpid())
        return fd, readable

    def close(self) -> None:
        """Close the held descriptor (the next append opens the log again)."""
        held, self._held = self._held, None
        if held is not None and held[4] == os.getpid():
            with contextlib.suppress(OSError):
                os.close(held[0])

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def _open_file(self) -> tuple[int, bool]:
        """The log open for appending (its folder made if missing); see ``_open``."""
        try:
            return _open(self.path, self.what)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return _open(self.path, self.what)


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)  # made once, not per line


def encode_record(record: dict[str, Any]) -> bytes:
    """One log line: UTF-8 JSON, or all-ASCII escapes when a string cannot be UTF-8."""
    text = _ENCODER.encode(record)
    try:
        return (text + "\n").encode()
    except UnicodeEncodeError:  # a lone surrogate: "\\udcff" instead
        return (json.dumps(record, default=str) + "\n").encode("ascii")


def _open(path: Path, what: str = "log", *, devices: bool = True) -> tuple[int, bool]:
    """The log open for appending, and whether it can be read too (to see its last byte).

    Non-blocking, so opening or writing a FIFO or a device cannot hang; a regular file, or
    with ``devices`` a character device (``/dev/null``), else a ``ConfigError``.
    """
    flags = os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        try:
            fd, readable = os.open(path, flags | os.O_RDWR, 0o600), True
        except PermissionError:
            fd, readable = os.open(path, flags | os.O_WRONLY, 0o600), False
    except (IsADirectoryError, NotADirectoryError) as exc:
        raise _not_a_file(path, what, "a folder" if isinstance(exc, IsADirectoryError)
                          else "under something that is not a folder") from None
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a FIFO no one reads, a socket
            raise _not_a_file(path, what, "a FIFO or socket") from None
        raise
    _check_kind(fd, path, what, devices)
    return fd, readable


def _open_to_read(path: Path, what: str) -> int:
    """The log open for reading: a regular file, or a ``ConfigError`` naming it
    (``FileNotFoundError`` passes, for the caller to read as an empty log)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    _check_kind(fd, path, what, devices=False)
    return fd


def _check_kind(fd: int, path: Path, what: str, devices: bool) -> None:
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode) or (devices and stat.S_ISCHR(mode)):
        return
    os.close(fd)
    kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode)
            or stat.S_ISBLK(mode) else "not a regular file")
    raise _not_a_file(path, what, kind)


def _not_a_file(path: Path, what: str, kind: str) -> ConfigError:
    fix = ("it is the signals.jsonl beside the event log: move it away, or point --log "
           "(MCP_HOOKS_LOG) at an event log in another folder" if what == "signal log"
           else "point --log (MCP_HOOKS_LOG) at a file")
    return ConfigError(f"the {what} {path} is {kind}, not a regular file; {fix}")


def _lock(fd: int) -> bool:
    """Take the exclusive lock on the log; False where the file system has none."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:  # a file system without locks: the O_APPEND write alone
        return False
    return True


def _unlock(fd: int) -> None:
    """Release the lock ``_lock`` took (the descriptor stays open)."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


def _write_line(fd: int, line: bytes, readable: bool = True, locked: bool = False) -> None:
    """Write ``line`` whole at the end of the log (the caller holds the lock if ``locked``).

    If the log does not end with a newline (an earlier writer's fragment), one is written
    first so this record starts a line of its own. If this write is cut short and the rest
    cannot be written, the log is truncated back to where this write began when this writer
    holds the lock on a regular file; otherwise the fragment is ended with a newline where
    that is still possible. Then the error is raised.
    """
    info = os.fstat(fd)
    regular, start = stat.S_ISREG(info.st_mode), info.st_size
    if readable and regular and start and os.pread(fd, 1, start - 1) != b"\n":
        line = b"\n" + line
    view = memoryview(line)
    try:
        while view:
            written = os.write(fd, view)
            if not written:  # never loop on a file that takes nothing
                raise OSError(errno.ENOSPC, "the log took no bytes")
            view = view[written:]
    except BaseException:  # an error, or a signal handler raising mid-line
        if len(view) != len(line) and not (regular and locked and _take_back(fd, start)):
            with contextlib.suppress(OSError):  # else the next writer ends it
                os.write(fd, b"\n")
        raise


def _take_back(fd: int, size: int) -> bool:
    """Truncate the log to ``size`` (where a failed write began); False if refused."""
    try:
        os.ftruncate(fd, size)
    except OSError:
        return False
    return True


def _tail(fd: int, limit: int) -> Iterator[str]:
    """The lines of the regular file behind ``fd`` in its last ``limit`` bytes (the first,
    partial, line of that window skipped), read with ``pread`` up to the size it had when
    reading began: bounded however the file grows meanwhile."""
    end = os.fstat(fd).st_size
    offset = max(0, end - limit)
    skip = offset > 0 and os.pread(fd, 1, offset - 1) != b"\n"
    buf = bytearray()
    while offset < end:
        chunk = os.pread(fd, min(1 << 16, end - offset), offset)
        if not chunk:
            break
        offset += len(chunk)
        for raw in _split(buf, chunk):
            if skip:
                skip = False
            else:
                yield raw.decode("utf-8", errors="replace")
    if buf and not skip:
        yield buf.decode("utf-8", errors="replace")


def _split(buf: bytearray, chunk: bytes) -> list[bytes]:
    """The whole lines ``chunk`` completes; the unfinished rest stays in ``buf`` (linear:
    only the new bytes are searched for a newline)."""
    searched = len(buf)
    buf += chunk
    lines, start = [], 0
    while (end := buf.find(b"\n", max(start, searched))) >= 0:
        lines.append(bytes(buf[start:end]))
        start = end + 1
    del buf[:start]
    return lines


def _parse(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _wanted(record: dict[str, Any], session_id: str | None) -> bool:
    return session_id is None or record.get("session_id") == session_id
