"""The streamable-HTTP fast path (``proxy/http_fast.py``, ``proxy/upstream_http.py``) answers
exactly as the SDK path does (``MCP_HOOKS_PROXY_HTTP=sdk``): one FastMCP upstream over
streamable HTTP, two proxies in front of it with the same hooks, the SDK's client on each."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.http_clients import free_port, wait_listening
from tests.helpers.proxied import UPSTREAM, text_of

pytestmark = pytest.mark.anyio

TOOLS = "echo,fail,sleep,request_id"


def _hooks(project_hooks: Path) -> None:
    write_hook(project_hooks, "no-secrets", extra="matcher:\n  pattern: secret\n",
               script="echo 'no secrets' >&2\nexit 2\n")
    write_hook(project_hooks, "rewrite", extra="matcher:\n  pattern: rewrite-me\n",
               script="""printf '%s' '{"modified_input": {"text": "rewritten"}}'\n""")
    write_hook(project_hooks, "note", trigger="after_tool",
               extra="matcher:\n  pattern: note-me\n",
               script="""printf '%s' '{"additional_context": "noted by a hook"}'\n""")


@contextmanager
def _proxies(tmp_path: Path, project: Path, user_dir: Path, *extra: str
             ) -> Iterator[dict[str, str]]:
    """The upstream and two proxies: ``fast`` (the default) and ``sdk``; their URLs."""
    port = free_port()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"remote": {
        "url": f"http://127.0.0.1:{port}/mcp"}}}))
    args = [MCP_HOOKS, "proxy", "--transport", "http", "--port", "0", "--config", str(config),
            "--user-dir", str(user_dir), "--project-dir", str(project), "--no-log", *extra]
    with background([sys.executable, UPSTREAM, "--name", "remote", "--tools", TOOLS,
                     "--http", str(port)], announce=None, env=dict(os.environ)):
        wait_listening(port)
        with background(args, env=dict(os.environ)) as fast, \
                background(args, env={**os.environ, "MCP_HOOKS_PROXY_HTTP": "sdk"}) as sdk:
            yield {"fast": fast.url, "sdk": sdk.url}


@asynccontextmanager
async def _client(url: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(timeout=120) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        for _ in range(600):  # until the proxy has listed the upstream's tools
            if len((await client.list_tools()).tools) == len(TOOLS.split(",")):
                break
            await anyio.sleep(0.1)
        yield client


async def _fast_calls(client: Client) -> int:
    result = await client.read_resource("hooks://proxy/status")
    text = getattr(result.contents[0], "text", "{}")
    calls: int = json.loads(text)["proxy"]["fast_path_calls"]
    return calls


async def _both(urls: dict[str, str], calls: list[tuple[str, dict[str, Any]]]
                ) -> dict[str, list[dict[str, Any]]]:
    """Each call on each proxy, in order: the results as the SDK client reads them."""
    answers: dict[str, list[dict[str, Any]]] = {}
    for side, url in urls.items():
        async with _client(url) as client:
            answers[side] = [(await client.call_tool(name, arguments)).model_dump(mode="json")
                             for name, arguments in calls]
            assert await _fast_calls(client) == (len(calls) if side == "fast" else 0)
    return answers


async def test_the_fast_path_answers_as_the_sdk_path(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    _hooks(project_hooks)
    huge = "x" * (3 << 20)  # 3 MiB each way
    calls = [("echo", {"text": "plain"}), ("echo", {"text": "a secret"}),
             ("echo", {"text": "rewrite-me"}), ("echo", {"text": "note-me"}),
             ("fail", {"message": "it broke"}), ("echo", {"text": huge})]
    with _proxies(tmp_path, project, user_dir) as urls:
        answers = await _both(urls, calls)
    assert answers["fast"] == answers["sdk"]
    plain, denied, rewritten, noted, failed, big = answers["fast"]
    assert plain["content"][0]["text"] == "plain" and not plain["is_error"]
    assert denied["is_error"] and "no secrets" in denied["content"][0]["text"]
    assert rewritten["content"][0]["text"] == "rewritten"
    assert noted["content"][-1]["text"] == "noted by a hook"
    assert failed["is_error"] and "it broke" in failed["content"][0]["text"]
    assert big["content"][0]["text"] == huge


async def test_the_upstream_is_called_raw_and_answers_over_sse(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    """The fast proxy's request reaches the upstream with its own id (``upstream_http``); an
    upstream that takes longer than the SDK's 15 s JSON window answers over SSE, and so does
    the proxy, on either path."""
    with _proxies(tmp_path, project, user_dir) as urls:
        async with _client(urls["fast"]) as fast, _client(urls["sdk"]) as sdk:
            raw = text_of(await fast.call_tool("request_id", {}))
            assert "mcp-hooks-" in raw
            assert "mcp-hooks-" not in text_of(await sdk.call_tool("request_id", {}))
            answers: dict[str, Any] = {}

            async def slow(side: str, client: Client) -> None:
                answers[side] = (await client.call_tool("sleep", {"seconds": 16})).model_dump()

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow, "fast", fast)
                tg.start_soon(slow, "sdk", sdk)
            assert answers["fast"] == answers["sdk"]
            assert answers["fast"]["content"][0]["text"] == "slept 16.0"
            assert await _fast_calls(fast) == 2


async def test_an_upstream_that_hangs_meets_the_proxys_deadline(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    with _proxies(tmp_path, project, user_dir, "--timeout", "2") as urls:
        answers = await _both(urls, [("sleep", {"seconds": 600})])
    assert answers["fast"] == answers["sdk"]
    hung = answers["fast"][0]
    assert hung["is_error"] and "did not answer" in hung["content"][0]["text"]
    assert "within 2 s" in hung["content"][0]["text"]


async def test_sixteen_clients_at_once(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    """16 clients, each on its own connection, calling at once: each gets its own answers
    (the raw requests share the upstream's pooled connections)."""
    _hooks(project_hooks)
    got: dict[int, list[str]] = {}
    with _proxies(tmp_path, project, user_dir) as urls:
        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(_client(urls["fast"]))
                       for _ in range(16)]

            async def run(n: int, client: Client) -> None:
                got[n] = [text_of(await client.call_tool("echo", {"text": f"{n}-{i}"}))
                          for i in range(10)]
                got[n].append(text_of(await client.call_tool("echo", {"text": f"secret {n}"})))

            async with anyio.create_task_group() as tg:
                for n, client in enumerate(clients):
                    tg.start_soon(run, n, client)
            assert await _fast_calls(clients[0]) == 16 * 11
    for n in range(16):
        assert got[n][:10] == [f"{n}-{i}" for i in range(10)]
        assert "no secrets" in got[n][10]



async def test_a_kept_alive_connection_the_upstream_closed_is_replaced(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    """uvicorn closes a connection idle for 5 s: the next raw call takes a new one
    (``http_wire``) instead of failing or marking the upstream dead."""
    with _proxies(tmp_path, project, user_dir) as urls:
        async with _client(urls["fast"]) as client:
            assert text_of(await client.call_tool("echo", {"text": "first"})) == "first"
            await anyio.sleep(6)  # past uvicorn's keep-alive timeout
            assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"
            assert "mcp-hooks-" in text_of(await client.call_tool("request_id", {}))
            assert await _fast_calls(client) == 3
