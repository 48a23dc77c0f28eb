"""Where a long-lived engine makes the store calls around an event: in place for a local
store (a file store answers in µs, less than a worker thread's hop; bench/RESULTS.md
``## fast lane: engine``). A shared store's calls stay off the event loop:
tests/server/test_server_store_paths.py."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Engine, Event, EventLog, Registry
from mcp_hooks.state.files import FileStore
from tests.conftest import write_hook
from tests.helpers.servers import redis_service, redis_url  # noqa: F401 - fixtures


class ThreadNoting(FileStore):
    """A real file store that notes the thread of each append (the event's log record)."""

    def __init__(self, log: EventLog) -> None:
        super().__init__(log=log)
        self.threads: list[int] = []

    def append(self, log: Any, record: dict[str, Any]) -> None:
        self.threads.append(threading.get_ident())
        super().append(log, record)


@pytest.mark.anyio
async def test_a_file_stores_calls_run_on_the_loops_thread(user_dir: Path, project: Path,
                                                          tmp_path: Path) -> None:
    write_hook(user_dir, "allow-all")
    log = EventLog(tmp_path / "events.jsonl")
    store = ThreadNoting(log)
    async with Engine(Registry(user_dir, project), log=log, store=store) as engine:
        for _ in range(3):
            outcome = await engine.fire(Event.create(
                event_type="before_tool", tool_name="Shell", tool_input={"command": "ls"},
                work_dir=str(project), session_id="s"))
            assert outcome.decision == "allow"
    assert store.threads == [threading.get_ident()] * 3  # no worker-thread hop per event
    assert [r["decision"] for r in log.read()] == ["allow"] * 3


SLOW = """cat >/dev/null
while [ ! -e "{release}" ]; do sleep 0.05; done
"""


@pytest.mark.anyio
async def test_a_store_call_failing_for_one_session_never_denies_another_s_event(
        user_dir: Path, project: Path, tmp_path: Path,
        redis_url: str,  # noqa: F811 - fixture
) -> None:
    """A real Redis on which session A's queued aid is of another type (its take fails: a
    store fault, so A's event is denied naming it), while session B's event is running (its
    hook waits until A has been answered): B is decided by its hook, not denied for A's
    failure (the failure count once was the store's, shared by every event in flight)."""
    import anyio

    from mcp_hooks.state.redis import RedisStore
    from mcp_hooks.state.spool import failures

    release = tmp_path / "release"
    write_hook(user_dir, "waits", script=SLOW.format(release=release),
               extra="matcher:\n  tool: Shell\n  pattern: slow\n")
    store = RedisStore(redis_url)
    store._redis.set(f"{store.prefix}q:a", "not a list")  # a's aid: a key of another type
    outcomes: dict[str, Any] = {}
    async with Engine(Registry(user_dir, project), store=store,
                      log=EventLog(tmp_path / "events.jsonl")) as engine:
        async def fire(session: str, command: str) -> None:
            outcomes[session] = await engine.fire(Event.create(
                event_type="before_tool", tool_name="Shell", tool_input={"command": command},
                work_dir=str(project), session_id=session))

        async with anyio.create_task_group() as group:
            group.start_soon(fire, "b", "slow ls")
            await fire("a", "ls")  # while b's hook waits
            release.touch()
    assert failures(store) >= 1
    assert outcomes["a"].denied and "state store" in outcomes["a"].reason, outcomes["a"]
    assert outcomes["b"].decision == "allow", outcomes["b"]
