"""``mcp-hooks replay``: a recorded session fired again against the next hooks folder."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.servers import redis_service, redis_url  # noqa: F401 - fixtures

DENY_RM = """p=$(cat)
case "$p" in *'"rm '*) echo "rm is refused" >&2; exit 2 ;; esac
exit 0
"""
DENY_PUSH = """p=$(cat)
case "$p" in *'git push'*) echo "no pushing" >&2; exit 2 ;; esac
exit 0
"""
ALLOW = "cat >/dev/null\nexit 0\n"
REWRITE_LS = """p=$(cat)
case "$p" in *'"ls"'*) echo '{"modified_input": {"command": "ls -l"}}' ;; esac
exit 0
"""
COMMANDS = ("ls", "rm x", "git push", "cat README")


def record_session(tmp_path: Path, project: Path, state: list[str]) -> dict[str, Any]:
    """Fire a session through hooks v1 (loose-later denies rm, strict-later allows all,
    same rewrites ls); return the environment that reads its log back."""
    v1 = tmp_path / "v1"
    write_hook(v1, "loose-later", script=DENY_RM)
    write_hook(v1, "strict-later", script=ALLOW)
    write_hook(v1, "same", script=REWRITE_LS)
    (project / "notes.txt").write_text("the original work dir")
    env = {**os.environ, "MCP_HOOKS_LOG": str(tmp_path / "events.jsonl")}
    for command in COMMANDS:
        subprocess.run([MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input",
                        json.dumps({"command": command}), "--session", "s1", "--user-dir",
                        str(v1), "--project-dir", str(project), "--managed-dir",
                        str(tmp_path / "none"), *state], env=env, capture_output=True,
                       timeout=60)
    return env


def next_version(tmp_path: Path) -> Path:
    """v2: strict-later now denies git push (stricter), loose-later allows rm (looser)."""
    v2 = tmp_path / "v2"
    write_hook(v2, "loose-later", script=ALLOW)
    write_hook(v2, "strict-later", script=DENY_PUSH)
    write_hook(v2, "same", script=REWRITE_LS)
    return v2


def replay(env: dict[str, str], hooks: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, "replay", "--hooks", str(hooks), "--json", *more],
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("backend", ["file", "redis"])
def test_replay_reports_exactly_the_stricter_and_the_looser_change(
        tmp_path: Path, project: Path, backend: str, request: pytest.FixtureRequest) -> None:
    state = ["--state", request.getfixturevalue("redis_url")] if backend == "redis" else []
    env = record_session(tmp_path, project, state)
    done = replay(env, next_version(tmp_path), "--session", "s1", *state)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["events"] == 4 and report["replayed"] == 4 and report["not_replayed"] == []
    changes = {(c["hook"], c["before"], c["after"], c["tool_name"]) for c in report["changes"]}
    assert changes == {("loose-later", "deny", "allow", "Shell"),
                       ("strict-later", "allow", "deny", "Shell")}
    [stricter] = [c for c in report["changes"] if c["hook"] == "strict-later"]
    assert stricter["reason"] == "no pushing"
    same = replay(env, tmp_path / "v1", "--session", "s1", *state)
    assert same.returncode == 0 and json.loads(same.stdout)["changed"] == 0, same.stdout
    assert (project / "notes.txt").read_text() == "the original work dir"


def test_a_different_rewrite_is_a_change_and_hooks_run_in_a_scratch_copy(
        tmp_path: Path, project: Path) -> None:
    env = record_session(tmp_path, project, [])
    v3 = tmp_path / "v3"
    write_hook(v3, "same", script=f"""p=$(cat)
echo touched > notes.txt
pwd > '{tmp_path / "where"}'
case "$p" in *'"ls"'*) echo '{{"modified_input": {{"command": "ls -a"}}}}' ;; esac
""")
    done = replay(env, v3)
    report = json.loads(done.stdout)
    assert [(c["hook"], c["before"], c["after"], c["modified_input"])
            for c in report["changes"] if c["hook"] == "same"] == [
        ("same", "rewrite", "rewrite", {"command": "ls -a"})]
    assert (project / "notes.txt").read_text() == "the original work dir"
    assert Path((tmp_path / "where").read_text().strip()) != project


def test_events_whose_payload_was_not_logged_are_counted_and_named(
        tmp_path: Path, project: Path) -> None:
    log = tmp_path / "events.jsonl"
    env = {**os.environ, "MCP_HOOKS_LOG": str(log)}
    write_hook(tmp_path / "v1", "any", script=ALLOW)
    big = json.dumps({"command": "x" * 70_000})
    subprocess.run([MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input", big,
                    "--user-dir", str(tmp_path / "v1"), "--project-dir", str(project)],
                   env=env, capture_output=True, timeout=60, check=True)
    [record] = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["event_dropped"] == "size" and "event_fields" not in record
    done = replay(env, tmp_path / "v1")
    assert done.returncode == 0
    report = json.loads(done.stdout)
    assert report["events"] == 1 and report["replayed"] == 0
    assert report["not_replayed"][0]["why"] == "size"
    text = subprocess.run([MCP_HOOKS, "replay", "--hooks", str(tmp_path / "v1")], env=env,
                          capture_output=True, text=True, timeout=60).stdout
    assert "not replayed: size" in text and "1 not replayed" in text


def permission_checker(refused: str) -> str:
    return ("hooks:\n  pre-tool-use:\n    - oracle: PermissionChecker\n"
            f"      config: {{dangerous_commands: [{json.dumps(refused)}], "
            "require_confirmation: false}\n")


def test_hooks_yaml_entries_are_replayed_too(tmp_path: Path, project: Path) -> None:
    """A project's hooks.yaml entry denied ``rm x`` when it was recorded; the next version's
    hooks.yaml (``--hooks DIR/hooks.yaml``) refuses ``git push`` instead: both changes are
    reported against the entry, and the same hooks.yaml again reports none."""
    v1 = tmp_path / "v1"
    write_hook(v1, "same", script=ALLOW)
    (project / ".ahp").mkdir()
    (project / ".ahp" / "hooks.yaml").write_text(permission_checker("rm "))
    env = {**os.environ, "MCP_HOOKS_LOG": str(tmp_path / "events.jsonl")}
    for command in COMMANDS:
        subprocess.run([MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input",
                        json.dumps({"command": command}), "--session", "s1", "--user-dir",
                        str(v1), "--project-dir", str(project), "--trust-project-hooks",
                        "--managed-dir", str(tmp_path / "none")], env=env,
                       capture_output=True, timeout=60)
    records = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [r["decision"] for r in records] == ["allow", "deny", "allow", "allow"]
    v2 = tmp_path / "v2"
    write_hook(v2, "same", script=ALLOW)
    (v2 / "hooks.yaml").write_text(permission_checker("git push"))
    done = replay(env, v2)
    assert done.returncode == 1, done.stdout + done.stderr
    changes = {(c["hook"], c["before"], c["after"]) for c in json.loads(done.stdout)["changes"]}
    assert changes == {("hooks.yaml:permission-checker", "deny", "allow"),
                       ("hooks.yaml:permission-checker", "allow", "deny")}
    (v2 / "hooks.yaml").write_text(permission_checker("rm "))
    same = replay(env, v2)
    assert same.returncode == 0 and json.loads(same.stdout)["changed"] == 0, same.stdout
    (v2 / "hooks.yaml").unlink()  # no hooks.yaml in the folder: entries are not compared
    assert replay(env, v2).returncode == 0
