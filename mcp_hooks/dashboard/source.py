"""What the dashboard reads: the configured store's event and signal logs, bounded.

Contracts:

- ``Source(url, log_path)`` reads the store ``url`` names (``file:``: the event log file
  ``log_path`` and the signal log beside it; ``redis://``, ``postgresql://``: that store's
  logs, every replica's records) through ``state/``.
- A file log is never parsed whole per request: ``recent`` reads it backwards from its end in
  ``CHUNK``-byte steps and stops as soon as it holds ``limit`` matching records (or has read
  ``state.eventlog.READ_LIMIT`` bytes), so the latest page of a log of any length costs the
  same. ``newer(cursor)`` reads only what was appended after ``cursor`` (a byte offset; a log
  that shrank is read again from its tail). A shared store's cursor is the ``ts`` of the last
  record seen.
- The doctor's probe records (``state.reader.is_probe``) are never shown.
- ``asks()`` lists the asks waiting for a person and ``answer()`` answers one, through the
  store's ask table (``state/asks.py``), as ``mcp-hooks pending|approve|refuse`` do.
- A store that is missing, unreadable or unreachable raises ``SourceError`` whose message
  says what is wrong and how to fix it (the pages show it; no traceback reaches anyone).
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mcp_hooks.errors import ConfigError, MCPHooksError, RunError
from mcp_hooks.spec.asking import AskAnswer, AskRequest
from mcp_hooks.state.asks import answer
from mcp_hooks.state.eventlog import READ_LIMIT, _parse, _tail
from mcp_hooks.state.reader import is_probe
from mcp_hooks.state.remote import redact
from mcp_hooks.state.signallog import SIGNAL_LOG_NAME
from mcp_hooks.state.store import AskAnswered, AskExpired, LogName, StateStore, UnknownAsk
from mcp_hooks.state.url import close_store, open_store, replica_name, scheme

CHUNK = 1 << 18  # bytes read per step backwards from the end of a file log
MAX_LIMIT = 2000  # records one request may ask for
DECISIONS = ("allow", "deny", "ask")
ASK_KINDS = ("ask", "ask_answer", "ask_timeout", "ask_mismatch")  # ``engine/asking.py``
T = TypeVar("T")


class SourceError(RunError):
    """The store cannot be read: the message says what is wrong and the fix."""


@dataclass(frozen=True)
class Filters:
    """What the Activity page narrows the events to (every field optional)."""

    session: str | None = None
    hook: str | None = None
    decision: str | None = None
    door: str | None = None
    since: str | None = None  # ISO 8601 UTC, compared as text with the records' ``ts``
    until: str | None = None
    kinds: tuple[str, ...] = ("event",)  # the record kinds kept (a session also its asks)

    def match(self, record: dict[str, Any]) -> bool:
        """Whether an event record passes every filter set."""
        if record.get("kind", "event") not in self.kinds or is_probe(record):
            return False
        if self.session is not None and record.get("session_id") != self.session:
            return False
        if self.decision is not None and record.get("decision") != self.decision:
            return False
        if self.door is not None and record.get("door") != self.door:
            return False
        ts = str(record.get("ts", ""))
        if (self.since is not None and ts < self.since) or (
                self.until is not None and ts > self.until):
            return False
        return self.hook is None or self.hook in hook_names(record)


def hook_names(record: dict[str, Any]) -> set[str]:
    """The hooks an event record names: those that ran, and the one that blocked."""
    names = {str(h.get("name")) for h in record.get("hooks") or () if isinstance(h, dict)}
    if record.get("blocked_by"):
        names.add(str(record["blocked_by"]))
    return names


def _backwards(fd: int, end: int, stop: int) -> Iterator[bytes]:
    """The whole lines of the file behind ``fd`` between ``stop`` and ``end``, newest first
    (a first line cut by ``stop`` is dropped)."""
    offset, rest = end, b""
    while offset > stop:
        start = max(stop, offset - CHUNK)
        block = os.pread(fd, offset - start, start) + rest
        offset = start
        lines = block.split(b"\n")
        rest = lines[0]
        yield from reversed(lines[1:])
    if stop == 0 and rest:
        yield rest


def read_tail(path: Path, limit: int, keep: Filters) -> tuple[list[dict[str, Any]], int]:
    """The last ``limit`` records of the file log ``path`` that ``keep`` matches, oldest
    first, and the log's size read up to (the cursor for ``read_after``)."""
    fd = _open(path)
    if fd is None:
        return [], 0
    try:
        end = os.fstat(fd).st_size
        found: list[dict[str, Any]] = []
        for raw in _backwards(fd, end, max(0, end - READ_LIMIT)):
            record = _parse(raw.decode("utf-8", errors="replace"))
            if record is not None and keep.match(record):
                found.append(record)
                if len(found) >= limit:
                    break
        found.reverse()
        return found, end
    finally:
        os.close(fd)


def read_after(path: Path, cursor: int, keep: Filters) -> tuple[list[dict[str, Any]], int]:
    """The records appended to the file log ``path`` after byte ``cursor`` that ``keep``
    matches, and the new cursor (a log shorter than ``cursor`` is read from its tail)."""
    fd = _open(path)
    if fd is None:
        return [], 0
    try:
        end = os.fstat(fd).st_size
        start = cursor if 0 <= cursor <= end else max(0, end - READ_LIMIT)
        if end - start > READ_LIMIT:
            start = end - READ_LIMIT
        data = os.pread(fd, end - start, start)
        cut = data.rfind(b"\n") + 1  # a line still being written waits for the next poll
        records = [r for raw in data[:cut].split(b"\n") if raw
                   if (r := _parse(raw.decode("utf-8", errors="replace"))) is not None
                   and keep.match(r)]
        return records, start + cut
    finally:
        os.close(fd)


def _open(path: Path) -> int | None:
    """``path`` open for reading, None when it does not exist yet (no event logged)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise SourceError(
                f"the event log's folder {path.parent} does not exist: nothing has been "
                f"logged there. Fire an event (mcp-hooks fire ...) or point the dashboard at "
                f"the log your servers write with --log FILE or --state URL") from None
        return None
    except OSError as exc:
        raise SourceError(
            f"cannot read the event log {path}: {exc.strerror}. Give the dashboard's user "
            f"read access to it (chmod/chown), or point it at another log with --log FILE"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SourceError(f"the event log {path} is not a regular file; point --log at the "
                          "JSONL file mcp-hooks writes")
    return fd


class Source:
    """The store the dashboard shows: its events, signals and health."""

    def __init__(self, url: str, log_path: Path) -> None:
        self.url = url
        self.log_path = Path(log_path)
        self.shared = scheme(url) != "file"
        self._store: StateStore | None = None
        self.name = (f"the state store {redact(url)}" if self.shared
                     else f"the event log {self.log_path}")

    def store(self) -> StateStore:
        """The store, connected on first use (``SourceError`` when it cannot be); the file
        store's asks live in its default state folder, as the engines' do."""
        if self._store is None:
            try:
                self._store = open_store(self.url, replica=replica_name(), log=self.log_path)
            except (ConfigError, MCPHooksError, OSError) as exc:
                raise SourceError(f"cannot reach {self.name}: {exc}. Check that it runs and "
                                  "that --state (or MCP_HOOKS_STATE) names it") from None
        return self._store

    def _records(self, log: LogName) -> Iterable[dict[str, Any]]:
        try:
            return list(self.store().read(log))
        except SourceError:
            raise
        except Exception as exc:  # a store fault is shown, never a traceback
            raise SourceError(f"cannot read {self.name}: {exc}. Check that it runs and "
                              "answers (mcp-hooks doctor --state URL)") from None

    def recent(self, limit: int, keep: Filters = Filters()) -> tuple[list[dict[str, Any]], str]:
        """The last ``limit`` events ``keep`` matches, oldest first, and the cursor."""
        if not self.shared:
            records, end = read_tail(self.log_path, limit, keep)
            return records, str(end)
        found: deque[dict[str, Any]] = deque(maxlen=limit)
        last = ""
        for record in self._records("events"):
            last = max(last, str(record.get("ts", "")))
            if keep.match(record):
                found.append(record)
        return list(found), last

    def newer(self, cursor: str, keep: Filters = Filters()) -> tuple[list[dict[str, Any]], str]:
        """The events ``keep`` matches logged after ``cursor`` (from ``recent`` or a previous
        ``newer``), and the new cursor."""
        if not self.shared:
            start = int(cursor) if cursor.isdigit() else -1
            records, end = read_after(self.log_path, start, keep)
            return records, str(end)
        fresh = [r for r in self._records("events") if str(r.get("ts", "")) > cursor]
        last = max([cursor, *(str(r.get("ts", "")) for r in fresh)])
        return [r for r in fresh if keep.match(r)], last

    def session(self, session_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """One session's events with its asks and their answers, and its signals (with
        their responses), oldest first."""
        keep = Filters(session=session_id, kinds=("event", *ASK_KINDS))
        events, _ = self.recent(MAX_LIMIT, keep)
        signals = [r for r in self.signals() if r.get("session_id") == session_id]
        return events, signals

    def signals(self) -> list[dict[str, Any]]:
        """The signal log's records (signals and responses), oldest first."""
        if self.shared:
            return [r for r in self._records("signals") if not is_probe(r)]
        path = self.log_path.with_name(SIGNAL_LOG_NAME)
        fd = _open(path)
        if fd is None:
            return []
        try:
            return [r for line in _tail(fd, READ_LIMIT)
                    if (r := _parse(line)) is not None and not is_probe(r)]
        finally:
            os.close(fd)

    def asks(self) -> list[AskRequest]:
        """The asks waiting for a person, oldest first."""
        return self._through(lambda store: store.pending_asks())

    def answer(self, ask_id: str, given: AskAnswer) -> AskRequest:
        """Answer a waiting ask (``state.asks.answer``: stored, logged). Raises
        ``UnknownAsk``, ``AskExpired``, ``AskAnswered`` as the store does."""
        return self._through(lambda store: answer(store, ask_id, given))

    def _through(self, call: Callable[[StateStore], T]) -> T:
        store = self.store()
        try:
            return call(store)
        except (UnknownAsk, AskExpired, AskAnswered):
            raise
        except Exception as exc:  # a store fault is shown, never a traceback
            raise SourceError(f"cannot reach the asks of {self.name}: {exc}. Check that it "
                              "runs and answers (mcp-hooks doctor --state URL)") from None

    def health(self) -> str | None:
        """None when the store answers now, else what is wrong and the fix."""
        try:
            if not self.shared:
                fd = _open(self.log_path)
                if fd is not None:
                    os.close(fd)
                return None
            probe = getattr(self.store(), "probe", None)
            return probe() if callable(probe) else None
        except SourceError as exc:
            return str(exc)

    def close(self) -> None:
        """Let go of a shared store's connections; never raises."""
        if self._store is not None:
            close_store(self._store)
            self._store = None


__all__ = ["DECISIONS", "MAX_LIMIT", "Filters", "Source", "SourceError", "hook_names",
           "read_after", "read_tail"]
