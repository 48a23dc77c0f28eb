"""End to end with a client no one here wrote: the TypeScript MCP SDK.

The SDK (pinned in tests/ts_client/package.json) is installed from the npm registry into the
test suite's cache folder outside the repository (``$MCP_HOOKS_TEST_CACHE``, default
``~/.cache/mcp-hooks-test``; ``tests/helpers/shared_cache.py``) on first use; the test is skipped,
saying why, where ``node`` or ``npm`` is absent.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.server.transport import AUTH_HINT, NOT_OAUTH
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import Background
from tests.helpers.shared_cache import npm_package
from tests.helpers.transports import TOKEN, served

HERE = Path(__file__).resolve().parents[1] / "ts_client"
UPSTREAM = Path(__file__).resolve().parents[1] / "helpers" / "upstream_server.py"


def _wanted_version(package: str = "@modelcontextprotocol/sdk") -> str:
    data: dict[str, Any] = json.loads((HERE / "package.json").read_text())
    version: str = data["dependencies"][package]
    return version


@pytest.fixture(scope="module")
def ts_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of its own holding client.mjs, beside the cached SDK's ``node_modules``."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the TypeScript SDK client test")
    try:
        modules = npm_package("@modelcontextprotocol/sdk", _wanted_version(), folder="ts-sdk")
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    folder = tmp_path_factory.mktemp("ts-client")
    shutil.copy(HERE / "client.mjs", folder / "client.mjs")
    (folder / "node_modules").symlink_to(modules)  # the cache is shared: nothing written there
    return folder


@pytest.fixture
def serve_args(project: Path, user_dir: Path, tmp_path: Path, project_hooks: Path) -> list[str]:
    # the canonical name: a client that says Bash matches it too (one vocabulary)
    write_hook(project_hooks, "no-rm", script="echo 'no rm -rf here' >&2\nexit 2\n",
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    return ["serve", "--project-dir", str(project), "--user-dir", str(user_dir),
            "--log", str(tmp_path / "events.jsonl")]


def run_client(folder: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(["node", str(folder / "client.mjs"), *args], capture_output=True,
                          text=True, timeout=120, cwd=folder)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def check(result: dict[str, Any]) -> None:
    tools = {t["name"]: t for t in result["tools"]}
    assert set(tools) == {"fire_hook_event", "list_hooks", "get_hook", "respond_to_signal"}
    assert tools["list_hooks"]["readOnly"] is True and tools["get_hook"]["readOnly"] is True
    assert all(t["hasOutputSchema"] for t in tools.values())
    assert result["isError"] is False
    assert result["outcome"]["decision"] == "deny"
    assert result["outcome"]["blocked_by"] == "no-rm"
    assert result["outcome"]["reason"] == "no rm -rf here"
    assert [h["name"] for h in result["index"]["hooks"]] == ["no-rm"]
    assert result["badIsError"] is True
    assert result["protocol"]["name"] == "mcp-hooks"


def test_typescript_client_over_stdio(ts_client: Path, serve_args: list[str]) -> None:
    check(run_client(ts_client, "stdio", MCP_HOOKS, *serve_args))


def test_typescript_client_over_http_with_token(ts_client: Path, serve_args: list[str]) -> None:
    with served([*serve_args, "--transport", "http", "--port", "0", "--token", TOKEN]) as server:
        check(run_client(ts_client, "http", server.url, TOKEN))


# -- a client without the token ----------------------------------------------------------------

# What the TypeScript SDK asks for when it holds an OAuth provider and meets a 401: the
# protected-resource metadata (RFC 9728, path-inserted then root), the authorization-server
# metadata (RFC 8414, OpenID discovery), then dynamic registration at /register. Each answers
# 404 with our message, so the SDK stops at the registration and reports it.
OAUTH_PROBES = ["GET /.well-known/oauth-protected-resource/mcp",
                "GET /.well-known/oauth-protected-resource",
                "GET /.well-known/oauth-authorization-server",
                "GET /.well-known/openid-configuration", "POST /register"]


def requests_seen(server: Background, expected: list[str]) -> list[str]:
    """The requests the server logged (uvicorn's access log at INFO, "METHOD path"), read
    until every one of ``expected`` has come (or 10 s have passed)."""
    seen: list[str] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(r in seen for r in expected):
        try:
            line = server.lines.get(timeout=0.2)
        except queue.Empty:
            continue
        found = re.search(r'"(\w+) (\S+) HTTP/[\d.]+"', line)
        if found:
            seen.append(f"{found.group(1)} {found.group(2)}")
    return seen


@pytest.mark.parametrize("oauth", [False, True], ids=["plain", "oauth-provider"])
@pytest.mark.parametrize("token", ["-", "not-the-token"], ids=["none", "wrong"])
def test_typescript_client_without_the_token_is_told_to_set_the_header(
    ts_client: Path, serve_args: list[str], token: str, oauth: bool
) -> None:
    """The real SDK, without the server's token: the connection fails with our message (set
    the Authorization header; the token is MCP_HOOKS_TOKEN). A plain transport makes one
    request and no OAuth attempt; one holding an OAuth provider (as the MCP Inspector's
    does) finds no OAuth metadata, is refused registration with the same message, and never
    sends a person to an authorization page."""
    with served([*serve_args, "--transport", "http", "--port", "0", "--token", TOKEN,
                 "--log-level", "INFO"]) as server:
        result = run_client(ts_client, "denied", server.url, token,
                            *(["oauth"] if oauth else []))
        expected = ["POST /mcp", *(OAUTH_PROBES if oauth else [])]
        assert result["requests"] == expected
        assert requests_seen(server, expected) == expected  # and nothing else reached it
    assert result["redirected"] is False
    assert result["error"] is not None
    assert AUTH_HINT in result["error"]
    if oauth:  # refused at the registration, with the reason
        assert NOT_OAUTH in result["error"]
    else:  # the 401's body, as the SDK shows it
        assert ('"invalid_token"' in result["error"]) == (token != "-"), result["error"]
    assert TOKEN not in result["error"]


# -- the MCP Inspector's CLI ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The MCP Inspector's command-line client (pinned in tests/ts_client/package.json),
    from the test cache; skipped, saying why, where it cannot be installed."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the MCP Inspector test")
    package = "@modelcontextprotocol/inspector"
    try:
        modules = npm_package(package, _wanted_version(package), folder="inspector")
    except RuntimeError as exc:
        pytest.skip(f"the MCP Inspector could not be installed: {exc}")
    cli = modules / package / "clients" / "cli" / "build" / "index.js"
    if not cli.is_file():
        pytest.skip(f"this MCP Inspector has no command-line client at {cli}")
    return cli


def run_inspector(cli: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "MCP_INSPECTOR_SECRET_STORE": "memory",
           "MCP_CATALOG_PATH": str(home / "mcp.json")}
    return subprocess.run(["node", str(cli), *args], capture_output=True, text=True,
                          timeout=120, env=env, stdin=subprocess.DEVNULL, cwd=home)


def test_inspector_strict_finds_nothing_in_the_tool_schemas(
    inspector: Path, serve_args: list[str], tmp_path: Path
) -> None:
    """``inspector --cli ... --method tools/list --strict``: no schema portability finding
    (it prints each on stderr and a count line; it exits 6 on an error-severity one)."""
    done = run_inspector(inspector, tmp_path, "--method", "tools/list", "--strict", "--",
                         MCP_HOOKS, *serve_args)
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)["tools"]
    assert {t["name"] for t in tools} == {"fire_hook_event", "list_hooks", "get_hook",
                                          "respond_to_signal"}
    assert "Warning:" not in done.stderr and "Error:" not in done.stderr, done.stderr
    assert "portability" not in done.stderr, done.stderr


def test_inspector_with_the_header_just_works(
    inspector: Path, serve_args: list[str], tmp_path: Path
) -> None:
    """With ``--header "Authorization: Bearer <token>"`` the Inspector connects at once; the
    server sees no OAuth request."""
    with served([*serve_args, "--transport", "http", "--port", "0", "--token", TOKEN,
                 "--log-level", "INFO"]) as server:
        done = run_inspector(inspector, tmp_path, server.url, "--method", "tools/list",
                             "--header", f"Authorization: Bearer {TOKEN}")
        seen = requests_seen(server, ["POST /mcp"])
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["tools"]) == 4  # with respond_to_signal
    assert not any(".well-known" in r or "/register" in r for r in seen), seen


# -- a hook's ask: the approval form in the TypeScript SDK's elicitation handler -------------

ASKS = "echo '{\"decision\": \"ask\", \"reason\": \"deleting needs a person\"}'\n"
ASK_CALL = {"event_type": "before_tool", "session_id": "ts-1", "tool_name": "Bash",
            "tool_input": {"command": "make clean-all"}}


def ask_args(action: str, content: dict[str, Any] | None, tool: str, arguments: dict[str, Any]
             ) -> list[str]:
    return ["ask", action, json.dumps(content) if content is not None else "-", tool,
            json.dumps(arguments)]


@pytest.mark.parametrize(("action", "content", "decision"), [
    ("accept", {"approve": True}, "allow"),
    ("accept", {"approve": False, "reason": "not from here"}, "deny"),
    ("decline", None, "deny"),
    ("cancel", None, "deny"),
    ("none", None, "deny"),
])
def test_typescript_client_answers_the_ask_form(
    ts_client: Path, serve_args: list[str], user_dir: Path, action: str,
    content: dict[str, Any] | None, decision: str,
) -> None:
    write_hook(user_dir, "asker", script=ASKS,
               extra="matcher:\n  tool: Shell\nmetadata:\n  ask_timeout: 1\n")
    got = run_client(ts_client, *ask_args(action, content, "fire_hook_event", ASK_CALL),
                     "stdio", MCP_HOOKS, *serve_args)
    assert got["result"]["structured"]["decision"] == decision, got
    if action == "none":
        assert got["forms"] == []
        assert "mcp-hooks approve" in got["result"]["structured"]["reason"]
    else:
        [form] = got["forms"]
        assert "deleting needs a person" in form and "make clean-all" in form


def test_typescript_client_asked_over_http(
    ts_client: Path, serve_args: list[str], user_dir: Path
) -> None:
    write_hook(user_dir, "asker", script=ASKS, extra="matcher:\n  tool: Shell\n")
    with served([*serve_args, "--transport", "http", "--port", "0", "--token", TOKEN]) as server:
        got = run_client(ts_client, *ask_args("accept", {"approve": True}, "fire_hook_event",
                                              ASK_CALL), "http", server.url, TOKEN)
    assert got["result"]["structured"]["decision"] == "allow", got
    assert len(got["forms"]) == 1


def test_typescript_client_behind_the_proxy(
    ts_client: Path, project: Path, user_dir: Path, tmp_path: Path
) -> None:
    """Through ``mcp-hooks proxy`` in front of a real upstream: refused, the upstream never
    sees the call; approved, it writes exactly the approved content."""
    write_hook(user_dir, "asker", script=ASKS, extra="matcher:\n  tool: write_file\n")
    root = tmp_path / "root"
    root.mkdir()
    upstream = [sys.executable, str(UPSTREAM), "--name", "files", "--tools", "write_file",
                "--root", str(root)]
    proxy = [MCP_HOOKS, "proxy", "--upstream", "files=" + shlex.join(upstream), "--user-dir",
             str(user_dir), "--project-dir", str(project), "--log", str(tmp_path / "ev.jsonl")]
    arguments = {"path": "out.txt", "content": "approved words"}
    refused = run_client(ts_client, *ask_args("decline", None, "write_file", arguments),
                         "stdio", *proxy)
    assert refused["result"]["isError"] is True and "Blocked by hook asker" in \
        refused["result"]["text"], refused
    assert not (root / "out.txt").exists()
    approved = run_client(ts_client, *ask_args("accept", {"approve": True}, "write_file",
                                               arguments), "stdio", *proxy)
    assert approved["result"]["isError"] is False, approved
    assert (root / "out.txt").read_text() == "approved words"
