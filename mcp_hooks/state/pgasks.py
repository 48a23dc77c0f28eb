"""The PostgreSQL store's asks table (``postgres.py``, ``asks.py``): its migration (number 5,
``postgres.NUMBERED``: applied whenever it is missing, whatever versions are below it) and
the statements of the three primitives. A key holds a value until it expires; a swap from
nothing creates the row (or replaces an expired one), a swap from a value updates the row only
while it still holds that value: one statement each, so one of any racing swaps wins.
"""

from __future__ import annotations

TABLE = """
CREATE TABLE IF NOT EXISTS mcp_hooks_asks (
    key text PRIMARY KEY, value text NOT NULL, expires_at timestamptz NOT NULL);
"""
LOAD = "SELECT value FROM mcp_hooks_asks WHERE key = %s AND expires_at > now()"
KEYS = ("SELECT key FROM mcp_hooks_asks WHERE key LIKE %s ESCAPE '\\' AND "
        "expires_at > now()")
PURGE = "DELETE FROM mcp_hooks_asks WHERE expires_at <= now()"
CREATE = """
INSERT INTO mcp_hooks_asks AS a (key, value, expires_at)
VALUES (%(k)s, %(v)s, now() + make_interval(secs => %(ttl)s))
ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
WHERE a.expires_at <= now()
RETURNING 1
"""
SWAP = """
UPDATE mcp_hooks_asks SET value = %(v)s, expires_at = now() + make_interval(secs => %(ttl)s)
WHERE key = %(k)s AND value = %(e)s AND expires_at > now()
RETURNING 1
"""
