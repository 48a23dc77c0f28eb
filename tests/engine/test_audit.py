"""Audit mode: a hook's verdict is recorded as what it would have done, never enforced."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Engine, Event, EventLog, Hooks, Registry
from mcp_hooks.settings import Mode, Settings
from mcp_hooks.spec.outcome import Outcome
from tests.conftest import MCP_HOOKS, write_hook

DENY = "cat >/dev/null\necho 'rm is refused' >&2\nexit 2\n"
REWRITE = """cat >/dev/null
echo '{"modified_input": {"command": "ls -l"}}'
"""
AUDIT = "metadata:\n  mode: audit\n"


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def fire(registry: Registry, log: EventLog | None = None, mode: Mode = "enforce",
               **fields: Any) -> Outcome:
    async with Engine(registry, settings=Settings(mode=mode), log=log) as engine:
        return await engine.fire(Event.create(**fields))


def shell(command: str = "rm -rf x") -> dict[str, Any]:
    return {"event_type": "before_tool", "tool_name": "Shell", "tool_input": {"command": command},
            "session_id": "s1"}


@pytest.mark.anyio
async def test_an_audit_hook_would_deny_and_the_call_goes_on(user_dir: Path,
                                                             tmp_path: Path) -> None:
    write_hook(user_dir, "no-rm", script=DENY, extra=AUDIT)
    log = tmp_path / "events.jsonl"
    outcome = await fire(Registry(user_dir), EventLog(log), **shell())
    assert outcome.decision == "allow" and outcome.reason is None and outcome.warnings == []
    assert outcome.signals == [] and outcome.additional_context == []
    assert [h.status for h in outcome.hooks] == ["allow"]
    assert "would" not in json.dumps(outcome.as_dict())  # never shown to the agent
    [record] = records(log)
    assert record["decision"] == "allow"
    would = record["hooks"][0]["would"]
    assert would["decision"] == "deny" and would["reason"] == "rm is refused"


@pytest.mark.anyio
async def test_an_audit_rewrite_is_recorded_not_applied_and_later_hooks_see_the_original(
        user_dir: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    write_hook(user_dir, "a-rewrite", script=REWRITE, extra=AUDIT + "priority: 200\n")
    write_hook(user_dir, "b-look", script=f"cat > '{seen}'\n")
    log = tmp_path / "events.jsonl"
    outcome = await fire(Registry(user_dir), EventLog(log), **shell("rm x"))
    assert outcome.modified_input is None
    assert json.loads(seen.read_text())["tool_input"] == {"command": "rm x"}
    would = records(log)[0]["hooks"][0]["would"]
    assert would["decision"] == "rewrite" and would["modified_input"] == {"command": "ls -l"}


@pytest.mark.anyio
async def test_a_stop_block_in_audit_lets_the_stop_go(user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "gate", trigger="before_stop", script=DENY, extra=AUDIT)
    log = tmp_path / "events.jsonl"
    outcome = await fire(Registry(user_dir), EventLog(log), event_type="before_stop",
                         session_id="s1")
    assert outcome.decision == "allow" and not outcome.continue_working
    assert records(log)[0]["hooks"][0]["would"]["decision"] == "stop-block"


@pytest.mark.anyio
async def test_process_audit_mode_audits_all_but_managed_hooks(
        user_dir: Path, tmp_path: Path) -> None:
    managed = tmp_path / "managed"
    managed.mkdir()
    write_hook(user_dir, "mine", script=DENY)
    registry = Registry(user_dir, managed_dir=managed)
    outcome = await fire(registry, mode="audit", **shell())
    assert outcome.decision == "allow"
    write_hook(managed, "org", script=DENY)  # a managed hook is never demoted by the process
    registry = Registry(user_dir, managed_dir=managed)
    outcome = await fire(registry, mode="audit", **shell())
    assert outcome.decision == "deny" and outcome.blocked_by == "org"


@pytest.mark.anyio
async def test_a_hooks_yaml_entry_in_audit_mode_would_deny(project: Path, tmp_path: Path,
                                                           user_dir: Path) -> None:
    (project / ".ahp").mkdir()
    (project / ".ahp" / "hooks.yaml").write_text("""\
hooks:
  pre-tool-use:
    - oracle: PermissionChecker
      config: {dangerous_commands: [rm -rf], require_confirmation: false}
      mode: audit
""")
    log = tmp_path / "events.jsonl"
    registry = Registry(user_dir, project, trust_project_hooks=True)
    outcome = await fire(registry, EventLog(log), **shell("rm -rf x"))
    assert outcome.decision == "allow", outcome.reason
    [run] = [h for h in records(log)[0]["hooks"] if h.get("would")]
    assert run["name"].startswith("hooks.yaml:") and run["would"]["decision"] == "deny"


def test_fire_and_log_would_from_the_command_line(user_dir: Path, project: Path,
                                                  tmp_path: Path) -> None:
    write_hook(user_dir, "no-rm", script=DENY)
    log = tmp_path / "events.jsonl"
    common = ["--user-dir", str(user_dir), "--project-dir", str(project), "--log", str(log)]
    done = subprocess.run([MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input",
                           '{"command": "rm x"}', "--mode", "audit", *common],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rm is refused" not in done.stdout + done.stderr
    env = {**os.environ, "MCP_HOOKS_MODE": "audit"}
    subprocess.run([MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input",
                    '{"command": "ls"}', *common], env=env, check=True, capture_output=True)
    subprocess.run([MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input",
                    '{"command": "rm y"}', *common], env=env, check=True, capture_output=True)
    shown = subprocess.run([MCP_HOOKS, "log", "--would", "--log", str(log), "--json"],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(shown) == 3  # the deny hook answers every call: each would have been denied
    text = subprocess.run([MCP_HOOKS, "log", "--would", "--log", str(log)],
                          capture_output=True, text=True, check=True).stdout
    assert "no-rm=allow (would deny: rm is refused)" in text
    bad = subprocess.run([MCP_HOOKS, "fire", "before_tool", "--mode", "audti", *common],
                         capture_output=True, text=True)
    assert bad.returncode == 64 or bad.returncode == 2


def test_hooks_fire_in_audit(user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "no-rm", script=DENY, extra=AUDIT)
    log = tmp_path / "events.jsonl"
    with Hooks(user_dir=user_dir, log=log) as hooks:
        outcome = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "rm x"})
    assert outcome.decision == "allow"
    assert records(log)[0]["hooks"][0]["would"]["decision"] == "deny"
    with Hooks(settings=Settings.from_env(user_dir=user_dir, log=log, mode="audit")) as hooks:
        write_hook(user_dir, "strict", script=DENY)
        outcome = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "rm x"})
    assert outcome.decision == "allow"
    assert {h["name"] for h in records(log)[-1]["hooks"] if h.get("would")} == {"no-rm",
                                                                               "strict"}


def test_log_digest_filters_by_any_layer(user_dir: Path, project: Path, project_hooks: Path,
                                         tmp_path: Path) -> None:
    write_hook(user_dir, "mine")
    write_hook(project_hooks, "theirs")
    log = tmp_path / "events.jsonl"
    common = ["--user-dir", str(user_dir), "--project-dir", str(project), "--log", str(log),
              "--trust-project-hooks"]
    subprocess.run([MCP_HOOKS, "fire", "session_start", *common], check=True,
                   capture_output=True)
    write_hook(project_hooks, "theirs", description="changed")
    subprocess.run([MCP_HOOKS, "fire", "session_start", *common], check=True,
                   capture_output=True)
    first, second = records(log)
    assert set(first["layer_digests"]) == {"user", "project"}
    assert first["layer_digests"]["user"] == second["layer_digests"]["user"]
    assert first["layer_digests"]["project"] != second["layer_digests"]["project"]

    def shown(digest: str) -> int:
        return len(subprocess.run([MCP_HOOKS, "log", "--json", "--log", str(log), "--digest",
                                   digest], capture_output=True, text=True,
                                  check=True).stdout.splitlines())

    assert shown(first["layer_digests"]["user"]) == 2
    assert shown(first["layer_digests"]["project"]) == 1
    assert shown(second["hooks_digest"]) == 1
    short = subprocess.run([MCP_HOOKS, "log", "--log", str(log), "--digest", "abc"],
                           capture_output=True, text=True)
    assert short.returncode == 64 and "at least 8 characters" in short.stderr
