"""The PostgreSQL store's schema and statements (``postgres.py``): the migrations (applied
by ``migrate`` under an advisory lock, each once), the statements of the per-event operations,
and how an id is kept in a text column (``to_text``: lossless, a lone surrogate too).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, unquote

from mcp_hooks.state import pgasks
from mcp_hooks.state.files import MAX_COUNT

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE mcp_hooks_counters (
        namespace text NOT NULL, session text NOT NULL, key text NOT NULL,
        value bigint NOT NULL, expires_at timestamptz NOT NULL,
        PRIMARY KEY (namespace, session, key));
    CREATE TABLE mcp_hooks_log (
        id bigserial PRIMARY KEY, log text NOT NULL, session_id text, replica text,
        at timestamptz NOT NULL DEFAULT clock_timestamp(), record json NOT NULL);
    CREATE INDEX mcp_hooks_log_session ON mcp_hooks_log (log, session_id, id);
    CREATE INDEX mcp_hooks_log_at ON mcp_hooks_log (at);
    CREATE TABLE mcp_hooks_signals (
        signal_id text PRIMARY KEY, sent json NOT NULL, answer json,
        answered_at timestamptz, expires_at timestamptz NOT NULL);
    CREATE TABLE mcp_hooks_queue (
        id bigserial PRIMARY KEY, session text NOT NULL, item json NOT NULL,
        expires_at timestamptz NOT NULL);
    CREATE INDEX mcp_hooks_queue_session ON mcp_hooks_queue (session, id);
    """,
    # 2: each log record's own id (spool.py), so a record sent twice is stored once
    """
    ALTER TABLE mcp_hooks_log ADD COLUMN record_id text;
    CREATE UNIQUE INDEX mcp_hooks_log_record ON mcp_hooks_log (record_id);
    """,
    # 3: the trusted digests of project hooks (``trust --state``), one row per hook
    """
    CREATE TABLE mcp_hooks_trust (
        project text NOT NULL, name text NOT NULL, entry json NOT NULL,
        PRIMARY KEY (project, name));
    """,
    # 4: once-only names (``claim``: a forwarded request's nonce, across replicas)
    """
    CREATE TABLE mcp_hooks_once (
        name text PRIMARY KEY, expires_at timestamptz NOT NULL);
    """,
)
# numbered apart from the list: each applied when missing, whatever is missing below it
NUMBERED: dict[int, str] = {5: pgasks.TABLE}  # 5: the asks
MARK = "\ufffd%"  # starts a text column's value that is an id's quoted bytes (``to_text``)

# a value that is not a count from 1 to MAX_COUNT (negative, huge) starts over at 1 (the
# caller reports it: the second column is the value it replaced, else NULL)
INCREMENT = f"""
WITH old AS (SELECT value FROM mcp_hooks_counters
             WHERE namespace = %(ns)s AND session = %(s)s AND key = %(k)s)
INSERT INTO mcp_hooks_counters AS c (namespace, session, key, value, expires_at)
VALUES (%(ns)s, %(s)s, %(k)s, 1, now() + make_interval(secs => %(ttl)s))
ON CONFLICT (namespace, session, key) DO UPDATE SET
    value = CASE WHEN c.expires_at <= now() OR c.value NOT BETWEEN 1 AND {MAX_COUNT} THEN 1
                 ELSE least(c.value, {MAX_COUNT - 1}) + 1 END,
    expires_at = EXCLUDED.expires_at
RETURNING value, (SELECT value FROM old WHERE value NOT BETWEEN 1 AND {MAX_COUNT})
"""

APPEND = ("INSERT INTO mcp_hooks_log (log, session_id, replica, record, record_id) "
           "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (record_id) DO NOTHING")
# a sent signal: its row (the first sent with an id is kept) and the log's, one statement
APPEND_SIGNAL = """
WITH sig AS (
    INSERT INTO mcp_hooks_signals (signal_id, sent, expires_at)
    VALUES (%s, %s, now() + make_interval(secs => %s)) ON CONFLICT DO NOTHING)
INSERT INTO mcp_hooks_log (log, session_id, replica, record, record_id)
VALUES (%s, %s, %s, %s, %s) ON CONFLICT (record_id) DO NOTHING
"""
# the answer stored only where none is, and logged only then: one statement, one answer
ANSWER = """
WITH won AS (
    UPDATE mcp_hooks_signals SET answer = %s, answered_at = now()
    WHERE signal_id = %s AND answer IS NULL RETURNING 1)
INSERT INTO mcp_hooks_log (log, session_id, replica, record)
SELECT 'signals', %s, %s, %s FROM won
RETURNING 1
"""
# a row where none is, or where the one there expired: one statement, one claim
CLAIM = """
INSERT INTO mcp_hooks_once AS o (name, expires_at)
VALUES (%s, now() + make_interval(secs => %s))
ON CONFLICT (name) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE o.expires_at <= now()
RETURNING 1
"""
# items in their order (ids follow the ordinality)
PUT = """
INSERT INTO mcp_hooks_queue (session, item, expires_at)
SELECT %s, item::json, now() + make_interval(secs => %s)
FROM unnest(%s::text[]) WITH ORDINALITY AS t(item, n) ORDER BY n
"""


def to_text(text: str) -> str:
    """``text`` as a text column keeps it: itself when it is UTF-8 and does not start with
    ``MARK``; else ``MARK`` and its %-quoted ``surrogatepass`` bytes (lossless)."""
    if not text.startswith(MARK):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return text
    return MARK + quote(text.encode("utf-8", "surrogatepass"), safe="")


def to_text_or_none(value: Any) -> str | None:
    """A record's field as ``to_text`` keeps it; None for anything but a string."""
    return to_text(value) if isinstance(value, str) else None


def from_text(value: Any) -> str:
    """What ``to_text`` was given."""
    text = str(value)
    return unquote(text[len(MARK):], errors="surrogatepass") if text.startswith(MARK) else text


def versions() -> dict[int, str]:
    """Every migration by its version: the list's (1, 2, ...) and ``NUMBERED``."""
    return {**dict(enumerate(MIGRATIONS, 1)), **NUMBERED}


def migrate(conn: Any) -> None:
    """Create or bring up to date the tables, once, however many processes race."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema() || "
                     "'.mcp_hooks_migrations'))")
        conn.execute("CREATE TABLE IF NOT EXISTS mcp_hooks_migrations (version int PRIMARY "
                     "KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        done = {int(row[0]) for row in conn.execute(
            "SELECT version FROM mcp_hooks_migrations").fetchall()}
        todo = versions()
        for version in sorted(set(todo) - done):
            conn.execute(todo[version])
            conn.execute("INSERT INTO mcp_hooks_migrations (version) VALUES (%s)", (version,))


def json_object(text: str) -> dict[str, Any] | None:
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None



__all__ = ["ANSWER", "APPEND", "APPEND_SIGNAL", "CLAIM", "INCREMENT", "MARK", "MIGRATIONS",
           "NUMBERED", "PUT", "from_text", "json_object", "migrate", "to_text",
           "to_text_or_none", "versions"]
