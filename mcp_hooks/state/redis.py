"""The Redis state backend: ``--state redis://[:password@]host[:port][/db][?prefix=...]``.

Every replica pointed at one Redis shares every per-session record (the contract is in
``store.py``). Needs the ``redis`` extra (``pip install 'mcp-hooks[redis]'``: the ``redis``
client, imported here only). ``rediss://`` speaks TLS; ``?prefix=`` (default ``mcp-hooks:``)
starts every key, so several deployments can share one Redis; the client's own URL options
pass through. ``?timeout=`` (seconds, or a number with ``s``/``m``/``h``; default ``TIMEOUT``)
bounds a connect and each read of a reply (``socket_timeout`` and ``socket_connect_timeout``,
which the URL may also give): a server that stops answering costs a call at most that, and
then the store counts as lost; never a hang. A call is never sent twice (a timeout is not
retried); a pooled connection the server closed (a restart) is noticed by the client when
it is taken, and replaced. A serving engine makes its calls around each event through a
``redis.asyncio`` client of the same URL (``redislane.py``, ``bridge.py``): the same code.

Keys (``<p>`` the prefix; namespaces, sessions and ids are %-quoted, so none holds a ``:``;
a lone surrogate, which a session id taken from JSON may carry, is quoted as the bytes
``surrogatepass`` gives it, never a ``UnicodeEncodeError``: ids stay distinct and readable
back; a counter's key, a hash field, is those bytes too):

==============================  ===========  ==============================================
key                             type         what, and how long it lives
==============================  ===========  ==============================================
``<p>c:<ns>:<session>``         hash         the session's counters of a namespace, a field
                                             per key; expires ``ttl`` after the last
                                             increment (the longest ttl of its fields)
``<p>log:<log>``                stream       a log's records (field ``r``, JSON), capped at
                                             ``STREAM_CAP`` entries (``XADD MAXLEN ~``)
``<p>log:<log>:s:<session>``    stream       the same records of one session (read by
                                             session), capped at ``SESSION_STREAM_CAP``;
                                             expires ``Ttls.event`` after its last record
``<p>sig:<id>``                 string       a signal as sent (JSON); ``Ttls.signal``
``<p>ans:<id>``                 string       its one answer (``SET NX``); ``Ttls.signal``
``<p>q:<session>``              list         the session's waiting aid; ``Ttls.queue``
``<p>a:<key>``                  string       an ask, or the last ask of a call (``asks.py``);
                                             swapped by a Lua compare-and-set
``<p>trust``                    hash         the trusted digests of project hooks (``trust
                                             --state``): a field per ``[project, hook]``
                                             (JSON); kept until revoked
``<p>once:<name>``              string       a claimed name (a forwarded request's nonce):
                                             ``SET NX PX``, for the claim's ``ttl``
==============================  ===========  ==============================================

Atomicity: an increment is one Lua script (``HINCRBY`` and the expiry together); an append is
one ``MULTI`` (both streams, and the signal's key for a sent signal); an answer is one Lua
script (``SET NX`` and the log's ``XADD`` together, so exactly one answer is stored and
logged); ``take_all`` is one ``MULTI`` of ``LRANGE`` + ``DEL``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from mcp_hooks.state.asks import ASK, AskBook
from mcp_hooks.state.files import MAX_COUNT
from mcp_hooks.state.lane import Lane, lane_of
from mcp_hooks.state.redislua import ANSWER, APPEND, INCREMENT, SCRIPTS, SWAP
from mcp_hooks.state.remote import (
    SESSION_STREAM_CAP,
    STREAM_CAP,
    SpoolingLog,
    Ttls,
    dumps,
    once_name,
    require,
    signal_record,
    split_timeout,
    unreachable,
    valid_count,
)
from mcp_hooks.state.spool import ID
from mcp_hooks.state.store import AlreadyAnswered, LogName, StateUnavailable, UnknownSignal

DEFAULT_PREFIX = "mcp-hooks:"
TIMEOUT = 2.0  # seconds a connect or a command may take before the store counts as lost
FIX = ("Start it, or point --state (MCP_HOOKS_STATE) at a Redis that is running")


def _b(text: str) -> bytes:
    """``text`` as UTF-8, a lone surrogate kept (``surrogatepass``): distinct texts, distinct
    bytes."""
    return text.encode("utf-8", "surrogatepass")


def _q(part: str) -> str:
    return quote(_b(part), safe="")


def _glob(text: str) -> str:
    """``text`` with Redis glob characters escaped (for ``SCAN MATCH``)."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


class RedisStore(AskBook, SpoolingLog):
    """A ``StateStore`` in Redis (see the module docstring for the keys)."""

    def __init__(self, url: str, *, replica: str | None = None, ttls: Ttls | None = None,
                 check: bool = True) -> None:
        redis = require("redis", "redis", "the redis client", "the Redis state store")
        self._begin(url, replica, ttls, FIX)
        url, timeout = split_timeout(url)
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        self.prefix = next((v for k, v in query if k == "prefix"), DEFAULT_PREFIX)
        rest = urlencode([(k, v) for k, v in query if k != "prefix"])
        # the URL's own options win; the asyncio client (``lane``) is made with the same
        self._client = (urlunsplit(parts._replace(query=rest)), {
            "health_check_interval": 30, "socket_timeout": timeout or TIMEOUT,
            "socket_connect_timeout": timeout or TIMEOUT})
        try:
            self._sync: Any = redis.Redis.from_url(self._client[0], **self._client[1])
        except ValueError as exc:  # a URL the client cannot take
            raise unreachable(url, exc, "Fix the URL: redis://[:password@]host[:port][/db]"
                              ) from None
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._scripts = {text: self._sync.register_script(text) for text in SCRIPTS}
        if check:
            self.check()

    @property
    def _redis(self) -> Any:
        """The client of this call: the asyncio one's in ``bridge.run`` (``redislane.py``),
        else the sync one."""
        lane = lane_of(self)
        return self._sync if lane is None else lane.redis

    def _eval(self, script: str, keys: list[Any], args: list[Any]) -> Any:
        """Run one of ``redislua.SCRIPTS`` on the client of this call."""
        lane = lane_of(self)
        if lane is None:
            return self._scripts[script](keys=keys, args=args)
        return lane.eval(script, keys, args)

    def lane(self) -> Lane:
        """This store's asyncio side on the running loop (``engine/offloop.py``)."""
        # lazy: 3 ms of cold start (greenlet; python -X importtime), which no one-shot CLI needs
        from mcp_hooks.state.redislane import RedisLane

        return RedisLane(self, *self._client)

    _probe_name = "a PING"

    def _probe(self) -> None:
        self._redis.ping()

    def check(self) -> None:
        """Raise ``StateUnavailable`` (the URL, never its password, and the fix) unless the
        server answers a PING."""
        try:
            self._redis.ping()
        except self._errors as exc:
            raise self._report.lost(exc) from None

    def close(self) -> None:
        self._sync.close()

    def about(self) -> dict[str, Any]:
        """The server and schema as ``doctor --state`` shows them; ``StateUnavailable`` when
        the server does not answer, or is older than Redis 5 (no streams)."""
        try:
            version = str(self._redis.info("server").get("redis_version", "?"))
        except self._errors as exc:
            raise self._report.lost(exc) from None
        major = version.split(".")[0]
        if major.isdigit() and int(major) < 5:
            raise StateUnavailable(f"state store {self._report.url} is Redis {version}; the "
                                   "event log needs streams (Redis 5 or newer): upgrade it")
        return {"server": f"Redis {version}", "schema": f"keys under {self.prefix!r}"}

    # -- counters ---------------------------------------------------------------------------

    def _counter(self, namespace: str, session: str) -> str:
        return f"{self.prefix}c:{_q(namespace)}:{_q(session)}"

    def increment(self, namespace: str, session: str, key: str = "", *, ttl: float) -> int:
        try:
            self._hold()
            value, bad, was = self._eval(INCREMENT, [self._counter(namespace, session)],
                                         [_b(key), _ms(ttl), MAX_COUNT])
        except self._errors as exc:
            self._report("a counter's increment", exc)
            return self.local().increment(namespace, session, key, ttl=ttl)
        if bad:
            self.malformed(namespace, session, key, was)
        return int(value)

    def count(self, namespace: str, session: str, key: str = "", *, ttl: float) -> int:
        try:
            self._hold()
            value = self._redis.hget(self._counter(namespace, session), _b(key))
        except self._errors as exc:
            self._report("reading a counter", exc)
            return self.local().count(namespace, session, key, ttl=ttl)
        if value is None:
            return 0
        counted = valid_count(value)
        if counted is None:
            self.malformed(namespace, session, key, value)
        return counted or 0

    def reset(self, namespace: str, session: str | None = None, key: str | None = None) -> None:
        try:
            self._hold()
            if session is not None and key is not None:
                self._redis.hdel(self._counter(namespace, session), _b(key))
            elif session is not None:
                self._redis.delete(self._counter(namespace, session))
            else:
                match = _glob(f"{self.prefix}c:{_q(namespace)}:") + "*"
                batch: list[bytes] = []
                for name in self._redis.scan_iter(match=match, count=500):
                    batch.append(name)
                    if len(batch) >= 500:
                        self._redis.delete(*batch)
                        batch.clear()
                if batch:
                    self._redis.delete(*batch)
        except self._errors as exc:
            self._report("a counter's reset", exc)
            self.local().reset(namespace, session, key)

    # -- logs -------------------------------------------------------------------------------

    def _stream(self, log: str, session: str | None = None) -> str:
        base = f"{self.prefix}log:{log}"
        return base if session is None else f"{base}:s:{_q(session)}"

    def _send(self, log: LogName, record: dict[str, Any]) -> None:
        """Add one record (``record_id`` set) unless its id was seen; raises the client's
        errors."""
        text = dumps(record)
        session = record.get("session_id")
        signal_id = record.get("signal_id")
        sent = log == "signals" and record.get("kind") == "signal" and isinstance(signal_id, str)
        self._eval(APPEND, [f"{self.prefix}seen:{_q(str(record[ID]))}", self._stream(log),
                            self._stream(log, session) if isinstance(session, str) else "",
                            f"{self.prefix}sig:{_q(str(signal_id))}" if sent else ""],
                   [text, STREAM_CAP, SESSION_STREAM_CAP, _ms(self.ttls.event),
                    _ms(self.ttls.signal), _ms(self.ttls.seen)])

    def read(self, log: LogName, session: str | None = None) -> Iterator[dict[str, Any]]:
        stream = self._stream(log, session)
        start = "-"
        while True:
            try:
                page = self._redis.xrange(stream, min=start, max="+", count=1000)
            except self._errors as exc:
                raise self._report.lost(exc) from None
            yield from _records(page)
            if len(page) < 1000:
                return
            start = "(" + page[-1][0].decode()

    # -- answer-once ------------------------------------------------------------------------

    def answer_once(self, signal_id: str, action: str,
                    build: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        answer_key = f"{self.prefix}ans:{_q(signal_id)}"
        try:
            sent_raw, stored_raw = self._redis.mget(
                [f"{self.prefix}sig:{_q(signal_id)}", answer_key])
        except self._errors as exc:
            raise self._report.lost(exc, "Nothing was stored: answer again once the store "
                                    "is back") from None
        if sent_raw is None:
            raise UnknownSignal(f"no signal {signal_id!r} in the state store "
                                f"{self._report.url} (or it is older than "
                                f"{self.ttls.signal / 86400:g} days); `mcp-hooks signals` lists "
                                "the signals sent and their ids")
        if stored_raw is None:
            sent = signal_record(sent_raw, signal_id, self._report.url, "sent")
            answer = self._stamp(build(sent))
            session = answer.get("session_id")
            try:
                first, stored_raw = self._eval(
                    ANSWER, [answer_key, self._stream("signals"),
                             self._stream("signals", session) if isinstance(session, str) else ""],
                    [dumps(answer), _ms(self.ttls.signal), STREAM_CAP, SESSION_STREAM_CAP,
                     _ms(self.ttls.event)])
            except self._errors as exc:
                raise self._report.lost(exc, "Nothing was stored: answer again once the "
                                        "store is back") from None
            if first:
                return signal_record(stored_raw, signal_id, self._report.url, "answer")
        stored = signal_record(stored_raw, signal_id, self._report.url, "answer")
        if stored.get("action") == action:
            return stored
        raise AlreadyAnswered(f"signal {signal_id} was already answered: "
                              f"{stored.get('action')} at {stored.get('timestamp')}", stored)

    # -- queues -----------------------------------------------------------------------------

    def put(self, session: str, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        key = f"{self.prefix}q:{_q(session)}"
        try:  # never held (remote.HOLD): an async hook's aid, no event waits on it
            with self._redis.pipeline(transaction=True) as pipe:
                pipe.rpush(key, *(dumps(item) for item in items))
                pipe.pexpire(key, _ms(self.ttls.queue))
                pipe.execute()
        except self._errors as exc:
            self._report("queueing aid", exc)

    def take_all(self, session: str) -> list[dict[str, Any]]:
        key = f"{self.prefix}q:{_q(session)}"
        try:
            self._hold()
            with self._redis.pipeline(transaction=True) as pipe:
                pipe.lrange(key, 0, -1)
                pipe.delete(key)
                raw, _ = pipe.execute()
        except self._errors as exc:
            self._report("taking queued aid", exc)
            return []
        items = []
        for text in raw:
            try:
                item = json.loads(text)
            except ValueError:
                continue
            if isinstance(item, dict):
                items.append(item)
        return items


    # -- once-only names ----------------------------------------------------------------------

    def claim(self, name: str, *, ttl: float) -> bool:
        try:
            return bool(self._redis.set(f"{self.prefix}once:{once_name(name)}", b"1",
                                        nx=True, px=_ms(ttl)))
        except self._errors as exc:
            raise self._report.lost(exc, "Nothing was claimed: " + FIX) from None

    # -- readers: follow, signal ids, trusted digests ----------------------------------------

    def follow(self, log: LogName, session: str | None = None,
               poll: float = 0.5) -> Iterator[dict[str, Any]]:
        """Records appended from now on, oldest first, until the caller stops (``log
        --follow``; stream ids only grow). Raises ``StateUnavailable`` when the store is lost."""
        stream = self._stream(log, session)
        try:
            last = self._redis.xrevrange(stream, count=1)
            cursor = last[0][0].decode() if last else "0-0"
            while True:
                page = self._redis.xrange(stream, min="(" + cursor, max="+", count=1000)
                yield from _records(page)
                if page:
                    cursor = page[-1][0].decode()
                if len(page) < 1000:
                    time.sleep(poll)
        except self._errors as exc:
            raise self._report.lost(exc) from None

    def signal_ids(self, prefix: str, limit: int) -> list[str]:
        """Ids of live signals that start with ``prefix``, sorted, at most ``limit``."""
        head = f"{self.prefix}sig:"
        found: set[str] = set()
        try:
            for name in self._redis.scan_iter(match=_glob(head + _q(prefix)) + "*", count=1000):
                found.add(unquote(name.decode()[len(head):], errors="surrogatepass"))
                if len(found) >= limit:
                    break
        except self._errors as exc:
            raise self._report.lost(exc) from None
        return sorted(found)[:limit]

    def trust_entries(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Every trusted digest: project -> hook name -> entry (``sha256``, ``trusted_at``)."""
        try:
            raw = self._redis.hgetall(f"{self.prefix}trust")
        except self._errors as exc:
            raise self._report.lost(exc) from None
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for field, value in raw.items():
            try:
                project, name = json.loads(field)
                entry = json.loads(value)
            except ValueError:
                continue
            if isinstance(project, str) and isinstance(name, str) and isinstance(entry, dict):
                found.setdefault(project, {})[name] = entry
        return found

    def trust_put(self, project: str, entries: dict[str, dict[str, Any]]) -> None:
        """Record (or replace) the entries of some hooks of a project, at once."""
        if not entries:
            return
        try:
            self._redis.hset(f"{self.prefix}trust", mapping={
                json.dumps([project, name]): dumps(entry) for name, entry in entries.items()})
        except self._errors as exc:
            raise self._report.lost(exc, "Nothing was trusted: " + FIX) from None

    def trust_drop(self, project: str, names: list[str]) -> None:
        """Forget the entries of some hooks of a project."""
        if not names:
            return
        try:
            self._redis.hdel(f"{self.prefix}trust", *(json.dumps([project, n]) for n in names))
        except self._errors as exc:
            raise self._report.lost(exc, "Nothing was revoked: " + FIX) from None

    # -- asks: the three primitives of asks.AskBook -----------------------------------------

    def ask_load(self, key: str) -> str | None:
        try:
            raw = self._redis.get(f"{self.prefix}a:{_q(key)}")
        except self._errors as exc:
            raise self._report.lost(exc) from None
        return None if raw is None else bytes(raw).decode("utf-8", "surrogatepass")

    def ask_swap(self, key: str, expect: str | None, new: str, ttl: float) -> bool:
        try:
            done = self._eval(SWAP, [f"{self.prefix}a:{_q(key)}"],
                              ["0" if expect is None else "1", _b(expect or ""), _b(new),
                               _ms(ttl)])
        except self._errors as exc:
            raise self._report.lost(exc, "Nothing was stored: answer again once the store "
                                    "is back") from None
        return bool(done)

    def ask_keys(self) -> list[str]:
        head = f"{self.prefix}a:"
        try:
            names = list(self._redis.scan_iter(match=_glob(head + _q(ASK)) + "*", count=1000))
        except self._errors as exc:
            raise self._report.lost(exc) from None
        return [unquote(n.decode()[len(head):], errors="surrogatepass") for n in names]


def _records(page: list[Any]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a page of stream entries (anything else skipped)."""
    for _, fields in page:
        raw = fields.get(b"r")
        if raw is None:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


__all__ = ["DEFAULT_PREFIX", "RedisStore", "StateUnavailable"]
