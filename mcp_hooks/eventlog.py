"""The event log: one JSON line per fired event, and one per finished async hook.

Lines are appended on an ``O_APPEND`` descriptor under an exclusive ``flock``, so concurrent
writers (threads, tasks, other processes) never tear or interleave a line, and a short write
(disk full, ``EFBIG``, a signal) never glues the next record to a fragment: the rest of an
interrupted line is retried, a fragment left by a failed write is ended with a newline right
away or, failing that, by the next writer, who finds the log not ending in one. Readers skip
lines that are not JSON, so a lost record costs only itself. Strings that cannot be UTF-8
(lone surrogates, file names that were not UTF-8) are written as JSON ``\\u`` escapes. A
log that cannot be written is reported once on stderr and never fails the event that wanted
to log.

Records carry ``ts`` (``now()``: ISO 8601 UTC with milliseconds) and ``kind``: ``event``
(written by the engine) or ``async_result`` (``async_record``: one finished async hook,
written by the engine's task group or by the detached runner).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hooks import paths

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the O_APPEND write alone
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from mcp_hooks.runner import RunResult


def default_log_path() -> Path:
    """``$XDG_STATE_HOME/mcp-hooks/events.jsonl`` (default ``~/.local/state/...``)."""
    return paths.log_path()


_SECOND: list[Any] = [None, ""]  # the last whole second formatted, and its text


def now() -> str:
    """ISO 8601 UTC with milliseconds, e.g. 2026-01-15T10:30:00.123Z."""
    stamp = time.time()
    second = int(stamp)
    cached = _SECOND
    if cached[0] != second:  # strftime once a second, not once an event
        cached[1] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        cached[0] = second
    return f"{cached[1]}.{int((stamp - second) * 1000):03d}Z"


def async_record(
    event: str, session_id: str | None, hook: dict[str, Any], result: RunResult
) -> dict[str, Any]:
    """The log record of one finished async hook.

    Args:
        event: the canonical event that started it.
        session_id: the event's session.
        hook: ``name``, ``scope`` and ``priority`` of the hook.
        result: what the runner saw.
    """
    if result.timed_out:
        status = "timeout"
    elif result.exit_code == 0:
        status = "allow"
    else:
        status = "error"
    record: dict[str, Any] = {
        **hook, "mode": "async", "status": status, "exit_code": result.exit_code,
        "duration_ms": round(result.duration_ms, 3), "message": result.spawn_error,
    }
    if result.stdout:
        record["stdout"] = result.stdout.decode("utf-8", errors="replace")
    if result.stderr:
        record["stderr"] = result.stderr.decode("utf-8", errors="replace")
    return {"ts": now(), "kind": "async_result", "event": event, "session_id": session_id,
            "hook": record}


class EventLog:
    """Appends JSON records to a file, one line each."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._warned = False

    def append(self, record: dict[str, Any]) -> None:
        """Append one record; never raises."""
        try:
            line = encode_record(record)
            with self._lock:
                try:
                    fd, readable = _open(self.path)
                except FileNotFoundError:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    fd, readable = _open(self.path)
                try:
                    if fcntl is not None:
                        # a file system without locks: the O_APPEND write alone
                        with contextlib.suppress(OSError):
                            fcntl.flock(fd, fcntl.LOCK_EX)
                    _write_line(fd, line, readable)
                finally:
                    os.close(fd)  # closing releases the lock
        except Exception as exc:  # a failing log never fails an event
            if not self._warned:
                self._warned = True
                print(f"mcp-hooks: cannot write the event log {self.path}: {exc}", file=sys.stderr)

    def read(self, session_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Records already in the log, oldest first (lines that are not JSON are skipped)."""
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    record = _parse(line)
                    if record is not None and _wanted(record, session_id):
                        yield record
        except FileNotFoundError:
            return

    def follow(self, session_id: str | None = None, poll: float = 0.2) -> Iterator[dict[str, Any]]:
        """Records as they are appended, from the current end of the log, until interrupted."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch(exist_ok=True)
        with open(self.path, encoding="utf-8", errors="replace") as f:
            f.seek(0, os.SEEK_END)
            pending = ""
            while True:
                chunk = f.readline()
                if not chunk:
                    time.sleep(poll)
                    continue
                pending += chunk
                if not pending.endswith("\n"):
                    continue
                record = _parse(pending)
                pending = ""
                if record is not None and _wanted(record, session_id):
                    yield record


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)  # made once, not per line


def encode_record(record: dict[str, Any]) -> bytes:
    """One log line: UTF-8 JSON, or all-ASCII escapes when a string cannot be UTF-8."""
    text = _ENCODER.encode(record)
    try:
        return (text + "\n").encode()
    except UnicodeEncodeError:  # a lone surrogate: "\\udcff" instead
        return (json.dumps(record, default=str) + "\n").encode("ascii")


def _open(path: Path) -> tuple[int, bool]:
    """The log open for appending, and whether it can be read too (to see its last byte)."""
    try:
        return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600), True
    except (PermissionError, IsADirectoryError):
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), False


def _write_line(fd: int, line: bytes, readable: bool = True) -> None:
    """Write ``line`` whole at the end of the log (the caller holds the lock).

    If the log does not end with a newline (an earlier writer's fragment), one is written
    first so this record starts a line of its own. If this write is cut short and the rest
    cannot be written, the fragment is ended with a newline where that is still possible,
    and the error is raised.
    """
    info = os.fstat(fd)
    if (readable and stat.S_ISREG(info.st_mode) and info.st_size
            and os.pread(fd, 1, info.st_size - 1) != b"\n"):
        line = b"\n" + line
    view = memoryview(line)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:  # an error, or a signal handler raising mid-line
        if len(view) != len(line):  # a fragment is in the log: end it
            with contextlib.suppress(OSError):  # else the next writer ends it
                os.write(fd, b"\n")
        raise


def _parse(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _wanted(record: dict[str, Any], session_id: str | None) -> bool:
    return session_id is None or record.get("session_id") == session_id
