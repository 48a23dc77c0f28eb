"""What runs is what was trusted, on every path: ``serve --no-watch`` re-checks a project
hook's digest before it runs and follows trust changes in the store; a script changed between
an event's start and its hook's turn is not run either (issue 28, item 2; registry/gate.py).

Real processes throughout: ``mcp-hooks trust`` and ``mcp-hooks serve --transport http``, a
real MCP client, the Redis of ``tests/helpers/servers.py``.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.mcp_calls import fire
from tests.helpers.servers import redis_service, redis_url  # noqa: F401 - fixtures

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("untrusted")]

HANG = 120.0  # seconds: only to stop a hang, far from the expected time
GATE = "cat >/dev/null\necho 'the gate says no' >&2\nexit 2\n"
TAMPERED = "#!/bin/sh\ncat >/dev/null\necho 'tampered ran' >&2\nexit 2\n"
LS = {"event_type": "before_tool", "tool_name": "Shell", "tool_input": {"command": "ls"}}


def machine(tmp_path: Path) -> dict[str, str]:
    """The environment of this test's machine: its own state folder (trust file, logs)."""
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}


def trust(project: Path, env: dict[str, str], *args: str) -> None:
    done = subprocess.run([MCP_HOOKS, "trust", str(project), "--yes", *args],
                          capture_output=True, text=True, timeout=HANG, env=env,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr


def serve(project: Path, user_dir: Path, *more: str) -> list[str]:
    return [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--stateless",
            "--no-log", "--project-dir", str(project), "--user-dir", str(user_dir), *more]


async def until(client: Client, done: Any) -> dict[str, Any]:
    """Fire ``LS`` until ``done(outcome)`` (the bound only stops a hang)."""
    deadline = time.monotonic() + HANG
    while True:
        outcome = await fire(client, **LS)
        if done(outcome) or time.monotonic() > deadline:
            return outcome
        time.sleep(0.05)


def held(outcome: dict[str, Any], name: str, status: str) -> bool:
    return any("not trusted, so not run" in w and f"{name} ({status})" in w
               for w in outcome["warnings"])


@pytest.mark.parametrize("watch", [[], ["--no-watch"]], ids=["watch", "no-watch"])
async def test_a_script_edited_on_disk_is_not_run_at_the_next_event(
        watch: list[str], project: Path, project_hooks: Path, user_dir: Path,
        tmp_path: Path) -> None:
    """A `git pull` in a served project: the next event reports the hook changed and does
    not run the edited script, with or without the watcher."""
    env = machine(tmp_path)
    write_hook(project_hooks, "gate", script=GATE)
    trust(project, env, "--hook", "gate")
    with background(serve(project, user_dir, *watch), env=env, capture_stdout=True,
                    timeout=HANG) as server:
        async with Client(server.url) as client:
            first = await fire(client, **LS)
            assert first["decision"] == "deny" and first["reason"] == "the gate says no"

            (project_hooks / "gate" / "scripts" / "run").write_text(TAMPERED)
            after = await fire(client, **LS)
            assert after["decision"] == "allow", after  # the tampered script did not run
            assert after["hooks"] == [] and held(after, "gate", "changed"), after
            listed = await client.call_tool("list_hooks", {})
            assert listed.structured_content is not None
            trusts = {h["name"]: h.get("trust") for h in listed.structured_content["hooks"]}
            assert trusts.get("gate") == "changed", listed.structured_content


@pytest.mark.parametrize("watch", [[], ["--no-watch"]], ids=["watch", "no-watch"])
async def test_a_script_changed_after_the_event_began_is_not_run(
        watch: list[str], project: Path, project_hooks: Path, user_dir: Path,
        tmp_path: Path) -> None:
    """The window between selecting an event's hooks and running one of them: a user hook
    that runs first rewrites the trusted project hook's script; the project hook, checked
    again just before it runs, is not run (its warning says so)."""
    env = machine(tmp_path)
    target = project_hooks / "gate" / "scripts" / "run"
    write_hook(project_hooks, "gate", script=GATE)
    write_hook(user_dir, "puller", extra="priority: 900\n",
               script=f"cat >/dev/null\nprintf '%s' '{TAMPERED}' > '{target}'\nexit 0\n")
    trust(project, env, "--hook", "gate")
    with background(serve(project, user_dir, *watch), env=env, capture_stdout=True,
                    timeout=HANG) as server:
        async with Client(server.url) as client:
            outcome = await fire(client, **LS)
    assert "tampered" in target.read_text()  # the puller ran first
    assert outcome["decision"] == "allow", outcome
    assert [h["name"] for h in outcome["hooks"]] == ["puller"], outcome
    assert held(outcome, "gate", "changed"), outcome["warnings"]


async def test_no_watch_follows_trust_changes_in_a_shared_store(
        redis_url: str, project: Path, project_hooks: Path, user_dir: Path,  # noqa: F811
        tmp_path: Path) -> None:
    """`trust --state URL --revoke` on another machine stops the hook on a --no-watch
    replica within about a second; a grant (of a hook untrusted at start too) starts it."""
    admin = {**machine(tmp_path / "admin"), "MCP_HOOKS_STATE": redis_url}
    write_hook(project_hooks, "gate", extra="priority: 500\n", script=GATE)
    write_hook(project_hooks, "stranger", extra="priority: 900\n",
               script="cat >/dev/null\necho 'stranger ran' >&2\nexit 2\n")
    trust(project, admin, "--hook", "gate")
    replica = {**machine(tmp_path / "replica"), "MCP_HOOKS_STATE": redis_url}
    with background(serve(project, user_dir, "--no-watch"), env=replica,
                    capture_stdout=True, timeout=HANG) as server:
        async with Client(server.url) as client:
            first = await fire(client, **LS)
            assert first["blocked_by"] == "gate" and held(first, "stranger", "untrusted")

            trust(project, admin, "--revoke", "--hook", "gate")
            revoked = await until(client, lambda o: o["decision"] == "allow")
            assert revoked["decision"] == "allow" and revoked["hooks"] == [], revoked
            assert held(revoked, "gate", "untrusted"), revoked["warnings"]

            trust(project, admin, "--hook", "gate")
            granted = await until(client, lambda o: o["decision"] == "deny")
            assert granted["blocked_by"] == "gate", granted

            trust(project, admin, "--hook", "stranger")
            stranger = await until(client, lambda o: o["blocked_by"] == "stranger")
            assert stranger["reason"] == "stranger ran", stranger


async def test_no_watch_checks_a_trusted_hooks_yaml_before_it_runs(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    """The project's hooks.yaml (an entry that runs a command) trusted, then edited on disk
    under `serve --no-watch`: the next event does not run the new command and says the
    project's hooks.yaml is not trusted."""
    env = machine(tmp_path)
    ahp = project / ".ahp"
    ahp.mkdir()
    gate = "hooks:\n  pre-issue-submit:\n    - oracle: TestGate\n      config: {command: '%s'}\n"
    (ahp / "hooks.yaml").write_text(gate % "touch trusted-ran")
    trust(project, env)
    issue = {"event_type": "pre-issue-submit", "work_dir": str(project),
             "payload": {"issue": {"id": "FEAT-1", "files_changed": ["a.py"]}}}
    with background(serve(project, user_dir, "--no-watch"), env=env, capture_stdout=True,
                    timeout=HANG) as server:
        async with Client(server.url) as client:
            await fire(client, **issue)
            assert (project / "trusted-ran").exists()
            (ahp / "hooks.yaml").write_text(gate % "touch tampered-ran")
            after = await fire(client, **issue)
            assert not (project / "tampered-ran").exists()
            assert any("not trusted" in w for w in after["warnings"]), after

            trust(project, env)  # trusted as it is now: the next event runs it
            await fire(client, **issue)
            assert (project / "tampered-ran").exists()
            trust(project, env, "--revoke")  # and revoked: the next event does not
            (project / "tampered-ran").unlink()
            revoked = await fire(client, **issue)
            assert not (project / "tampered-ran").exists()
            assert any("not trusted" in w for w in revoked["warnings"]), revoked
