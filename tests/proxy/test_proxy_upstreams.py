"""The proxy in front of MCP servers no one here wrote: ``mcp-server-git`` from PyPI on a
temporary repository, and ``@modelcontextprotocol/server-filesystem`` from the npm registry on a
temporary folder (installed on first use into a cache folder outside the repository,
``$MCP_HOOKS_TEST_CACHE``, default ``~/.cache/mcp-hooks-test``; skipped, saying why, where
``node`` or ``npm`` is absent)."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_hook
from tests.helpers.proxied import by_name, proxied, recorder, records, status, text_of
from tests.helpers.shared_cache import npm_package

pytestmark = pytest.mark.anyio

FILESYSTEM = "@modelcontextprotocol/server-filesystem"
FILESYSTEM_VERSION = "2026.8.31"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env=env, check=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is needed for the mcp-server-git upstream")
    if importlib.util.find_spec("mcp_server_git") is None:
        pytest.skip("mcp-server-git is not installed (pip install mcp-server-git)")
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first commit")
    return path


async def test_mcp_server_git(
    repo: Path, tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "no-commits", extra="matcher:\n  tool: git_commit\n",
               script="echo 'commits go through review, not the agent' >&2\nexit 2\n")
    seen = tmp_path / "after.jsonl"
    recorder(project_hooks, "see-status", "after_tool", seen,
             extra="matcher:\n  tool: git_status\n")
    (repo / "new.txt").write_text("new\n")
    git(repo, "add", "new.txt")
    command = shlex.join([sys.executable, "-m", "mcp_server_git", "--repository", str(repo)])
    async with proxied(tmp_path, project, user_dir, "--upstream", f"git={command}") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"git_status", "git_log", "git_commit", "git_diff_staged"} <= tools
        state = await client.call_tool("git_status", {"repo_path": str(repo)})
        assert not state.is_error
        assert "new.txt" in text_of(state)
        refused = await client.call_tool("git_commit", {"repo_path": str(repo),
                                                        "message": "sneaky"})
        assert refused.is_error
        assert "commits go through review" in text_of(refused)
        log = await client.call_tool("git_log", {"repo_path": str(repo)})
        assert "first commit" in text_of(log) and "sneaky" not in text_of(log)
        assert by_name(await status(client))["git"]["server"] == "mcp-git"
    assert "sneaky" not in git(repo, "log", "--format=%s")
    (payload,) = records(seen)
    assert payload["mcp_server"] == "git" and payload["mcp_tool"] == "git_status"
    assert "new.txt" in json.dumps(payload["tool_output"])


@pytest.fixture(scope="module")
def filesystem_server() -> Path:
    """The installed server's entry script (npm install into the cache on first use)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the @modelcontextprotocol/server-filesystem "
                    "upstream")
    try:
        modules = npm_package(FILESYSTEM, FILESYSTEM_VERSION, folder="server-filesystem")
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    package = modules / "@modelcontextprotocol" / "server-filesystem"
    entry = package / "dist" / "index.js"
    assert entry.exists(), f"{entry} is missing after the install"
    return entry


async def test_server_filesystem_from_npm(
    filesystem_server: Path, tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "no-dotenv", extra=(
        "matcher:\n  tool: 'write_file|edit_file'\n  pattern: '(^|/)\\.env$'\n"),
        script="echo 'refusing to write a .env file' >&2\nexit 2\n")
    files = tmp_path / "files"
    files.mkdir()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"fs": {
        "command": "node", "args": [str(filesystem_server), str(files)]}}}))
    async with proxied(tmp_path, project, user_dir, "--config", str(config)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"read_text_file", "write_file", "list_directory"} <= tools
        refused = await client.call_tool("write_file", {"path": str(files / ".env"),
                                                        "content": "API_KEY=1"})
        assert refused.is_error and "refusing to write a .env file" in text_of(refused)
        assert not (files / ".env").exists()
        written = await client.call_tool("write_file", {"path": str(files / "notes.md"),
                                                        "content": "# notes\n"})
        assert not written.is_error, text_of(written)
        assert (files / "notes.md").read_text() == "# notes\n"
        listing = await client.call_tool("list_directory", {"path": str(files)})
        assert "notes.md" in text_of(listing)
        outside = await client.call_tool("read_text_file", {"path": "/etc/hostname"})
        assert outside.is_error  # the upstream's own error, passed on unchanged
        assert "outside allowed directories" in text_of(outside).lower() \
            or "access denied" in text_of(outside).lower()
