"""Replica mode: ``serve --replica-id``, ``--no-watch`` and the warning for a transport a load
balancer cannot spread (issue 21, docs/deploy.md).

Real processes throughout: ``mcp-hooks serve --transport http`` started on the file store and
on the Redis of ``tests/helpers/servers.py``, real MCP clients, ``mcp-hooks log --json``.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_hooks.cli.serve import unspread
from mcp_hooks.errors import ConfigError
from mcp_hooks.server.transport import ServeOptions
from mcp_hooks.settings import MAX_REPLICA_ID, Settings
from mcp_hooks.state.url import close_store, open_store
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.mcp_calls import ISSUE, checklist_hook, fire, respond
from tests.helpers.replicas import HANG, serve_argv, serving, wait_for

pytestmark = pytest.mark.anyio

DIGEST = re.compile(r"[0-9a-f]{16}")


@asynccontextmanager
async def clients_of(*argvs: list[str], env: dict[str, str] | None = None
                     ) -> AsyncIterator[list[Client]]:
    async with AsyncExitStack() as stack:
        clients = []
        for argv in argvs:
            server, _ = stack.enter_context(serving(argv, env))
            clients.append(await stack.enter_async_context(Client(server.url)))
        yield clients


def log_json(log: Path) -> list[dict[str, Any]]:
    """``mcp-hooks log --json``: what a person reading the log sees."""
    done = subprocess.run([MCP_HOOKS, "log", "--json", "--log", str(log), "-n", "1000"],
                          capture_output=True, text=True, timeout=HANG,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


# -- --replica-id and hooks_digest ---------------------------------------------------------

async def test_every_record_carries_the_replica_and_events_the_hooks_digest(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    """On the file store: events, async results, signals and answers all say which replica
    wrote them; each event says which version of the hooks decided, and an edited script
    is a new version."""
    write_hook(user_dir, "gate", script="cat >/dev/null\nexit 0\n")
    write_hook(user_dir, "later", extra="async: true\n", script="cat >/dev/null\necho done\n")
    checklist_hook(user_dir)
    log = tmp_path / "events.jsonl"
    argv = serve_argv(project, user_dir, "--stateless", "--replica-id", "web 1 (eu)",
                      "--log", str(log))
    async with clients_of(argv) as (client,):
        await fire(client, event_type="before_tool", session_id="s", tool_name="Bash",
                   payload={"tool_input": {"command": "ls"}})
        blocked = await fire(client, event_type="pre-issue-submit", session_id="issue",
                             payload={"issue": ISSUE})
        (signal,) = blocked["signals"]
        await respond(client, signal_id=signal["header"]["id"], action="abort")
        wait_for("the async hook's result", lambda: any(
            r.get("kind") == "async_result" for r in log_json(log)))

        records = log_json(log)
        assert {r["kind"] for r in records} == {"event", "async_result"}
        assert all(r["replica"] == "web 1 (eu)" for r in records), records
        events = [r for r in records if r["kind"] == "event"]
        first = events[0]["hooks_digest"]
        assert DIGEST.fullmatch(first), first
        assert all(e["hooks_digest"] == first for e in events)
        signal_lines = [json.loads(line) for line in
                        (tmp_path / "signals.jsonl").read_text().splitlines()]
        kinds = [(r["kind"], r.get("type") or r.get("action")) for r in signal_lines]
        assert sorted(kinds) == [("response", "abort"), ("signal", "async_result"),
                                 ("signal", "checklist_incomplete")]
        assert all(r["replica"] == "web 1 (eu)" for r in signal_lines), signal_lines

        # the same hooks, one script edited: the next events name another version
        (user_dir / "gate" / "scripts" / "run").write_text("#!/bin/sh\ncat >/dev/null\n"
                                                            "exit 0  # v2\n")

        async def digest_now() -> str:
            await fire(client, event_type="before_tool", session_id="s2", tool_name="Bash",
                       payload={"tool_input": {"command": "ls"}})
            return str([r for r in log_json(log) if r["kind"] == "event"][-1]["hooks_digest"])

        deadline = time.monotonic() + HANG
        second = await digest_now()
        while second == first and time.monotonic() < deadline:
            second = await digest_now()
        assert second != first and DIGEST.fullmatch(second)


async def test_two_replicas_on_redis_name_themselves_and_the_same_hooks(
        redis_url: str, project: Path, user_dir: Path, tmp_path: Path) -> None:
    """Two replicas of one read-only hooks folder on one Redis: the shared log tells which
    replica answered each event, and both answered with the same version of the hooks."""
    write_hook(user_dir, "gate", script="cat >/dev/null\nexit 0\n")
    argvs = [serve_argv(project, user_dir, "--stateless", "--no-watch", "--no-log",
                        "--replica-id", name, "--state", redis_url) for name in ("a", "b")]
    async with clients_of(*argvs) as clients:
        for n in range(4):
            await fire(clients[n % 2], event_type="before_tool", session_id=f"s{n}",
                       tool_name="Bash", payload={"tool_input": {"command": "ls"}})
    store = open_store(redis_url)
    try:
        events = [r for r in store.read("events") if r.get("kind") == "event"]
    finally:
        close_store(store)
    assert [e["replica"] for e in events] == ["a", "b", "a", "b"]
    digests = {e["hooks_digest"] for e in events}
    assert len(digests) == 1 and DIGEST.fullmatch(digests.pop())


async def test_the_replica_name_defaults_to_hostname_and_pid(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    """No --replica-id: the server's records name its host and process."""
    write_hook(user_dir, "gate", script="cat >/dev/null\nexit 0\n")
    log = tmp_path / "events.jsonl"
    with serving(serve_argv(project, user_dir, "--stateless", "--log", str(log))) as (server, _):
        async with Client(server.url) as client:
            await fire(client, event_type="before_tool", tool_name="Bash",
                       payload={"tool_input": {"command": "ls"}})
        pid = server.proc.pid
    assert [r["replica"] for r in log_json(log)] == [f"{socket.gethostname()}:{pid}"]


def test_fire_stamps_the_replica_its_environment_names(project: Path, user_dir: Path,
                                                      tmp_path: Path) -> None:
    """``MCP_HOOKS_REPLICA_ID`` stamps the records of any command, not only ``serve``."""
    log = tmp_path / "events.jsonl"
    write_hook(user_dir, "gate", script="cat >/dev/null\nexit 0\n")
    done = subprocess.run(
        [MCP_HOOKS, "fire", "--project-dir", str(project), "--user-dir", str(user_dir),
         "--log", str(log), "--no-server", "--tool", "Bash", "before_tool"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=HANG,
        env={**os.environ, "MCP_HOOKS_REPLICA_ID": "batch-7"})
    assert done.returncode == 0, done.stderr
    (record,) = log_json(log)
    assert record["replica"] == "batch-7" and DIGEST.fullmatch(record["hooks_digest"])


@pytest.mark.parametrize("given, said", [
    ("web\n1", "not printable"),
    ("\x1b[31mred", "not printable"),
    ("x" * (MAX_REPLICA_ID + 1), f"{MAX_REPLICA_ID + 1} characters"),
    ("   ", "empty"),
])
def test_a_bad_replica_id_is_refused_naming_the_flag(given: str, said: str, project: Path,
                                                     user_dir: Path) -> None:
    done = subprocess.run(serve_argv(project, user_dir, "--replica-id", given),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=HANG)
    assert done.returncode == 64, done.stderr
    (line,) = done.stderr.splitlines()
    assert f"--replica-id: the replica name is {said}; give up to {MAX_REPLICA_ID} " \
           "printable characters" in line
    with pytest.raises(ConfigError, match="MCP_HOOKS_REPLICA_ID: the replica name is"):
        Settings.from_env({"MCP_HOOKS_REPLICA_ID": given + "\x00"})
    with pytest.raises(ConfigError, match="replica_id: the replica name is"):
        Settings(replica_id=given + "\x07")


def test_a_replica_id_at_the_limit_is_kept() -> None:
    name = "é" * MAX_REPLICA_ID
    assert Settings(replica_id=f" {name} ").replica_id == name
    assert Settings.from_env({"MCP_HOOKS_REPLICA_ID": "web-2"}).replica_id == "web-2"
    assert Settings.from_env({}).replica_id is None


# -- --no-watch -----------------------------------------------------------------------------

async def test_no_watch_never_picks_up_a_hook_added_after_start(
        project: Path, user_dir: Path) -> None:
    """Two servers on one folder, one with --no-watch: a hook added later reaches the
    watching one (and runs there), never the other."""
    write_hook(user_dir, "first", script="cat >/dev/null\nexit 0\n")
    async with clients_of(serve_argv(project, user_dir, "--stateless", "--no-log"),
                          serve_argv(project, user_dir, "--stateless", "--no-log",
                                     "--no-watch")) as (watching, fixed):
        async def names(client: Client) -> set[str]:
            result = await client.call_tool("list_hooks", {})
            assert result.structured_content is not None
            return {h["name"] for h in result.structured_content["hooks"]}

        assert await names(watching) == await names(fixed) == {"first"}
        write_hook(user_dir, "added", script="cat >/dev/null\necho 'no' >&2\nexit 2\n")
        deadline = time.monotonic() + HANG
        while "added" not in await names(watching) and time.monotonic() < deadline:
            time.sleep(0.05)
        denied = await fire(watching, event_type="before_tool", tool_name="Bash",
                            payload={"tool_input": {"command": "ls"}})
        assert denied["decision"] == "deny" and denied["blocked_by"] == "added"

        assert await names(fixed) == {"first"}
        allowed = await fire(fixed, event_type="before_tool", tool_name="Bash",
                             payload={"tool_input": {"command": "ls"}})
        assert allowed["decision"] == "allow"


def test_no_watch_is_a_setting() -> None:
    assert Settings.from_env({}).watch is True
    assert Settings.from_env({"MCP_HOOKS_WATCH": "0"}).watch is False
    assert Settings.from_env({"MCP_HOOKS_WATCH": "1"}, watch=False).watch is False
    with pytest.raises(ConfigError, match="MCP_HOOKS_WATCH"):
        Settings.from_env({"MCP_HOOKS_WATCH": "sometimes"})


# -- the warning for a transport a load balancer cannot spread -------------------------------

def test_a_shared_store_over_stateful_http_warns_at_start(
        redis_url: str, project: Path, user_dir: Path) -> None:
    warning = ("mcp-hooks serve: warning: --state is a shared store, but --transport http "
               "without --stateless keeps each MCP session on the replica that opened it, so "
               "a load balancer cannot spread the clients over replicas; serve replicas with "
               "--transport http --stateless (docs/deploy.md)\n")
    env = {**os.environ, "MCP_HOOKS_STATE": redis_url, "MCP_HOOKS_TRUST_KEY": "k" * 32}
    with serving(serve_argv(project, user_dir, "--no-log"), env) as (_, said):
        assert said.count(warning) == 1, said
    with serving(serve_argv(project, user_dir, "--no-log", "--stateless"), env) as (_, said):
        assert not any("warning" in line for line in said), said
    with serving(serve_argv(project, user_dir, "--no-log")) as (_, said):  # file: one machine
        assert not any("warning" in line for line in said), said


@pytest.mark.parametrize("transport, stateless, state, warns", [
    ("sse", False, "redis://h", "--transport sse keeps each client's stream"),
    ("sse", False, "file:", None),
    ("http", False, "postgresql://u@h/d", "--transport http without --stateless"),
    ("http", True, "postgresql://u@h/d", None),
    ("stdio", False, "redis://h", None),
])
def test_which_transports_warn(transport: Any, stateless: bool, state: str,
                               warns: str | None) -> None:
    said = unspread(ServeOptions(transport=transport, stateless=stateless), state)
    if warns is None:
        assert said is None
    else:
        assert said is not None and warns in said and "\n" not in said
        assert "--transport http --stateless" in said
