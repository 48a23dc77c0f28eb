"""A hook's ask through the host bridges (``docs/ask.md``): the real console script, a new
process per call, the host's payload on stdin. Claude Code, Qwen Code and Copilot CLI answer
with their own ask and the hook's reason; the other hosts (Codex's PreToolUse rejects ``ask``
as unsupported; Gemini CLI's ``decision: ask`` hangs a headless run, see docs/ask.md) get a
deny naming the pending ask, and the same call passes after ``mcp-hooks approve`` (block now,
approve, re-run); a permission mode that asks nobody (``bypassPermissions``) never gets an ask."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.bridges import bridge, rm_call

ASKS = """cat >/dev/null
echo '{"decision": "ask", "reason": "deletes need a person"}'
"""
NO_WAIT = {"MCP_HOOKS_ASK_TIMEOUT": "0"}


def _bridge(host: str, payload: Any, user_dir: Path, flags: list[str],
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        return bridge(host, payload, user_dir, None, *flags)
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def asker(project_hooks: Path) -> Path:
    write_hook(project_hooks, "asker", script=ASKS,
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    return project_hooks


def _pending() -> list[dict[str, Any]]:
    done = subprocess.run([MCP_HOOKS, "pending", "--json"], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize(("host", "name"), [
    ("claude-code", "PreToolUse.rm"), ("qwen-code", "PreToolUse.rm"),
    ("copilot-cli", "preToolUse.bash")])
def test_a_host_with_an_ask_gets_its_own_ask_with_the_reason(
        asker: Path, user_dir: Path, project: Path, host: str, name: str) -> None:
    payload, flags = rm_call(host, name, project)
    done = _bridge(host, payload, user_dir, flags)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    specific = answer.get("hookSpecificOutput", answer)
    assert specific["permissionDecision"] == "ask"
    reason = specific["permissionDecisionReason"]
    assert "asker: deletes need a person" in reason
    ask_id = _pending()[0]["id"]  # kept, for a host that asks nobody (headless)
    assert f"mcp-hooks approve {ask_id}" in reason


def test_claude_code_in_bypass_mode_is_denied_not_asked(
        asker: Path, user_dir: Path, project: Path) -> None:
    payload, flags = rm_call("claude-code", "PreToolUse.rm", project)
    payload["permission_mode"] = "bypassPermissions"
    done = _bridge("claude-code", payload, user_dir, flags, NO_WAIT)
    specific = json.loads(done.stdout)["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "a person must approve this call" in specific["permissionDecisionReason"]


@pytest.mark.parametrize(("host", "name"), [
    ("gemini-cli", "BeforeTool.rm"), ("codex", "PreToolUse.bash"),
    ("kimi-cli", "PreToolUse.rm")])
def test_a_host_without_an_ask_is_denied_with_the_id_and_a_retry_after_approval_passes(
        asker: Path, user_dir: Path, project: Path, host: str, name: str) -> None:
    payload, flags = rm_call(host, name, project)
    first = _bridge(host, payload, user_dir, flags, NO_WAIT)
    pending = _pending()
    assert len(pending) == 1
    ask_id = str(pending[0]["id"])
    assert f"mcp-hooks approve {ask_id}" in first.stdout + first.stderr
    approved = subprocess.run([MCP_HOOKS, "approve", ask_id], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
    assert approved.returncode == 0, approved.stderr
    again = _bridge(host, payload, user_dir, flags, NO_WAIT)
    assert again.returncode == 0, again.stderr
    assert "deny" not in again.stdout and ask_id not in again.stdout
    third = _bridge(host, payload, user_dir, flags, NO_WAIT)  # one approval, one run
    assert "mcp-hooks approve" in third.stdout + third.stderr


def test_a_bridge_never_waits_past_the_chain_deadline(
        asker: Path, user_dir: Path, project: Path) -> None:
    """A host with no ask, a person who never answers, an ask_timeout far beyond the chain
    deadline: the bridge answers (a deny naming the ask) within the deadline, not the ask's
    timeout (the subprocess timeout only stops a hang)."""
    payload, flags = rm_call("gemini-cli", "BeforeTool.rm", project)
    done = _bridge("gemini-cli", payload, user_dir, flags,
                   {"MCP_HOOKS_ASK_TIMEOUT": "3600", "MCP_HOOKS_CHAIN_TIMEOUT": "2"})
    answer = json.loads(done.stdout)
    assert answer["decision"] == "deny" and "mcp-hooks approve ask-" in answer["reason"]
