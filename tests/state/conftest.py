"""The ``store`` fixture: one state store per backend, for the contract tests.

A backend is one entry of ``BACKENDS``: its name (the fixture's param) and a factory that
builds a store from a ``where`` string. Child processes in the race tests build their own
store from the same name and ``where`` (``build``), so the factory must work from a string
alone. To add a backend: one param in ``BACKENDS`` and its factory (a ``where`` it makes
fresh per test, e.g. a key prefix or schema on a server the session started).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.state.store import StateStore
from tests.helpers.servers import (  # noqa: F401 - fixtures
    postgres_service,
    postgres_url,
    redis_service,
    redis_url,
)


def _file(where: str) -> StateStore:
    from mcp_hooks.state.files import FileStore

    return FileStore(Path(where))


def _redis(where: str) -> StateStore:
    from mcp_hooks.state.redis import RedisStore

    return RedisStore(where)


def _postgres(where: str) -> StateStore:
    from mcp_hooks.state.postgres import PostgresStore

    return PostgresStore(where)


_MEMORY: dict[str, StateStore] = {}


def _memory(where: str) -> StateStore:
    from mcp_hooks.state.memory import MemoryStore

    return _MEMORY.setdefault(where, MemoryStore())  # one process's state: one object


# name -> (factory from ``where``, a fresh ``where`` for one test from its tmp_path)
BACKENDS: dict[str, tuple[Callable[[str], StateStore], Callable[[Path], str]]] = {
    "file": (_file, lambda tmp: str(tmp / "state")),
    "memory": (_memory, lambda tmp: str(tmp)),
    "redis": (_redis, lambda tmp: ""),
    "postgres": (_postgres, lambda tmp: ""),
}
# backends whose state lives in one process: the tests racing two processes skip them
ONE_PROCESS = {"memory"}
# backends on a server (tests/helpers/servers.py): the fixture giving a fresh ``where`` (a URL
# with this test's own key prefix or schema) instead of the tmp_path one
ON_A_SERVER = {"redis": "redis_url", "postgres": "postgres_url"}


def build(name: str, where: str) -> StateStore:
    """The store of backend ``name`` at ``where`` (also used by child processes)."""
    return BACKENDS[name][0](where)


class Backend:
    """One backend for one test: its name, where its state lives, and its store."""

    def __init__(self, name: str, where: str) -> None:
        self.name = name
        self.where = where
        self.store = build(name, where)

    def processes(self) -> None:
        """Skip a test of several processes on a backend that is one process's state."""
        if self.name in ONE_PROCESS:
            pytest.skip(f"the {self.name} store is one process's state by design")

    def corrupt(self, namespace: str, session: str, value: str) -> None:
        """Write ``value`` where the store keeps the count (``namespace``, ``session``, key
        ``""``), as something other than an increment would; PostgreSQL's column holds
        integers only: ``value`` is one there. The memory store cannot be written from
        outside: skipped."""
        store: Any = self.store
        if self.name == "file":
            store.counter_path(namespace, session).write_text(value)
        elif self.name == "redis":
            store._redis.hset(store._counter(namespace, session), b"", value)
        elif self.name == "postgres":
            with store._pool.connection() as conn:
                conn.execute("UPDATE mcp_hooks_counters SET value = %s WHERE namespace = %s "
                             "AND session = %s", (int(value), namespace, session))
        else:
            pytest.skip(f"the {self.name} store cannot be written but through its methods")

    def another(self) -> StateStore:
        """A second store object over the same state (another engine, another process)."""
        return build(self.name, self.where)


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    name: str = request.param
    if name in ON_A_SERVER:
        return Backend(name, request.getfixturevalue(ON_A_SERVER[name]))
    return Backend(name, BACKENDS[name][1](tmp_path))


@pytest.fixture
def store(backend: Backend) -> StateStore:
    return backend.store
