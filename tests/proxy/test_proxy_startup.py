"""The proxy starts at once: it answers ``initialize`` before its upstreams are up, serves the
ones that are, and adds each slow one's tools when it comes up, with a list-changed notice.

The slow upstream is tests/helpers/upstream_server.py with ``--start-after FILE``: it reads nothing
until the test creates FILE, so every assertion is about the order of events (the status
resource says ``starting``; then the file; then a notice, and the tools), never about time.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_hooks.engine.engine import Engine
from mcp_hooks.proxy.app import Proxy, ProxySettings
from mcp_hooks.proxy.config import UpstreamSpec
from mcp_hooks.proxy.startup import LISTING_WINDOW
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.state.eventlog import EventLog
from tests.conftest import MCP_HOOKS
from tests.helpers.proxied import UPSTREAM, by_name, proxied, records, status, text_of, upstream
from tests.helpers.raw_session import call_line, proxy_argv, raw_session, running

pytestmark = pytest.mark.anyio

TOKEN = "startup-test-token"


class Notices:
    """The tools/list_changed notices a client hears; ``next`` waits for one not yet seen."""

    def __init__(self) -> None:
        self.heard = anyio.Event()
        self.count = 0

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.heard.set()

    async def next(self) -> None:
        await self.heard.wait()
        self.heard = anyio.Event()


async def tool_names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}


async def state_of(client: Client, name: str) -> str:
    state: str = by_name(await status(client))[name]["state"]
    return state


async def until_state(client: Client, name: str, wanted: str) -> None:
    with anyio.fail_after(120):
        while await state_of(client, name) != wanted:
            await anyio.sleep(0.05)


def upstream_states(log: Path, name: str) -> list[str]:
    return [r["state"] for r in records(log)
            if r.get("kind") == "proxy_upstream" and r["upstream"] == name]


async def slow_upstream_joins(client: Client, notices: Notices, gate: Path, log: Path) -> None:
    """One fast upstream (``echo``) and one that waits for ``gate`` (``add``)."""
    caps = client.server_capabilities
    assert caps.tools is not None and caps.tools.list_changed is True
    assert caps.prompts is not None and caps.prompts.list_changed is True
    assert caps.resources is not None and caps.resources.list_changed is True
    # initialize was answered while the slow upstream cannot have started: it waits for gate
    data = await status(client)
    slow = by_name(data)["slow"]
    assert slow["state"] == "starting" and slow["since"] and slow["last_error"] is None
    assert "slow" in data["proxy"]["upstreams_starting"]
    assert "starting" in upstream_states(log, "slow")
    await until_state(client, "fast", "ready")
    # the listing serves what is up (after the listing window, for the slow one)
    tools = await tool_names(client)
    assert "echo" in tools and "add" not in tools
    assert text_of(await client.call_tool("echo", {"text": "meanwhile"})) == "meanwhile"
    assert await state_of(client, "slow") == "starting"

    notices.heard = anyio.Event()
    heard_before = notices.count
    gate.touch()
    with anyio.fail_after(120):
        while "add" not in tools:  # each round needs a notice heard after the gate opened
            await notices.next()
            tools = await tool_names(client)
    assert notices.count > heard_before
    assert tools >= {"echo", "add"}
    added = await client.call_tool("add", {"a": 2, "b": 3})
    assert added.structured_content == {"total": 5, "terms": [2, 3]}
    data = await status(client)
    assert by_name(data)["slow"]["state"] == "ready" and data["proxy"]["upstreams_starting"] == []
    assert by_name(data)["slow"]["tools"] == ["add"]
    states = upstream_states(log, "slow")
    assert states.index("starting") < states.index("ready")


async def test_initialize_at_once_then_the_slow_upstream_joins_over_stdio(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    gate, notices = tmp_path / "go", Notices()
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("fast", "--tools", "echo"),
                       "--upstream", upstream("slow", "--tools", "add", "--start-after",
                                              str(gate)),
                       mode="legacy", message_handler=notices, settle=False) as client:
        await slow_upstream_joins(client, notices, gate, tmp_path / "events.jsonl")


async def test_initialize_at_once_then_the_slow_upstream_joins_over_http(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    gate, notices, log = tmp_path / "go", Notices(), tmp_path / "events.jsonl"
    args = [MCP_HOOKS, "proxy", "--transport", "http", "--port", "0", "--token", TOKEN,
            "--upstream", upstream("fast", "--tools", "echo"),
            "--upstream", upstream("slow", "--tools", "add", "--start-after", str(gate)),
            "--user-dir", str(user_dir), "--project-dir", str(project), "--log", str(log)]
    with running(args, announce=r"serving \w+ at (\S+)") as url:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"},
                                      timeout=60) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy",
                       message_handler=notices) as client:
            await slow_upstream_joins(client, notices, gate, log)


async def test_listen_streams_hear_the_slow_upstream_join(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    """A 2026-07-28 client hears it on its subscriptions/listen stream."""
    gate = tmp_path / "go"
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("slow", "--tools", "add", "--start-after",
                                              str(gate)), settle=False) as client:
        assert await state_of(client, "slow") == "starting"
        async with client.listen(tools_list_changed=True) as subscription:
            gate.touch()
            with anyio.fail_after(120):
                async for _event in subscription:
                    break
        assert "add" in await tool_names(client)


def test_a_call_waits_for_its_starting_upstream_and_a_failed_start_says_why(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    slow_gate, broken_gate = tmp_path / "slow-go", tmp_path / "broken-go"
    log = tmp_path / "events.jsonl"
    argv = [*proxy_argv(project, user_dir,
                        "--upstream", upstream("slow", "--tools", "add",
                                               "--start-after", str(slow_gate)),
                        "--upstream", upstream("broken", "--fail-start",
                                               "--start-after", str(broken_gate)))[:-1],
            "--log", str(log)]

    def read_status(rid: str) -> dict[str, dict[str, Any]]:
        proxy.send({"jsonrpc": "2.0", "id": rid, "method": "resources/read",
                    "params": {"uri": "hooks://proxy/status"}})
        return by_name(json.loads(proxy.answer(rid)["result"]["contents"][0]["text"]))

    with raw_session(argv) as proxy:
        # Sent before the status request on the same pipe: read first, still unanswered.
        proxy.send(call_line(1, "add", '{"a": 1, "b": 2}'),
                   call_line(2, "no-such-tool", "{}"))
        upstreams = read_status("s1")
        assert upstreams["slow"]["state"] == "starting"
        assert upstreams["broken"]["state"] == "starting"
        assert 1 not in proxy.answers and 2 not in proxy.answers
        slow_gate.touch()
        added = proxy.answer(1)["result"]
        assert added.get("isError") is not True and added["structuredContent"] == {
            "total": 3, "terms": [1, 2]}
        assert 2 not in proxy.answers  # broken may still list it: the call waits for it
        broken_gate.touch()
        unknown = proxy.answer(2)["result"]
        assert unknown["isError"] is True and "Unknown tool 'no-such-tool'" in \
            unknown["content"][0]["text"]
        broken = read_status("s2")["broken"]
        assert broken["state"] == "failed"
        assert "exited with status 3" in broken["last_error"]
        assert "missing configuration (on purpose)" in broken["last_error"]
    failed = [r for r in records(log)
              if r.get("kind") == "proxy_upstream" and r["upstream"] == "broken"]
    assert [r["state"] for r in failed][:2] == ["starting", "failed"]
    assert "missing configuration (on purpose)" in failed[1]["error"]


# -- in process: the listing window ------------------------------------------------------------


@asynccontextmanager
async def in_process(
    tmp_path: Path, project: Path, user_dir: Path, gate: Path, window: float
) -> AsyncIterator[Proxy]:
    specs = [UpstreamSpec(name=name, transport="stdio", command=sys.executable,
                          args=(UPSTREAM, "--name", name, *extra))
             for name, extra in (("fast", ("--tools", "echo")),
                                 ("slow", ("--tools", "add", "--start-after", str(gate))))]
    async with Engine(Registry(user_dir, project),
                      log=EventLog(tmp_path / "events.jsonl")) as engine, \
            Proxy(specs, engine, ProxySettings(startup_wait=window)) as proxy:
        with anyio.fail_after(60):  # a safety bound: start() never waits for the upstreams
            await proxy.start()
        yield proxy


async def test_a_listing_inside_the_window_waits_for_first_starts(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    gate = tmp_path / "go"
    async with in_process(tmp_path, project, user_dir, gate, window=600) as proxy, \
            Client(proxy.server) as client:
        listed: list[set[str]] = []

        async def listing() -> None:
            listed.append(await tool_names(client))

        async with anyio.create_task_group() as tg:
            tg.start_soon(listing)
            assert await state_of(client, "slow") == "starting"
            assert listed == []  # held while the slow upstream is in its first start
            gate.touch()
        assert listed == [{"echo", "add"}]


async def test_a_listing_after_the_window_answers_with_what_is_up(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    gate = tmp_path / "go"
    async with in_process(tmp_path, project, user_dir, gate, window=0) as proxy, \
            Client(proxy.server) as client:
        assert await state_of(client, "slow") == "starting"
        assert "add" not in await tool_names(client)
        result = await client.call_tool("echo", {"text": "x"})  # waits for fast, if need be
        assert text_of(result) == "x"
        assert await state_of(client, "slow") == "starting"
        gate.touch()
        await until_state(client, "slow", "ready")
        assert await tool_names(client) == {"echo", "add"}


def test_the_default_window_is_short_of_the_hosts_bounds() -> None:
    # Codex gives a server 10 s to start and list its tools; the window must leave room.
    assert ProxySettings().startup_wait == LISTING_WINDOW <= 5
