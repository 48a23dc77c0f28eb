"""What the shared state backends (``redis.py``, ``postgres.py``) have in common.

- :func:`redact`: a store URL as messages show it, its password replaced by ``***``.
- :func:`require`: import a backend's client library, or raise ``MissingExtraError`` naming
  the pip command of its extra (the core has no dependency on either client).
- :func:`unreachable`: the ``StateUnavailable`` for a store that cannot be reached, naming the
  URL (never its password) and the fix.
- :class:`Ttls`: how long each kind of record lives in a shared store (the defaults below);
  :func:`split_ttls` reads them from the URL's ``queue_ttl``, ``signal_ttl``, ``event_ttl``,
  ``seen_ttl``.
- :class:`Reporter`: a write that the contract says never raises is reported once on stderr.
- :class:`SpoolingLog`: the log half both backends share: stamp a record, send it, spool it
  when the store cannot take it, and replay the spool when the store answers again.
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from mcp_hooks.errors import ConfigError, MissingExtraError
from mcp_hooks.state.memory import MemoryStore
from mcp_hooks.state.spool import Health, Spool, record_id
from mcp_hooks.state.store import LogName, StateUnavailable

COUNTER_TTL = 3600.0  # seconds; callers pass their own with every increment
QUEUE_TTL = 86400.0  # aid not taken within a day is dropped
SIGNAL_TTL = 30 * 86400.0  # a signal (and its answer) can be answered for 30 days
EVENT_TTL = 30 * 86400.0  # PostgreSQL: log rows older than this are purged
STREAM_CAP = 1_000_000  # Redis: the most recent records kept per log (approximate, XADD ~)
SESSION_STREAM_CAP = 10_000  # Redis: the most recent records kept per log and session
SEEN_TTL = 86400.0  # Redis: how long a record's id is remembered (a replay within it is kept once)


@dataclass(frozen=True)
class Ttls:
    """How long a shared store keeps each kind of record, in seconds."""

    queue: float = QUEUE_TTL
    signal: float = SIGNAL_TTL
    event: float = EVENT_TTL
    seen: float = SEEN_TTL


TTL_PARAMETERS = {"queue_ttl": "queue", "signal_ttl": "signal", "event_ttl": "event",
                  "seen_ttl": "seen"}
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def split_ttls(url: str) -> tuple[str, Ttls]:
    """``url`` without its ``queue_ttl``/``signal_ttl``/``event_ttl``/``seen_ttl`` query
    parameters (the
    client libraries would refuse them), and the ``Ttls`` they give (defaults for the rest).
    A value is seconds, or a number with ``s``, ``m``, ``h`` or ``d``; anything else is a
    ``ConfigError`` naming the parameter."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, Ttls()
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = [(k, v) for k, v in query if k in TTL_PARAMETERS]
    if not ours:
        return url, Ttls()
    values = {TTL_PARAMETERS[k]: _seconds(k, v, url) for k, v in ours}
    rest = "&".join(f"{quote(k)}={quote(v, safe='/:')}" for k, v in query
                    if k not in TTL_PARAMETERS)
    return urlunsplit(parts._replace(query=rest)), Ttls(**values)


def _seconds(name: str, text: str, url: str) -> float:
    value = text.strip().lower()
    unit = _UNITS.get(value[-1:], 0.0) if value else 0.0
    try:
        number = float(value[:-1] if unit else value)
    except ValueError:
        number = -1.0
    seconds = number * (unit or 1.0)
    if not 0 < seconds < float("inf"):
        raise ConfigError(f"state store {redact(url)}: {name}={text!r} is not a duration; give "
                          f"seconds or a number with s, m, h or d (e.g. {name}=7d)")
    return seconds


def redact(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a store URL that cannot be parsed>"
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(k == "password" for k, _ in query):  # redis-py and libpq take it there too
        parts = parts._replace(query="&".join(
            f"{k}=***" if k == "password" else f"{quote(k)}={quote(v, safe='/:')}"
            for k, v in query))
    if parts.password is None:
        return urlunsplit(parts)
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def require(module: str, extra: str, needs: str, backend: str) -> ModuleType:
    """Import ``module``, or raise ``MissingExtraError`` naming ``extra``'s pip command."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(backend, exc, extra, needs) from exc


def unreachable(url: str, error: BaseException, fix: str) -> StateUnavailable:
    """The error for a store that cannot be reached or used: the URL without its password,
    what went wrong (with the password scrubbed from it too), and ``fix``."""
    what = str(error).strip().splitlines()[0].rstrip(".") if str(error).strip() else \
        type(error).__name__
    for password in _passwords(url):
        what = what.replace(password, "***")
    return StateUnavailable(f"state store {redact(url)} cannot be used: {what}. {fix}")


def _passwords(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [v for k, v in parse_qsl(parts.query) if k == "password" and v]
    return [*found, parts.password] if parts.password else found


def once_name(name: str) -> str:
    """A claimed name as the shared stores key it: ASCII, %-quoted, lossless (a lone
    surrogate too)."""
    return quote(name.encode("utf-8", "surrogatepass"), safe="")


def dumps(record: dict[str, Any]) -> str:
    """One record as JSON text (ASCII: strings that are not UTF-8 travel as escapes)."""
    return json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str)


class Reporter:
    """Reports a failed never-raising write on stderr, once per loss of the store, and keeps
    what broke in the store's ``Health`` (``spool.py``)."""

    def __init__(self, url: str, fix: str = "", health: Health | None = None) -> None:
        self.url = redact(url)
        self._raw = url
        self._fix = fix
        self.health = health if health is not None else Health()
        self._lock = threading.Lock()
        self._told = False

    def lost(self, error: BaseException, fix: str | None = None) -> StateUnavailable:
        """Record a failed call in the health; the ``StateUnavailable`` to raise for it."""
        exc = unreachable(self._raw, error, self._fix if fix is None else fix)
        self.health.failed(str(exc) if fix is None else
                           str(unreachable(self._raw, error, self._fix)))
        return exc

    def back(self) -> None:
        """The store answered again: the next loss is reported again."""
        self.health.back()
        with self._lock:
            self._told = False

    def __call__(self, what: str, error: BaseException) -> None:
        self.lost(error)
        with self._lock:
            if self._told:
                return
            self._told = True
        line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        print(f"mcp-hooks: state store {self.url}: {what} failed ({line}); further failures "
              f"are not reported until it answers again", file=sys.stderr)


class SpoolingLog:
    """What both shared stores do with a log record around their own ``_send`` (add one
    record unless its id is stored) and ``_probe`` (one bounded call that raises the
    client's errors while the store is lost)."""

    url: str
    replica: str | None
    ttls: Ttls
    health: Health
    _spool: Spool
    _report: Reporter
    _local: MemoryStore
    _errors: tuple[type[BaseException], ...]
    _probe_name = "a check"

    def _begin(self, url: str, replica: str | None, ttls: Ttls | None, fix: str) -> None:
        """What a backend's constructor sets first: its URL, replica stamp and TTLs, the
        reporter and health of its losses, its spool, its counters for while it is lost."""
        self.url = url
        self.replica = replica
        self.ttls = ttls or Ttls()
        self._report = Reporter(url, fix)
        self.health = self._report.health
        self._spool = Spool(url, replica)
        self._local = MemoryStore()

    def local(self) -> MemoryStore:
        """The counters this process keeps while the store is lost: a count the store cannot
        keep still grows here, so the loop guard lets a stop through at its cap (per
        replica) instead of denying it forever."""
        return self._local

    def _send(self, log: LogName, record: dict[str, Any]) -> None:
        raise NotImplementedError

    def _probe(self) -> None:
        raise NotImplementedError

    def fault(self) -> str | None:
        """What broke, while the store is lost and ``_probe`` still fails; None when it
        answers (the spool is replayed then). One bounded call, only while lost."""
        if self.health.lost is None:
            return None
        try:
            self._probe()
        except self._errors as exc:
            self._report(self._probe_name, exc)
            return self.health.lost
        self._back()
        return None

    def _back(self) -> None:
        """The store answers again: forget the loss, replay the spool."""
        self._report.back()
        if self._spool.pending:
            try:
                self._spool.replay(self._send)
            except self._errors as exc:
                self._report("replaying the spool", exc)

    def _stamp(self, record: dict[str, Any]) -> dict[str, Any]:
        if self.replica is not None and "replica" not in record:
            record = {**record, "replica": self.replica}
        return record

    def append(self, log: LogName, record: dict[str, Any]) -> None:
        record = record_id(self._stamp(record))
        try:
            self._send(log, record)
        except self._errors as exc:
            self._report(f"appending to the {log} log", exc)
            self._spool.put(log, record)  # replayed once the store answers again
            return
        if self.health.lost is not None or self._spool.pending:
            self._back()
