"""A shared store's health, and the local spool of the log records it could not take.

Health (:class:`Health`). A shared store (``redis.py``, ``postgres.py``) counts every call
that failed and keeps what broke (``lost``: the store's URL without its password, what went
wrong and the fix) until a call succeeds again. The engine reads it around each event
(:func:`store_fault`, :func:`failures`, :func:`after_event`): an event that can block is
answered as a fault (a deny naming the store under ``on_fault: block``, else an allow with the
warning) when the store is known lost before it, or when a store call failed while it ran.
While it is lost, each such event first asks the store again (one bounded call: a PING, a
``SELECT 1``), so the first event after the store is back is served as usual: no restart.
Events that cannot block are never held back; their records go to the spool.

The spool (:class:`Spool`). A log record the store cannot take is appended to a local file
instead: ``<state dir>/spool/<store>/<replica>.jsonl`` (``<store>`` a digest of the URL, so a
spool is only ever replayed into the store it was meant for; ``<replica>`` the process's
replica name, %-quoted). Each line is ``{"log": ..., "record": ...}``; every record carries a
unique ``record_id`` (given at the first attempt) and the backends' append is idempotent on it
(Redis: a seen-key set in the same Lua script; PostgreSQL: a unique column, ``ON CONFLICT DO
NOTHING``), so a record sent twice (a reply lost after the store took it, a replay cut short
by a kill) is stored once. The spool is replayed, oldest first, on the first store call that
succeeds after a failure, and by a process that starts with a non-empty spool folder (a
replica killed before it could replay: its successor on the machine replays for it). Each
file is replayed under an exclusive ``flock`` (writers take it too) and removed only once all
its records were taken (a writer that waited for the lock finds it gone and makes a new one);
a replay cut short leaves the file whole and the next replay sends its records again (stored
once). The files are opened as the event log is: non-blocking,
never through a symlink (``O_NOFOLLOW``), only a regular file; a FIFO, a symlink or a full
disk is reported once on stderr naming the file, and the record is lost.

A record the store refuses as data (PostgreSQL's text columns take no NUL byte; a backend
names such errors in its ``_refused``) is not a lost store: it is never spooled or replayed
again, but set aside, whole, in ``<replica>.refused`` beside the spool (a line ``{"log",
"record", "error"}``, never read back) and reported once on stderr naming that file; the
records behind it are sent as usual. A spool that held one before this rule is replayed
past it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import sys
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mcp_hooks import paths
from mcp_hooks.errors import ConfigError
from mcp_hooks.spec.events import can_block
from mcp_hooks.spec.outcome import Outcome, fault_outcome
from mcp_hooks.state.eventlog import _check_kind, _lock, _write_line, encode_record
from mcp_hooks.state.store import LogName, StateStore

ID = "record_id"  # the field every record sent to a shared store carries
NAME_MAX = 200  # characters of a spool file's name before its suffix (the usual limit: 255)


def record_id(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with a unique ``record_id`` (its own kept when it has one)."""
    if isinstance(record.get(ID), str):
        return record
    # lazy: 2 ms of every bridge and fire start (uuid imports platform); shared stores only
    import uuid

    return {**record, ID: uuid.uuid4().hex}


class Mark:
    """The failed store calls made for one event (``event_mark``): counted where the event's
    own work runs (its task, and the worker threads its store calls run in, which carry its
    context), so a call that fails for another session's event never fails this one. An
    event fired inside another's still open work counts for both (``parent``; at most
    ``NESTED`` deep, so marks an exception left open never make a long chain)."""

    NESTED = 8

    def __init__(self, parent: Mark | None) -> None:
        self.count = 0
        self.open = True
        self.parent: Mark | None = parent if parent is not None and parent.open else None
        self.depth: int = 0 if self.parent is None else self.parent.depth + 1
        if self.depth > self.NESTED:
            self.parent, self.depth = None, 0


_THIS_EVENT: ContextVar[Mark | None] = ContextVar("mcp_hooks_event_mark", default=None)


class Health:
    """A shared store's failures: how many, and what broke last (None once a call worked)."""

    def __init__(self) -> None:
        self.failures = 0
        self.lost: str | None = None
        self._lock = threading.Lock()

    def failed(self, what: str) -> None:
        with self._lock:
            self.failures += 1
            self.lost = what
            mark = _THIS_EVENT.get()
            while mark is not None:  # the event whose work made this call (and its outer)
                mark.count += 1
                mark = mark.parent

    def back(self) -> None:
        self.lost = None


def _flags() -> int:
    return (os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))


def _open(path: Path, flags: int) -> int:
    """``path`` opened with ``flags``: a regular file, never through a symlink, else a
    ``ConfigError`` naming it."""
    try:
        fd = os.open(path, flags | _flags(), 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _spool_error(path, "a symlink") from None
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):
            raise _spool_error(path, "a FIFO or socket") from None
        if isinstance(exc, IsADirectoryError):
            raise _spool_error(path, "a folder") from None
        raise
    try:
        _check_kind(fd, path, "spool", devices=False)
    except ConfigError as exc:
        raise _spool_error(path, str(exc).split(" is ", 1)[-1].split(",")[0]) from None
    return fd


def _spool_error(path: Path, kind: str) -> ConfigError:
    return ConfigError(f"the state store's spool {path} is {kind}, not a regular file; move "
                       "it away (mcp-hooks makes a fresh one)")


class Spool:
    """The log records a shared store could not take, waiting in local files."""

    def __init__(self, url: str, replica: str | None, root: Path | None = None) -> None:
        digest = hashlib.sha256(url.encode()).hexdigest()[:16]
        self.folder = (root if root is not None else paths.state_dir()) / "spool" / digest
        self.path = self.folder / f"{file_name(replica or f'pid-{os.getpid()}')}.jsonl"
        self.refused = self.path.with_suffix(".refused")
        self._lock = threading.Lock()
        self._told = False
        self._told_refused = False
        self.pending = self._waiting()  # a spool left by an earlier process: replay it

    def _waiting(self) -> bool:
        try:
            return any(p.suffix == ".jsonl" and p.stat().st_size > 0
                       for p in self.folder.iterdir())
        except OSError:
            return False

    def put(self, log: LogName, record: dict[str, Any]) -> None:
        """Keep ``record`` for a later replay; never raises (a record that cannot be kept is
        reported once on stderr, naming the file, and lost)."""
        try:
            line = encode_record({"log": log, "record": record})
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._write(line)
            self.pending = True
        except (OSError, ConfigError, ValueError, TypeError) as exc:  # the last resort: say so
            if not self._told:
                self._told = True
                print(f"mcp-hooks: a log record the state store could not take is lost: "
                      f"cannot write the spool {self.path}: {exc}", file=sys.stderr)

    def set_aside(self, log: LogName, record: dict[str, Any], error: BaseException) -> None:
        """Keep ``record``, which the store refused as data, in the ``.refused`` file (never
        replayed); reported once on stderr. Never raises."""
        what = str(error).strip().splitlines()[0] if str(error).strip() else \
            type(error).__name__
        try:
            line = encode_record({"log": log, "record": record, "error": what})
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._write(line, self.refused)
            kept = f"kept aside in {self.refused}"
        except (OSError, ConfigError, ValueError, TypeError) as exc:
            kept = f"and it is lost: cannot write {self.refused}: {exc}"
        if not self._told_refused:
            self._told_refused = True
            print(f"mcp-hooks: the state store refused a {log} record as data ({what}); "
                  f"{kept}; the records after it are sent (further refusals are not "
                  f"reported)", file=sys.stderr)

    def _write(self, line: bytes, path: Path | None = None) -> None:
        """Append ``line`` under the file's lock, to the file still at the path (a replay
        removes a file it emptied while holding the lock: then a new one is made)."""
        path = self.path if path is None else path
        for _ in range(8):
            fd = _open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            try:
                locked = _lock(fd)
                if locked and not _still_at(fd, path):
                    continue  # replayed and removed while we waited for the lock
                _write_line(fd, line, True, locked=locked)
                return
            finally:
                os.close(fd)
        raise OSError(errno.EAGAIN, "the spool was removed under us 8 times in a row")

    def replay(self, send: Callable[[LogName, dict[str, Any]], None],
               refused: tuple[type[BaseException], ...] = ()) -> None:
        """Send every spooled record (``send`` raises when the store fails: the rest stay
        for the next replay), oldest file and line first, removing each file sent whole. A
        record ``send`` refuses with one of ``refused`` (the store will never take it) is
        set aside and the replay goes on."""
        if not self._lock.acquire(blocking=False):
            return  # another thread of this process replays now
        try:
            self.pending = False
            try:
                files = sorted(p for p in self.folder.iterdir() if p.suffix == ".jsonl")
            except FileNotFoundError:
                return
            for path in files:
                self._replay_file(path, send, refused)
        except BaseException:
            self.pending = True
            raise
        finally:
            self._lock.release()

    def _replay_file(self, path: Path, send: Callable[[LogName, dict[str, Any]], None],
                     refused: tuple[type[BaseException], ...]) -> None:
        try:
            fd = _open(path, os.O_RDWR)
        except FileNotFoundError:
            return
        except ConfigError as exc:
            if not self._told:
                self._told = True
                print(f"mcp-hooks: not replaying: {exc}", file=sys.stderr)
            return
        try:
            _lock(fd)
            if not _still_at(fd, path):
                return  # replayed and removed while we waited: the path may be a newer file
            size = os.fstat(fd).st_size
            data = os.pread(fd, size, 0) if size else b""
            for line in data.splitlines():
                entry = _parse(line)
                if entry is None:
                    continue
                try:
                    send(*entry)
                except refused as exc:
                    self.set_aside(*entry, exc)
            os.unlink(path)  # all taken: a writer waiting on the lock makes a new file
        finally:
            os.close(fd)

    def count(self) -> int:
        """How many records wait in this store's spool folder (every replica's file)."""
        total = 0
        with contextlib.suppress(OSError):
            for path in self.folder.iterdir():
                if path.suffix == ".jsonl" and not path.is_symlink():
                    total += sum(1 for line in path.read_bytes().splitlines()
                                 if _parse(line) is not None)
        return total


def file_name(replica: str) -> str:
    """A replica's name as a file name: %-quoted, and, where that is longer than a file
    name may be (128 characters of UTF-8 quote to 1,152), its start and a digest of it."""
    name = quote(replica, safe="")
    if len(name) <= NAME_MAX:
        return name
    digest = hashlib.sha256(replica.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{name[:NAME_MAX - 17].rstrip('%0123456789ABCDEF') or 'replica'}-{digest}"


def _still_at(fd: int, path: Path) -> bool:
    try:
        here = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)


def _parse(line: bytes) -> tuple[LogName, dict[str, Any]] | None:
    try:
        entry = json.loads(line)
    except ValueError:  # a line a killed writer cut short: its record was never acknowledged
        return None
    if not isinstance(entry, dict):
        return None
    log, record = entry.get("log"), entry.get("record")
    if log not in ("events", "signals") or not isinstance(record, dict):
        return None
    return log, record


# -- what the engine asks of any store (the file store has no health: always fine) ---------

def store_fault(store: StateStore) -> str | None:
    """What broke, when ``store`` is a shared store known lost and still unreachable (it is
    asked again first: one bounded call); None when it is fine or has no health."""
    fault = getattr(store, "fault", None)
    return fault() if callable(fault) else None


def failures(store: StateStore) -> int:
    """How many calls of ``store`` failed so far (0 for a store without health)."""
    health = getattr(store, "health", None)
    return health.failures if isinstance(health, Health) else 0


def spooled(store: StateStore) -> int:
    """How many records wait in ``store``'s spool (0 for a store that spools none)."""
    spool = getattr(store, "_spool", None)
    return spool.count() if isinstance(spool, Spool) else 0


def event_mark() -> Mark:
    """Start counting the store calls that fail for this event's own work (``Mark``), from
    here on: the mark ``after_event`` reads."""
    mark = Mark(_THIS_EVENT.get())
    _THIS_EVENT.set(mark)
    return mark


def after_event(store: StateStore, mark: Mark, name: str, outcome: Outcome,
                on_fault: str) -> Outcome:
    """``outcome``, or the fault answer when a call of ``store`` made for this event failed
    since ``mark`` (``event_mark``) and ``name`` can block: a deny naming the store under
    ``on_fault: block``; under ``warn`` the outcome with the warning added."""
    mark.open = False
    health = getattr(store, "health", None)
    if not isinstance(health, Health) or mark.count == 0 or not can_block(name):
        return outcome
    what = health.lost or "a call of the state store failed while this event ran"
    if on_fault == "warn":
        return replace(outcome, warnings=[*outcome.warnings,
                                          f"fault: {what}; the hooks decided (on-fault: warn)"])
    return fault_outcome(name, what, on_fault=on_fault, warnings=list(outcome.warnings))


__all__ = ["ID", "Health", "Mark", "Spool", "after_event", "event_mark", "failures",
           "record_id", "store_fault"]
