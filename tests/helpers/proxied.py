"""The gating proxy under test: ``proxied`` starts ``mcp-hooks proxy`` over stdio in front
of upstream_server.py instances (``upstream``) and yields an SDK client; with helpers to read
its status resource, the calls an upstream recorded, and a tool result's text."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from tests.conftest import MCP_HOOKS, write_hook

UPSTREAM = str(Path(__file__).resolve().parents[1] / "helpers" / "upstream_server.py")


STATUS = "hooks://proxy/status"


def upstream(name: str, *extra: str) -> str:
    """An ``--upstream`` value running the test server as ``name``."""
    return f"{name}={shlex.join([sys.executable, UPSTREAM, '--name', name, *extra])}"


@asynccontextmanager
async def proxied(
    tmp_path: Path,
    project: Path,
    user_dir: Path,
    *args: str,
    mode: str = "auto",
    message_handler: Callable[[Any], Awaitable[None]] | None = None,
    env: dict[str, str] | None = None,
    settle: bool = True,
    **handlers: Any,
) -> AsyncIterator[Client]:
    """An SDK client over stdio to ``mcp-hooks proxy ARGS`` (the console script).

    The proxy answers ``initialize`` before its upstreams are up
    (tests/proxy/test_proxy_startup.py);
    with ``settle`` the client is handed over once no upstream is ``starting`` any more.
    ``handlers``: the client's ``elicitation_callback``, ``sampling_callback``.
    """
    params = StdioServerParameters(
        command=MCP_HOOKS,
        args=["proxy", *args, "--user-dir", str(user_dir), "--project-dir", str(project),
              "--log", str(tmp_path / "events.jsonl")],
        env={**os.environ, **(env or {})}, cwd=str(project),
    )
    async with Client(params, mode=mode, message_handler=message_handler, **handlers) as client:
        if settle:
            await settled(client)
        yield client


async def settled(client: Client, timeout: float = 120.0) -> None:
    """Wait until no upstream of the proxy is ``starting`` (its status resource says)."""
    with anyio.fail_after(timeout):
        while any(u["state"] == "starting" for u in (await status(client))["upstreams"]):
            await anyio.sleep(0.05)


def recorder(root: Path, name: str, trigger: str, out: Path, *, extra: str = "",
             then: str = "exit 0\n") -> None:
    """A hook that appends its payload (one JSON line) to ``out``, then runs ``then``."""
    write_hook(root, name, trigger=trigger, extra=extra,
               script=f"cat >> '{out}'\necho >> '{out}'\n{then}")


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.05)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def status(client: Client) -> dict[str, Any]:
    result = await client.read_resource(STATUS)
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    data: dict[str, Any] = json.loads(content.text)
    return data


def by_name(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {u["name"]: u for u in data["upstreams"]}
