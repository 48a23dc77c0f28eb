"""The proxy in process: the SDK server path (in-memory clients of both protocol eras), the
stdio fast path's choices and answers, result rewriting, and restarts with backoff."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_hooks.engine.engine import Engine
from mcp_hooks.proxy.app import Proxy, ProxySettings
from mcp_hooks.proxy.config import UpstreamSpec, parse_upstream
from mcp_hooks.proxy.results import apply_modified_output, clean_result, error_result, error_text
from mcp_hooks.proxy.upstream import Upstream, UpstreamError, backoff
from mcp_hooks.proxy.upstream_stdio import Run
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.state.eventlog import EventLog
from tests.conftest import write_hook
from tests.helpers.proxied import UPSTREAM, text_of

pytestmark = pytest.mark.anyio


def spec(name: str, *extra: str) -> UpstreamSpec:
    return UpstreamSpec(name=name, transport="stdio", command=sys.executable,
                        args=(UPSTREAM, "--name", name, *extra))


@pytest.fixture
async def proxy(tmp_path: Path, project: Path, user_dir: Path,
                project_hooks: Path) -> AsyncIterator[Proxy]:
    write_hook(project_hooks, "no-secrets", extra="matcher:\n  pattern: secret\n",
               script="echo 'no secrets' >&2\nexit 2\n")
    write_hook(project_hooks, "shout", extra="matcher:\n  tool: echo\n  pattern: shout\n",
               script="""printf '%s' '{"modified_input": {"text": "SHOUT"}}'\n""")
    registry = Registry(user_dir, project)
    async with Engine(registry, log=EventLog(tmp_path / "events.jsonl")) as engine, \
            Proxy([spec("alpha", "--tools", "echo,fail,add")], engine,
                  ProxySettings(timeout=20)) as running:
        await running.start()
        yield running


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_path_gates_like_the_fast_path(proxy: Proxy, mode: str) -> None:
    async with Client(proxy.server, mode=mode) as client:
        assert text_of(await client.call_tool("echo", {"text": "plain"})) == "plain"
        assert text_of(await client.call_tool("echo", {"text": "shout"})) == "SHOUT"
        denied = await client.call_tool("echo", {"text": "secret"})
        assert denied.is_error and "Blocked by hook no-secrets: no secrets" in text_of(denied)
        failed = await client.call_tool("fail", {"message": "nope"})
        assert failed.is_error and text_of(failed) == "Error executing tool fail: nope"
        unknown = await client.call_tool("nope", {})
        assert unknown.is_error and "Unknown tool 'nope'" in text_of(unknown)
        added = await client.call_tool("add", {"a": 1, "b": 1})
        assert added.structured_content == {"total": 2, "terms": [1, 1]}


async def test_fast_path_answers_plain_calls_only(proxy: Proxy) -> None:
    envelope = {types.PROTOCOL_VERSION_META_KEY: "2026-07-28",
                types.CLIENT_CAPABILITIES_META_KEY: {}}

    def call(rid: Any, **params: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}

    plain = call(7, name="echo", arguments={"text": "hi"}, _meta=envelope)
    assert proxy.fast_request(plain) is None  # no 2026 request seen yet: the SDK decides
    async with Client(proxy.server) as client:
        await client.list_tools()
    answer = proxy.fast_request(plain)
    assert answer is not None
    response = await answer
    assert response["id"] == 7
    result = response["result"]
    assert result["content"] == [{"type": "text", "text": "hi"}]
    assert result["structuredContent"] == {"result": "hi"}
    assert result["resultType"] == "complete"
    assert result["_meta"][types.SERVER_INFO_META_KEY]["name"] == "mcp-hooks-proxy"
    pending = proxy.fast_request(call(8, name="echo", arguments={"text": "secret"},
                                      _meta=envelope))
    assert pending is not None
    assert (await pending)["result"]["isError"] is True
    for message in (
        call(9, name="echo", arguments={"text": "x"}),  # no envelope, no handshake
        call(9, name="echo", arguments={"text": "x"}, _meta={**envelope, "progressToken": 1}),
        call(9, name="unknown", arguments={}, _meta=envelope),
        call(9, name="echo", arguments="not an object", _meta=envelope),
        call(9, name="echo", arguments={}, _meta=envelope, inputResponses={}),
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "echo"}},  # no id
        {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": envelope}},
        call(True, name="echo", arguments={}, _meta=envelope),  # a bool is no id
        call(9.5, name="echo", arguments={}, _meta=envelope),
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": ["echo"]},
        call(9, name=5, arguments={}, _meta=envelope),
        call(9, name="echo", arguments={}, _meta="not an object"),
        call(9, name="echo", arguments={},
             _meta={**envelope, types.CLIENT_CAPABILITIES_META_KEY: {"elicitation": {}}}),
        call(9, name="echo", arguments={},
             _meta={types.PROTOCOL_VERSION_META_KEY: "2026-07-28"}),  # no capabilities
        call(9, name="echo", arguments={},
             _meta={**envelope, types.PROTOCOL_VERSION_META_KEY: "1999-01-01"}),
    ):
        assert proxy.fast_request(message) is None, message


def test_modified_output_shapes() -> None:
    result = {"content": [{"type": "text", "text": "x"}], "structuredContent": {"a": 1},
              "_meta": {"k": "v"}}
    assert apply_modified_output(result, "plain") == {
        "content": [{"type": "text", "text": "plain"}], "_meta": {"k": "v"}}
    assert apply_modified_output(result, {"structuredContent": {"a": 2}}) == {
        "content": [{"type": "text", "text": '{"a": 2}'}], "structuredContent": {"a": 2},
        "_meta": {"k": "v"}}
    blocks = [{"type": "text", "text": "y"}, {"type": "image", "data": "AA==",
                                               "mimeType": "image/png"}]
    assert apply_modified_output(result, {"content": blocks})["content"] == blocks
    assert apply_modified_output(result, {"content": [{"no": "type"}]})["content"] == [
        {"type": "text", "text": '[{"no": "type"}]'}]
    assert apply_modified_output(result, [1, 2]) == {
        "content": [{"type": "text", "text": "[1, 2]"}], "_meta": {"k": "v"}}
    assert apply_modified_output(result, {"b": 1})["structuredContent"] == {"b": 1}


def test_results_passed_on() -> None:
    raw = {"content": [], "isError": False, "resultType": "complete", "ttlMs": 5,
           "_meta": {types.SERVER_INFO_META_KEY: {"name": "up"}, "keep": 1}}
    assert clean_result(raw) == {"content": [], "isError": False, "_meta": {"keep": 1}}
    assert clean_result({"_meta": {types.SERVER_INFO_META_KEY: {}}}) == {"content": []}
    assert error_text(error_result("broken")) == "broken"
    assert error_text({"content": [{"type": "image", "data": "", "mimeType": "x"}]}).startswith(
        '{"content"')


def test_backoff() -> None:
    assert [backoff(n) for n in range(1, 9)] == [0, 1, 2, 4, 8, 16, 30, 30]


async def test_restart_backoff_after_repeated_failures() -> None:
    failing = Upstream(spec("broken", "--fail-start"), timeout=20, startup_timeout=20)
    async with anyio.create_task_group() as tg:
        failing.bind(tg)
        with pytest.raises(UpstreamError, match="could not start: the server process exited "
                                                "with status 3 while starting"):
            await failing.call_tool("echo", {})
        assert failing.failures == 1  # the first retry is immediate ...
        with pytest.raises(UpstreamError, match="could not start"):
            await failing.call_tool("echo", {})
        assert (failing.state, failing.starts, failing.failures) == ("failed", 2, 2)
        with pytest.raises(UpstreamError, match=r"is down \(.*\); tools/call 'echo' was not "
                                                r"sent\. The proxy starts it again in 1 s"):
            await failing.call_tool("echo", {})  # ... then the backoff holds it back
        assert failing.starts == 2
        status = failing.status()
        assert status["state"] == "failed" and status["next_start_in_seconds"] > 0
        tg.cancel_scope.cancel()


async def test_a_missing_working_folder_is_named(tmp_path: Path) -> None:
    missing = parse_upstream(f"gone={sys.executable} {UPSTREAM}").model_copy(
        update={"cwd": str(tmp_path / "nowhere")})
    upstream = Upstream(missing, startup_timeout=20)
    async with anyio.create_task_group() as tg:
        upstream.bind(tg)
        await upstream.start().wait()
        assert upstream.state == "failed"
        assert upstream.last_error is not None
        assert f"cannot start in '{tmp_path / 'nowhere'}'" in upstream.last_error
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("fast", [True, False])
async def test_stdio_upstream_on_either_transport(fast: bool) -> None:
    """The hand-written stdio transport carries raw tools/call requests; with
    ``fast_stdio=False`` the SDK's stdio_client does, and calls answer alike."""
    upstream = Upstream(spec("alpha", "--tools", "echo,add"), timeout=20, startup_timeout=20,
                        fast_stdio=fast)
    async with anyio.create_task_group() as tg:
        upstream.bind(tg)
        await upstream.start().wait()
        assert upstream.state == "ready"
        run = upstream._run_state
        assert run is not None and (run.channel is not None) is fast
        assert (run.process is not None) is fast
        result = await upstream.call_tool("add", {"a": 2, "b": 3})
        assert result["structuredContent"] == {"total": 5, "terms": [2, 3]}
        upstream.stop()
        tg.cancel_scope.cancel()


def test_the_stdio_switch_is_read_from_the_environment(tmp_path: Path) -> None:
    from mcp_hooks.cli import build_parser
    from mcp_hooks.cli.proxy import options_from_args

    args = build_parser(["proxy"]).parse_args(
        ["proxy", "--upstream", "a=true", "--project-dir", str(tmp_path), "--no-log"])
    assert options_from_args(args, environ={}).settings.fast_stdio is True
    sdk = options_from_args(args, environ={"MCP_HOOKS_PROXY_STDIO": "sdk"})
    assert sdk.settings.fast_stdio is False
    assert [s.name for s in sdk.upstreams] == ["a"] and sdk.serve.transport == "stdio"


_NOWHERE = "/no/such/folder"


@pytest.mark.parametrize(("transport", "exc", "said"), [
    ("stdio", FileNotFoundError(2, "No such file or directory", _NOWHERE),
     f"cannot start in '{_NOWHERE}': No such file or directory"),
    ("stdio", FileNotFoundError(2, "No such file or directory", "srv"),
     "cannot run 'srv': no such file or command (is it installed?)"),
    ("stdio", PermissionError(13, "Permission denied", "srv"),
     "cannot run 'srv': permission denied"),
    ("stdio", OSError(8, "Exec format error"), "cannot run 'srv': Exec format error"),
    ("stdio", OSError("plain"), "cannot run 'srv': plain"),
    ("stdio", ValueError("bad"), "ValueError: bad"),
    ("stdio", ValueError(), "ValueError"),
    ("http", OSError(111, "Connection refused"),
     "cannot talk to https://h.example/mcp: ConnectionRefusedError: [Errno 111] "
     "Connection refused"),
    ("http", ValueError(), "cannot talk to https://h.example/mcp: ValueError"),
    ("http", MCPError(types.CONNECTION_CLOSED, "Connection closed"),
     "the server closed the connection while starting"),
])
async def test_what_a_failed_start_is_said_to_be(transport: str, exc: BaseException,
                                                 said: str) -> None:
    """The messages a failed start leaves in ``last_error``, case by case."""
    spec = (UpstreamSpec(name="u", transport="stdio", command="srv", cwd=_NOWHERE)
            if transport == "stdio" else
            UpstreamSpec(name="u", transport="http", url="https://h.example/mcp"))
    assert await Upstream(spec)._describe(exc, Run(), starting=True) == said
