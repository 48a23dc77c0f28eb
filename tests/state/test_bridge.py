"""A shared store's asyncio path (``state/bridge.py``, ``state/lane.py``): a session whose
store call waits on the store (its row locked by another connection of a real PostgreSQL)
holds up no other session's event on the same replica."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from mcp_hooks import Engine, Event, EventLog, Registry
from mcp_hooks.spec.signals import from_async_result
from mcp_hooks.state.inbox import AidInbox
from tests.conftest import write_hook
from tests.helpers.servers import postgres_service, postgres_url  # noqa: F401 - fixtures

HANG = 120.0  # seconds: only a hang gets there
HELD = 4  # session a's events, all waiting on its locked row: the store's pool size


def _slow(url: str) -> str:
    """``url`` with deadlines far above this test's own waits: a held call is slow, never
    lost (the client's deadline and the server's statement timeout)."""
    return url + "%20-cstatement_timeout%3D300000&timeout=300"


async def _waiting(engine: Engine, watcher: psycopg.AsyncConnection[Any], session: str) -> int:
    """Session ``session``'s store calls waiting now: on the row lock (the server's own view,
    from an autocommit connection: a transaction keeps its first view of the statistics), and
    behind it at the lane's gate (one call of a session at a time)."""
    cursor = await watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE "
                                  "wait_event_type = 'Lock' AND datname = current_database()")
    row = await cursor.fetchone()
    lane = getattr(engine._store_call, "_lane", None)  # offloop.LaneCaller's, once made
    return int(row[0] if row else 0) + (lane.waiting(session) if lane is not None else 0)


@pytest.mark.anyio
async def test_a_session_waiting_on_a_row_lock_holds_up_no_other_session(
        user_dir: Path, project: Path, tmp_path: Path,
        postgres_url: str,  # noqa: F811 - fixture
) -> None:
    """Session a's waiting aid (a row of mcp_hooks_queue) is locked by another connection
    (``SELECT ... FOR UPDATE`` in an open transaction), so each of a's events waits in its
    take of the aid; as many as the store has connections. Session b's event on the same
    engine is decided while they all still wait; once the lock goes, a's events are decided
    too, and the aid is delivered once. (Before the asyncio path each waiting call held a
    pooled connection, so b waited for one and was denied as the store lost.)"""
    from mcp_hooks.state.postgres import PostgresStore

    write_hook(user_dir, "allow-all")
    store = PostgresStore(_slow(postgres_url), pool_size=HELD)
    AidInbox(store=store).put("a", [from_async_result(source="earlier", hook="before_tool",
                                                      text="waiting for a")])
    outcomes: dict[str, Any] = {}
    async with await psycopg.AsyncConnection.connect(postgres_url) as locker, \
            await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as watcher:
        await locker.execute("SELECT id FROM mcp_hooks_queue WHERE session = 'a' FOR UPDATE")
        async with Engine(Registry(user_dir, project), store=store,
                          log=EventLog(tmp_path / "events.jsonl")) as engine:
            async def fire(name: str, session: str) -> None:
                outcomes[name] = await engine.fire(Event.create(
                    event_type="before_tool", tool_name="Shell",
                    tool_input={"command": "ls"}, work_dir=str(project), session_id=session))

            with anyio.fail_after(HANG):
                async with anyio.create_task_group() as group:
                    for n in range(HELD):
                        group.start_soon(fire, f"a{n}", "a")
                    while await _waiting(engine, watcher, "a") < HELD:
                        await anyio.sleep(0.02)
                    await fire("b", "b")
                    assert not any(f"a{n}" in outcomes for n in range(HELD))  # a still waits
                    assert outcomes["b"].decision == "allow", outcomes["b"]
                    await locker.commit()  # the lock goes: a's events go on
    assert [outcomes[f"a{n}"].decision for n in range(HELD)] == ["allow"] * HELD
    told = [o for o in outcomes.values() if "waiting for a" in " ".join(o.additional_context)]
    assert len(told) == 1  # the aid is delivered once
    store.close()
