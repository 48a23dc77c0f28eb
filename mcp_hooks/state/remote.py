"""What the shared state backends (``redis.py``, ``postgres.py``) have in common.

- :func:`redact`: a store URL as messages show it, its password replaced by ``***``.
- :func:`require`: import a backend's client library, or raise ``MissingExtraError`` naming
  the pip command of its extra (the core has no dependency on either client).
- :func:`unreachable`: the ``StateUnavailable`` for a store that cannot be reached, naming the
  URL (never its password) and the fix.
- :class:`Ttls`: how long each kind of record lives in a shared store (the defaults below);
  :func:`split_ttls` reads them from the URL's ``queue_ttl``, ``signal_ttl``, ``event_ttl``,
  ``seen_ttl``; :func:`split_timeout` the URL's ``timeout`` (the most a connect or a call may
  take before the store counts as lost; each backend has its default).
- :func:`signal_record`: a signal's record read back, or an error naming a malformed one.
- :class:`Reporter`: a write that the contract says never raises is reported once on stderr.
- ``HOLD``: for that long after a call timed out (a store that accepts and never answers),
  the never-raising calls of a lost store take their fallback at once (``Held``) instead of
  each waiting out a deadline: an event costs one deadline, not one per call. The check of
  a lost store before an event that can block (``fault``) always asks the store; queueing
  an async hook's aid (``put``: no event waits on it) is always sent too.
- :class:`SpoolingLog`: the log half both backends share: stamp a record, send it, spool it
  when the store cannot take it, and replay the spool when the store answers again.
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from mcp_hooks.errors import ConfigError, MissingExtraError, RunError
from mcp_hooks.state.files import MAX_COUNT
from mcp_hooks.state.memory import MemoryStore
from mcp_hooks.state.spool import Health, Spool, record_id
from mcp_hooks.state.store import LogName, StateUnavailable

COUNTER_TTL = 3600.0  # seconds; callers pass their own with every increment
QUEUE_TTL = 86400.0  # aid not taken within a day is dropped
SIGNAL_TTL = 30 * 86400.0  # a signal (and its answer) can be answered for 30 days
EVENT_TTL = 30 * 86400.0  # PostgreSQL: log rows older than this are purged
STREAM_CAP = 1_000_000  # Redis: the most recent records kept per log (approximate, XADD ~)
SESSION_STREAM_CAP = 10_000  # Redis: the most recent records kept per log and session
HOLD = 5.0  # seconds after a timeout that the never-raising calls of a lost store are not sent
MAX_TIMEOUT = 3600.0  # the most ``?timeout=`` may give, in seconds
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
# the longest TTL taken: ten years (Redis keeps expiries in ms in 64 bits, PostgreSQL's
# intervals end near 178 million years; a longer "forever" would overflow one of them)
MAX_TTL = 3650 * 86400.0


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


def split_timeout(url: str) -> tuple[str, float | None]:
    """``url`` without its ``timeout`` query parameter, and its value in seconds (None when
    not given); a value as ``split_ttls`` reads one."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = [v for k, v in query if k == "timeout"]
    if not given:
        return url, None
    rest = "&".join(f"{quote(k)}={quote(v, safe='/:')}" for k, v in query if k != "timeout")
    seconds = _seconds("timeout", given[-1], url)
    if seconds > MAX_TIMEOUT:
        raise ConfigError(f"state store {redact(url)}: timeout={given[-1]!r} is over "
                          f"{MAX_TIMEOUT / 60:g} minutes; a store that slow counts as lost "
                          "long before: give seconds (e.g. timeout=5s)")
    return urlunsplit(parts._replace(query=rest)), seconds


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
    if seconds < 1 or seconds > MAX_TTL:
        raise ConfigError(f"state store {redact(url)}: {name}={text!r} is out of range; give "
                          f"a duration from 1s to {MAX_TTL / 86400:g}d (e.g. {name}=7d)")
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
    host = parts.netloc.rpartition("@")[2]  # host and port as given (a bad port is shown)
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def require(module: str, extra: str, needs: str, backend: str) -> ModuleType:
    """Import ``module``, or raise ``MissingExtraError`` naming ``extra``'s pip command."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(backend, exc, extra, needs) from exc


AUTH_FIX = ("The server refused these credentials: give the right user and password in "
            "--state (MCP_HOOKS_STATE)")
_AUTH_SAID = ("authentication failed", "invalid username-password pair", "wrongpass",
              "noauth", "authentication required", "invalid password", "no password supplied")


def refused_credentials(error: BaseException) -> bool:
    """Whether ``error`` says the server refused the user or password (Redis's
    ``AuthenticationError``, PostgreSQL's SQLSTATE class 28, or what they print for it)."""
    if type(error).__name__ == "AuthenticationError":
        return True
    if str(getattr(error, "sqlstate", None) or "").startswith("28"):
        return True
    text = str(error).lower()
    return any(said in text for said in _AUTH_SAID)


def unreachable(url: str, error: BaseException, fix: str) -> StateUnavailable:
    """The error for a store that cannot be reached or used: the URL without its password,
    what went wrong (with the password scrubbed from it too), and ``fix`` (its "Start it"
    advice replaced by ``AUTH_FIX`` when the server refused the credentials)."""
    what = str(error).strip().splitlines()[0].rstrip(".") if str(error).strip() else \
        type(error).__name__
    if refused_credentials(error):
        fix = fix.split("Start it")[0] + AUTH_FIX
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


def signal_record(text: Any, signal_id: str, url: str, what: str) -> dict[str, Any]:
    """A signal's ``sent`` or ``answer`` record read back from a shared store: its JSON
    object, or a ``ConfigError`` naming the store, the signal and the fix when what the store
    holds is not one (written there by hand or by another program)."""
    try:
        record = json.loads(text)
    except (TypeError, ValueError):
        record = None
    if isinstance(record, dict):
        return record
    raise ConfigError(f"state store {url}: the {what} record of signal {signal_id!r} is not a "
                      "JSON object (written by something other than mcp-hooks?); nothing "
                      "was answered: delete the signal from the store, or raise it again")


def once_name(name: str) -> str:
    """A claimed name as the shared stores key it: ASCII, %-quoted, lossless (a lone
    surrogate too)."""
    return quote(name.encode("utf-8", "surrogatepass"), safe="")


def dumps(record: dict[str, Any]) -> str:
    """One record as JSON text (ASCII: strings that are not UTF-8 travel as escapes)."""
    return json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str)


class Held(RunError, OSError):
    """A call not sent: its store timed out less than ``HOLD`` seconds ago."""


def _timed_out(error: BaseException) -> bool:
    """A deadline passed (ours, a client's socket or connect timeout), not a refusal."""
    return isinstance(error, TimeoutError) or "Timeout" in type(error).__name__


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
        self.timed_out_at = float("-inf")  # monotonic time of the last call that timed out

    def lost(self, error: BaseException, fix: str | None = None) -> StateUnavailable:
        """Record a failed call in the health; the ``StateUnavailable`` to raise for it."""
        if isinstance(error, Held) and self.health.lost is not None:  # what broke stands
            self.health.failed(self.health.lost)
            return StateUnavailable(self.health.lost)
        if _timed_out(error):
            self.timed_out_at = time.monotonic()
        exc = unreachable(self._raw, error, self._fix if fix is None else fix)
        self.health.failed(str(exc) if fix is None else
                           str(unreachable(self._raw, error, self._fix)))
        return exc

    def back(self) -> None:
        """The store answered again: the next loss is reported again."""
        self.health.back()
        self.timed_out_at = float("-inf")
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
    _refused: tuple[type[BaseException], ...] = ()  # the store refuses the record as data
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

    def _hold(self) -> None:
        """Raise ``Held`` while the store is lost and a call timed out less than ``HOLD``
        seconds ago (a never-raising call then takes its fallback at once)."""
        if (self.health.lost is not None
                and time.monotonic() - self._report.timed_out_at < HOLD):
            raise Held(f"not sent: the store timed out less than {HOLD:g} s ago")

    def malformed(self, namespace: str, session: str, key: str, value: object) -> None:
        """A count in the store that is not one (``store.py``): reported on stderr, the
        first time for this store object only."""
        with self._report._lock:
            if getattr(self, "_told_malformed", False):
                return
            self._told_malformed = True
        print(f"mcp-hooks: state store {self._report.url}: the count {namespace}/{session!a}"
              f"/{key!a} is {str(value)[:40]!a}, not a whole number from 1 to {MAX_COUNT}; "
              "it counts 0 and starts over at 1 (further ones are not reported)",
              file=sys.stderr)


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

    def probe(self) -> str | None:
        """None when the store answers one bounded call now, else what broke (its URL
        without the password); records nothing, in the store or in its health (readiness,
        ``doctor --state``)."""
        try:
            self._probe()
        except self._errors as exc:
            return f"{self._report.url}: {type(exc).__name__}: {exc}"
        return None

    def _back(self) -> None:
        """The store answers again: forget the loss, replay the spool."""
        self._report.back()
        if self._spool.pending:
            try:
                self._spool.replay(self._send, self._refused)
            except self._errors as exc:
                self._report("replaying the spool", exc)

    def _stamp(self, record: dict[str, Any]) -> dict[str, Any]:
        if self.replica is not None and "replica" not in record:
            record = {**record, "replica": self.replica}
        return record

    def append(self, log: LogName, record: dict[str, Any]) -> None:
        record = record_id(self._stamp(record))
        try:
            self._hold()
            self._send(log, record)
        except self._refused as exc:  # the store answered: it will never take this one
            self._spool.set_aside(log, record, exc)
            return
        except self._errors as exc:
            self._report(f"appending to the {log} log", exc)
            self._spool.put(log, record)  # replayed once the store answers again
            return
        if self.health.lost is not None or self._spool.pending:
            self._back()


def valid_count(value: object) -> int | None:
    """``value`` (a stored count: bytes, text or a number) as a count from 1 to
    ``MAX_COUNT``; None when it is not one."""
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    if isinstance(value, str):
        value = int(value) if value.isascii() and value.isdigit() and len(value) < 16 else None
    if type(value) is int and 0 < value <= MAX_COUNT:
        return value
    return None
