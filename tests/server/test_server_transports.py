"""``mcp-hooks serve`` as a real process: stdio, streamable HTTP (with and without a token,
stateless), SSE, DNS-rebinding protection, and the refusal to serve a public address
without a token."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from mcp_hooks.cli import build_parser
from mcp_hooks.cli.serve import options_from_args
from mcp_hooks.server.transport import TOKEN_ENV, ServeOptions
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.transports import TOKEN, served

pytestmark = pytest.mark.anyio


@pytest.fixture
def serve_args(project: Path, user_dir: Path, tmp_path: Path, project_hooks: Path) -> list[str]:
    # the canonical name: a client that says Bash matches it too (one vocabulary)
    write_hook(project_hooks, "no-rm", script="echo 'no rm -rf here' >&2\nexit 2\n",
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    return ["serve", "--project-dir", str(project), "--user-dir", str(user_dir),
            "--log", str(tmp_path / "events.jsonl")]


async def check_session(client: Client) -> None:
    tools = {t.name for t in (await client.list_tools()).tools}
    assert tools == {"fire_hook_event", "list_hooks", "get_hook", "respond_to_signal"}
    result = await client.call_tool("fire_hook_event", {
        "event_type": "before_tool", "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}})
    assert result.structured_content is not None
    assert result.structured_content["decision"] == "deny"
    assert result.structured_content["reason"] == "no rm -rf here"
    index = await client.read_resource("hooks://index")
    assert "no-rm" in index.contents[0].model_dump()["text"]


# -- stdio -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_console_script(serve_args: list[str], mode: str) -> None:
    params = StdioServerParameters(command=MCP_HOOKS, args=serve_args, env=dict(os.environ))
    async with Client(params, mode=mode) as client:
        await check_session(client)


def test_stdio_stdout_carries_only_protocol(serve_args: list[str], project_hooks: Path) -> None:
    write_hook(project_hooks, "chatty", trigger="session_start",
               script="echo 'hook stdout noise'\necho 'hook stderr noise' >&2\nexit 1\n")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "fire_hook_event", "arguments": {"event_type": "session_start"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "fire_hook_event", "arguments": {"event_type": "bogus"}}},
    ]
    proc = subprocess.Popen([MCP_HOOKS, *serve_args, "--log-level", "DEBUG"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    for request in requests:
        proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()
    replies = []
    while len([r for r in replies if "id" in r]) < 3:
        line = proc.stdout.readline()
        assert line, "the server closed stdout early"
        replies.append(json.loads(line))  # every line on stdout is a JSON-RPC message
    proc.stdin.close()
    proc.stdin = None  # closed: communicate() must not flush it
    rest, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert rest == ""
    assert "DEBUG" in stderr  # the logs went to stderr
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    by_id = {r["id"]: r for r in replies if "id" in r}
    assert set(by_id) == {1, 2, 3}
    assert by_id[1]["result"]["serverInfo"]["name"] == "mcp-hooks"
    outcome = by_id[2]["result"]["structuredContent"]
    assert outcome["hooks"][0]["status"] == "error"  # exit 1: failed open
    assert by_id[3]["result"]["isError"] is True
    assert not any("hook stdout noise" in json.dumps(r) for r in replies if "id" not in r)


@pytest.mark.parametrize("stdio", ["", "sdk"])
def test_stdio_switch_back_to_the_sdk_transport(serve_args: list[str], stdio: str) -> None:
    """MCP_HOOKS_SERVE_STDIO=sdk serves stdio with the SDK's stdio_server (the library path);
    by default the event loop's transport does, and only it answers a line that is not JSON
    (the SDK's drops it)."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}
    lines = [json.dumps(initialize), json.dumps({"jsonrpc": "2.0",
                                                 "method": "notifications/initialized"}),
             "this is not json", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})]
    env = {**os.environ, "MCP_HOOKS_SERVE_STDIO": stdio}
    proc = subprocess.Popen([MCP_HOOKS, *serve_args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("\n".join(lines) + "\n")
    proc.stdin.flush()
    replies: list[dict[str, Any]] = []
    while not any(r.get("id") == 2 for r in replies):  # answered in order: ping comes last
        line = proc.stdout.readline()
        assert line, "the server closed stdout early"
        replies.append(json.loads(line))
    proc.stdin.close()
    proc.stdin = None  # closed: communicate() must not flush it
    rest, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    replies += [json.loads(line) for line in rest.splitlines()]
    assert {r.get("id") for r in replies if "result" in r} == {1, 2}
    unreadable = [r for r in replies if "error" in r and r.get("id") is None]
    assert len(unreadable) == (0 if stdio == "sdk" else 1), replies


def test_serve_options_are_typed_from_the_command_line(project: Path, tmp_path: Path) -> None:
    args = build_parser(["serve"]).parse_args([
        "serve", "--project-dir", str(project), "--root", str(tmp_path), "--bridge-tool",
        "--transport", "http", "--port", "0", "--on-fault", "warn", "--no-log"])
    opts = options_from_args(args, environ={TOKEN_ENV: TOKEN, "MCP_HOOKS_SERVE_STDIO": "sdk"})
    assert opts.serve == ServeOptions(transport="http", port=0, token=TOKEN, fast_stdio=False)
    assert opts.project_dir == project.resolve() and opts.roots == (tmp_path,)
    assert opts.bridge_tool and opts.settings.on_fault == "warn" and opts.settings.log is None
    assert options_from_args(args, environ={}).serve.fast_stdio is True


# -- streamable HTTP ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_without_token(serve_args: list[str], mode: str) -> None:
    with served([*serve_args, "--transport", "http", "--port", "0"]) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
        async with Client(server.url, mode=mode) as client:
            await check_session(client)


async def test_http_stateless(serve_args: list[str]) -> None:
    with served([*serve_args, "--transport", "http", "--port", "0", "--stateless"]) as server:
        for mode in ("legacy", "auto"):
            async with Client(server.url, mode=mode) as client:
                await check_session(client)


async def test_http_token(serve_args: list[str]) -> None:
    env = {**os.environ, "MCP_HOOKS_TOKEN": TOKEN}
    with served([*serve_args, "--transport", "http", "--port", "0"], env=env) as server:
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        async with httpx2.AsyncClient() as http:
            for headers, error in (({}, "unauthorized"),
                                   ({"Authorization": "Bearer wrong"}, "invalid_token"),
                                   ({"Authorization": f"Basic {TOKEN}"}, "invalid_token"),
                                   ({"Authorization": f"Bearer {TOKEN}x"}, "invalid_token"),
                                   ({"Authorization": "Bearer"}, "invalid_token")):
                response = await http.post(server.url, json=body, headers=headers)
                assert response.status_code == 401, headers
                challenge = response.headers["www-authenticate"]
                # a plain bearer challenge: nothing that points a client at OAuth
                assert challenge.startswith('Bearer realm="mcp-hooks"'), challenge
                assert "resource_metadata" not in challenge and "scope" not in challenge
                assert (', error="invalid_token"' in challenge) == (error == "invalid_token")
                answer = response.json()
                assert answer["error"] == error
                assert ("set the 'Authorization: Bearer <token>' header (the token is "
                        "MCP_HOOKS_TOKEN on the server)") in answer["error_description"]
                assert TOKEN not in response.text
        headers = {"Authorization": f"Bearer {TOKEN}"}
        for mode in ("legacy", "auto"):
            async with httpx2.AsyncClient(headers=headers, timeout=30) as http, Client(
                streamable_http_client(server.url, http_client=http), mode=mode
            ) as client:
                await check_session(client)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_token_server_offers_no_oauth(serve_args: list[str], transport: str) -> None:
    """What an OAuth client asks for after a 401 (protected-resource and authorization-server
    metadata, OpenID discovery, the TypeScript SDK's fallback endpoints) is not there: 404
    with an OAuth error body that says to set the header instead, with a token or without."""
    with served([*serve_args, "--transport", transport, "--port", "0",
                 "--token", TOKEN]) as server:
        origin = server.url.rsplit("/", 1)[0]
        probes = [("GET", "/.well-known/oauth-protected-resource"),
                  ("GET", "/.well-known/oauth-protected-resource/mcp"),
                  ("GET", "/.well-known/oauth-authorization-server"),
                  ("GET", "/.well-known/openid-configuration"),
                  ("POST", "/register"), ("GET", "/authorize"), ("POST", "/token")]
        async with httpx2.AsyncClient() as http:
            for headers in ({}, {"Authorization": f"Bearer {TOKEN}"}):
                for method, path in probes:
                    response = await http.request(method, origin + path, headers=headers)
                    assert response.status_code == 404, (method, path, headers)
                    assert "www-authenticate" not in response.headers
                    answer = response.json()
                    assert answer["error"] == "invalid_request"
                    assert answer["error_description"].startswith(
                        "this server takes a static bearer token, not OAuth: set the "
                        "'Authorization: Bearer <token>' header")
            # the rest is still behind the token
            other = await http.get(origin + "/.well-known/something-else")
            assert other.status_code == 401


async def test_dns_rebinding_protection(serve_args: list[str]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream"}
    with served([*serve_args, "--transport", "http", "--port", "0",
                 "--allowed-host", "hooks.example.com"]) as server:
        async with httpx2.AsyncClient() as http:
            evil = await http.post(server.url, json=body, headers={**accept,
                                                                   "Host": "evil.example"})
            assert evil.status_code in (403, 421), evil.text
            good = await http.post(server.url, json=body, headers={
                **accept, "Host": "hooks.example.com"})
            assert good.status_code not in (403, 421), good.text


# -- SSE ---------------------------------------------------------------------------------------


async def test_sse_with_token(serve_args: list[str]) -> None:
    with served([*serve_args, "--transport", "sse", "--port", "0", "--token", TOKEN]) as server:
        assert server.url.endswith("/sse")
        async with httpx2.AsyncClient() as http:
            denied = await http.get(server.url)
            assert denied.status_code == 401
        async with Client(sse_client(server.url, headers={"Authorization": f"Bearer {TOKEN}"}),
                          mode="legacy") as client:
            await check_session(client)


# -- refusals ----------------------------------------------------------------------------------


def test_public_bind_without_token_is_refused(serve_args: list[str]) -> None:
    for transport in ("http", "sse"):
        done = subprocess.run([MCP_HOOKS, *serve_args, "--transport", transport,
                               "--host", "0.0.0.0", "--port", "0"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 64
        assert "MCP_HOOKS_TOKEN" in done.stderr and "--token" in done.stderr
        assert done.stdout == ""


def test_public_bind_with_token_serves(serve_args: list[str]) -> None:
    env = {**os.environ, "MCP_HOOKS_TOKEN": TOKEN}
    with served([*serve_args, "--transport", "http", "--host", "0.0.0.0", "--port", "0"],
                env=env) as server:
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        response = httpx2.post(f"http://127.0.0.1:{port}/mcp", json={})
        assert response.status_code == 401


def test_missing_root_is_refused(serve_args: list[str], tmp_path: Path) -> None:
    done = subprocess.run([MCP_HOOKS, *serve_args, "--root", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 64 and "--root" in done.stderr


def test_started_in_filesystem_root_without_a_project_is_refused(user_dir: Path) -> None:
    done = subprocess.run([MCP_HOOKS, "serve", "--user-dir", str(user_dir), "--no-log"],
                          cwd="/", capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 64
    assert "--project-dir" in done.stderr and done.stdout == ""


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_port_in_use_is_one_line_and_exit_1(serve_args: list[str], transport: str) -> None:
    """A taken port ends ``serve`` with one line (no traceback, no exception group) and exit
    1, a run-time error. stdio binds nothing, so it has no such case."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([MCP_HOOKS, *serve_args, "--transport", transport,
                               "--port", str(port)],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == (
        f"mcp-hooks serve: cannot listen on 127.0.0.1:{port}: the address is already in "
        "use; stop the other server or pass another --port\n")
    assert done.stdout == ""


def test_make_demo_script_runs() -> None:
    demo = Path(__file__).resolve().parents[2] / "examples" / "demo.py"
    done = subprocess.run([sys.executable, str(demo)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "demo passed" in done.stdout
