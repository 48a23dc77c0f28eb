"""The event log: one JSON line per fired event, and one per finished async hook.

Lines are appended with a single ``write`` on an ``O_APPEND`` descriptor, so concurrent
writers (threads, tasks, other processes) never tear or interleave a line. A log that cannot
be written is reported once on stderr and never fails the event that wanted to log.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def default_log_path() -> Path:
    """``$XDG_STATE_HOME/mcp-hooks/events.jsonl`` (default ``~/.local/state/...``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "mcp-hooks" / "events.jsonl"


class EventLog:
    """Appends JSON records to a file, one line each."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._warned = False

    def append(self, record: dict[str, Any]) -> None:
        """Append one record; never raises."""
        try:
            line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
            with self._lock:
                try:
                    fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                except FileNotFoundError:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    view = memoryview(line)
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
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


def _parse(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _wanted(record: dict[str, Any], session_id: str | None) -> bool:
    return session_id is None or record.get("session_id") == session_id
