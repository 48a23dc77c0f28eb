"""``serve --state URL``: replicas on one shared store behave as one server.

Real processes throughout: ``mcp-hooks serve --transport http`` started twice against the
Redis (or PostgreSQL) of ``tests/helpers/servers.py``, one MCP client per replica, the events
of one session alternating between them; and a store that cannot be reached at start.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_hooks.settings import DEFAULT_STOP_BLOCK_CAP
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.mcp_calls import ISSUE, checklist_hook, fire, respond
from tests.helpers.servers import free_port

pytestmark = pytest.mark.anyio

PASSWORD = "not-for-the-log"


@pytest.mark.parametrize("url", [
    f"redis://:{PASSWORD}@127.0.0.1:{{port}}/0",
    f"postgresql://hooks:{PASSWORD}@127.0.0.1:{{port}}/hooks",
])
def test_serve_exits_1_naming_a_store_it_cannot_reach(url: str, project: Path,
                                                      user_dir: Path) -> None:
    """Nothing listens on the port: the server does not start half-working, it says which
    store (without its password) and what to do, in one line, and exits 1."""
    given = url.format(port=free_port())  # the kernel's pick, closed again: nothing there
    done = subprocess.run(
        [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--project-dir",
         str(project), "--user-dir", str(user_dir), "--no-log"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
        env={**os.environ, "MCP_HOOKS_STATE": given})  # a password stays off argv
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert given.replace(PASSWORD, "***") in lines[0]
    assert "Start it, or point --state (MCP_HOOKS_STATE) at a" in lines[0]
    assert PASSWORD not in done.stderr


def test_a_bad_state_url_is_a_usage_error_naming_the_flag(project: Path) -> None:
    done = subprocess.run(
        [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--project-dir",
         str(project), "--state", f"mongodb://admin:{PASSWORD}@db"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 64, done.stderr
    assert "--state: a 'mongodb' URL; give file:" in done.stderr
    assert PASSWORD not in done.stderr


@asynccontextmanager
async def replicas(url: str, project: Path, user_dir: Path, tmp_path: Path,
                   count: int = 2) -> AsyncIterator[list[Client]]:
    """``count`` HTTP servers on the store ``url``, each with its own event log and state
    folder, as on machines of their own (nothing shared but the store), and one connected
    client each."""
    async with AsyncExitStack() as stack:
        clients = []
        for n in range(count):
            server = stack.enter_context(background([
                MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--stateless",
                "--project-dir", str(project), "--user-dir", str(user_dir),
                "--log", str(tmp_path / f"events-{n}.jsonl"), "--state", url],
                env={**os.environ, "XDG_STATE_HOME": str(tmp_path / f"state-{n}")},
                capture_stdout=True, timeout=120))
            clients.append(await stack.enter_async_context(Client(server.url)))
        yield clients


async def stop_cap_across(clients: list[Client], project_hooks: Path) -> None:
    write_hook(project_hooks, "never-done", trigger="before_stop",
               script="cat >/dev/null\necho 'not done yet' >&2\nexit 2\n")
    said: list[tuple[bool, Any]] = []
    for n in range(DEFAULT_STOP_BLOCK_CAP + 1):  # one server per replica would block 16
        outcome = await fire(clients[n % len(clients)], event_type="before_stop",
                             session_id="shared-session", payload={"stop_reason": "done"})
        said.append((outcome["continue_working"], outcome.get("reason")))
    blocked = [n for n, (working, _) in enumerate(said) if working]
    assert blocked == list(range(DEFAULT_STOP_BLOCK_CAP)), said  # 8 across both, not 8 each
    assert all(reason == "not done yet" for _, reason in said[:DEFAULT_STOP_BLOCK_CAP])
    assert said[DEFAULT_STOP_BLOCK_CAP][0] is False, "the 9th stop is let go, on any replica"
    # another session has a count of its own
    other = await fire(clients[1], event_type="before_stop", session_id="other-session",
                       payload={"stop_reason": "done"})
    assert other["continue_working"] is True


async def signal_across(clients: list[Client], user_dir: Path) -> None:
    checklist_hook(user_dir)
    first = await fire(clients[0], event_type="pre-issue-submit", session_id="s1",
                       payload={"issue": ISSUE})
    assert first["decision"] == "deny" and first["blocked_by"] == "checklist-gate"
    (block,) = first["signals"]
    signal_id = block["header"]["id"]
    answer = await respond(clients[1], signal_id=signal_id, action="retry_after_fix")
    assert answer["consumed"] is True and answer["source"] == "checklist-gate"
    # the first replica sees the answer the other stored: a second answer is refused there
    again = await clients[0].call_tool("respond_to_signal",
                                       {"signal_id": signal_id, "action": "acknowledge"})
    assert again.is_error
    assert f"signal {signal_id} was already answered: retry_after_fix" in str(again.content)


async def test_two_redis_replicas_behave_as_one_server(
        redis_url: str, project: Path, user_dir: Path, project_hooks: Path,
        tmp_path: Path) -> None:
    async with replicas(redis_url, project, user_dir, tmp_path) as clients:
        await stop_cap_across(clients, project_hooks)
        await signal_across(clients, user_dir)


async def test_two_postgres_replicas_behave_as_one_server(
        postgres_url: str, project: Path, user_dir: Path, project_hooks: Path,
        tmp_path: Path) -> None:
    async with replicas(postgres_url, project, user_dir, tmp_path) as clients:
        await stop_cap_across(clients, project_hooks)
        await signal_across(clients, user_dir)
