"""A state store from its URL (``--state``, ``MCP_HOOKS_STATE``, ``Settings.state``).

=====================================  ===================================================
URL                                    store
=====================================  ===================================================
``file:`` (the default)                ``FileStore``: today's files under
                                       ``$XDG_STATE_HOME/mcp-hooks`` (one machine)
``redis://``, ``rediss://`` (TLS)      ``RedisStore`` (extra ``redis``)
``postgresql://``, ``postgres://``     ``PostgresStore`` (extra ``postgres``)
=====================================  ===================================================

A shared store is connected (and PostgreSQL's schema made) here, so a store that cannot be
reached fails now, with ``StateUnavailable`` naming the URL (never its password) and the fix;
a missing client is ``MissingExtraError`` naming the pip command. The backend modules are
imported only for their own scheme.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp_hooks.errors import ConfigError
from mcp_hooks.state.files import FileStore
from mcp_hooks.state.store import StateStore

SCHEMES = {"file": "file", "redis": "redis", "rediss": "redis", "postgresql": "postgres",
           "postgres": "postgres"}


def scheme(url: str) -> str:
    """The backend a URL names (``file``, ``redis`` or ``postgres``); ``ConfigError`` naming
    the URL (without its password) and the schemes for any other."""
    name = url.strip().partition(":")[0].lower() if ":" in url else ""
    if name not in SCHEMES:
        # lazy: 6 ms of every bridge and fire start (socket, uuid, platform); shared stores only
        from mcp_hooks.state.remote import redact

        raise ConfigError(f"state store {redact(url)!r}: not a URL mcp-hooks can use; give "
                          "file:, redis://[:password@]host[:port][/db] or "
                          "postgresql://user:password@host[:port]/db")
    return SCHEMES[name]


def check_port(url: str) -> None:
    """A ``ConfigError`` naming the URL (without its password) when its port is not a number
    from 1 to 65535 (the client libraries' own errors blame the server or say nothing).
    libpq's several hosts (``host1:5432,host2:5433``) are libpq's to check."""
    if "," in urlsplit(url.strip()).netloc:
        return
    try:
        port = urlsplit(url.strip()).port
    except ValueError:
        port = 0
    if port == 0:
        # lazy: 6 ms of every bridge and fire start (socket, uuid, platform); shared stores only
        from mcp_hooks.state.remote import redact

        given = urlsplit(url.strip()).netloc.rpartition("@")[2].rpartition(":")[2]
        raise ConfigError(f"state store {redact(url)}: the port {given!r} is not a number "
                          "from 1 to 65535; fix the URL (e.g. redis://host:6379/0, "
                          "postgresql://user@host:5432/db)")


def open_store(url: str, *, replica: str | None = None, log: Any = None,
               root: Path | None = None) -> StateStore:
    """The store ``url`` names. ``log`` and ``root`` are the file store's (its event log and
    state folder, None for its defaults; ignored by the shared stores), ``replica`` the
    stamp on every record it writes (every backend; the file store's None: none)."""
    backend = scheme(url)
    if backend != "file":
        check_port(url)
        # lazy: 6 ms of every bridge and fire start (socket, uuid, platform); shared stores only
        from mcp_hooks.state.remote import split_ttls
    if backend == "redis":
        # lazy: 31 ms (python -X importtime), and the extra's client may not be installed
        from mcp_hooks.state.redis import RedisStore

        bare, ttls = split_ttls(url.strip())
        return RedisStore(bare, replica=replica, ttls=ttls)
    if backend == "postgres":
        # lazy: 31 ms (python -X importtime), and the extra's client may not be installed
        from mcp_hooks.state.postgres import PostgresStore

        bare, ttls = split_ttls(url.strip())
        return PostgresStore(bare, replica=replica, ttls=ttls)
    if log is not None:
        return FileStore(root, log=log, replica=replica)
    return FileStore(root, replica=replica)


def replica_name() -> str:
    """This process as a shared store's records name it: ``hostname:pid``."""
    # lazy: 1.5 ms of every bridge and fire start; shared stores only
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def store_for(url: str, log: Any, replica: str | None = None) -> StateStore:
    """The one store of a process (an engine, a server, a bridge run): the file store with
    ``log`` as its event log (None: none, as before ``--state``) for ``file:``, else the
    shared store ``url`` names. Its records are stamped ``replica`` (``--replica-id``);
    None: a shared store's with ``replica_name()``, the file store's not at all. Raises
    ``StateUnavailable`` or ``MissingExtraError`` as ``open_store`` does."""
    if scheme(url) == "file":
        return FileStore(log=log, replica=replica)
    return open_store(url, replica=replica or replica_name())


def close_store(store: StateStore) -> None:
    """Let go of a shared store's connections (the file store holds none); never raises."""
    close = getattr(store, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # leaving: a store that fails to close loses nothing more
            print(f"mcp-hooks: closing the state store failed: {exc}", file=sys.stderr)


__all__ = ["SCHEMES", "check_port", "close_store", "open_store", "replica_name", "scheme",
           "store_for"]
