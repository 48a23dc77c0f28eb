"""``serve --state`` behind a bad path to its store (``tests/helpers/tcpproxy.py`` in front of
a real Redis and PostgreSQL, ``tests/helpers/restartable.py``): a store that accepts a call
and never answers costs an event its deadline, never the server (the event that can block is
denied naming the store, and the first event once the path is back is served, with no
restart); and a slow store holds no event of another session (store calls run off the event
loop, each bounded on its own)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import write_hook
from tests.helpers.lost_store import serving
from tests.helpers.mcp_calls import fire
from tests.helpers.restartable import restartable
from tests.helpers.tcpproxy import Proxy

pytestmark = pytest.mark.anyio

HANG = 120.0  # seconds: only a hang gets there (a call's deadline is 2 s for Redis, 6 s for PG)


def _tool(session: str) -> dict[str, Any]:
    return {"event_type": "before_tool", "session_id": session, "tool_name": "Bash",
            "tool_input": {"command": "ls"}}


@pytest.mark.parametrize("kind", ["redis", "postgres"])
async def test_a_store_that_never_answers_costs_an_event_its_deadline_not_the_server(
        kind: str, project: Path, user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "allow-all", trigger="pre-tool-call", script="cat >/dev/null\nexit 0\n")
    with restartable(kind) as store, Proxy(("127.0.0.1", store.server.port)) as proxy:
        async with serving(proxy.url(store.url), project, user_dir, tmp_path) as client:
            assert (await fire(client, **_tool("before")))["decision"] == "allow"

            proxy.blackhole()  # accepts and reads; never a byte back
            for n in range(2):
                with anyio.fail_after(HANG):
                    denied = await fire(client, **_tool(f"dark-{n}"))
                assert denied["decision"] == "deny", denied
                assert "state store" in denied["reason"] and "cannot be used" in denied["reason"]
                assert store.server.password not in str(denied)
                with anyio.fail_after(HANG):
                    ended = await fire(client, event_type="session_end", session_id=f"end-{n}")
                assert ended["decision"] == "allow"  # cannot block: goes on

            proxy.restore()  # the same server process: no restart
            with anyio.fail_after(HANG):
                back = await fire(client, **_tool("back"))
            assert back["decision"] == "allow", back
            assert [h["name"] for h in back["hooks"]] == ["allow-all"]


@pytest.mark.parametrize("kind", ["redis", "postgres"])
async def test_a_slow_store_holds_no_other_sessions_event(
        kind: str, project: Path, user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "allow-all", trigger="pre-tool-call", script="cat >/dev/null\nexit 0\n")
    with restartable(kind) as store, Proxy(("127.0.0.1", store.server.port)) as proxy:
        # a deadline far above this test's own wait: the held calls are slow, never lost
        url = proxy.url(store.url) + ("&" if "?" in store.url else "?") + "timeout=300"
        async with serving(url, project, user_dir, tmp_path) as client:
            assert (await fire(client, **_tool("warm")))["decision"] == "allow"
            proxy.hold()  # every reply kept back until released
            answers: dict[int, dict[str, Any]] = {}

            async def one(n: int) -> None:
                answers[n] = await fire(client, **_tool(f"s-{n}"))

            with anyio.fail_after(HANG * 2):
                async with anyio.create_task_group() as group:
                    for n in range(4):
                        group.start_soon(one, n)
                    # all four sessions' store calls are out at once: none waits for another's
                    await anyio.to_thread.run_sync(proxy.wait_held, 4)
                    proxy.release()
            assert [answers[n]["decision"] for n in range(4)] == ["allow"] * 4, answers


@pytest.mark.parametrize("kind", ["redis", "postgres"])
async def test_a_store_restarted_between_two_events_denies_neither(
        kind: str, project: Path, user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "allow-all", trigger="pre-tool-call", script="cat >/dev/null\nexit 0\n")
    with restartable(kind) as store:
        async with serving(store.url, project, user_dir, tmp_path) as client:
            async with anyio.create_task_group() as group:  # a few pooled connections
                for n in range(3):
                    group.start_soon(functools.partial(fire, client, **_tool(f"warm-{n}")))
            store.stop()
            store.start()  # the same port: every pooled connection is stale now
            for n in range(3):
                outcome = await fire(client, **_tool(f"after-{n}"))
                assert outcome["decision"] == "allow", outcome
            stop = await fire(client, event_type="before_stop", session_id="after-stop")
            assert stop["decision"] == "allow", stop
