"""The file backend of the state store (``store.StateStore``): today's files and formats.

Under ``root`` (default ``paths.state_dir()``, ``$XDG_STATE_HOME/mcp-hooks``):

- ``stop/<namespace>-<digest>``: a counter of any namespace but ``ladder`` (the loop guard's
  stop count per host or door and session): the count in decimal, its age the file's mtime.
  A key other than ``""`` adds ``.<digest of the key>`` to the name. An increment takes an
  exclusive ``flock`` on the file, reads, writes the new count in place.
- ``ladder.json``: the ``ladder`` namespace, ``{"version": 1, "sessions": {session:
  {"counts": {key: n}, "at": unix time}}}`` (``control/ladder.py``). An update locks the
  sibling ``ladder.json.lock`` (at most ``LOCK_TIMEOUT`` seconds), re-reads, changes and
  atomically replaces the file. Anything an update would not write counts as empty (that
  part or the whole); the age is the session's ``at``. A ladder.json that cannot be
  replaced (a folder there, a full disk) is reported once on stderr naming it, its temporary
  file removed, and the counts kept in this process's memory meanwhile (the ladder still
  climbs).
- ``aid/<digest of the session>.jsonl``: a session's queue, one JSON object a line,
  appended under ``flock``; ``take_all`` claims the whole file by renaming it first, so one
  caller gets each item (``queuefiles.QueueFiles``).
- ``once/<digest of the name>``: a claimed name (``claim``), empty; its mtime is when the
  claim expires, read and set under ``flock``. Expired ones are removed at most once a
  minute, each under its lock.
- the event log (``events.jsonl``, or the ``log`` given; ``eventlog.EventLog``) and the
  signal log beside it (``signals.jsonl``; ``signallog``): ``append``/``read``. A signal's
  answer is a ``kind: "response"`` line of the signal log, looked up and written under the
  log's lock (``answer_once``). With ``log=None`` nothing is logged: ``read`` finds nothing
  and no signal can be answered.
- ``asks/<digest>.json``: a pending or answered ask, and the last ask of each call
  (``asks.py``, ``asktables.FileTable``).

Every state file is opened without following a final symlink and without blocking (a FIFO
never hangs a reader), must be a regular file, and is read bounded (``statefile.py``):
anything else where a state file belongs counts as empty (a counter that cannot be read is
0; on an increment a FIFO or symlink there is replaced by a regular file). A full disk loses
an increment or an item (``count`` stays what it was), reports a log record once on stderr,
and fails ``answer_once`` with ``StateUnavailable``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mcp_hooks import paths
from mcp_hooks.state.asks import AskBook
from mcp_hooks.state.asktables import FileTable, flock_within
from mcp_hooks.state.eventlog import (
    READ_LIMIT,
    EventLog,
    _lock,
    _open,
    _parse,
    _tail,
    _write_line,
    encode_record,
)
from mcp_hooks.state.memory import MemoryStore
from mcp_hooks.state.queuefiles import QueueFiles
from mcp_hooks.state.statefile import FLAGS, name_digest, open_regular, read_fd
from mcp_hooks.state.store import AlreadyAnswered, LogName, StateUnavailable, UnknownSignal

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

LADDER = "ladder"  # the namespace kept in ladder.json
MAX_LADDER_BYTES = 8 << 20  # a bigger ladder.json counts as empty (and is replaced)
MAX_COUNT = 1 << 20  # a count above it is not one an update wrote
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.]{1,64}")
SIGNAL_LOG_NAME = "signals.jsonl"

_USE_DEFAULT: Any = object()


def clean_ladder(data: Any) -> dict[str, Any]:
    """The parts of a ladder.json an update could have written; the rest dropped."""
    out: dict[str, Any] = {"version": 1, "sessions": {}}
    sessions = data.get("sessions") if isinstance(data, dict) else None
    if not isinstance(sessions, dict):
        return out
    for name, session in sessions.items():
        if not isinstance(name, str) or not isinstance(session, dict):
            continue
        counts = session.get("counts")
        good = {key: value for key, value in counts.items()
                if isinstance(key, str) and type(value) is int and 0 < value <= MAX_COUNT
                } if isinstance(counts, dict) else {}
        at = session.get("at")
        if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
            at = 0.0  # unknown age: dropped on the next write
        out["sessions"][name] = {"counts": good, "at": float(at)}
    return out


class FileStore(QueueFiles, AskBook):
    """The state store in files (see the module docstring; asks: ``asktables.FileTable``
    in ``root/asks``).

    Args:
        root: the state folder; None for ``paths.state_dir()``.
        log: the event log (an ``EventLog`` or its path); the signal log is beside it.
            Default ``root/events.jsonl``; None for no logs.
        ladder: the ladder file; default ``root/ladder.json``.
        queues: the aid folder; default ``root/aid``.
        counters: the folder of the other counters; default ``root/stop``.
        signals: the signal log; default ``signals.jsonl`` beside the event log.
        replica: stamped as ``replica`` on every record appended and every answer stored
            (``--replica-id``); None: none.
    """

    def __init__(self, root: Path | None = None, *, log: Any = _USE_DEFAULT,
                 ladder: Path | None = None, queues: Path | None = None,
                 counters: Path | None = None, signals: Path | None = None,
                 replica: str | None = None) -> None:
        self.replica = replica
        self.root = Path(root) if root is not None else paths.state_dir()
        if log is _USE_DEFAULT:
            log = self.root / "events.jsonl"
        self.events: EventLog | None = (log if isinstance(log, EventLog) or log is None
                                        else EventLog(Path(log)))
        self.signals: EventLog | None = None
        if signals is None and self.events is not None:
            signals = self.events.path.with_name(SIGNAL_LOG_NAME)
        if signals is not None:
            self.signals = EventLog(Path(signals))
            self.signals.what = "signal log"
        self.ladder_path = Path(ladder) if ladder is not None else self.root / "ladder.json"
        QueueFiles.__init__(self, Path(queues) if queues is not None else self.root / "aid")
        self.ask_table = FileTable(self.root / "asks")
        self.counters = Path(counters) if counters is not None else self.root / "stop"
        self._ladder_memory = MemoryStore()  # the ladder's counts while ladder.json fails
        self._told_ladder = False
        self._purged = 0.0  # when expired claims were last removed

    # -- counters --------------------------------------------------------------------------

    def counter_path(self, namespace: str, session: str, key: str = "") -> Path:
        """The file of a counter of a namespace other than ``ladder``."""
        name = namespace if _SAFE_NAME.fullmatch(namespace) else f"ns{name_digest(namespace)[:16]}"
        path = self.counters / f"{name}-{name_digest(namespace, session)}"
        return path.with_name(f"{path.name}.{name_digest(key)[:16]}") if key else path

    def count(self, namespace: str, session: str, key: str = "", *, ttl: float) -> int:
        if namespace == LADDER:
            entry = self._read_ladder()["sessions"].get(session) or {}
            kept = self._ladder_memory.count(namespace, session, key, ttl=ttl)
            if time.time() - entry.get("at", 0.0) > ttl:
                return kept
            return max(kept, int(entry.get("counts", {}).get(key, 0)))
        try:
            fd = open_regular(self.counter_path(namespace, session, key), os.O_RDONLY)
        except OSError:
            return 0
        try:
            return self._read_count(fd, ttl)
        finally:
            os.close(fd)

    @staticmethod
    def _read_count(fd: int, ttl: float) -> int:
        try:
            if time.time() - os.fstat(fd).st_mtime > ttl:
                return 0
            value = int(read_fd(fd, 32).strip() or 0)
        except (OSError, ValueError):
            return 0
        return value if 0 < value <= MAX_COUNT else 0

    def increment(self, namespace: str, session: str, key: str = "", *, ttl: float) -> int:
        if namespace == LADDER:
            return self._ladder_update(lambda data: _bump(data, session, key, ttl), ttl) or \
                max(self.count(namespace, session, key, ttl=ttl) + 1,
                    self._ladder_memory.increment(namespace, session, key, ttl=ttl))
        path = self.counter_path(namespace, session, key)
        try:
            fd = self._open_counter(path)
        except OSError:
            return self.count(namespace, session, key, ttl=ttl) + 1
        try:
            flock_within(fd, path)
            value = min(self._read_count(fd, ttl), MAX_COUNT - 1) + 1
            data = str(value).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
            return value
        except (OSError, TimeoutError):
            return self.count(namespace, session, key, ttl=ttl) + 1
        finally:
            os.close(fd)  # closing releases the lock

    def _open_counter(self, path: Path) -> int:
        for attempt in (1, 2):
            try:
                return open_regular(path, os.O_RDWR | os.O_CREAT)
            except FileNotFoundError:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EINVAL) or attempt == 2:
                    raise
                os.unlink(path)  # a symlink or FIFO where the count belongs: replaced
        return open_regular(path, os.O_RDWR | os.O_CREAT)

    def reset(self, namespace: str, session: str | None = None, key: str | None = None) -> None:
        if namespace == LADDER:
            self._ladder_memory.reset(namespace, session, key)
            self._ladder_update(lambda data: _forget(data, session, key), None)
            return
        if session is not None and key is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.counter_path(namespace, session, key))
            return
        base = self.counter_path(namespace, session or "")
        prefix = base.name if session is not None else base.name.rsplit("-", 1)[0] + "-"
        pattern = re.compile(re.escape(prefix) + ("" if session is not None else "[0-9a-f]{32}")
                             + r"(\.[0-9a-f]{16})?")
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.counters):
                if pattern.fullmatch(entry.name):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)

    def _read_ladder(self) -> dict[str, Any]:
        try:
            fd = open_regular(self.ladder_path, os.O_RDONLY)
            try:
                raw = read_fd(fd, MAX_LADDER_BYTES + 1)
            finally:
                os.close(fd)
            if len(raw) > MAX_LADDER_BYTES:
                raise ValueError("too big")
            data = json.loads(raw)
        except (OSError, ValueError, RecursionError):  # deep nesting is a RecursionError
            data = None
        return clean_ladder(data)

    def _ladder_update(self, change: Callable[[dict[str, Any]], int],
                       ttl: float | None) -> int:
        """Run ``change`` on ladder.json under its lock and write the result; its return,
        or 0 when the file could not be updated."""
        path = self.ladder_path
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            lock = path.with_name(path.name + ".lock")
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | FLAGS, 0o600)
        except OSError as exc:
            self._ladder_failed(exc)
            return 0
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            flock_within(fd, lock)
            data = self._read_ladder()
            result = change(data)
            now = time.time()
            keep = ttl if ttl is not None else 30 * 24 * 3600.0
            data["sessions"] = {s: v for s, v in data["sessions"].items() if now - v["at"] < keep}
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | FLAGS, 0o600)
            try:
                view = memoryview(json.dumps(data, sort_keys=True).encode())
                while view:
                    view = view[os.write(out, view):]
            finally:
                os.close(out)
            os.replace(tmp, path)
            return result
        except (OSError, TimeoutError) as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # never one left behind per failed update
            self._ladder_failed(exc)
            return 0
        finally:
            os.close(fd)  # closing releases the lock

    def _ladder_failed(self, exc: BaseException) -> None:
        """Say once that ladder.json cannot be updated (its counts are kept in memory)."""
        if self._told_ladder:
            return
        self._told_ladder = True
        kind = " (a folder)" if self.ladder_path.is_dir() else ""
        print(f"mcp-hooks: the escalation ladder's counts cannot be written to "
              f"{self.ladder_path}{kind}: {exc}; move it away (mcp-hooks makes a fresh "
              "one); until then this process counts in memory", file=sys.stderr)

    # -- logs ------------------------------------------------------------------------------

    def _log(self, log: LogName) -> EventLog | None:
        return self.events if log == "events" else self.signals

    def _stamp(self, record: dict[str, Any]) -> dict[str, Any]:
        if self.replica is not None and "replica" not in record:
            record = {**record, "replica": self.replica}
        return record

    def append(self, log: LogName, record: dict[str, Any]) -> None:
        target = self._log(log)
        if target is not None:
            target.append(self._stamp(record))

    def read(self, log: LogName, session: str | None = None) -> Iterator[dict[str, Any]]:
        target = self._log(log)
        if target is None:
            return iter(())
        return target.read(session)

    def answer_once(self, signal_id: str, action: str,
                    build: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        log = self.signals
        if log is None:
            raise UnknownSignal(f"no signal {signal_id!r}: nothing is logged here (no log), "
                                "so no signal can be answered; log events to answer signals")
        try:
            return self._answer(log, signal_id, action, build)
        except OSError as exc:
            raise StateUnavailable(
                f"cannot record the answer to signal {signal_id} in the signal log "
                f"{log.path}: {exc.strerror or exc}; nothing was recorded, so answer again "
                "once the log can be written") from None

    def _answer(self, log: EventLog, signal_id: str, action: str,
                build: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        try:
            fd, readable = _open(log.path, log.what, devices=False)
        except FileNotFoundError:
            log.path.parent.mkdir(parents=True, exist_ok=True)
            fd, readable = _open(log.path, log.what, devices=False)
        try:
            locked = _lock(fd)
            sent, answered = _look_up(fd, signal_id)
            if sent is None:
                raise UnknownSignal(_missing(log.path, signal_id))
            if answered is not None:
                if answered.get("action") == action:
                    return answered
                raise AlreadyAnswered(f"signal {signal_id} was already answered: "
                                      f"{answered.get('action')} at "
                                      f"{answered.get('timestamp')}", answered)
            record = self._stamp(build(sent))
            _write_line(fd, encode_record(record), readable, locked)
            return record
        finally:
            os.close(fd)  # closing releases the lock

    # -- once-only names --------------------------------------------------------------------

    def claim(self, name: str, *, ttl: float) -> bool:
        """``once/<digest of the name>``: its mtime is when the claim expires, read and set
        under ``flock``; a file a purge unlinked meanwhile is claimed afresh."""
        path = self.root / "once" / name_digest(name)
        try:
            self._purge_claims(path.parent)
            while True:
                fd = self._open_counter(path)
                try:
                    flock_within(fd, path)
                    if not _same_file(fd, path):
                        continue  # a purge unlinked it while we waited: claim the new one
                    now = time.time()
                    if os.fstat(fd).st_mtime > now:
                        return False
                    os.utime(fd, (now + ttl, now + ttl))
                    return True
                finally:
                    os.close(fd)
        except (OSError, TimeoutError) as exc:
            raise StateUnavailable(f"the state folder {path.parent} cannot keep a claim "
                                   f"({exc}); make it writable, or free some space") from None

    def _purge_claims(self, folder: Path) -> None:
        """Remove the expired claims, at most once a minute per store."""
        now = time.time()
        if now - self._purged < 60:
            return
        self._purged = now
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime <= now:
                        _unlink_expired(Path(entry.path), now)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
    except OSError:
        return False


def _unlink_expired(path: Path, now: float) -> None:
    """Unlink a claim's file if it is still expired once locked (never a live claim)."""
    fd = open_regular(path, os.O_RDWR)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # busy: a claim is being made
        if os.fstat(fd).st_mtime <= now and _same_file(fd, path):
            os.unlink(path)
    finally:
        os.close(fd)


def _bump(data: dict[str, Any], session: str, key: str, ttl: float) -> int:
    now = time.time()
    entry = data["sessions"].get(session)
    if entry is None or now - entry["at"] > ttl:
        entry = data["sessions"][session] = {"counts": {}, "at": now}
    value = min(int(entry["counts"].get(key, 0)), MAX_COUNT - 1) + 1
    entry["counts"][key] = value
    entry["at"] = now
    return value


def _forget(data: dict[str, Any], session: str | None, key: str | None) -> int:
    if session is None:
        data["sessions"] = {}
    elif key is None:
        data["sessions"].pop(session, None)
    elif session in data["sessions"]:
        data["sessions"][session]["counts"].pop(key, None)
    return 1


def _look_up(fd: int, signal_id: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The signal's line and its first response, read through the locked descriptor."""
    sent = answered = None
    for line in _tail(fd, READ_LIMIT):
        if signal_id not in line:  # most lines: no JSON parse
            continue
        record = _parse(line)
        if record is None or record.get("signal_id") != signal_id:
            continue
        if record.get("kind") == "signal" and sent is None:
            sent = record
        elif record.get("kind") == "response" and answered is None:
            answered = record
    return sent, answered


def _missing(path: Path, signal_id: str) -> str:
    try:
        window = (f" (in its last {READ_LIMIT >> 20} MiB, all that is read)"
                  if path.stat().st_size > READ_LIMIT else "")
    except OSError:
        window = ""
    return (f"no signal {signal_id!r} in the signal log {path}{window}; "
            "`mcp-hooks signals` lists the signals sent and their ids")
