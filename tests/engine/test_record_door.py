"""Each event record names the door that fired it (``door``: the dashboard's Activity filter
and column): ``mcp-hooks fire``, ``bridge <host>``, ``serve`` over MCP, the Python API; real
processes and a real MCP client, one event log file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mcp_hooks import Hooks
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.forward_served import payload

pytestmark = pytest.mark.anyio


def records(log: Path) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, log.read_text().splitlines()) if r.get("kind") == "event"]


async def test_each_door_stamps_its_name(user_dir: Path, project: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "allow-all")
    log = tmp_path / "events.jsonl"
    folders = ["--user-dir", str(user_dir), "--project-dir", str(project), "--log", str(log)]
    fired = subprocess.run([MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input",
                            '{"command": "ls"}', "--session", "by-fire", *folders],
                           capture_output=True, text=True, timeout=60)
    assert fired.returncode == 0, fired.stderr
    bridged = subprocess.run([MCP_HOOKS, "bridge", "claude-code", *folders],
                             input=payload("claude-code", "PreToolUse.bash", project),
                             capture_output=True, text=True, timeout=60)
    assert bridged.returncode == 0, bridged.stderr
    params = StdioServerParameters(command=MCP_HOOKS, args=["serve", *folders],
                                   env=dict(os.environ))
    async with Client(params) as client:
        served = await client.call_tool("fire_hook_event", {
            "event_type": "before_tool", "session_id": "by-serve", "tool_name": "Shell",
            "tool_input": {"command": "ls"}})
        assert not served.is_error
    with Hooks(project, user_dir=user_dir, log=log) as hooks:
        hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"},
                   session_id="by-api")
    doors = {r["session_id"]: r.get("door") for r in records(log)}
    assert doors.pop("by-fire") == "fire"
    assert doors.pop("by-serve") == "serve"
    assert doors.pop("by-api") == "api"
    assert list(doors.values()) == ["bridge/claude-code"], doors
