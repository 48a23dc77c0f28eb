"""Has anything under the hook folders changed? Answered in about a microsecond.

On Linux an inotify descriptor watches each hooks root and every hook folder below it (and
its ``scripts/``); asking is one non-blocking ``read``. Where inotify is missing or out of
watches, the answer falls back to "yes, at most once per ``poll_interval``", and the registry
then re-stats its files (re-parsing only those that changed).

One watcher may be asked from many threads at once (``Hooks.fire`` from a thread pool, the
server's event loop and the oracle threads): a lock makes each ``changed``, ``watch`` and
``close`` whole (a ``select.poll`` object refuses a second concurrent ``poll``, and a read
racing a ``close`` could read a recycled descriptor). A change is reported to exactly one
caller; the registry holds its own lock around asking and rescanning, so the others wait for
the rescan instead of going on with the old hooks.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import threading
import time
from collections.abc import Iterable
from pathlib import Path

_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = (
    0x00000002  # IN_MODIFY
    | 0x00000004  # IN_ATTRIB (chmod +x of a script)
    | 0x00000008  # IN_CLOSE_WRITE
    | 0x00000040  # IN_MOVED_FROM
    | 0x00000080  # IN_MOVED_TO
    | 0x00000100  # IN_CREATE
    | 0x00000200  # IN_DELETE
    | 0x00000400  # IN_DELETE_SELF
    | 0x00000800  # IN_MOVE_SELF
)


def _load_libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1  # noqa: B018 - probe for the symbol
        return libc
    except (OSError, AttributeError):
        return None


class ChangeWatcher:
    """Tells whether watched folders changed since the last ``changed()`` call."""

    def __init__(self, poll_interval: float = 1.0) -> None:
        self.poll_interval = poll_interval
        self._libc = _load_libc() if os.name == "posix" else None
        self._fd = -1
        self._last_poll = time.monotonic()
        self._missing: list[Path] = []
        self._poller = select.poll()
        self._lock = threading.Lock()
        if self._libc is not None:
            fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
            self._fd = fd if fd >= 0 else -1
            if self._fd >= 0:
                self._poller.register(self._fd, select.POLLIN)

    @property
    def live(self) -> bool:
        """True while changes are seen as they happen (inotify); False when polling."""
        return self._fd >= 0

    def watch(self, dirs: Iterable[str | Path], missing: Iterable[Path] = ()) -> None:
        """Watch these existing folders (again is harmless), and each ``missing`` root
        through its nearest existing ancestor (its creation is a change there), so asking
        costs no ``stat`` per call; a root whose ancestor cannot be watched is polled."""
        missing = list(missing)
        with self._lock:
            self._missing = missing
            if self._fd < 0 or self._libc is None:
                return
            self._watch(dirs, missing)

    def _watch(self, dirs: Iterable[str | Path], missing: list[Path]) -> None:
        polled = []
        for root in missing:
            ancestor = next((p for p in Path(root).parents if p.is_dir()), None)
            if ancestor is None or not self._add(ancestor):
                polled.append(root)
        self._missing = polled
        for d in dirs:
            if not self._add(d) and self._fd < 0:
                return

    def _add(self, folder: str | Path) -> bool:
        """One inotify watch; out of watches (ENOSPC), the watcher falls back to polling."""
        assert self._libc is not None
        if self._libc.inotify_add_watch(self._fd, os.fsencode(folder), _MASK) >= 0:
            return True
        if ctypes.get_errno() == 28:  # ENOSPC
            self._close()
        return False

    def changed(self) -> bool:
        """Whether something changed since the last call (may say yes spuriously)."""
        with self._lock:
            if self._fd >= 0 and not self._missing and not self._poller.poll(0):
                return False  # nothing queued, no root to look for: the answer of every event
            return self._changed()

    def _changed(self) -> bool:
        if self._fd >= 0:
            if not self._poller.poll(0):  # nothing queued: no read, no exception
                return bool(self._missing) and any(os.path.isdir(p) for p in self._missing)
            while True:
                try:
                    if not os.read(self._fd, 65536):
                        break
                except BlockingIOError:
                    break
            return True
        now = time.monotonic()
        if now - self._last_poll >= self.poll_interval:
            self._last_poll = now
            return True
        return False

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
