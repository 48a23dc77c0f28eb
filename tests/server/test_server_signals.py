"""Signals over MCP: the outcome carries them, ``respond_to_signal`` answers them, through the
SDK's in-memory Client in both protocol eras."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_hooks.server import build_server
from mcp_hooks.server.results import schema_findings
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from mcp_hooks.state.signallog import SignalLog
from tests.conftest import write_hook
from tests.helpers.mcp_calls import ISSUE, checklist_hook, fire, respond, tool_error

pytestmark = pytest.mark.anyio


@pytest.fixture
async def service(project: Path, user_dir: Path, tmp_path: Path) -> AsyncIterator[HookService]:
    async with HookService(Settings.from_env(project_dir=project, user_dir=user_dir,
                                    log=tmp_path / "events.jsonl"), watch_interval=0.05) as svc:
        yield svc


@pytest.fixture(params=["legacy", "auto"])
async def client(request: pytest.FixtureRequest, service: HookService) -> AsyncIterator[Client]:
    async with Client(build_server(service), mode=request.param) as c:
        yield c


async def test_the_tool_and_its_schema(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools["respond_to_signal"]
    assert tool.input_schema["required"] == ["signal_id", "action"]
    assert "retry_after_fix" in (tool.description or "")
    assert tool.output_schema is not None
    assert schema_findings(tool.input_schema) == [] and schema_findings(tool.output_schema) == []
    signals = tools["fire_hook_event"].output_schema["properties"]["signals"]  # type: ignore[index]
    assert "$ref" not in json.dumps(signals)
    assert "respond_to_signal" in (client.instructions or "")


async def test_the_seeds_submit_scene(client: Client, user_dir: Path, tmp_path: Path) -> None:
    checklist_hook(user_dir)
    # 1. the submit is blocked by the checklist
    first = await fire(client, event_type="pre-issue-submit", session_id="s1",
                       payload={"issue": ISSUE})
    assert first["decision"] == "deny" and first["blocked_by"] == "checklist-gate"
    (block,) = first["signals"]
    assert block["header"]["intensity"] == "block"
    assert block["context"] == {"hook": "before_issue_submit", "issue_id": "FEAT-0123",
                                "files": ISSUE["files_changed"]}
    assert block["payload"]["resolution_path"] == ["complete: tests", "complete: API docs"]
    answer = await respond(client, signal_id=block["header"]["id"], action="retry_after_fix",
                           details={"fixed": ["tests", "API docs"]})
    assert answer["intensity"] == "block" and answer["consumed"] is True
    assert answer["consumed_at"].endswith("Z") and answer["source"] == "checklist-gate"
    # 2. fixed: now warned for 25 changed files, and the agent goes on
    done = {**ISSUE, "checklist": [{**i, "done": True} for i in ISSUE["checklist"]]}
    second = await fire(client, event_type="pre-issue-submit", session_id="s1",
                        payload={"issue": done})
    assert second["decision"] == "allow"
    (prompt,) = second["signals"]
    assert prompt["header"]["intensity"] == "prompt"
    assert "25 files" in prompt["payload"]["message"]
    assert second["additional_context"] == [
        "large change (25 files); split it? (split the change; continue)"]
    await respond(client, signal_id=prompt["header"]["id"], action="acknowledge")
    log = SignalLog(tmp_path / "signals.jsonl")
    responses = [r for r in log.read("s1") if r["kind"] == "response"]
    assert [(r["hook"], r["intensity"], r["source"], r["consumed"], r["action"])
            for r in responses] == [
        ("before_issue_submit", "block", "checklist-gate", True, "retry_after_fix"),
        ("before_issue_submit", "prompt", "checklist-gate", True, "acknowledge"),
    ]


async def test_wrong_answers_are_tool_errors(client: Client, user_dir: Path) -> None:
    write_hook(user_dir, "refuser", script="cat >/dev/null\necho nope >&2\nexit 2\n")
    outcome = await fire(client, event_type="before_tool", tool_name="Shell",
                         tool_input={"command": "ls"})
    signal_id = outcome["signals"][0]["header"]["id"]
    text = await tool_error(client, "respond_to_signal",
                            {"signal_id": signal_id, "action": "acknowledge"})
    assert "answers a prompt signal, not a block one" in text
    assert "retry_after_fix, proceed_with_risk, abort" in text
    text = await tool_error(client, "respond_to_signal",
                            {"signal_id": "no-such-id", "action": "abort"})
    assert "no signal 'no-such-id'" in text
    assert "/" not in text and "signals.jsonl" not in text  # no server path for a client
    await respond(client, signal_id=signal_id, action="abort")
    text = await tool_error(client, "respond_to_signal",
                            {"signal_id": signal_id, "action": "abort"})
    assert "already answered" in text


async def test_a_server_without_a_log_says_so(project: Path, user_dir: Path) -> None:
    async with HookService(Settings.from_env(
            project_dir=project, user_dir=user_dir, no_log=True)) as svc, \
            Client(build_server(svc)) as c:
        text = await tool_error(c, "respond_to_signal", {"signal_id": "x", "action": "abort"})
    assert "keeps no log" in text
