"""Each door owns its stdout (``mcp_hooks/ownstdout.py``): a trusted oracle that prints when
imported and when called (with ``print`` and straight to fd 1) never lands before or inside
a bridge's answer, ``fire``'s outcome, or the JSON-RPC stream of ``serve``/``proxy`` over
stdio; it goes to stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mcp_hooks.hosts import get_host
from tests.conftest import MCP_HOOKS
from tests.helpers.control_helpers import make_repo, write

CHATTY = """
import os
import sys
from mcp_hooks.spec.signals import Signal

print("chatty: printed at import")
os.write(1, b"chatty: fd 1 at import\\n")
sys.stdout.write("chatty: buffered, no newline at import")


class NoSecrets:
    def __init__(self, config):
        pass

    def evaluate(self, context):
        print("chatty: printed at call")
        os.write(1, b"chatty: fd 1 at call\\n")
        text = str(context.tool_input)
        if "secret" in text:
            return Signal.block("the user's own deny: no secrets")
        return None
"""
NOISE = ("chatty: printed at import", "chatty: fd 1 at import", "chatty: buffered",
         "chatty: printed at call", "chatty: fd 1 at call")
REASON = "the user's own deny: no secrets"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, ".ahp/oracles.py", CHATTY)
    write(repo, ".ahp/hooks.yaml",
          "hooks:\n  pre-tool-use:\n    - {oracle: 'oracles.py:NoSecrets'}\n")
    return repo


def _noise_on_stderr(stderr: str) -> None:
    for line in NOISE:
        assert line in stderr, (line, stderr)


@pytest.mark.parametrize("host_name", ["claude-code", "cursor", "copilot-cli", "gemini-cli"])
def test_a_bridge_stdout_is_exactly_the_hosts_answer(repo: Path, user_dir: Path,
                                                     host_name: str) -> None:
    host = get_host(host_name)
    done = subprocess.run(
        [MCP_HOOKS, "bridge", host_name, "--event", host.gate_event, "--user-dir",
         str(user_dir)], input=json.dumps(host.shell_call("cat secret.txt", "s-1", repo)),
        capture_output=True, text=True, cwd=repo, env=dict(os.environ), timeout=120)
    assert host.deny_reason(done.stdout, done.stderr, done.returncode) == REASON, done
    if done.stdout:  # the JSON forms: one document and nothing else
        json.loads(done.stdout)
        assert done.stdout.count("\n") == 1
    _noise_on_stderr(done.stderr)


@pytest.mark.parametrize("json_output", [True, False], ids=["--json", "text"])
def test_fire_stdout_is_only_its_outcome(repo: Path, user_dir: Path, json_output: bool) -> None:
    done = subprocess.run(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input",
         '{"command": "cat secret.txt"}', "--user-dir", str(user_dir), "--project-dir",
         str(repo), *(["--json"] if json_output else [])],
        capture_output=True, text=True, cwd=repo, timeout=120)
    assert done.returncode == 2, done.stderr
    if json_output:
        assert json.loads(done.stdout)["reason"] == REASON
    else:
        assert REASON in done.stdout
    assert "chatty" not in done.stdout
    _noise_on_stderr(done.stderr)


def _raw_session(argv: list[str], requests: list[dict[str, Any]],
                 env: dict[str, str], cwd: Path) -> tuple[list[dict[str, Any]], str]:
    """Send JSON-RPC lines; read stdout until every request is answered, each line parsed
    as JSON (a stray line fails here); then close stdin and collect the rest."""
    ids = {r["id"] for r in requests if "id" in r}
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    proc.stdin.flush()
    replies: list[dict[str, Any]] = []
    try:
        while not ids <= {r.get("id") for r in replies}:
            line = proc.stdout.readline()
            assert line, "stdout closed early"
            replies.append(json.loads(line))
    finally:
        proc.stdin.close()
        proc.stdin = None  # closed: communicate() must not flush it
        rest, stderr = proc.communicate(timeout=120)
    replies += [json.loads(line) for line in rest.splitlines()]
    return replies, stderr


INIT = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"}]


@pytest.mark.parametrize("stdio", ["", "sdk"], ids=["event loop", "sdk"])
def test_serve_over_stdio_speaks_clean_json_rpc(repo: Path, user_dir: Path, stdio: str) -> None:
    fire = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "fire_hook_event", "arguments": {
            "event_type": "before_tool", "tool_name": "Shell",
            "tool_input": {"command": "cat secret.txt"}, "work_dir": str(repo)}}}
    replies, stderr = _raw_session(
        [MCP_HOOKS, "serve", "--project-dir", str(repo), "--user-dir", str(user_dir),
         "--no-log"], [*INIT, fire], {**os.environ, "MCP_HOOKS_SERVE_STDIO": stdio}, repo)
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    outcome = next(r for r in replies if r.get("id") == 2)["result"]["structuredContent"]
    assert outcome["decision"] == "deny" and outcome["reason"] == REASON
    _noise_on_stderr(stderr)


@pytest.mark.anyio
async def test_serve_over_stdio_with_a_real_client(repo: Path, user_dir: Path) -> None:
    params = StdioServerParameters(
        command=MCP_HOOKS, args=["serve", "--project-dir", str(repo), "--user-dir",
                                 str(user_dir), "--no-log"], env=dict(os.environ))
    async with Client(params) as client:
        for command, decision in (("cat secret.txt", "deny"), ("ls", "allow")):
            result = await client.call_tool("fire_hook_event", {
                "event_type": "before_tool", "tool_name": "Shell",
                "tool_input": {"command": command}, "work_dir": str(repo)})
            assert result.structured_content is not None
            assert result.structured_content["decision"] == decision


UPSTREAM = str(Path(__file__).resolve().parents[1] / "helpers" / "upstream_server.py")


@pytest.mark.parametrize("stdio", ["", "sdk"], ids=["event loop", "sdk"])
def test_the_proxy_over_stdio_speaks_clean_json_rpc(repo: Path, user_dir: Path,
                                                    stdio: str) -> None:
    calls = [{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "the secret"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "hello"}}}]
    upstream = f"up={sys.executable} {UPSTREAM} --name up"
    replies, stderr = _raw_session(
        [MCP_HOOKS, "proxy", "--upstream", upstream, "--project-dir", str(repo),
         "--user-dir", str(user_dir), "--no-log"], [*INIT, *calls],
        {**os.environ, "MCP_HOOKS_PROXY_STDIO": stdio}, repo)
    by_id = {r["id"]: r for r in replies if "id" in r}
    assert {2, 3} <= set(by_id), (replies, stderr)
    denied, allowed = by_id[2]["result"], by_id[3]["result"]
    assert denied["isError"] is True and REASON in json.dumps(denied)
    assert not allowed.get("isError") and "hello" in json.dumps(allowed)
    _noise_on_stderr(stderr)


def test_owned_stdout_in_one_process(tmp_path: Path) -> None:
    """The helper itself: what prints inside goes to stderr, the answer to stdout, a nested
    claim shares the stream, and stdout is whole again afterwards."""
    code = (
        "import os, sys\n"
        "from mcp_hooks.ownstdout import owned_stdout\n"
        "print('before, still buffered', end='')\n"
        "with owned_stdout() as out:\n"
        "    print('stray print')\n"
        "    os.write(1, b'stray fd 1\\n')\n"
        "    with owned_stdout() as inner:\n"
        "        assert inner is out\n"
        "    out.write(b'ANSWER\\n')\n"
        "print('after')\n"
    )
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=buffered, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ANSWER\nafter\n"
    assert "before, still buffered" in done.stderr
    assert "stray print" in done.stderr and "stray fd 1" in done.stderr
