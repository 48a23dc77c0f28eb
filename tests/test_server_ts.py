"""End to end with a client no one here wrote: the TypeScript MCP SDK.

The SDK (pinned in tests/ts_client/package.json) is installed from the npm registry into the
test suite's cache folder outside the repository (``$MCP_HOOKS_TEST_CACHE``, default
``~/.cache/mcp-hooks-test``; ``tests/shared_cache.py``) on first use; the test is skipped,
saying why, where ``node`` or ``npm`` is absent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MCP_HOOKS, write_hook
from tests.shared_cache import npm_package
from tests.test_server_transports import TOKEN, served

HERE = Path(__file__).resolve().parent / "ts_client"


def _wanted_version() -> str:
    data: dict[str, Any] = json.loads((HERE / "package.json").read_text())
    version: str = data["dependencies"]["@modelcontextprotocol/sdk"]
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
    write_hook(project_hooks, "no-rm", script="echo 'no rm -rf here' >&2\nexit 2\n",
               extra="matcher:\n  tool: Bash\n  pattern: 'rm -rf'\n")
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
    assert set(tools) == {"fire_hook_event", "list_hooks", "get_hook"}
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
