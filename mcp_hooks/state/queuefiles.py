"""The aid queues of the file backend: ``aid/<digest of the session>.jsonl``.

A session's queue is one JSON object a line, appended under ``flock`` (``put``);
``take_all`` claims the whole file by renaming it first, so one caller gets each item, and
reads it under the lock (a writer that opened the file before the rename finishes first).
A queue that cannot be written loses the items (the store's contract: aid is advice); one
that cannot be read is put back in place, unread. ``take_all`` on a folder unchanged since
this session last found nothing costs one ``stat``.

``files.FileStore`` is a ``QueueFiles`` over its ``aid`` folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from mcp_hooks.state.asktables import flock_within
from mcp_hooks.state.eventlog import _parse
from mcp_hooks.state.statefile import name_digest, open_regular, read_fd, write_all

MAX_QUEUE_BYTES = 1 << 20  # bytes read from one session's queue


class QueueFiles:
    """Every session's aid queue in the folder ``queues`` (``FileStore`` is one: its own
    methods, so taking a session's aid costs the engine no call more)."""

    def __init__(self, queues: Path) -> None:
        self.queues = queues
        self._empty: dict[str, int] = {}  # session -> folder mtime when it had nothing

    def queue_path(self, session: str) -> Path:
        """The queue file of ``session``."""
        return self.queues / f"{name_digest(session)}.jsonl"

    def put(self, session: str, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        data = b"".join(json.dumps(item, ensure_ascii=True, default=str).encode() + b"\n"
                        for item in items)
        path = self.queue_path(session)
        with contextlib.suppress(OSError, TimeoutError):
            self.queues.mkdir(parents=True, exist_ok=True, mode=0o700)
            for _ in range(100):
                fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
                try:
                    flock_within(fd, path)
                    # a taker may have claimed the file between the open and the lock:
                    # then write to a new one, or the item would go out with the claimed
                    if os.fstat(fd).st_ino == os.stat(path, follow_symlinks=False).st_ino:
                        write_all(fd, data)
                        return
                except FileNotFoundError:
                    pass
                finally:
                    os.close(fd)

    def _nothing_new(self, session: str) -> bool:
        """Whether the queue folder is unchanged since this session last found nothing: one
        ``stat`` instead of a ``rename`` that fails. A folder changed in the last 50 ms is
        checked anyway (its mtime may not move again for a write in the same tick)."""
        try:
            mtime = os.stat(self.queues).st_mtime_ns
        except OSError:
            return True  # no folder: nothing ever waited
        settled = time.time_ns() - mtime > 50_000_000
        if settled and self._empty.get(session) == mtime:
            return True
        if len(self._empty) > 10_000:
            self._empty.clear()
        if settled:
            self._empty[session] = mtime
        else:
            self._empty.pop(session, None)
        return False

    def take_all(self, session: str) -> list[dict[str, Any]]:
        if self._nothing_new(session):
            return []
        path = self.queue_path(session)
        claimed = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.taking")
        try:
            os.rename(path, claimed)
        except OSError:
            return []  # nothing waiting (the common case), or another caller took it
        self._empty.pop(session, None)
        try:
            fd = open_regular(claimed, os.O_RDONLY)
            try:
                flock_within(fd, claimed)  # a writer that opened the file before the rename
                raw = read_fd(fd, MAX_QUEUE_BYTES)
            finally:
                os.close(fd)
        except (OSError, TimeoutError):
            with contextlib.suppress(OSError):  # unread: back in place (unless new items
                os.link(claimed, path)  # came meanwhile: then it waits under its claim)
                os.unlink(claimed)
            return []
        with contextlib.suppress(OSError):
            os.unlink(claimed)
        out: list[dict[str, Any]] = []
        for line in raw.splitlines():
            item = _parse(line.decode("utf-8", errors="replace"))
            if item is not None:  # a torn or foreign line is skipped
                out.append(item)
        return out
