"""The asks' three primitives (``asks.py``) for the memory and file stores.

``MemoryTable``: a dict under one lock (one process). ``FileTable``: one file per key in a
folder (``<state>/asks/<digest>.json``: ``{"key", "value", "expires"}``, mode 0600), read
whole without a lock (every write is a rename of a complete temporary file), swapped under an
exclusive ``flock`` of the folder's ``.lock`` file: of N racing swaps from threads and
processes, one wins. A file that is not a regular file, or not our JSON, holds nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

LOCK_TIMEOUT = 10.0  # seconds a swap (and a files.py update) waits for its lock
MAX_BYTES = 1 << 20  # a bigger file holds nothing (an ask's input is capped by its door)
_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


class MemoryTable:
    """The primitives in this process's memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, tuple[str, float]] = {}  # key -> (value, expires)

    def load(self, key: str) -> str | None:
        with self._lock:
            value, expires = self._items.get(key, (None, 0.0))
            return value if value is not None and time.time() < expires else None

    def swap(self, key: str, expect: str | None, new: str, ttl: float) -> bool:
        with self._lock:
            value, expires = self._items.get(key, (None, 0.0))
            current = value if time.time() < expires else None
            if current != expect:
                return False
            self._items[key] = (new, time.time() + ttl)
            return True

    def keys(self, prefix: str) -> list[str]:
        now = time.time()
        with self._lock:
            return [k for k, (_, e) in self._items.items() if k.startswith(prefix) and now < e]


class FileTable:
    """The primitives as files in ``folder`` (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        name = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return self.folder / f"{name}.json"

    def _entry(self, path: Path) -> dict[str, object] | None:
        try:
            fd = os.open(path, os.O_RDONLY | _FLAGS)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = os.read(fd, MAX_BYTES + 1)
        finally:
            os.close(fd)
        try:
            entry = json.loads(data)
        except ValueError:
            return None
        ok = (isinstance(entry, dict) and isinstance(entry.get("value"), str)
              and isinstance(entry.get("expires"), (int, float))
              and isinstance(entry.get("key"), str))
        return entry if ok and time.time() < float(entry["expires"]) else None

    def load(self, key: str) -> str | None:
        entry = self._entry(self._path(key))
        return str(entry["value"]) if entry is not None and entry["key"] == key else None

    def swap(self, key: str, expect: str | None, new: str, ttl: float) -> bool:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = os.open(self.folder / ".lock", os.O_RDWR | os.O_CREAT | _FLAGS, 0o600)
        try:
            flock_within(lock, f"the asks folder {self.folder}")
            if self.load(key) != expect:
                return False
            path = self._path(key)
            temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
            data = json.dumps({"key": key, "value": new, "expires": time.time() + ttl})
            try:
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _FLAGS, 0o600)
                try:
                    os.write(fd, data.encode("utf-8", "surrogatepass"))
                finally:
                    os.close(fd)
                os.replace(temporary, path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            return True
        finally:
            os.close(lock)  # closing releases the lock

    def keys(self, prefix: str) -> list[str]:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        out = []
        for name in names:
            if name.endswith(".json") and not name.startswith("."):
                entry = self._entry(self.folder / name)
                if entry is not None and str(entry["key"]).startswith(prefix):
                    out.append(str(entry["key"]))
        return out


def flock_within(fd: int, what: object) -> None:
    """The exclusive lock on ``fd``, waiting at most ``LOCK_TIMEOUT`` seconds; past it a
    ``TimeoutError`` naming ``what`` (the file or folder locked). Shared with ``files.py``."""
    if fcntl is None:  # pragma: no cover - not POSIX
        return
    deadline = time.monotonic() + LOCK_TIMEOUT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} stayed locked for {LOCK_TIMEOUT:g} s; is another "
                                   "mcp-hooks process stuck?") from None
            time.sleep(0.001)
