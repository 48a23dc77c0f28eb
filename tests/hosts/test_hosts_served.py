"""The forwarding paths against a real ``mcp-hooks serve --transport http``: the command
``install --via server`` writes (a small Python script) answered by the server, which proves
it holds the token (forward protocol v2: the script never sends it); a fake listener on the
port is not trusted (``test_forward_impostor`` goes further); and the ``bridge_hook`` tool
(``--bridge-tool``) called over streamable HTTP as Claude Code's ``mcp_tool`` hooks do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from mcp_hooks.hosts.forward_auth import SIGNATURE_HEADER, answer_problem, sign_request
from tests.conftest import write_hook
from tests.helpers.forward_served import (
    SOURCE,
    TOKEN,
    fake_listener,
    install_forward,
    payload,
    served,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def hooks(project_hooks: Path) -> None:
    write_hook(project_hooks, "deny-rm", script='echo "no rm -rf here" >&2\nexit 2\n',
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")


@pytest.mark.parametrize("http", ["plain", "library"])
def test_the_forward_command_is_answered_by_the_server(http: str, hooks: None, project: Path,
                                                       user_dir: Path, tmp_path: Path) -> None:
    """Both ways the forward script speaks HTTP (by hand; http.client under
    MCP_HOOKS_FORWARD_HTTP=library) get the server's signed answers."""
    server_log = tmp_path / "server-events.jsonl"
    with served(project, user_dir, server_log, "--token", TOKEN) as base:
        config = tmp_path / "settings.json"
        subprocess.run(
            [sys.executable, "-m", "mcp_hooks.cli", "install", "claude-code", "--via", "server",
             "--url", base, "--token", TOKEN, "--event", "PreToolUse", "--config", str(config)],
            check=True, capture_output=True, cwd=project,
            env={**os.environ, "PYTHONPATH": SOURCE},
        )
        command = json.loads(config.read_text())["hooks"]["PreToolUse"][0]["hooks"][0][
            "command"]
        # the server's log proves it answered (a local fallback would log nowhere: off)
        env = {**os.environ, "MCP_HOOKS_LOG": "off", "MCP_HOOKS_FORWARD_HTTP": http}
        denied = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                                input=payload("claude-code", "PreToolUse.rm", project),
                                env=env, timeout=60)
        answer = json.loads(denied.stdout)
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
        allowed = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                                 input=payload("claude-code", "PreToolUse.bash", project),
                                 env=env, timeout=60)
        assert allowed.returncode == 0 and allowed.stdout == ""
    served_events = [json.loads(line) for line in server_log.read_text().splitlines()]
    assert [e["decision"] for e in served_events if e.get("kind") == "event"] == [
        "deny", "allow"]


@pytest.mark.parametrize("answer", [
    (b"", {}),  # a plain allow
    (b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}',
     {SIGNATURE_HEADER: "0" * 64}),  # a forged signature
])
def test_a_fake_listener_on_the_port_is_not_trusted(answer: tuple[bytes, dict[str, str]],
                                                    hooks: None, project: Path,
                                                    tmp_path: Path) -> None:
    body, headers = answer
    with fake_listener(body, headers) as (base, seen):
        command = install_forward(base, project, tmp_path / "settings.json")
        result = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                                input=payload("claude-code", "PreToolUse.rm", project),
                                env={**os.environ, "MCP_HOOKS_LOG": "off"}, timeout=60)
    assert seen == ["/hooks/bridge/claude-code?event=PreToolUse"]  # it was asked ...
    answer_ = json.loads(result.stdout)  # ... but the local bridge answered
    assert answer_["hookSpecificOutput"]["permissionDecision"] == "deny", result.stderr
    assert "did not prove it came from the mcp-hooks server" in result.stderr


def test_the_server_signs_its_answers_with_the_token(hooks: None, project: Path,
                                                     user_dir: Path, tmp_path: Path) -> None:
    with served(project, user_dir, tmp_path / "events.jsonl", "--token", TOKEN) as base:
        body = payload("claude-code", "PreToolUse.rm", project).encode()
        target = "/hooks/bridge/claude-code"
        signed = sign_request(TOKEN, target, body)
        response = httpx2.post(base + target, content=body, timeout=30, headers=signed.headers)
        assert response.status_code == 200
        answer = (response.status_code, dict(response.headers), response.content)
        assert answer_problem(TOKEN, signed, *answer) is None
        assert answer_problem("other", signed, *answer) is not None
        # Claude Code's own http hooks send the bearer token: answered, unsigned
        bearer = httpx2.post(base + target, content=body, timeout=30,
                             headers={"Authorization": f"Bearer {TOKEN}"})
        assert bearer.status_code == 200 and SIGNATURE_HEADER not in bearer.headers
        assert bearer.content == response.content
        # a forward script holding a wrong token gets 401: blocked, saying so (exit 2), not
        # decided quietly by the local bridge
        command = install_forward(base, project, tmp_path / "settings.json", token="wrong")
        result = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                                input=body.decode(), env={**os.environ, "MCP_HOOKS_LOG": "off"},
                                timeout=60)
        assert result.returncode == 2 and result.stdout == "", result.stderr
        assert (f"the policy server {base} answered POST /hooks/bridge/claude-code with HTTP "
                "401 (unsigned)") in result.stderr
    served_events = [json.loads(line)
                     for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert len([e for e in served_events if e.get("kind") == "event"]) == 2  # ours only


def test_no_token_no_forwarding_endpoint(hooks: None, project: Path, user_dir: Path,
                                        tmp_path: Path) -> None:
    """No endpoint, 404 (as behind a proxy that does not route /hooks/): the forward script
    blocks the call naming the URL and the status, under --on-fault warn lets it through
    (exit 1) saying the same; the local bridge does not decide it quietly."""
    with served(project, user_dir, tmp_path / "events.jsonl") as base:
        response = httpx2.post(f"{base}/hooks/bridge/claude-code", json={}, timeout=30)
        assert response.status_code == 404
        command = install_forward(base, project, tmp_path / "settings.json")
        for on_fault, code in (("block", 2), ("warn", 1)):
            result = subprocess.run(
                ["sh", "-c", command], capture_output=True, text=True,
                input=payload("claude-code", "PreToolUse.bash", project), timeout=60,
                env={**os.environ, "MCP_HOOKS_LOG": "off", "MCP_HOOKS_ON_FAULT": on_fault})
            assert result.returncode == code and result.stdout == "", result.stderr
            assert (f"the policy server {base} answered POST /hooks/bridge/claude-code with "
                    "HTTP 404 (unsigned): nothing answers there: route /hooks/") in result.stderr


async def test_bridge_hook_tool_over_http(hooks: None, project: Path, user_dir: Path,
                                          tmp_path: Path) -> None:
    with served(project, user_dir, tmp_path / "events.jsonl", "--token", TOKEN,
                "--bridge-tool") as base:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http, Client(
            streamable_http_client(f"{base}/mcp", http_client=http)
        ) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "bridge_hook" in tools
            result = await client.call_tool("bridge_hook", {
                "hook_event_name": "PreToolUse", "session_id": "s", "cwd": str(project),
                "tool_name": "Bash", "tool_input": '{"command": "rm -rf /"}'})
            content = result.content[0]
            assert isinstance(content, types.TextContent)
            assert json.loads(content.text)["hookSpecificOutput"]["permissionDecision"] == "deny"
