"""The PostgreSQL state backend: ``--state postgresql://user:password@host[:port]/db``.

Every replica pointed at one database shares every per-session record (the contract is in
``store.py``). Needs the ``postgres`` extra (``pip install 'mcp-hooks[postgres]'``: ``psycopg``
3, imported here only). Connections are kept by a small pool of our own
(``pgpool.Pool``: no threads of its own; ``psycopg-pool``'s workers could not be collected
with a store dropped without ``close()``: its ``__del__`` joined the thread it ran on). Any
libpq URL option passes through (``?sslmode=require``; ``?options=-csearch_path%3Dname`` puts
the tables in another schema).

Deadlines: a connect is given up after ``connect_timeout`` (2 s) and each call (one pooled
connection's use: a statement or a few) after ``DEADLINE`` (6 s, above the server's own
``statement_timeout`` of 5 s, so a live server that is only slow says so first), enforced by
the client (``deadline.py``): a server, or a path, that accepts a query and never answers
costs a call that much, its connection is shut down and dropped, and the store counts as
lost (``spool.py``); the next call connects again. ``?timeout=`` in the URL sets both (the
most a connect or a call may take). A pooled connection the server closed while it was idle
(a restarted server: "terminating connection due to administrator command") is noticed when
it is taken from the pool (it has something to read) and replaced by a new one, so a restart
between two events fails none of them. A serving engine makes its calls around each event
through psycopg's ``AsyncConnection`` on its loop (``pglane.py``, ``bridge.py``): the same
code, the same rules.

The schema is created on first use: the ``mcp_hooks_migrations`` table records each migration
applied (one row per version); a process that finds it behind applies what is missing under
a transaction-scoped advisory lock, so replicas starting together migrate once. Tables:

=======================  ================================================================
table                    what, and how long it lives
=======================  ================================================================
``mcp_hooks_counters``   (namespace, session, key) -> value; an expired row counts 0 and
                         an increment starts it over at 1 (an upsert ``RETURNING`` it)
``mcp_hooks_log``        every record of both logs (``log``, ``session_id``, ``replica``,
                         ``at`` the server's clock, ``record`` JSON); rows older than
                         ``Ttls.event`` are purged
``mcp_hooks_signals``    one row per signal id: the record sent and its one answer (``UPDATE
                         ... WHERE answer IS NULL RETURNING``); ``Ttls.signal``
``mcp_hooks_queue``      the sessions' waiting aid; ``take_all`` is one ``DELETE ...
                         RETURNING``; ``Ttls.queue``
``mcp_hooks_asks``       the asks (``asks.py``): key -> value, swapped by ``INSERT ... ON
                         CONFLICT`` / ``UPDATE ... WHERE value =``; expire with their ask
``mcp_hooks_trust``      the trusted digests of project hooks (``trust --state``), a row per
                         project and hook; kept until revoked
``mcp_hooks_once``       claimed names (%-quoted: a forwarded request's nonce) and when each claim
                         expires: ``INSERT ... ON CONFLICT DO UPDATE ... WHERE expired``
=======================  ================================================================

Text columns hold ids as given when they are UTF-8; an id with a lone surrogate (a session id
taken from JSON may carry one, and PostgreSQL text cannot) is stored as ``MARK`` and its
%-quoted ``surrogatepass`` bytes (``pgschema.to_text``): distinct ids stay distinct, read
back whole, never a ``UnicodeEncodeError``
(an id that starts with ``MARK`` itself is quoted so too).

Expired rows are purged by the store itself, at most once every ``PURGE_EVERY`` seconds per
process, on a write.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from mcp_hooks.state import pgasks
from mcp_hooks.state.asks import ASK, AskBook
from mcp_hooks.state.lane import Lane, lane_of
from mcp_hooks.state.pgpool import DEADLINE, Pool, bounded
from mcp_hooks.state.pgschema import (
    ANSWER,
    APPEND,
    APPEND_SIGNAL,
    CLAIM,
    INCREMENT,
    MIGRATIONS,
    PUT,
    migrate,
    versions,
)
from mcp_hooks.state.pgschema import from_text as _untext
from mcp_hooks.state.pgschema import json_object as _record
from mcp_hooks.state.pgschema import to_text as _t
from mcp_hooks.state.pgschema import to_text_or_none as _t_or_none
from mcp_hooks.state.remote import (
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

FIX = ("Start it, or point --state (MCP_HOOKS_STATE) at a PostgreSQL that is running and "
       "that this user may connect to")
# libpq options the URL may override: a connect is given up after 2 s, a server that stops
# answering mid-query after 2 s (TCP user timeout, keepalives) and a statement after 5 s,
# never a hang
DEFAULTS = {"connect_timeout": "2", "tcp_user_timeout": "2000", "keepalives_idle": "5",
            "keepalives_interval": "2", "keepalives_count": "3",
            "options": "-c statement_timeout=5000"}
POOL_SIZE = 8  # connections per store object at most (one per thread using it at once)
PURGE_EVERY = 300.0  # seconds between two purges of expired rows, per process

FOLLOW_LOOKBACK = 1000  # ids below the newest seen that ``follow`` reads again: a row whose
# transaction committed after a later id's did is still printed (once)


class PostgresStore(AskBook, SpoolingLog):
    """A ``StateStore`` in PostgreSQL (see the module docstring for the tables)."""

    def __init__(self, url: str, *, replica: str | None = None, ttls: Ttls | None = None,
                 pool_size: int = POOL_SIZE) -> None:
        psycopg = require("psycopg", "postgres", "psycopg 3", "the PostgreSQL state store")
        self._begin(url, replica, ttls, FIX)
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error, OSError)
        self._refused = (psycopg.DataError,)  # a NUL in a text column, an invalid escape
        self._purged = 0.0
        self._purge_lock = threading.Lock()
        bare, timeout = split_timeout(url)
        defaults = dict(DEFAULTS) if timeout is None else {
            **DEFAULTS, "connect_timeout": str(max(1, round(timeout)))}
        try:
            given = psycopg.conninfo.conninfo_to_dict(bare)
            extra = {k: v for k, v in defaults.items() if k not in given}
            if "options" in given and "statement_timeout" not in given["options"]:
                extra["options"] = f"{given['options']} {DEFAULTS['options']}"
            self._conninfo = psycopg.conninfo.make_conninfo(bare, **extra)
            with psycopg.connect(self._conninfo, autocommit=True) as conn, \
                    bounded(conn, timeout or DEADLINE):
                migrate(conn)
        except (psycopg.Error, OSError) as exc:
            raise unreachable(url, exc, FIX) from None
        except Exception as exc:  # a URL libpq cannot parse (ProgrammingError is an Error)
            raise unreachable(url, exc, "Fix the URL: postgresql://user:password@host[:port]/db"
                              ) from None
        self._size, self._deadline = max(1, pool_size), timeout or DEADLINE
        self._sync_pool = Pool(psycopg, self._conninfo, self._size, self._deadline)

    @property
    def _pool(self) -> Any:
        """The connections of this call: the asyncio ones in ``bridge.run`` (``pglane.py``),
        else the sync pool's."""
        lane = lane_of(self)
        return self._sync_pool if lane is None else lane.pool

    def lane(self) -> Lane:
        """This store's asyncio side on the running loop (``engine/offloop.py``)."""
        # lazy: 3 ms of cold start (greenlet; python -X importtime), which no one-shot CLI needs
        from mcp_hooks.state.pglane import PgLane

        return PgLane(self, self._conninfo, self._size, self._deadline)

    def close(self) -> None:
        self._sync_pool.close()

    def about(self) -> dict[str, Any]:
        """The server and schema as ``doctor --state`` shows them; ``StateUnavailable`` when
        the server does not answer or its tables are of a newer mcp-hooks."""
        try:
            with self._pool.connection() as conn:
                version = conn.execute("SHOW server_version").fetchone()[0]
                applied = conn.execute("SELECT coalesce(max(version), 0) FROM "
                                       "mcp_hooks_migrations").fetchone()[0]
        except self._errors as exc:
            raise self._report.lost(exc) from None
        known = max(versions())  # the numbered ones too (pgasks.py's 5)
        if int(applied) > known:
            raise StateUnavailable(
                f"state store {self._report.url}: its tables are at version {applied}, made by "
                f"a newer mcp-hooks (this one knows {known}): upgrade mcp-hooks")
        return {"server": f"PostgreSQL {version}", "schema": f"version {applied} of {known}"}

    _probe_name = "a SELECT 1"

    def _probe(self) -> None:
        self._pool.drop_idle()  # connections from before the loss are dead
        with self._pool.connection() as conn:
            conn.execute("SELECT 1")

    def _purge(self, conn: Any) -> None:
        """Delete expired rows, at most once every ``PURGE_EVERY`` seconds."""
        now = time.monotonic()
        with self._purge_lock:
            if now - self._purged < PURGE_EVERY:
                return
            self._purged = now
        conn.execute(pgasks.PURGE)
        conn.execute("DELETE FROM mcp_hooks_counters WHERE expires_at <= now()")
        conn.execute("DELETE FROM mcp_hooks_queue WHERE expires_at <= now()")
        conn.execute("DELETE FROM mcp_hooks_signals WHERE expires_at <= now()")
        conn.execute("DELETE FROM mcp_hooks_once WHERE expires_at <= now()")
        conn.execute("DELETE FROM mcp_hooks_log WHERE at < now() - make_interval(secs => %s)",
                     (self.ttls.event,))

    # -- counters ---------------------------------------------------------------------------

    def increment(self, namespace: str, session: str, key: str = "", *, ttl: float) -> int:
        try:
            self._hold()
            with self._pool.connection() as conn:
                row = conn.execute(INCREMENT, {"ns": _t(namespace), "s": _t(session),
                                             "k": _t(key), "ttl": ttl}).fetchone()
                self._purge(conn)
        except self._errors as exc:
            self._report("a counter's increment", exc)
            return self.local().increment(namespace, session, key, ttl=ttl)
        if row[1] is not None:
            self.malformed(namespace, session, key, row[1])
        return int(row[0])

    def count(self, namespace: str, session: str, key: str = "", *, ttl: float) -> int:
        try:
            self._hold()
            with self._pool.connection() as conn:
                row = conn.execute(
                    "SELECT value FROM mcp_hooks_counters WHERE namespace = %s AND session = %s "
                    "AND key = %s AND expires_at > now()", (_t(namespace), _t(session), _t(key))
                ).fetchone()
        except self._errors as exc:
            self._report("reading a counter", exc)
            return self.local().count(namespace, session, key, ttl=ttl)
        if not row:
            return 0
        counted = valid_count(row[0])
        if counted is None:
            self.malformed(namespace, session, key, row[0])
        return counted or 0

    def reset(self, namespace: str, session: str | None = None, key: str | None = None) -> None:
        where, args = "namespace = %s", [_t(namespace)]
        if session is not None:
            where, args = where + " AND session = %s", [*args, _t(session)]
            if key is not None:
                where, args = where + " AND key = %s", [*args, _t(key)]
        try:
            self._hold()
            with self._pool.connection() as conn:
                conn.execute(f"DELETE FROM mcp_hooks_counters WHERE {where}", args)
        except self._errors as exc:
            self._report("a counter's reset", exc)
            self.local().reset(namespace, session, key)

    # -- logs -------------------------------------------------------------------------------

    def _send(self, log: LogName, record: dict[str, Any]) -> None:
        """Add one record (``record_id`` set) unless one with its id is stored; raises the
        client's errors."""
        text = dumps(record)
        signal_id = record.get("signal_id")
        sent = (log == "signals" and record.get("kind") == "signal"
                and isinstance(signal_id, str))
        row = (log, _t_or_none(record.get("session_id")), _t_or_none(record.get("replica")),
               text, _t(str(record[ID])))
        with self._pool.connection() as conn:
            if sent:  # the log's row and the signal's row in one statement: both or none
                conn.execute(APPEND_SIGNAL, (_t(str(signal_id)), text, self.ttls.signal, *row))
            else:
                conn.execute(APPEND, row)

    def read(self, log: LogName, session: str | None = None) -> Iterator[dict[str, Any]]:
        after = 0
        while True:
            query = "SELECT id, record::text FROM mcp_hooks_log WHERE log = %s AND id > %s"
            args: list[Any] = [log, after]
            if session is not None:
                query, args = query + " AND session_id = %s", [*args, _t(session)]
            try:
                with self._pool.connection() as conn:
                    rows = conn.execute(query + " ORDER BY id LIMIT 1000", args).fetchall()
            except self._errors as exc:
                raise self._report.lost(exc) from None
            for _, text in rows:
                try:
                    record = json.loads(text)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    yield record
            if len(rows) < 1000:
                return
            after = rows[-1][0]

    # -- answer-once ------------------------------------------------------------------------

    def answer_once(self, signal_id: str, action: str,
                    build: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        later = "Nothing was stored: answer again once the store is back"
        try:
            with self._pool.connection() as conn:
                row = conn.execute("SELECT sent::text, answer::text FROM mcp_hooks_signals "
                                   "WHERE signal_id = %s AND expires_at > now()",
                                   (_t(signal_id),)).fetchone()
                if row is None:
                    raise UnknownSignal(
                        f"no signal {signal_id!r} in the state store {self._report.url} (or it "
                        f"is older than {self.ttls.signal / 86400:g} days); `mcp-hooks signals` "
                        "lists the signals sent and their ids")
                stored_text = row[1]
                if stored_text is None:
                    sent = signal_record(row[0], signal_id, self._report.url, "sent")
                    answer = self._stamp(build(sent))
                    stored_text = self._store_answer(conn, signal_id, answer)
        except self._errors as exc:
            raise self._report.lost(exc, later) from None
        stored = signal_record(stored_text, signal_id, self._report.url, "answer")
        if stored.get("action") == action:
            return stored
        raise AlreadyAnswered(f"signal {signal_id} was already answered: "
                              f"{stored.get('action')} at {stored.get('timestamp')}", stored)

    def _store_answer(self, conn: Any, signal_id: str, answer: dict[str, Any]) -> str:
        """Store ``answer`` unless another is stored first; the stored one's JSON text."""
        text = dumps(answer)
        won = conn.execute(ANSWER, (text, _t(signal_id), _t_or_none(answer.get("session_id")),
                                     _t_or_none(answer.get("replica")), text)).fetchone()
        if won:
            return text
        row = conn.execute("SELECT answer::text FROM mcp_hooks_signals WHERE signal_id = %s",
                           (_t(signal_id),)).fetchone()
        return str(row[0])

    # -- queues -----------------------------------------------------------------------------

    def put(self, session: str, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        try:  # never held (remote.HOLD): an async hook's aid, no event waits on it
            with self._pool.connection() as conn:
                conn.execute(PUT, (_t(session), self.ttls.queue,
                                    [dumps(item) for item in items]))
        except self._errors as exc:
            self._report("queueing aid", exc)

    def take_all(self, session: str) -> list[dict[str, Any]]:
        try:
            self._hold()
            with self._pool.connection() as conn:
                rows = conn.execute("DELETE FROM mcp_hooks_queue WHERE session = %s RETURNING "
                                    "id, item::text, expires_at > now()", (_t(session),)
                                    ).fetchall()
        except self._errors as exc:
            self._report("taking queued aid", exc)
            return []
        items = []
        for _, text, live in sorted(rows):
            if not live:
                continue
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
            with self._pool.connection() as conn:
                row = conn.execute(CLAIM, (once_name(name), ttl)).fetchone()
                self._purge(conn)
        except self._errors as exc:
            raise self._report.lost(exc, "Nothing was claimed: " + FIX) from None
        return row is not None

    # -- readers: follow, signal ids, trusted digests ----------------------------------------

    def _rows(self, query: str, args: list[Any]) -> list[Any]:
        try:
            with self._pool.connection() as conn:
                return list(conn.execute(query, args).fetchall())
        except self._errors as exc:
            raise self._report.lost(exc) from None

    def follow(self, log: LogName, session: str | None = None,
               poll: float = 0.5) -> Iterator[dict[str, Any]]:
        """Records appended from now on, oldest first, until the caller stops (``log
        --follow``). Ids are handed out before their transaction commits, so a window of
        ``FOLLOW_LOOKBACK`` ids below the newest seen is read again, each row printed once.
        Raises ``StateUnavailable`` when the store is lost."""
        where = " AND session_id = %s" if session is not None else ""
        extra = [_t(session)] if session is not None else []
        newest = int(self._rows("SELECT coalesce(max(id), 0) FROM mcp_hooks_log WHERE log = %s",
                                [log])[0][0])
        seen = {int(row[0]) for row in self._rows(
            f"SELECT id FROM mcp_hooks_log WHERE log = %s AND id > %s{where}",
            [log, newest - FOLLOW_LOOKBACK, *extra])}
        while True:
            rows = self._rows("SELECT id, record::text FROM mcp_hooks_log WHERE log = %s AND "
                              f"id > %s{where} ORDER BY id LIMIT {2 * FOLLOW_LOOKBACK}",
                              [log, newest - FOLLOW_LOOKBACK, *extra])
            for row_id, text in rows:
                if row_id in seen:
                    continue
                seen.add(row_id)
                record = _record(text)
                if record is not None:
                    yield record
            if rows:
                newest = max(newest, int(rows[-1][0]))
            seen = {i for i in seen if i > newest - FOLLOW_LOOKBACK}
            if len(rows) < 2 * FOLLOW_LOOKBACK:  # else more are waiting: on at once
                time.sleep(poll)

    def signal_ids(self, prefix: str, limit: int) -> list[str]:
        """Ids of live signals that start with ``prefix``, sorted, at most ``limit``."""
        like = "".join("\\" + c if c in "\\%_" else c for c in _t(prefix)) + "%"
        rows = self._rows("SELECT signal_id FROM mcp_hooks_signals WHERE signal_id LIKE %s "
                          "ESCAPE '\\' AND expires_at > now() ORDER BY signal_id LIMIT %s",
                          [like, limit])
        return [_untext(row[0]) for row in rows]

    def trust_entries(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Every trusted digest: project -> hook name -> entry (``sha256``, ``trusted_at``)."""
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for project, name, text in self._rows(
                "SELECT project, name, entry::text FROM mcp_hooks_trust", []):
            entry = _record(text)
            if entry is not None:
                found.setdefault(_untext(project), {})[_untext(name)] = entry
        return found

    def trust_put(self, project: str, entries: dict[str, dict[str, Any]]) -> None:
        """Record (or replace) the entries of some hooks of a project, in one transaction."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                for name, entry in entries.items():
                    conn.execute("INSERT INTO mcp_hooks_trust (project, name, entry) VALUES "
                                 "(%s, %s, %s) ON CONFLICT (project, name) DO UPDATE SET "
                                 "entry = excluded.entry", (_t(project), _t(name),
                                                            dumps(entry)))
        except self._errors as exc:
            raise self._report.lost(exc, "Nothing was trusted: " + FIX) from None

    def trust_drop(self, project: str, names: list[str]) -> None:
        """Forget the entries of some hooks of a project."""
        try:
            with self._pool.connection() as conn:
                conn.execute("DELETE FROM mcp_hooks_trust WHERE project = %s AND "
                             "name = ANY(%s)", (_t(project), [_t(n) for n in names]))
        except self._errors as exc:
            raise self._report.lost(exc, "Nothing was revoked: " + FIX) from None

    # -- asks: the three primitives of asks.AskBook -----------------------------------------

    def ask_load(self, key: str) -> str | None:
        rows = self._rows(pgasks.LOAD, [_t(key)])
        return _untext(rows[0][0]) if rows else None

    def ask_swap(self, key: str, expect: str | None, new: str, ttl: float) -> bool:
        args = {"k": _t(key), "e": None if expect is None else _t(expect), "v": _t(new),
                "ttl": ttl}
        try:
            with self._pool.connection() as conn:
                query = pgasks.CREATE if expect is None else pgasks.SWAP
                return conn.execute(query, args).fetchone() is not None
        except self._errors as exc:
            raise self._report.lost(exc, "Nothing was stored: answer again once the store "
                                    "is back") from None

    def ask_keys(self) -> list[str]:
        like = "".join("\\" + c if c in "\\%_" else c for c in _t(ASK)) + "%"
        return [_untext(row[0]) for row in self._rows(pgasks.KEYS, [like])]



__all__ = ["MIGRATIONS", "PostgresStore", "StateUnavailable", "migrate", "versions"]
