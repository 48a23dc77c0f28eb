"""The shared store is part of the gate (issue 28, items 6 and 7): trust records signed with
``MCP_HOOKS_TRUST_KEY`` (a record written straight into Redis does not make a hook run), and
the warnings for a store anyone may write and for a password on the command line.

Real processes throughout: ``mcp-hooks serve``, ``trust`` and ``doctor``, a real MCP client,
real Redis servers (one with a password, one without: ``tests/helpers/servers.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
from mcp import Client

from mcp_hooks.registry.digest import hook_digest
from mcp_hooks.registry.signing import record_signature
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.mcp_calls import fire
from tests.helpers.replicas import serving
from tests.helpers.servers import (  # noqa: F401 - fixtures
    Server,
    ServerMissing,
    postgres_service,
    postgres_url,
    redis_server,
    redis_service,
    redis_url,
)

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("untrusted")]

HANG = 120.0  # seconds: only to stop a hang, far from the expected time
KEY = "k" * 32
LS = {"event_type": "before_tool", "tool_name": "Shell", "tool_input": {"command": "ls"}}


@pytest.fixture
def open_redis() -> Iterator[Server]:
    """A Redis with no password: anyone who reaches it may write it."""
    try:
        with redis_server(password=False) as server:
            yield server
    except ServerMissing as exc:
        pytest.skip(str(exc))


def machine(tmp_path: Path, url: str, **more: str) -> dict[str, str]:
    """A machine of its own (state folder), with the store in MCP_HOOKS_STATE."""
    env = {k: v for k, v in os.environ.items() if k != "MCP_HOOKS_TRUST_KEY"}
    return {**env, "XDG_STATE_HOME": str(tmp_path / "state"), "MCP_HOOKS_STATE": url, **more}


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *argv], capture_output=True, text=True, timeout=HANG,
                          env=env, stdin=subprocess.DEVNULL)


def forge(url: str, project: Path, name: str, entry: dict[str, str]) -> None:
    """Write one trust record straight into the store's Redis, as anyone with access can."""
    parts = urlsplit(url)
    prefix = parse_qs(parts.query)["prefix"][0]
    client = redis.Redis.from_url(parts._replace(query="").geturl())
    try:
        client.hset(f"{prefix}trust", json.dumps([str(project.resolve()), name]),
                    json.dumps(entry))
    finally:
        client.close()


def serve_argv(project: Path, user_dir: Path) -> list[str]:
    return [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--stateless",
            "--no-log", "--project-dir", str(project), "--user-dir", str(user_dir)]


async def test_a_record_written_into_the_store_does_not_make_a_hook_run(
        redis_url: str, project: Path, project_hooks: Path, user_dir: Path,  # noqa: F811
        tmp_path: Path) -> None:
    """With a trust key, a hook trusted by `mcp-hooks trust` runs; records written into Redis
    by hand (no signature, a signature under another key, a signed record copied to another
    hook) are ignored, said once on stderr, and the hooks they name do not run."""
    write_hook(project_hooks, "gate", extra="priority: 100\n",
               script="cat >/dev/null\necho 'the gate says no' >&2\nexit 2\n")
    for name in ("unsigned", "wrongkey", "copied"):
        write_hook(project_hooks, name, extra="priority: 900\n",
                   script=f"cat >/dev/null\necho '{name} ran' >&2\nexit 2\n")
    env = machine(tmp_path, redis_url, MCP_HOOKS_TRUST_KEY=KEY)
    done = run(["trust", str(project), "--hook", "gate", "--yes"], env)
    assert done.returncode == 0, done.stderr
    assert "MCP_HOOKS_TRUST_KEY is not set" not in done.stderr

    at = "2026-01-01T00:00:00Z"
    forge(redis_url, project, "unsigned",
          {"sha256": hook_digest(project_hooks / "unsigned"), "trusted_at": at})
    wrong = {"sha256": hook_digest(project_hooks / "wrongkey"), "trusted_at": at}
    forge(redis_url, project, "wrongkey", {**wrong, "sig": record_signature(
        "another key of 32 characters....", str(project.resolve()), "wrongkey", wrong)})
    listed = run(["trust", str(project), "--list"], env)
    signed = json.loads(redis.Redis.from_url(urlsplit(redis_url)._replace(query="").geturl())
                        .hget(f"{parse_qs(urlsplit(redis_url).query)['prefix'][0]}trust",
                              json.dumps([str(project.resolve()), "gate"])) or b"{}")
    assert signed.get("sig"), signed  # what `trust` wrote carries its signature
    forge(redis_url, project, "copied", {**signed,
                                         "sha256": hook_digest(project_hooks / "copied")})
    assert "gate" in listed.stdout

    with serving(serve_argv(project, user_dir), env) as (server, said):
        async with Client(server.url) as client:
            outcome = await fire(client, **LS)
            again = await fire(client, **LS)
        server.proc.terminate()
        server.proc.wait(HANG)
        while (line := server.lines.get(timeout=HANG)) != "":
            said.append(line)
    for answer in (outcome, again):
        assert answer["decision"] == "deny" and answer["blocked_by"] == "gate", answer
        assert [h["name"] for h in answer["hooks"]] == ["gate"], answer
    for name in ("unsigned", "wrongkey", "copied"):
        told = [line for line in said if f"trust record of {name!r}" in line]
        assert len(told) == 1, said  # once, however many events read it
        assert "not signed with MCP_HOOKS_TRUST_KEY" in told[0]
    assert not any("MCP_HOOKS_TRUST_KEY is not set" in line for line in said)


async def test_without_a_key_serve_says_records_are_unsigned(
        redis_url: str, project: Path, user_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    with serving(serve_argv(project, user_dir), machine(tmp_path, redis_url)) as (_, said):
        pass
    unsigned = [line for line in said if "MCP_HOOKS_TRUST_KEY is not set" in line]
    assert len(unsigned) == 1 and unsigned[0].startswith("mcp-hooks serve: warning: "), said
    assert "set MCP_HOOKS_TRUST_KEY" in unsigned[0]
    assert not any("without a password" in line for line in said), said  # this one has one
    done = run(["trust", str(project), "--revoke", "--yes"], machine(tmp_path, redis_url))
    assert "mcp-hooks trust: warning: MCP_HOOKS_TRUST_KEY is not set" in done.stderr


async def test_a_store_without_a_password_is_said_by_serve_and_doctor(
        open_redis: Server, project: Path, user_dir: Path, tmp_path: Path) -> None:
    url = f"{open_redis.url}?prefix=open:"
    env = machine(tmp_path, url, MCP_HOOKS_TRUST_KEY=KEY)
    with serving(serve_argv(project, user_dir), env) as (_, said):
        pass
    open_lines = [line for line in said if "used without a password" in line]
    assert len(open_lines) == 1, said
    assert open_lines[0].startswith("mcp-hooks serve: warning: the state store redis://")
    assert "requirepass" in open_lines[0] and "MCP_HOOKS_STATE" in open_lines[0]

    doctor = run(["doctor", "--json", "--project-dir", str(project)], env)
    report = json.loads(doctor.stdout)
    assert any("used without a password" in w["what"] for w in report["warnings"]), report


def test_a_redis_that_needs_no_password_is_found_with_a_password_in_the_url(
        open_redis: Server) -> None:
    """The URL carries a password, the server never asks for it: said all the same."""
    from mcp_hooks.state.exposure import open_warnings, redis_answers_without_password

    with_password = open_redis.url.replace("redis://", "redis://:anything@")
    assert redis_answers_without_password(with_password)
    warned = open_warnings(with_password)
    assert len(warned) == 1 and "answers without a password (no requirepass)" in warned[0]


def test_a_redis_with_requirepass_is_not_said(redis_url: str) -> None:  # noqa: F811
    from mcp_hooks.state.exposure import open_warnings

    assert open_warnings(redis_url) == []


@pytest.mark.parametrize("argv", [["trust", "--list"], ["log", "-n", "1"],
                                  ["fire", "session_start"]], ids=lambda a: a[0])
def test_a_password_in_state_on_the_command_line_is_said(
        argv: list[str], redis_url: str, project: Path, tmp_path: Path) -> None:  # noqa: F811
    env = {k: v for k, v in os.environ.items() if k != "MCP_HOOKS_STATE"}
    env.update(XDG_STATE_HOME=str(tmp_path / "state"), MCP_HOOKS_PROJECT_DIR=str(project))
    given = run([*argv, "--state", redis_url], env)
    assert (f"mcp-hooks {argv[0]}: warning: --state carries the store's password on the "
            "command line") in given.stderr, given.stderr
    assert "pass the URL in MCP_HOOKS_STATE instead" in given.stderr
    password = urlsplit(redis_url).password
    assert password and password not in given.stderr
    from_env = run(argv, {**env, "MCP_HOOKS_STATE": redis_url})
    assert "--state carries" not in from_env.stderr, from_env.stderr


def test_a_short_trust_key_is_refused_naming_it(project: Path, tmp_path: Path) -> None:
    done = run(["list"], {**machine(tmp_path, "file:"), "MCP_HOOKS_TRUST_KEY": "short",
                          "MCP_HOOKS_PROJECT_DIR": str(project)})
    assert done.returncode == 64, done.stderr
    assert "MCP_HOOKS_TRUST_KEY='***'" in done.stderr and "at least 16" in done.stderr
    assert "short" not in done.stderr


def test_postgres_trust_records_are_signed_and_checked_too(
        postgres_url: str, project: Path, project_hooks: Path, user_dir: Path,  # noqa: F811
        tmp_path: Path) -> None:
    """The same on PostgreSQL: `trust` signs, `fire` on the store runs the signed hook, and
    a row inserted by hand (no signature) does not make its hook run."""
    import psycopg

    write_hook(project_hooks, "gate", extra="priority: 100\n",
               script="cat >/dev/null\necho 'the gate says no' >&2\nexit 2\n")
    write_hook(project_hooks, "stranger", extra="priority: 900\n",
               script="cat >/dev/null\necho 'stranger ran' >&2\nexit 2\n")
    env = machine(tmp_path, postgres_url, MCP_HOOKS_TRUST_KEY=KEY)
    assert run(["trust", str(project), "--hook", "gate", "--yes"], env).returncode == 0
    entry = {"sha256": hook_digest(project_hooks / "stranger"), "trusted_at": "2026-01-01"}
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("INSERT INTO mcp_hooks_trust (project, name, entry) VALUES (%s, %s, %s)",
                     (str(project.resolve()), "stranger", json.dumps(entry)))
        (signed,) = conn.execute("SELECT entry::text FROM mcp_hooks_trust WHERE name = 'gate'"
                                 ).fetchone() or ("{}",)
    assert json.loads(signed).get("sig")
    fired = run(["fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
                 "--project-dir", str(project), "--user-dir", str(user_dir)], env)
    assert fired.returncode == 2 and fired.stdout.startswith("DENIED  before_tool  by gate"), (
        fired.stdout, fired.stderr)
    assert "trust record of 'stranger'" in fired.stderr and "stranger ran" not in fired.stdout
