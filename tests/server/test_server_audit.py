"""Audit mode through the MCP doors: the server's tool (in-memory client) and the proxy in
front of a real upstream (tests/helpers/upstream_server.py): the call goes through, the log
keeps what the hook would have done, and the agent is never shown it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_hooks.server import build_server
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from tests.conftest import write_hook
from tests.helpers.mcp_calls import fire
from tests.helpers.proxied import proxied, text_of, upstream

pytestmark = pytest.mark.anyio

DENY = "cat >/dev/null\necho 'writes are refused' >&2\nexit 2\n"


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def would_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [h["would"] for h in record["hooks"] if h.get("would")]


async def test_the_fire_tool_allows_and_the_log_keeps_the_would_deny(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "no-writes", script=DENY, extra="metadata:\n  mode: audit\n")
    log = tmp_path / "events.jsonl"
    settings = Settings.from_env(project_dir=project, user_dir=user_dir, log=log)
    async with HookService(settings) as service, Client(build_server(service)) as client:
        outcome = await fire(client, event_type="before_tool", tool_name="write_file",
                             tool_input={"path": "x"}, work_dir=str(project))
    assert outcome["decision"] == "allow" and outcome["reason"] is None
    assert "would" not in json.dumps(outcome) and "refused" not in json.dumps(outcome)
    [record] = records(log)
    assert [w["decision"] for w in would_of(record)] == ["deny"]


async def test_the_proxy_in_audit_mode_lets_the_upstream_receive_the_call(
        tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path) -> None:
    write_hook(project_hooks, "no-writes", script=DENY, extra="matcher:\n  tool: write_file\n")
    root = tmp_path / "files"
    root.mkdir()
    async with proxied(tmp_path, project, user_dir, "--trust-project-hooks", "--mode", "audit",
                       "--upstream", upstream("files", "--root", str(root), "--tools",
                                              "write_file")) as client:
        result = await client.call_tool("write_file", {"path": "notes.txt", "content": "hi"})
        assert not result.is_error, text_of(result)
        assert "refused" not in text_of(result)
    assert (root / "notes.txt").read_text() == "hi"  # the upstream received the call
    [record] = [r for r in records(tmp_path / "events.jsonl") if r.get("event") == "before_tool"]
    assert record["decision"] == "allow"
    assert [w["reason"] for w in would_of(record)] == ["writes are refused"]
