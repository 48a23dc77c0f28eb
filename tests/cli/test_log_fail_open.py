"""Fail-open passes, counted: an event a failing hook let through carries ``fail_open`` in its
event-log record, and ``mcp-hooks log --fail-open`` lists only those (real hooks, real
``mcp-hooks fire`` runs, the real log file)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import MCP_HOOKS, write_hook


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def fire(user_dir: Path, project: Path, log: Path, command: str, *more: str,
         ) -> subprocess.CompletedProcess[str]:
    return run("fire", "before_tool", "--tool", "Shell", "--input",
               json.dumps({"command": command}), "--session", command.split()[0],
               "--user-dir", str(user_dir), "--project-dir", str(project), "--log", str(log),
               *more)


def records(log: Path) -> dict[str, dict[str, Any]]:
    """The event records by session (each test fires one event per session)."""
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return {r["session_id"]: r for r in lines if r.get("kind") == "event"}


def test_a_failing_fail_open_hook_marks_the_event_and_log_lists_only_those(
        user_dir: Path, project: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "crashy", extra="matcher:\n  tool: Shell\n  pattern: '^crash'\n",
               script="echo 'fell over' >&2\nexit 1\n")
    write_hook(user_dir, "guard", extra="matcher:\n  tool: Shell\n  pattern: 'crash-and-rm'\n",
               script="echo 'no' >&2\nexit 2\n")
    log = tmp_path / "events.jsonl"
    assert fire(user_dir, project, log, "ls").returncode == 0
    assert fire(user_dir, project, log, "crash now").returncode == 0
    assert fire(user_dir, project, log, "crash-and-rm x").returncode == 2  # denied anyway
    by_session = records(log)
    assert by_session["crash"]["fail_open"] == ["crashy"]
    assert by_session["crash"]["decision"] == "allow"
    assert "fail_open" not in by_session["ls"]
    assert "fail_open" not in by_session["crash-and-rm"]

    listed = run("log", "--log", str(log), "--fail-open", "--json", "-n", "0")
    assert listed.returncode == 0, listed.stderr
    shown = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["session_id"], r["fail_open"]) for r in shown] == [("crash", ["crashy"])]
    text = run("log", "--log", str(log), "--fail-open")
    assert len(text.stdout.splitlines()) == 1 and "session=crash" in text.stdout
    assert len(run("log", "--log", str(log)).stdout.splitlines()) == 3


def test_a_fault_let_through_under_on_fault_warn_is_marked(
        user_dir: Path, project: Path, tmp_path: Path) -> None:
    broken = user_dir / "no-script"
    broken.mkdir()
    (broken / "HOOK.md").write_text("---\nname: no-script\ndescription: d\ntrigger: before_tool\n"
                                    "---\n")
    (project / ".ahp").mkdir()
    (project / ".ahp" / "hooks.yaml").write_text(
        "hooks:\n  pre-tool-use:\n    - {oracle: NoSuchOracle}\n")
    log = tmp_path / "events.jsonl"
    env = {"MCP_HOOKS_ON_FAULT": "warn"}
    done = run("fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
               "--session", "warned", "--user-dir", str(user_dir), "--project-dir",
               str(project), "--log", str(log), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert records(log)["warned"]["fail_open"] == ["mcp-hooks", "hooks.yaml"]
    blocked = run("fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
                  "--session", "blocked", "--user-dir", str(user_dir), "--project-dir",
                  str(project), "--log", str(log))
    assert blocked.returncode == 2
    assert "fail_open" not in records(log)["blocked"]
    after = run("fire", "after_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
                "--session", "after", "--user-dir", str(user_dir), "--project-dir",
                str(project), "--log", str(log), env=env)
    assert after.returncode == 0
    assert "fail_open" not in records(log)["after"]  # nothing to let through: it cannot block
