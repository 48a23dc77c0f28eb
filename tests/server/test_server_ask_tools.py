"""``serve --ask-tools``: an operator's MCP client answers a hook's ask with
``pending_asks``, ``approve_ask`` and ``refuse_ask`` (``server/asks.py``), while the agent's
call waits out of band; the tools are there only when asked for."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_hooks.server import build_server
from mcp_hooks.server.asks import register_ask_tools
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from tests.conftest import write_hook

pytestmark = pytest.mark.anyio

ASKS = "echo '{\"decision\": \"ask\", \"reason\": \"deleting needs a person\"}'\n"
CALL = {"event_type": "before_tool", "session_id": "s-1", "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build"}}
HANG = 120.0  # seconds: only to stop a hang


@pytest.fixture
async def service(project: Path, user_dir: Path, tmp_path: Path) -> AsyncIterator[HookService]:
    write_hook(user_dir, "asker", script=ASKS,
               extra="matcher:\n  tool: Shell\nmetadata:\n  ask_timeout: 600\n")
    async with HookService(Settings.from_env(project_dir=project, user_dir=user_dir,
                                             log=tmp_path / "events.jsonl")) as svc:
        yield svc


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    return data


async def waiting(operator: Client) -> list[dict[str, Any]]:
    with anyio.fail_after(HANG):
        while True:
            asks = structured(await operator.call_tool("pending_asks", {}))["asks"]
            if asks:
                return list(asks)
            await anyio.sleep(0.05)


@pytest.mark.parametrize("approve", [True, False])
async def test_an_operator_answers_the_waiting_call(service: HookService, tmp_path: Path,
                                                   approve: bool) -> None:
    server = build_server(service)
    register_ask_tools(server, service.store)
    got: dict[str, Any] = {}
    async with Client(server) as agent, Client(server) as operator:
        async def fire() -> None:
            got.update(structured(await agent.call_tool("fire_hook_event", CALL)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(fire)
            [ask] = await waiting(operator)
            assert ask["tool_input"] == {"command": "rm -rf build"}
            assert ask["reason"] == "deleting needs a person"
            if approve:
                done = await operator.call_tool("approve_ask", {"ask_id": ask["id"],
                                                                "by": "ann"})
            else:
                done = await operator.call_tool("refuse_ask", {
                    "ask_id": ask["id"], "reason": "use the staging copy", "by": "ann"})
            assert structured(done)["session_id"] == "s-1"
        again = await operator.call_tool("approve_ask", {"ask_id": ask["id"]})
        assert again.is_error and "answered" in again.content[0].text  # type: ignore[union-attr]
        unknown = await operator.call_tool("approve_ask", {"ask_id": "ask-0000000000"})
        assert unknown.is_error and "no ask" in unknown.content[0].text  # type: ignore[union-attr]
        blank = await operator.call_tool("refuse_ask", {"ask_id": ask["id"], "reason": " "})
        assert blank.is_error and "reason" in blank.content[0].text  # type: ignore[union-attr]
    assert got["decision"] == ("allow" if approve else "deny"), got
    if not approve:
        assert "use the staging copy" in got["reason"] and "ann" in got["reason"]
    lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    [answer] = [r for r in lines if r.get("kind") == "ask_answer"]
    assert (answer["channel"], answer["by"], answer["approved"]) == ("mcp", "ann", approve)


async def test_the_tools_are_served_only_when_asked_for(project: Path, user_dir: Path) -> None:
    def params(*extra: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "mcp_hooks.cli", "serve", "--project-dir", str(project), "--user-dir",
                  str(user_dir), "--no-log", *extra], env=dict(os.environ))

    names = []
    for extra in ((), ("--ask-tools",)):
        async with Client(params(*extra)) as client:
            names.append({t.name for t in (await client.list_tools()).tools})
    operator = {"pending_asks", "approve_ask", "refuse_ask"}
    assert not names[0] & operator
    assert operator <= names[1]
