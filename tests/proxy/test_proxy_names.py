"""The names the proxy exposes do not change because an upstream is down.

A hook written for ``alpha__write_file`` (the name the client sees when two upstreams list
``write_file``) must keep applying when the other upstream dies, or fails to start in a later
run: the prefix is decided over every configured upstream by the names each listed last
(``catalog.NameMemory``), not over the ones that happen to be up. Real proxies
(``mcp-hooks proxy``) over stdio, real upstreams (tests/helpers/upstream_server.py), real hooks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from mcp_hooks import paths
from mcp_hooks.proxy.catalog import MEMORY_FILE, NameMemory
from tests.conftest import write_hook
from tests.helpers.proxied import by_name, proxied, status, text_of, upstream

pytestmark = pytest.mark.anyio

DENY_ALPHA_WRITES = ("echo 'alpha writes are held for review' >&2\nexit 2\n")


def alpha_guard(project_hooks: Path) -> None:
    write_hook(project_hooks, "hold-alpha-writes", script=DENY_ALPHA_WRITES,
               extra="matcher:\n  tool: alpha__write_file\n")


async def tool_names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}


async def test_a_name_stays_when_the_other_upstream_fails_to_start(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    alpha_guard(project_hooks)
    alpha = upstream("alpha", "--tools", "echo,write_file", "--root", str(tmp_path / "a"))
    # A first run with both up: write_file collides, both are prefixed, the guard applies.
    async with proxied(tmp_path, project, user_dir, "--upstream", alpha,
                       "--upstream", upstream("beta", "--tools", "write_file")) as client:
        assert await tool_names(client) == {"echo", "alpha__write_file", "beta__write_file"}
        held = await client.call_tool("alpha__write_file", {"path": "x", "content": "1"})
        assert held.is_error and "alpha writes are held for review" in text_of(held)
    # A later run in which beta cannot start: alpha's tool keeps its name, the guard holds.
    async with proxied(tmp_path, project, user_dir, "--upstream", alpha,
                       "--upstream", upstream("beta", "--fail-start")) as client:
        assert by_name(await status(client))["beta"]["state"] == "failed"
        assert await tool_names(client) == {"echo", "alpha__write_file"}
        held = await client.call_tool("alpha__write_file", {"path": "x", "content": "2"})
        assert held.is_error and "alpha writes are held for review" in text_of(held)
        unknown = await client.call_tool("write_file", {"path": "x", "content": "3"})
        assert unknown.is_error and "Unknown tool 'write_file'" in text_of(unknown)
    assert not (tmp_path / "a" / "x").exists()  # no write ever reached alpha


async def test_a_name_stays_while_the_other_upstream_is_dead(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    alpha_guard(project_hooks)
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "write_file"),
                       "--upstream", upstream("beta", "--tools", "write_file,crash")) as client:
        assert await tool_names(client) == {"alpha__write_file", "beta__write_file", "crash"}
        assert (await client.call_tool("crash", {"code": 5})).is_error
        assert by_name(await status(client))["beta"]["state"] == "dead"
        assert await tool_names(client) == {"alpha__write_file", "beta__write_file", "crash"}
        held = await client.call_tool("alpha__write_file", {"path": "x", "content": "1"})
        assert held.is_error and "alpha writes are held for review" in text_of(held)


async def test_an_upstream_never_seen_up_counts_for_nothing(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    """The limit: with no listing of beta from any run, alpha's names are its own."""
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "write_file"),
                       "--upstream", upstream("beta", "--fail-start")) as client:
        assert await tool_names(client) == {"write_file"}
    remembered = json.loads((paths.state_dir() / MEMORY_FILE).read_text())
    assert remembered == {"alpha of alpha,beta": {"tools": ["write_file"],
                                                  "prompts": ["greet"]}}


def test_the_memory_never_fails_or_hangs_the_proxy(tmp_path: Path) -> None:
    path = tmp_path / "names.json"
    key = NameMemory.key("beta", ["alpha", "beta"])
    names = {"tools": ["write_file"], "prompts": []}
    os.mkfifo(path)  # no one writes it: a blocking read would hang
    recalled = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; from mcp_hooks.proxy."
         "catalog import NameMemory; print(NameMemory(Path(sys.argv[1])).recall(sys.argv[2]))",
         str(path), key], capture_output=True, text=True, timeout=60)  # only to stop a hang
    assert recalled.stdout == "None\n", recalled.stderr
    path.unlink()
    for junk in (b"not json", b"[1, 2]", b'{"beta of alpha,beta": {"tools": "x"}}',
                 b"[" * 100_000, b" " * (2 << 20)):
        path.write_bytes(junk)
        assert NameMemory(path).recall(key) is None
    path.unlink()
    NameMemory(path).remember(key, names)
    assert NameMemory(path).recall(key) == names  # kept across processes' memories
    other = NameMemory.key("gamma", ["gamma", "delta"])
    NameMemory(path).remember(other, {"tools": ["x"], "prompts": []})
    assert NameMemory(path).recall(key) == names  # another proxy's write keeps ours
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    NameMemory(blocked / "names.json").remember(key, names)  # cannot write: skipped
