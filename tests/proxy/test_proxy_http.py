"""The proxy over HTTP: served downstream over streamable HTTP and SSE (with a bearer token),
and in front of upstreams that are themselves streamable HTTP or SSE servers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.http_clients import free_port, http_client, wait_listening
from tests.helpers.proxied import UPSTREAM, proxied, recorder, records, text_of, upstream, wait_for
from tests.helpers.raw_session import running

pytestmark = pytest.mark.anyio

TOKEN = "proxy-test-token"


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_served_over_http_with_a_token(
    transport: str, tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "no-secrets", extra="matcher:\n  pattern: secret\n",
               script="echo 'no secrets' >&2\nexit 2\n")
    args = [MCP_HOOKS, "proxy", "--transport", transport, "--port", "0", "--token", TOKEN,
            "--upstream", upstream("alpha", "--tools", "echo"), "--user-dir", str(user_dir),
            "--project-dir", str(project), "--log", str(tmp_path / "events.jsonl")]
    with running(args, announce=r"serving \w+ at (\S+)") as url:
        async with http_client(url, transport, TOKEN) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
            assert text_of(await client.call_tool("echo", {"text": "over http"})) == "over http"
            denied = await client.call_tool("echo", {"text": "a secret"})
            assert denied.is_error and "no secrets" in text_of(denied)
        async with httpx2.AsyncClient(timeout=10) as http:
            response = await http.get(url) if transport == "sse" else await http.post(
                url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert response.status_code == 401
            wrong = await http.post(url, headers={"Authorization": "Bearer wrong"},
                                    json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert wrong.status_code == 401


def test_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    done = subprocess.run([MCP_HOOKS, "proxy", "--transport", "http", "--host", "0.0.0.0",
                           "--upstream", "a=true"], capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "MCP_HOOKS_TOKEN"})
    assert done.returncode == 64
    assert "without a token" in done.stderr


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_a_busy_port_is_one_line(tmp_path: Path, transport: str) -> None:
    started = tmp_path / "started"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [MCP_HOOKS, "proxy", "--transport", transport, "--port", str(port),
             "--upstream", f"a=touch {started}", "--no-log"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 1  # a run-time error, not a usage error (64) nor a deny (2)
    assert done.stderr == (
        f"mcp-hooks proxy: cannot listen on 127.0.0.1:{port}: the address is already in use; "
        "stop the other server or pass another --port\n")
    assert not started.exists()  # refused before any upstream started


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_upstreams_over_http(
    kind: str, tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "no-secrets", extra="matcher:\n  pattern: secret\n",
               script="echo 'no secrets' >&2\nexit 2\n")
    port = free_port()
    path = "/mcp" if kind == "http" else "/sse"
    entry = {"url": f"http://127.0.0.1:{port}{path}", "headers": {"X-Test": "1"}}
    if kind == "sse":
        entry["type"] = "sse"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"remote": entry}}))
    with running([sys.executable, UPSTREAM, "--name", "remote", "--tools", "echo",
                  f"--{kind}", str(port)]):
        wait_listening(port)
        async with proxied(tmp_path, project, user_dir, "--config", str(config)) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
            assert text_of(await client.call_tool("echo", {"text": "relayed"})) == "relayed"
            denied = await client.call_tool("echo", {"text": "secret"})
            assert denied.is_error and "no secrets" in text_of(denied)


async def test_progress_is_passed_on(tmp_path: Path, project: Path, user_dir: Path) -> None:
    steps: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, total, message))

    params = StdioServerParameters(
        command=MCP_HOOKS,
        args=["proxy", "--upstream", upstream("alpha", "--tools", "progress"), "--user-dir",
              str(user_dir), "--project-dir", str(project), "--no-log"],
        env=dict(os.environ))
    async with Client(params) as client:
        result = await client.call_tool("progress", {}, progress_callback=on_progress)
        assert isinstance(result.content[0], types.TextContent)
        assert result.content[0].text == "done"
    assert steps == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_http_sessions_fire_session_events(
    transport: str, tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    starts, ends = tmp_path / "starts.jsonl", tmp_path / "ends.jsonl"
    recorder(project_hooks, "on-start", "session_start", starts)
    recorder(project_hooks, "on-end", "session_end", ends)
    args = [MCP_HOOKS, "proxy", "--transport", transport, "--port", "0", "--token", TOKEN,
            "--upstream", upstream("alpha", "--tools", "echo"), "--user-dir", str(user_dir),
            "--project-dir", str(project), "--log", str(tmp_path / "events.jsonl")]
    with running(args, announce=r"serving \w+ at (\S+)") as url:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        for _ in range(2):
            if transport == "sse":
                async with Client(sse_client(url, headers=headers), mode="legacy") as client:
                    await client.call_tool("echo", {"text": "x"})
            else:
                async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
                        Client(streamable_http_client(url, http_client=http),
                               mode="legacy") as client:
                    await client.call_tool("echo", {"text": "x"})
        await wait_for(lambda: len(records(ends)) == 2)
    assert len({r["session_id"] for r in records(starts)}) == 2
    assert all(r["args"]["transport"] == transport for r in records(starts))
    for end in records(ends):
        assert (end["exit_reason"], end["total_steps"]) == ("client_disconnected", 1)


async def test_an_http_upstream_that_goes_away_and_comes_back(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    from tests.helpers.proxied import by_name, status

    port = free_port()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "remote": {"url": f"http://127.0.0.1:{port}/mcp"}}}))
    server = [sys.executable, UPSTREAM, "--name", "remote", "--tools", "echo", "--http",
              str(port)]
    first = subprocess.Popen(server, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        wait_listening(port)
        async with proxied(tmp_path, project, user_dir, "--config", str(config),
                           "--timeout", "5") as client:
            assert text_of(await client.call_tool("echo", {"text": "1"})) == "1"
            first.kill()
            first.wait()
            gone = await client.call_tool("echo", {"text": "2"})
            assert gone.is_error and "upstream 'remote'" in text_of(gone)
            remote = by_name(await status(client))["remote"]
            assert remote["state"] in ("dead", "failed")
            again = subprocess.Popen(server, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            try:
                wait_listening(port)
                back = await client.call_tool("echo", {"text": "3"})
                if back.is_error:  # the backoff may hold the next start back a second
                    await anyio.sleep(1.5)
                    back = await client.call_tool("echo", {"text": "3"})
                assert text_of(back) == "3"
            finally:
                again.kill()
                again.wait()
    finally:
        first.kill()
        first.wait()
