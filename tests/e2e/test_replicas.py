"""Three ``serve --stateless --state URL`` replicas behind a round-robin balancer behave as
one server, and a replica killed mid-load loses nothing it acknowledged (issue 21, item 6).

Real parts throughout: the Redis and PostgreSQL of ``tests/helpers/servers.py``, three
``mcp-hooks serve --transport http`` processes (each with its own state folder and event log
file, as on machines of their own: only the store is shared), the loopback TCP balancer of
``tests/helpers/balancer.py`` in front of them, and the MCP SDK's streamable HTTP client, one
per agent, each opening a new connection per request so the balancer spreads every agent's
events over the replicas. The store's event log is read back through the store API
(``state.url.open_store(url).read("events", session)``), and each event is matched by a marker
no other event carries, which its hook echoes into the record.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_hooks.settings import DEFAULT_STOP_BLOCK_CAP
from mcp_hooks.state.url import close_store, open_store
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import Background, background
from tests.helpers.balancer import Balancer
from tests.helpers.mcp_calls import ISSUE, checklist_hook
from tests.helpers.servers import (  # noqa: F401 - fixtures
    postgres_service,
    postgres_url,
    redis_service,
    redis_url,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

REPLICAS = 3
AGENTS = 4
CALL_TIMEOUT = 120.0  # seconds one call may take on a loaded machine (stops a hang only)
AID = "run the linters too"
MAX_CALLS = 1000  # per agent in the kill run (stops a runaway loop only)


@dataclass
class Deployment:
    """The replicas, the balancer in front of them, and the shared store's URL."""

    url: str
    servers: list[Background]
    balancer: Balancer

    def direct(self, n: int) -> str:
        return self.servers[n].url


@contextmanager
def deployment(url: str, project: Path, user_dir: Path, tmp_path: Path) -> Iterator[Deployment]:
    with ExitStack() as stack:
        servers = [stack.enter_context(background([
            MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--stateless",
            "--project-dir", str(project), "--user-dir", str(user_dir),
            "--log", str(tmp_path / f"events-{n}.jsonl"), "--state", url],
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / f"state-{n}")},
            capture_stdout=True, timeout=120)) for n in range(REPLICAS)]
        backends = []
        for server in servers:
            parts = urlsplit(server.url)
            assert parts.hostname and parts.port, server.url
            backends.append((parts.hostname, parts.port))
        balancer = stack.enter_context(Balancer(backends))
        yield Deployment(url, servers, balancer)


@asynccontextmanager
async def agent(url: str) -> AsyncIterator[Client]:
    """An MCP client that opens a new connection per HTTP request (a balancer spreads it)."""
    limits = httpx2.Limits(max_keepalive_connections=0)
    timeout = httpx2.Timeout(30.0, read=CALL_TIMEOUT)
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(limits=limits,
                                                                  timeout=timeout))
        yield await stack.enter_async_context(
            Client(streamable_http_client(url, http_client=http)))


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(CALL_TIMEOUT):
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def write_hooks(project_hooks: Path, user_dir: Path) -> None:
    # before_tool: echoes its payload (with the event's marker) to stderr, into the record
    write_hook(project_hooks, "echo-marker", trigger="before_tool", script="cat >&2\n")
    write_hook(project_hooks, "never-done", trigger="before_stop",
               script="cat >/dev/null\necho 'not done yet' >&2\nexit 2\n")
    write_hook(project_hooks, "advisor", trigger="after_tool", extra="async: true\n",
               script=f"cat >/dev/null\necho '{{\"additional_context\": \"{AID}\"}}'\n")
    checklist_hook(user_dir)


def events_of(url: str, session: str) -> list[dict[str, Any]]:
    store = open_store(url)
    try:
        return [r for r in store.read("events", session) if r.get("kind") == "event"]
    finally:
        close_store(store)


def times_logged(records: list[dict[str, Any]], marker: str) -> int:
    return sum(marker in json.dumps(record) for record in records)


def tool_event(session: str, marker: str) -> dict[str, Any]:
    return {"event_type": "before_tool", "session_id": session, "tool_name": "Shell",
            "tool_input": {"command": f"echo {marker}"}}


# -- one server: the guard, signals, aid, the log ----------------------------------------------


async def agents_share_the_guard_and_the_log(dep: Deployment) -> None:
    """4 agents at once through the balancer: each session's stop is denied 8 times in all
    (not 8 per replica), and every answered event is in the store's log once."""
    run = secrets.token_hex(4)
    answered: dict[str, list[str]] = {}
    stops: dict[str, list[bool]] = {}

    async def one_agent(n: int) -> None:
        session = f"agent-{run}-{n}"
        answered[session], stops[session] = [], []
        async with agent(dep.balancer.url) as client:
            for k in range(DEFAULT_STOP_BLOCK_CAP + 1):
                marker = f"m-{run}-{n}-{k}!"  # "!": no marker is the start of another
                outcome = await call(client, "fire_hook_event", tool_event(session, marker))
                assert outcome["decision"] == "allow", outcome
                answered[session].append(marker)
                outcome = await call(client, "fire_hook_event", {
                    "event_type": "before_stop", "session_id": session,
                    "payload": {"stop_reason": "done"}})
                stops[session].append(outcome["continue_working"])

    async with anyio.create_task_group() as tg:
        for n in range(AGENTS):
            tg.start_soon(one_agent, n)
    assert len(stops) == AGENTS
    replicas: set[str] = set()
    for session, said in stops.items():
        assert said == [True] * DEFAULT_STOP_BLOCK_CAP + [False], (session, said)
        records = events_of(dep.url, session)
        for marker in answered[session]:
            assert times_logged(records, marker) == 1, (marker, records)
        # nothing else either: one record per answered event, stops included
        assert len(records) == 2 * (DEFAULT_STOP_BLOCK_CAP + 1), records
        replicas.update(str(r.get("replica")) for r in records)
    assert len(replicas) == REPLICAS, replicas  # stamped by the replica that answered
    assert all(count > 0 for count in dep.balancer.connections), dep.balancer.connections


async def a_signal_raised_on_one_is_answered_on_another(dep: Deployment) -> None:
    async with agent(dep.direct(0)) as first, agent(dep.direct(1)) as second, \
            agent(dep.direct(2)) as third:
        raised = await call(first, "fire_hook_event", {
            "event_type": "pre-issue-submit", "session_id": "signals", "payload": {
                "issue": ISSUE}})
        assert raised["decision"] == "deny" and raised["blocked_by"] == "checklist-gate"
        (block,) = raised["signals"]
        signal_id = block["header"]["id"]
        answer = await call(second, "respond_to_signal", {"signal_id": signal_id,
                                                          "action": "retry_after_fix"})
        assert answer["consumed"] is True and answer["source"] == "checklist-gate"
        again = await third.call_tool("respond_to_signal",
                                      {"signal_id": signal_id, "action": "acknowledge"})
        assert again.is_error
        assert f"signal {signal_id} was already answered: retry_after_fix" in str(again.content)


async def aid_made_on_one_reaches_the_next_event_on_another(dep: Deployment) -> None:
    session = f"aid-{secrets.token_hex(4)}"
    async with agent(dep.direct(0)) as first, agent(dep.direct(1)) as second, \
            agent(dep.direct(2)) as third:
        await call(first, "fire_hook_event", {
            "event_type": "after_tool", "session_id": session, "tool_name": "Shell",
            "tool_input": {"command": "make"}, "tool_output": "ok"})
        store = open_store(dep.url)
        try:
            with anyio.fail_after(CALL_TIMEOUT):  # the async hook finishes at its own pace
                while not any(r.get("intensity") == "aid"
                              for r in store.read("signals", session)):
                    await anyio.sleep(0.05)
        finally:
            close_store(store)
        # the next event on another replica takes it; under load a store call past its
        # deadline may hold that replica's take back for a few seconds (the aid then waits
        # in the store for the event after: docs/settings.md), so events go on until one has
        # it, within the call timeout; it is shown once, never again on a third replica
        shown = []
        with anyio.fail_after(CALL_TIMEOUT):
            while not shown:
                nxt = await call(second, "fire_hook_event", {"event_type": "before_agent",
                                                             "session_id": session})
                shown = [c for c in nxt.get("additional_context", []) if AID in c]
                if not shown:
                    await anyio.sleep(0.5)
        assert len(shown) == 1 and "advisor" in shown[0], nxt
        later = await call(third, "fire_hook_event", {"event_type": "before_agent",
                                                      "session_id": session})
        assert not any(AID in c for c in later.get("additional_context", [])), later


# -- one replica killed mid-load ---------------------------------------------------------------


@dataclass
class Tally:
    answered: list[tuple[str, str]] = field(default_factory=list)  # (session, marker)
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (session, marker, why)
    after_kill: int = 0
    killed: bool = False
    finished: list[int] = field(default_factory=list)  # agents that ran their calls out


async def a_killed_replica_loses_nothing_acknowledged(dep: Deployment) -> None:
    """The agents keep firing while replica 1 is killed with SIGKILL: every event that got an
    answer is in the log exactly once; the ones that failed were told so (an error, never an
    allow) and are in the log at most once (the replica may have logged one before it died)."""
    run = secrets.token_hex(4)
    tally = Tally()
    enough = anyio.Event()
    before, after = 12, 12  # answered calls per agent before the kill (on average), after it

    async def one_agent(n: int) -> None:
        session = f"load-{run}-{n}"
        since_kill = 0
        for k in range(MAX_CALLS):
            if since_kill >= after:
                break
            if tally.killed:
                since_kill += 1
            marker = f"k-{run}-{n}-{k}!"
            try:  # a client per call: one whose connection broke is not used again
                with anyio.fail_after(CALL_TIMEOUT):
                    async with agent(dep.balancer.url) as client:
                        result = await client.call_tool("fire_hook_event",
                                                        tool_event(session, marker))
            except Exception as exc:  # the replica died under this call: failed, said so
                tally.failed.append((session, marker, repr(exc)[:200]))
                continue
            if result.is_error or not isinstance(result.structured_content, dict):
                tally.failed.append((session, marker, str(result.content)[:200]))
                continue
            assert result.structured_content["decision"] == "allow", result
            tally.answered.append((session, marker))
            if tally.killed:
                tally.after_kill += 1
            if len(tally.answered) >= AGENTS * before:
                enough.set()
        tally.finished.append(n)

    async def killer() -> None:
        await enough.wait()
        victim = dep.servers[1].proc
        os.kill(victim.pid, signal.SIGKILL)
        await anyio.to_thread.run_sync(victim.wait, 30)
        tally.killed = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(killer)
        for n in range(AGENTS):
            tg.start_soon(one_agent, n)
    print(f"kill run: {len(tally.answered)} answered ({tally.after_kill} after the kill), "
          f"{len(tally.failed)} failed, {dep.balancer.refused} connections refused by the "
          f"dead replica, per backend {dep.balancer.connections}")
    assert tally.killed and tally.after_kill > 0, tally
    assert sorted(tally.finished) == list(range(AGENTS)), tally  # none ended silently
    assert dep.balancer.refused > 0, "the balancer never met the dead replica"
    records = {f"load-{run}-{n}": events_of(dep.url, f"load-{run}-{n}") for n in range(AGENTS)}
    lost = [(s, m) for s, m in tally.answered if times_logged(records[s], m) != 1]
    assert not lost, (lost, tally.failed)
    twice = [(s, m) for s, m, _ in tally.failed if times_logged(records[s], m) > 1]
    assert not twice, twice
    answered_markers = {m for _, m in tally.answered}
    assert not answered_markers & {m for _, m, _ in tally.failed}


# -- the two stores ----------------------------------------------------------------------------


async def behave_as_one(url: str, project: Path, user_dir: Path, project_hooks: Path,
                        tmp_path: Path) -> None:
    write_hooks(project_hooks, user_dir)
    with deployment(url, project, user_dir, tmp_path) as dep:
        await agents_share_the_guard_and_the_log(dep)
        await a_signal_raised_on_one_is_answered_on_another(dep)
        await aid_made_on_one_reaches_the_next_event_on_another(dep)
        await a_killed_replica_loses_nothing_acknowledged(dep)


@pytest.mark.parametrize("store", ["redis_url", "postgres_url"])
async def test_three_replicas_behind_a_balancer_behave_as_one_server(
        store: str, request: pytest.FixtureRequest, project: Path, user_dir: Path,
        project_hooks: Path, tmp_path: Path) -> None:
    url = request.getfixturevalue(store)  # a fresh key prefix / schema on the real server
    await behave_as_one(url, project, user_dir, project_hooks, tmp_path)
