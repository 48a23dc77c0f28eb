"""Trust in a shared store: ``mcp-hooks trust --state URL`` on one machine serves every replica.

Real processes throughout: ``trust`` run with one home (machine A), a ``serve --state URL``
replica and a ``fire --state URL`` run with another (machine B), on the Redis or PostgreSQL of
``tests/helpers/servers.py``; nothing is shared between the machines but the store.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from mcp_hooks.registry.trust import SHARED_REFRESH
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.forward_served import payload
from tests.helpers.mcp_calls import fire
from tests.helpers.proxied import proxied, text_of, upstream
from tests.helpers.restartable import restartable
from tests.helpers.servers import (  # noqa: F401 - fixtures
    postgres_service,
    postgres_url,
    redis_service,
    redis_url,
)

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("untrusted")]

RELOAD_TIMEOUT = 60.0  # seconds a replica may take to see an edited hook (stops a hang only)


@pytest.fixture(params=["redis", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


def machine(tmp_path: Path, name: str) -> dict[str, str]:
    """The environment of a machine of its own: its own state folder (trust file, logs)."""
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / f"state-{name}")}


def trust(url: str, project: Path, env: dict[str, str], *args: str
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, "trust", str(project), *args, "--yes", "--state", url],
                          capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def hooks(project_hooks: Path) -> Path:
    write_hook(project_hooks, "gate", extra="priority: 500\n",
               script="cat >/dev/null\necho 'the gate says no' >&2\nexit 2\n")
    write_hook(project_hooks, "stranger", extra="priority: 900\n",
               script="cat >/dev/null\necho 'stranger ran' >&2\nexit 2\n")
    return project_hooks


async def test_trust_once_serves_a_replica_on_another_machine(
        url: str, hooks: Path, project: Path, user_dir: Path, tmp_path: Path) -> None:
    a, b = machine(tmp_path, "a"), machine(tmp_path, "b")
    done = trust(url, project, a, "--hook", "gate")
    assert done.returncode == 0, done.stderr
    assert "Trust store: the state store " in done.stdout and "trusted gate" in done.stdout
    assert not (tmp_path / "state-a" / "mcp-hooks" / "trust.json").exists()  # in the store
    listed = trust(url, project, a, "--list")
    assert listed.returncode == 0, listed.stderr
    assert "gate      trusted" in listed.stdout and "stranger  untrusted" in listed.stdout

    # a one-shot fire on machine B reads the same digests
    fired = subprocess.run(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
         "--project-dir", str(project), "--user-dir", str(user_dir), "--state", url],
        capture_output=True, text=True, timeout=120, env=b, stdin=subprocess.DEVNULL)
    assert fired.returncode == 2, fired.stderr
    assert fired.stdout.startswith("DENIED  before_tool  by gate"), fired.stdout

    with background([MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--stateless",
                     "--project-dir", str(project), "--user-dir", str(user_dir),
                     "--state", url], env=b, capture_stdout=True, timeout=120) as server:
        async with Client(server.url) as client:
            outcome = await fire(client, event_type="before_tool", tool_name="Shell",
                                 tool_input={"command": "ls"})
            assert outcome["decision"] == "deny" and outcome["blocked_by"] == "gate"
            assert [h["name"] for h in outcome["hooks"]] == ["gate"]  # stranger: skipped
            assert any("stranger" in w for w in outcome["warnings"]), outcome["warnings"]

            # tampered after trust: skipped (changed since trusted), never run
            script = hooks / "gate" / "scripts" / "run"
            script.write_text("#!/bin/sh\ncat >/dev/null\necho 'tampered' >&2\nexit 2\n")
            deadline = time.monotonic() + RELOAD_TIMEOUT
            while True:
                outcome = await fire(client, event_type="before_tool", tool_name="Shell",
                                     tool_input={"command": "ls"})
                if outcome["decision"] == "allow" or time.monotonic() > deadline:
                    break
                assert outcome["reason"] == "the gate says no"  # the old one, never tampered
            assert outcome["decision"] == "allow", outcome
            assert outcome["hooks"] == []
            assert any("gate" in w for w in outcome["warnings"]), outcome["warnings"]

            # trusted again on machine A: the replica runs it within a second or so
            assert trust(url, project, a, "--hook", "gate").returncode == 0
            deadline = time.monotonic() + RELOAD_TIMEOUT
            while True:
                outcome = await fire(client, event_type="before_tool", tool_name="Shell",
                                     tool_input={"command": "ls"})
                if outcome["decision"] == "deny" or time.monotonic() > deadline:
                    break
            assert outcome["reason"] == "tampered"


async def test_a_store_without_digests_trusts_nothing(url: str, hooks: Path, project: Path,
                                                      user_dir: Path, tmp_path: Path) -> None:
    """Trusted on this machine's file only: a replica on the shared store does not run it."""
    done = subprocess.run([MCP_HOOKS, "trust", str(project), "--hook", "gate", "--yes"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env=machine(tmp_path, "b"))
    assert done.returncode == 0, done.stderr
    fired = subprocess.run(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
         "--project-dir", str(project), "--user-dir", str(user_dir), "--state", url],
        capture_output=True, text=True, timeout=120, env=machine(tmp_path, "b"),
        stdin=subprocess.DEVNULL)
    assert fired.returncode == 0, fired.stderr
    assert fired.stdout.startswith("ALLOWED  before_tool"), fired.stdout
    assert "untrusted" in fired.stdout


async def test_a_store_lost_while_serving_neither_revokes_nor_grants(
        hooks: Path, project: Path, user_dir: Path, tmp_path: Path) -> None:
    """The replica read the digests before the store went away: the trusted guard keeps
    running (an outage does not switch the project's guards off), the stranger stays out.
    Under ``--on-fault warn`` (under ``block`` mcp-hooks itself denies while the store is
    lost), where the hooks still run."""
    with restartable("redis") as server:
        assert trust(server.url, project, machine(tmp_path, "a"), "--hook", "gate"
                     ).returncode == 0
        with background([MCP_HOOKS, "serve", "--transport", "http", "--port", "0",
                         "--stateless", "--on-fault", "warn", "--project-dir", str(project),
                         "--user-dir", str(user_dir), "--state", server.url],
                        env=machine(tmp_path, "b"),
                        capture_stdout=False, timeout=120) as replica:
            async with Client(replica.url) as client:
                before = await fire(client, event_type="before_tool", tool_name="Shell",
                                    tool_input={"command": "ls"})
                assert before["blocked_by"] == "gate"
                server.stop()  # the store is gone
                time.sleep(SHARED_REFRESH + 0.5)  # past the cached reading: read again
                after = await fire(client, event_type="before_tool", tool_name="Shell",
                                   tool_input={"command": "ls"})
                assert after["decision"] == "deny" and after["blocked_by"] == "gate", after
                assert [h["name"] for h in after["hooks"]] == ["gate"]


def test_the_python_api_on_a_shared_store_trusts_by_its_digests(
        url: str, hooks: Path, project: Path, user_dir: Path, tmp_path: Path) -> None:
    """``Hooks(settings=Settings(state=URL))`` (an app's own replicas) reads the same digests:
    the gate trusted on machine A runs here, the stranger stays skipped."""
    from mcp_hooks import Hooks, Settings

    done = trust(url, project, machine(tmp_path, "a"), "--hook", "gate")
    assert done.returncode == 0, done.stderr
    settings = Settings(project_dir=project, user_dir=user_dir, state=url)
    with Hooks(settings=settings) as app:
        outcome = app.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"},
                           work_dir=str(project))
    assert outcome.decision == "deny" and outcome.blocked_by == "gate", outcome
    assert any("stranger" in w and "not trusted" in w for w in outcome.warnings), outcome


def test_a_bridge_on_a_shared_store_trusts_by_its_digests(
        url: str, hooks: Path, project: Path, user_dir: Path, tmp_path: Path) -> None:
    """A host's bridge run with ``MCP_HOOKS_STATE`` (its engine in its own process) checks
    project hooks against the digests in the store, as ``fire`` and ``serve`` do: the gate
    trusted there runs and denies. (It used to check the machine's trust file alone: the
    trusted gate was skipped as untrusted and the call went through.)"""
    a, b = machine(tmp_path, "a"), machine(tmp_path, "b")
    done = trust(url, project, a, "--hook", "gate")
    assert done.returncode == 0, done.stderr
    bridged = subprocess.run(
        [MCP_HOOKS, "bridge", "claude-code", "--user-dir", str(user_dir), "--project-dir",
         str(project)], input=payload("claude-code", "PreToolUse.bash", project),
        capture_output=True, text=True, timeout=120,
        env={**b, "MCP_HOOKS_STATE": url, "MCP_HOOKS_SERVER": ""})
    assert bridged.returncode == 0, bridged.stderr
    answer = json.loads(bridged.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", answer
    assert "the gate says no" in answer["permissionDecisionReason"]
    assert "stranger ran" not in bridged.stdout  # the hook nobody trusted stays out
    assert "not run: stranger (untrusted)" in bridged.stdout


async def test_the_proxy_on_a_shared_store_trusts_by_its_digests(
        url: str, hooks: Path, project: Path, user_dir: Path, tmp_path: Path) -> None:
    """``mcp-hooks proxy --state URL``: the gate trusted in the store gates the upstream's
    tools (the proxy used to check the machine's trust file alone: the trusted gate was
    skipped as untrusted and the upstream was called)."""
    a, b = machine(tmp_path, "a"), machine(tmp_path, "b")
    done = trust(url, project, a, "--hook", "gate")
    assert done.returncode == 0, done.stderr
    async with proxied(tmp_path, project, user_dir, "--upstream", upstream("tools"),
                       "--state", url, env=b) as client:
        result = await client.call_tool("echo", {"text": "through?"})
    assert result.is_error and "the gate says no" in text_of(result), text_of(result)


def test_the_dashboard_on_a_shared_store_lists_by_its_digests(
        url: str, hooks: Path, project: Path, user_dir: Path, tmp_path: Path) -> None:
    """``mcp-hooks dashboard --state URL``'s Hooks page says what the replicas run: the gate
    trusted in the store as trusted, the stranger not (it used to list both untrusted)."""
    a, b = machine(tmp_path, "a"), machine(tmp_path, "b")
    done = trust(url, project, a, "--hook", "gate")
    assert done.returncode == 0, done.stderr
    argv = [MCP_HOOKS, "dashboard", "--port", "0", "--state", url, "--project-dir",
            str(project), "--user-dir", str(user_dir)]
    with background(argv, env=b, announce=r"serving at (\S+)", timeout=120) as board:
        root = board.url.rsplit("/", 1)[0]  # it announces its Activity page
        listed = httpx2.get(f"{root}/api/hooks?window=all", timeout=60)
    trusted = {h["name"]: h["trusted"] for h in listed.json()["hooks"]}
    assert trusted == {"gate": True, "stranger": False}, listed.text


def test_a_hook_added_on_one_machine_runs_on_another(url: str, project: Path,
                                                      tmp_path: Path) -> None:
    """``add --scope project`` trusts the copy it made where the settings say: with
    ``MCP_HOOKS_STATE`` the store, which every replica reads (it used to write the machine's
    trust file, so the guard it added did not run anywhere else). A dry run, or a user
    hook, records no trust and needs no store."""
    a, b = machine(tmp_path, "a"), machine(tmp_path, "b")
    dry = subprocess.run([MCP_HOOKS, "add", "block-dangerous-commands", "--scope", "project",
                          "--dry-run"], capture_output=True, text=True, timeout=120, cwd=project,
                         env={**a, "MCP_HOOKS_STATE": "redis://127.0.0.1:1/0"})
    assert dry.returncode == 0 and "would add block-dangerous-commands" in dry.stdout, dry.stderr
    mine = subprocess.run([MCP_HOOKS, "add", "block-dangerous-commands", "--user-dir",
                           str(tmp_path / "mine")], capture_output=True, text=True, timeout=120,
                          cwd=project, env={**a, "MCP_HOOKS_STATE": "redis://127.0.0.1:1/0"})
    assert mine.returncode == 0 and not mine.stderr, mine.stderr  # a user hook: no trust
    added = subprocess.run([MCP_HOOKS, "add", "block-dangerous-commands", "--scope", "project"],
                           capture_output=True, text=True, timeout=120, cwd=project,
                           env={**a, "MCP_HOOKS_STATE": url})
    assert added.returncode == 0 and "trusted for this project" in added.stdout, added.stderr
    assert not (tmp_path / "state-a" / "mcp-hooks" / "trust.json").exists()  # in the store
    # written without MCP_HOOKS_TRUST_KEY, as `trust --state` says: unsigned, said on stderr
    assert "mcp-hooks add: warning: MCP_HOOKS_TRUST_KEY is not set" in added.stderr
    fired = subprocess.run(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input",
         '{"command": "rm -rf /"}', "--project-dir", str(project), "--state", url,
         "--no-server"], capture_output=True, text=True, timeout=120, env=b,
        stdin=subprocess.DEVNULL)
    assert fired.returncode == 2, fired.stdout + fired.stderr
