"""Bridge calls answered by a running server: the token-protected HTTP endpoint and the
``bridge_hook`` MCP tool for Claude Code ``mcp_tool`` hooks, over the server's real
``HookService`` engines, through a real ASGI client and a real MCP client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, types
from starlette.applications import Starlette

from mcp_hooks.eventlog import EventLog
from mcp_hooks.hosts.forward import bridge_routes, mcp_tool_payload, register_bridge_tool
from mcp_hooks.server import build_server
from mcp_hooks.service import HookService
from tests.conftest import write_hook

pytestmark = pytest.mark.anyio

TOKEN = "correct-horse-battery-staple"
FIXTURES = Path(__file__).parent / "fixtures" / "hosts"


def fixture(host: str, name: str, project: Path) -> dict[str, Any]:
    text = (FIXTURES / host / f"{name}.json").read_text().replace("$PROJECT", str(project))
    data: dict[str, Any] = json.loads(text)
    return data


@pytest.fixture
async def service(project: Path, user_dir: Path, project_hooks: Path,
                  tmp_path: Path) -> AsyncIterator[HookService]:
    write_hook(project_hooks, "deny-rm", script='echo "no rm -rf here" >&2\nexit 2\n',
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    write_hook(project_hooks, "gate", trigger="before_stop",
               script='echo "run the tests first" >&2\nexit 2\n')
    async with HookService(project, user_dir=user_dir, log=EventLog(tmp_path / "events.jsonl"),
                           watch_interval=0.05) as svc:
        yield svc


@pytest.fixture
async def http(service: HookService) -> AsyncIterator[httpx2.AsyncClient]:
    app = Starlette(routes=bridge_routes(service.engine_for, TOKEN))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                  base_url="http://127.0.0.1") as client:
        yield client


AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def test_endpoint_answers_in_the_hosts_form(http: httpx2.AsyncClient,
                                                  project: Path) -> None:
    payload = fixture("claude-code", "PreToolUse.rm", project)
    response = await http.post("/hooks/bridge/claude-code", json=payload, headers=AUTH)
    assert response.status_code == 200
    assert response.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert response.json()["hookSpecificOutput"]["permissionDecisionReason"] == "no rm -rf here"
    allowed = await http.post("/hooks/bridge/claude-code", headers=AUTH,
                              json=fixture("claude-code", "PreToolUse.bash", project))
    assert allowed.status_code == 200 and allowed.content == b""
    copilot = await http.post("/hooks/bridge/copilot-cli?event=preToolUse", headers=AUTH,
                              json=fixture("copilot-cli", "preToolUse.bash", project))
    assert copilot.json()["permissionDecision"] == "deny"


async def test_endpoint_requires_the_token(http: httpx2.AsyncClient, project: Path) -> None:
    payload = fixture("claude-code", "PreToolUse.rm", project)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        response = await http.post("/hooks/bridge/claude-code", json=payload, headers=headers)
        assert response.status_code == 401


async def test_endpoint_is_absent_without_a_token(service: HookService) -> None:
    assert bridge_routes(service.engine_for, None) == []
    assert bridge_routes(service.engine_for, "") == []


async def test_endpoint_rejects_what_it_cannot_answer(http: httpx2.AsyncClient,
                                                      project: Path) -> None:
    # no event known: the universal block needs exit 2, so the local bridge must answer
    bad = await http.post("/hooks/bridge/claude-code", content=b"not json", headers=AUTH)
    assert bad.status_code == 422 and "not JSON" in bad.text and "blocked" in bad.text
    unknown = await http.post("/hooks/bridge/vim", json={}, headers=AUTH)
    assert unknown.status_code == 404
    # Copilot CLI blocks in JSON only: the server answers the deny itself
    no_event = await http.post("/hooks/bridge/copilot-cli", headers=AUTH,
                               json=fixture("copilot-cli", "preToolUse.bash", project))
    assert no_event.status_code == 200
    assert no_event.json()["permissionDecision"] == "deny"
    assert "no event name" in no_event.json()["permissionDecisionReason"]
    # the event known: a deny in the host's form, whatever the body
    for body in (b"not json", b"[1]", b'{"tool_name": "Bash", "tool_input": "rm -rf /"}'):
        denied = await http.post("/hooks/bridge/claude-code?event=PreToolUse", content=body,
                                 headers=AUTH)
        assert denied.status_code == 200
        assert denied.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    outside = fixture("claude-code", "PreToolUse.rm", project)
    outside["cwd"] = "/"
    response = await http.post("/hooks/bridge/claude-code", json=outside, headers=AUTH)
    assert response.status_code == 422 and "outside the folders" in response.text


async def test_the_servers_loop_guard_counts_stop_blocks(http: httpx2.AsyncClient,
                                                         project: Path) -> None:
    first = await http.post("/hooks/bridge/codex", headers=AUTH,
                            json=fixture("codex", "Stop", project))
    assert first.json() == {"decision": "block", "reason": "run the tests first"}
    again = fixture("codex", "Stop", project)
    again["stop_hook_active"] = True
    reasons = []
    for _ in range(9):
        response = await http.post("/hooks/bridge/codex", headers=AUTH, json=again)
        reasons.append(response.json().get("decision"))
    assert reasons[:7] == ["block"] * 7
    assert reasons[7] is None  # the 8-block cap: Codex itself has none


# -- the bridge_hook MCP tool (Claude Code mcp_tool hooks) ----------------------------------


@pytest.fixture
async def mcp_client(service: HookService) -> AsyncIterator[Client]:
    server = build_server(service)
    register_bridge_tool(server, service.engine_for)
    async with Client(server) as client:
        yield client


def _text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def test_bridge_hook_tool_answers_with_claude_codes_hook_json(mcp_client: Client,
                                                                    project: Path) -> None:
    arguments = {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(project),
                 "tool_name": "Bash", "tool_input": json.dumps({"command": "rm -rf /tmp/x"}),
                 "tool_use_id": "toolu_1"}
    result = await mcp_client.call_tool("bridge_hook", arguments)
    assert not result.is_error
    answer = json.loads(_text(result))
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


async def test_bridge_hook_tool_rebuilds_tool_input_from_leaves(mcp_client: Client,
                                                                project: Path) -> None:
    arguments = {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(project),
                 "tool_name": "Bash", "tool_input": "[object Object]",
                 "input_command": "rm -rf build", "input_file_path": "", "input_url": ""}
    result = await mcp_client.call_tool("bridge_hook", arguments)
    assert json.loads(_text(result))["hookSpecificOutput"]["permissionDecision"] == "deny"
    allowed = await mcp_client.call_tool("bridge_hook", {**arguments, "input_command": "ls"})
    assert not allowed.is_error and _text(allowed) == ""


async def test_bridge_hook_tool_stop_gate_and_errors(mcp_client: Client, project: Path) -> None:
    stop = await mcp_client.call_tool("bridge_hook", {
        "hook_event_name": "Stop", "session_id": "s2", "cwd": str(project),
        "stop_hook_active": "false", "last_assistant_message": "Done."})
    assert json.loads(_text(stop)) == {"decision": "block", "reason": "run the tests first"}
    bad = await mcp_client.call_tool("bridge_hook", {"hook_event_name": "Elicitation"})
    assert bad.is_error and "not bridged" in _text(bad)


def test_mcp_tool_payload_parses_substituted_values() -> None:
    host, payload = mcp_tool_payload({
        "host": "claude-code", "hook_event_name": "Stop", "session_id": "s",
        "stop_hook_active": "true", "last_assistant_message": "", "tool_use_id": None,
        "payload": '{"transcript_path": "/t.jsonl"}'})
    assert host == "claude-code"
    assert payload == {"transcript_path": "/t.jsonl", "hook_event_name": "Stop",
                       "session_id": "s", "stop_hook_active": True}
    _, payload = mcp_tool_payload({"hook_event_name": "PreToolUse", "tool_name": "Write",
                                   "tool_input": {"file_path": "/a", "content": "x"},
                                   "input_file_path": "/ignored"})
    assert payload["tool_input"] == {"file_path": "/a", "content": "x"}


def _script_functions() -> dict[str, Any]:
    """The forward script's functions, loaded without running its main."""
    from mcp_hooks.hosts.forward_script import FORWARD_SCRIPT_TEXT

    text = FORWARD_SCRIPT_TEXT.format(header="/nonexistent", bridge=["true"], timeout=5,
                                      path="/hooks/bridge/", nonce_header="X-N",
                                      signature_header="X-S")
    namespace: dict[str, Any] = {}
    exec(compile(text.replace("sys.exit(main())", ""), "forward", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("token", ["t", "k" * 64, "k" * 65, "é" * 50])
@pytest.mark.parametrize("body", [b"", b'{"decision": "allow"}', b"\n\xff\x00"])
def test_the_scripts_own_hmac_is_the_servers_signature(token: str, body: bytes) -> None:
    from mcp_hooks.hosts.forward import sign

    script = _script_functions()
    assert script["proof"](token, "n0nce", body) == sign(token, "n0nce", body)
    assert script["same"](sign(token, "n", body), sign(token, "n", body))
    assert not script["same"](sign(token, "n", body), sign(token + "x", "n", body))


def test_the_script_splits_and_encodes_urls_by_hand() -> None:
    script = _script_functions()
    assert script["split_url"]("http://127.0.0.1:8377/mcp") == ("http", "127.0.0.1", 8377,
                                                                 "/mcp")
    assert script["split_url"]("http://[::1]:9/") == ("http", "::1", 9, "/")
    assert script["split_url"]("https://user:pw@example.com") == ("https", "example.com",
                                                                  443, "")
    assert script["pct"]("PreToolUse") == "PreToolUse"
    assert script["pct"]("a b/é?&") == "a%20b%2F%C3%A9%3F%26"
