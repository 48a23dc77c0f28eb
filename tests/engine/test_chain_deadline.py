"""The chain deadline: the sync hooks of one event never run together past ``chain_timeout``
(a host bridge: below its host's own hook timeout); what is left when it hits is the hooks'
failure under their ``on_error``, and a hook's own timeout is cut to what is left.

Each test's first hook sleeps far past the deadline (60 s against 1 s), so only the deadline
can end it; the subprocess and test timeouts only stop a hang."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mcp_hooks.engine.engine import Engine
from mcp_hooks.hosts import get_host
from mcp_hooks.hosts.base import HOOK_TIMEOUT_S
from mcp_hooks.hosts.bridge import chain_deadline
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.settings import Settings
from mcp_hooks.spec.outcome import Event, Outcome
from tests.conftest import MCP_HOOKS, write_hook

pytestmark = pytest.mark.anyio

SLOW = "exec sleep 60\n"  # far past every deadline below: only the chain deadline ends it
ALLOW_MARK = "touch \"$(dirname \"$0\")/../ran\"\nexit 0\n"


def chain(user_dir: Path, second_on_error: str) -> None:
    """A slow fail-open hook first (priority 900, its own timeout 30 s), then another."""
    write_hook(user_dir, "slow", script=SLOW, extra="priority: 900\ntimeout: 30000\n")
    write_hook(user_dir, "second", script=ALLOW_MARK,
               extra=f"priority: 100\nmetadata:\n  on_error: {second_on_error}\n")


def fire(user_dir: Path, project: Path, timeout: float) -> Outcome:
    engine = Engine(Registry(user_dir, project, watch=False), Settings(chain_timeout=timeout),
                    one_shot=True, control=False)
    return engine.fire_blocking(Event("before_tool", session_id="s", work_dir=str(project),
                                      tool_name="Shell", tool_input={"command": "ls"}))


def test_a_fail_closed_hook_left_unrun_by_the_deadline_denies(user_dir: Path,
                                                               project: Path) -> None:
    chain(user_dir, "block")
    outcome = fire(user_dir, project, 1.0)
    assert outcome.denied and outcome.blocked_by == "second", outcome
    assert "not run" in (outcome.reason or "") and "chain deadline (1 s" in (outcome.reason or "")
    slow, second = outcome.hooks
    assert (slow.name, slow.status) == ("slow", "timeout")
    assert "stopped at the chain deadline" in (slow.message or "")
    assert (second.name, second.status, second.exit_code) == ("second", "timeout", None)
    assert not (user_dir / "second" / "ran").exists()
    assert any("slow" in w and "allowed (fail open)" in w for w in outcome.warnings)


def test_a_fail_open_hook_left_unrun_is_skipped_with_a_warning(user_dir: Path,
                                                                project: Path) -> None:
    chain(user_dir, "allow")
    outcome = fire(user_dir, project, 1.0)
    assert not outcome.denied, outcome.reason
    assert not (user_dir / "second" / "ran").exists()
    assert any(w.startswith("second: not run") and "allowed (fail open)" in w
               for w in outcome.warnings), outcome.warnings


def test_a_hook_within_the_deadline_runs_as_before(user_dir: Path, project: Path) -> None:
    write_hook(user_dir, "second", script=ALLOW_MARK)
    outcome = fire(user_dir, project, 600.0)
    assert not outcome.denied and not outcome.warnings
    assert (user_dir / "second" / "ran").exists()


def test_fire_takes_the_chain_timeout_flag_and_variable(user_dir: Path, project: Path) -> None:
    chain(user_dir, "block")
    for how, env in ((["--chain-timeout", "1"], {}), ([], {"MCP_HOOKS_CHAIN_TIMEOUT": "1"})):
        done = subprocess.run(
            [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
             "--user-dir", str(user_dir), "--project-dir", str(project), "--no-log", "--json",
             *how], capture_output=True, text=True, timeout=120, env={**os.environ, **env})
        assert done.returncode == 2, done.stdout + done.stderr
        outcome = json.loads(done.stdout)
        assert outcome["blocked_by"] == "second" and "chain deadline" in outcome["reason"]


def test_a_bad_chain_timeout_names_the_variable(user_dir: Path, project: Path) -> None:
    done = subprocess.run(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--user-dir", str(user_dir),
         "--project-dir", str(project), "--no-log"], capture_output=True, text=True,
        timeout=60, env={**os.environ, "MCP_HOOKS_CHAIN_TIMEOUT": "soon"})
    assert done.returncode != 0
    assert "MCP_HOOKS_CHAIN_TIMEOUT='soon'" in done.stdout + done.stderr


def test_the_bridge_answers_in_the_hosts_block_form_at_the_deadline(user_dir: Path,
                                                                     project: Path) -> None:
    chain(user_dir, "block")
    payload = {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": str(project),
               "tool_name": "Bash", "tool_input": {"command": "ls"}}
    done = subprocess.run(
        [MCP_HOOKS, "bridge", "claude-code", "--user-dir", str(user_dir), "--project-dir",
         str(project), "--no-log"], input=json.dumps(payload), capture_output=True, text=True,
        timeout=120, env={**os.environ, "MCP_HOOKS_CHAIN_TIMEOUT": "1"})
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny", answer
    assert "chain deadline" in answer["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.parametrize(("host", "timeout"), [("claude-code", HOOK_TIMEOUT_S),
                                               ("gemini-cli", HOOK_TIMEOUT_S),
                                               ("cline", 30.0), ("opencode", 610.0)])
def test_each_bridge_stays_below_its_hosts_hook_timeout(host: str, timeout: float) -> None:
    deadline = chain_deadline(get_host(host))
    assert 0 < deadline < timeout
    assert deadline < Settings().chain_timeout


@pytest.mark.parametrize("on_fault", ["block", "warn"])
def test_hooks_yaml_entries_share_the_deadline(user_dir: Path, project: Path,
                                               on_fault: str) -> None:
    write_hook(user_dir, "slow", script=SLOW, extra="timeout: 30000\n")
    (project / ".ahp").mkdir()
    (project / ".ahp" / "hooks.yaml").write_text(
        "hooks:\n  pre-tool-use:\n    - oracle: PermissionChecker\n")
    engine = Engine(Registry(user_dir, project, watch=False),
                    Settings(chain_timeout=1.0, on_fault=on_fault),  # type: ignore[arg-type]
                    one_shot=True)
    outcome = engine.fire_blocking(Event("before_tool", session_id="s", work_dir=str(project),
                                         tool_name="Shell", tool_input={"command": "ls"}))
    said = " ".join([outcome.reason or "", *outcome.warnings])
    assert "oracle PermissionChecker was not started" in said and "chain deadline" in said
    assert outcome.denied == (on_fault == "block"), outcome
