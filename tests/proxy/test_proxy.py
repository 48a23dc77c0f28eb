"""The gating proxy end to end: the SDK client over stdio against ``mcp-hooks proxy``, real
upstream servers (tests/helpers/upstream_server.py) behind it, and real HOOK.md folders.

Third-party upstreams (mcp-server-git, @modelcontextprotocol/server-filesystem) are in
tests/proxy/test_proxy_upstreams.py; the downstream HTTP and SSE transports in
tests/proxy/test_proxy_http.py.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import MCP_HOOKS, write_hook

pytestmark = pytest.mark.anyio

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


# -- aggregation -------------------------------------------------------------------------------


async def test_tools_of_every_upstream_collisions_prefixed(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "echo,add"),
                       "--upstream", upstream("beta", "--tools", "echo,pid")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        # Names stay as the upstreams give them, except where two collide: both prefixed.
        assert set(tools) == {"alpha__echo", "beta__echo", "add", "pid"}
        assert tools["add"].output_schema is not None  # schemas pass through unchanged
        assert tools["alpha__echo"].input_schema["required"] == ["text"]
        assert text_of(await client.call_tool("alpha__echo", {"text": "hi"})) == "hi"
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert not added.is_error
        assert added.structured_content == {"total": 5, "terms": [2, 3]}


async def test_prefix_option_prefixes_everything(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    async with proxied(tmp_path, project, user_dir, "--prefix",
                       "--upstream", upstream("alpha", "--tools", "echo")) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["alpha__echo"]
        assert [p.name for p in (await client.list_prompts()).prompts] == ["alpha__greet"]
        prompt = await client.get_prompt("alpha__greet", {"who": "Ann"})
        message = prompt.messages[0].content
        assert isinstance(message, types.TextContent)
        assert message.text == "Hello Ann, from alpha."


async def test_resources_templates_prompts_and_status(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "echo")) as client:
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
        assert uris == ["test://info", STATUS]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["test://items/{item}"]
        info = (await client.read_resource("test://info")).contents[0]
        assert isinstance(info, types.TextResourceContents) and info.text == "upstream alpha"
        item = (await client.read_resource("test://items/42")).contents[0]
        assert isinstance(item, types.TextResourceContents) and item.text == "alpha item 42"
        data = await status(client)
        alpha = by_name(data)["alpha"]
        assert alpha["state"] == "ready" and alpha["tools"] == ["echo"]
        assert alpha["last_error"] is None
        assert data["proxy"]["project_dir"] == str(project)


# -- gating ------------------------------------------------------------------------------------


async def test_deny_never_reaches_the_upstream(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    seen = tmp_path / "before.jsonl"
    recorder(project_hooks, "no-env-writes", "before_tool", seen,
             extra="matcher:\n  tool: write_file\n  pattern: '\\.env$'\n",
             then="echo 'writing .env files is not allowed' >&2\nexit 2\n")
    root = tmp_path / "files"
    root.mkdir()
    async with proxied(tmp_path, project, user_dir, "--upstream",
                       upstream("files", "--root", str(root), "--tools", "write_file")) as client:
        denied = await client.call_tool("write_file", {"path": ".env", "content": "K=v"})
        assert denied.is_error
        assert "writing .env files is not allowed" in text_of(denied)
        assert "no-env-writes" in text_of(denied)
        assert not (root / ".env").exists()  # the upstream was never called
        allowed = await client.call_tool("write_file", {"path": "notes.txt", "content": "hi"})
        assert not allowed.is_error
        assert (root / "notes.txt").read_text() == "hi"
    (payload,) = records(seen)  # the matcher kept notes.txt away from the hook
    assert payload["event_type"] == "before_tool"
    assert payload["tool_name"] == "write_file"
    assert payload["tool_input"] == {"path": ".env", "content": "K=v"}
    assert payload["tool_use_id"].startswith("proxy-")
    assert payload["mcp_server"] == "files" and payload["mcp_tool"] == "write_file"
    assert payload["work_dir"] == str(project)


@pytest.mark.parametrize("stdio", ["fast", "sdk"])
async def test_both_stdio_paths_gate_alike(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path, stdio: str
) -> None:
    """MCP_HOOKS_PROXY_STDIO=sdk puts the SDK's stdio transports on both sides; the hooks,
    results and errors are those of the hand-written path."""
    write_hook(project_hooks, "no-secrets", extra="matcher:\n  pattern: secret\n",
               script="echo 'no secrets' >&2\nexit 2\n")
    write_hook(project_hooks, "shout", extra="matcher:\n  tool: echo\n  pattern: shout\n",
               script="""printf '%s' '{"modified_input": {"text": "SHOUT"}}'\n""")
    async with proxied(tmp_path, project, user_dir, "--upstream",
                       upstream("alpha", "--tools", "echo,fail"),
                       env={"MCP_HOOKS_PROXY_STDIO": stdio}) as client:
        assert text_of(await client.call_tool("echo", {"text": "plain"})) == "plain"
        assert text_of(await client.call_tool("echo", {"text": "shout"})) == "SHOUT"
        denied = await client.call_tool("echo", {"text": "secret"})
        assert denied.is_error and "Blocked by hook no-secrets: no secrets" in text_of(denied)
        failed = await client.call_tool("fail", {"message": "nope"})
        assert failed.is_error and text_of(failed) == "Error executing tool fail: nope"
        assert by_name(await status(client))["alpha"]["state"] == "ready"


async def test_matchers_see_the_name_the_client_sees(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "only-beta", script="echo 'not beta' >&2\nexit 2\n",
               extra="matcher:\n  tool: 'beta__.*'\n")
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "echo"),
                       "--upstream", upstream("beta", "--tools", "echo")) as client:
        assert not (await client.call_tool("alpha__echo", {"text": "x"})).is_error
        assert (await client.call_tool("beta__echo", {"text": "x"})).is_error


async def test_modified_input_is_what_the_upstream_receives(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "rewrite", extra="matcher:\n  tool: echo\n",
               script="""printf '%s' '{"modified_input": {"text": "rewritten"}}'\n""")
    after = tmp_path / "after.jsonl"
    recorder(project_hooks, "see-after", "after_tool", after)
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "echo")) as client:
        result = await client.call_tool("echo", {"text": "original"})
        assert text_of(result) == "rewritten"
    (payload,) = records(after)
    assert payload["tool_input"] == {"text": "rewritten"}
    assert payload["tool_output"]["content"] == [{"type": "text", "text": "rewritten"}]
    assert payload["tool_output"]["structuredContent"] == {"result": "rewritten"}


async def test_modified_output_and_additional_context(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "redact", trigger="after_tool", extra="matcher:\n  tool: echo\n",
               script="""printf '%s' '{"modified_output": {"content": [{"type": "text",
"text": "[redacted]"}], "structuredContent": {"result": "[redacted]"}},
"additional_context": "A hook redacted this output."}'\n""")
    write_hook(project_hooks, "recount", trigger="after_tool", extra="matcher:\n  tool: add\n",
               script="""printf '%s' '{"modified_output": {"structuredContent":
{"total": 99, "terms": []}}}'\n""")
    write_hook(project_hooks, "note", extra="matcher:\n  tool: add\n",
               script="""printf '%s' '{"additional_context": "Adding is safe."}'\n""")
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "echo,add")) as client:
        echoed = await client.call_tool("echo", {"text": "password=hunter2"})
        assert not echoed.is_error
        assert [b.text for b in echoed.content if isinstance(b, types.TextContent)] == [
            "[redacted]", "A hook redacted this output."]
        assert echoed.structured_content == {"result": "[redacted]"}
        added = await client.call_tool("add", {"a": 1, "b": 2})
        assert added.structured_content == {"total": 99, "terms": []}  # fits the schema
        assert json.loads(text_of(added).split("\n")[0]) == {"total": 99, "terms": []}
        assert text_of(added).endswith("Adding is safe.")


async def test_after_tool_deny_withholds_the_result(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "no-leaks", trigger="after_tool", extra="matcher:\n  pattern: x\n",
               script="grep -q SECRET && { echo 'the output carries a secret' >&2; exit 2; }\n"
               "exit 0\n")
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "echo")) as client:
        result = await client.call_tool("echo", {"text": "x SECRET"})
        assert result.is_error
        assert "the output carries a secret" in text_of(result)
        assert "SECRET" not in text_of(result).replace("a secret", "")
        assert text_of(await client.call_tool("echo", {"text": "x fine"})) == "x fine"


async def test_upstream_error_fires_failure_and_passes_unchanged(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    failures = tmp_path / "failures.jsonl"
    after = tmp_path / "after.jsonl"
    recorder(project_hooks, "see-failures", "after_tool_failure", failures)
    recorder(project_hooks, "see-after", "after_tool", after)
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "fail")) as client:
        result = await client.call_tool("fail", {"message": "disk on fire"})
        assert result.is_error
        assert text_of(result) == "Error executing tool fail: disk on fire"  # as upstream said
    (payload,) = records(failures)
    assert payload["tool_name"] == "fail"
    assert payload["error"] == "Error executing tool fail: disk on fire"
    assert payload["mcp_server"] == "alpha"
    assert records(after) == []


async def test_async_hooks_never_delay_the_call(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    done, gate = tmp_path / "async-done", tmp_path / "gate"
    # the async hook finishes only once the call has returned
    write_hook(project_hooks, "slow-audit", extra="async: true\n",
               script=f"while [ ! -e '{gate}' ]; do sleep 0.01; done\ntouch '{done}'\n")
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "echo")) as client:
        with anyio.fail_after(30):  # had the call waited for the async hook, it would hang
            assert text_of(await client.call_tool("echo", {"text": "quick"})) == "quick"
        assert not done.exists()
        gate.touch()
        await wait_for(done.exists)


async def test_session_events(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    starts, ends, before = (tmp_path / f"{n}.jsonl" for n in ("start", "end", "before"))
    recorder(project_hooks, "on-start", "session_start", starts)
    recorder(project_hooks, "on-end", "session_end", ends)
    recorder(project_hooks, "on-tool", "before_tool", before)
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "echo,pid")) as client:
        await client.call_tool("echo", {"text": "1"})
        await client.call_tool("pid", {})
        await client.call_tool("nonexistent", {})
        await anyio.sleep(0.2)
    await wait_for(lambda: bool(records(ends)))
    (start,), (end,) = records(starts), records(ends)
    assert start["args"]["transport"] == "stdio"
    assert start["args"]["upstreams"] == ["alpha"]
    assert end["exit_reason"] == "client_disconnected"
    assert end["total_steps"] == 3
    assert 0 < end["duration_seconds"] < 60
    assert start["session_id"] == end["session_id"]
    assert {p["session_id"] for p in records(before)} == {start["session_id"]}


# -- list changes ------------------------------------------------------------------------------


async def test_list_changed_reaches_handshake_clients(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    heard = [anyio.Event()]  # the notice since the client last listed

    async def handler(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard[0].set()

    async with proxied(tmp_path, project, user_dir, "--upstream",
                       upstream("alpha", "--tools", "echo,grow"), mode="legacy",
                       message_handler=handler) as client:
        assert "late" not in {t.name for t in (await client.list_tools()).tools}
        await client.call_tool("grow", {"tool": "late"})
        # a notice from the upstream joining at start-up may arrive first: each notice is
        # followed by a listing, until one shows the new tool
        with anyio.fail_after(30):  # a hang bound
            while True:
                await heard[0].wait()
                heard[0] = anyio.Event()
                if "late" in {t.name for t in (await client.list_tools()).tools}:
                    break
        assert text_of(await client.call_tool("late", {"text": "t"})) == "late:t"


async def test_list_changed_reaches_listen_streams(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    async with proxied(tmp_path, project, user_dir, "--upstream",
                       upstream("alpha", "--tools", "echo,grow")) as client:
        async with client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("grow", {"tool": "later"})
            with anyio.fail_after(30):  # a hang bound
                async for _event in subscription:
                    break
        tools = {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}
        assert "later" in tools


# -- upstream faults ---------------------------------------------------------------------------


async def test_upstream_crash_mid_call_then_restart(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    failures = tmp_path / "failures.jsonl"
    recorder(project_hooks, "see-failures", "after_tool_failure", failures)
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("fragile", "--tools", "crash,pid"),
                       "--upstream", upstream("steady", "--tools", "echo")) as client:
        first_pid = int(text_of(await client.call_tool("pid", {})))
        crashed = await client.call_tool("crash", {"code": 7})
        assert crashed.is_error
        message = text_of(crashed)
        assert "upstream 'fragile'" in message
        assert "exited with status 7" in message
        assert "crashing on purpose" in message  # its last words on stderr
        fragile = by_name(await status(client))["fragile"]
        assert fragile["state"] == "dead"
        assert "exited with status 7" in fragile["last_error"]
        # The others keep working while it is down ...
        assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"
        # ... and it is started again on its next call.
        second_pid = int(text_of(await client.call_tool("pid", {})))
        assert second_pid != first_pid
        fragile = by_name(await status(client))["fragile"]
        assert (fragile["state"], fragile["starts"]) == ("ready", 2)
    (payload,) = records(failures)
    assert payload["tool_name"] == "crash" and "exited with status 7" in payload["error"]
    events = records(tmp_path / "events.jsonl")
    states = [(r["upstream"], r["state"]) for r in events if r.get("kind") == "proxy_upstream"]
    assert ("fragile", "dead") in states


async def test_an_upstream_that_never_answers_times_out(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    failures = tmp_path / "failures.jsonl"
    recorder(project_hooks, "see-failures", "after_tool_failure", failures)
    async with proxied(tmp_path, project, user_dir, "--timeout", "1",
                       "--upstream", upstream("slow", "--tools", "sleep,echo")) as client:
        with anyio.fail_after(30):  # a hang, not slowness: the call sleeps 60 s
            result = await client.call_tool("sleep", {"seconds": 60})
        assert result.is_error
        assert "did not answer tools/call 'sleep' within 1 s" in text_of(result)
        # Only that call was given up: the upstream itself still answers.
        assert text_of(await client.call_tool("echo", {"text": "alive"})) == "alive"
    (payload,) = records(failures)
    assert "within 1 s" in payload["error"]


async def test_an_upstream_that_never_starts_does_not_hold_the_others(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    with anyio.fail_after(60):  # a hang, not slowness: the silent upstream never answers
        async with proxied(tmp_path, project, user_dir, "--startup-timeout", "4",
                           "--upstream", upstream("silent", "--silent"),
                           "--upstream", upstream("ok", "--tools", "echo")) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
            assert text_of(await client.call_tool("echo", {"text": "x"})) == "x"
            silent = by_name(await status(client))["silent"]
            assert silent["state"] in ("failed", "starting")  # retried in the background
            assert "did not finish starting" in silent["last_error"]


async def test_upstreams_that_fail_to_start(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("broken", "--fail-start"),
                       "--upstream", "missing=no-such-command-mcp-hooks-test --flag",
                       "--upstream", upstream("ok", "--tools", "echo")) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
        assert text_of(await client.call_tool("echo", {"text": "fine"})) == "fine"
        upstreams = by_name(await status(client))
        broken = upstreams["broken"]
        assert "exited with status 3" in broken["last_error"]
        assert "missing configuration (on purpose)" in broken["last_error"]
        assert "cannot run 'no-such-command-mcp-hooks-test'" in upstreams["missing"][
            "last_error"]
        assert upstreams["ok"]["state"] == "ready"


async def test_concurrent_calls_to_several_upstreams(
    tmp_path: Path, project: Path, user_dir: Path
) -> None:
    meet = tmp_path / "meet"
    meet.mkdir()
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "rendezvous"),
                       "--upstream", upstream("beta", "--tools", "rendezvous")) as client:
        results: dict[int, str] = {}

        async def call(i: int) -> None:
            name = "alpha__rendezvous" if i % 2 else "beta__rendezvous"
            args = {"folder": str(meet), "count": 10}
            results[i] = text_of(await client.call_tool(name, args))

        # Each call returns only once all ten are under way in the two upstreams: one after
        # another, the first would never return.
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(call, i)
        assert results == {i: "met 10" for i in range(10)}


async def test_a_call_the_client_cancels(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    failures = tmp_path / "failures.jsonl"
    recorder(project_hooks, "see-failures", "after_tool_failure", failures)
    async with proxied(tmp_path, project, user_dir,
                       "--upstream", upstream("alpha", "--tools", "sleep,echo")) as client:
        with anyio.move_on_after(1) as scope:
            await client.call_tool("sleep", {"seconds": 30})
        assert scope.cancelled_caught
        await wait_for(lambda: bool(records(failures)))
        assert text_of(await client.call_tool("echo", {"text": "next"})) == "next"
    (payload,) = records(failures)
    assert (payload["tool_name"], payload["error"]) == ("sleep", "the client cancelled the call")


def test_stdout_carries_only_protocol(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "chatty", extra="matcher:\n  tool: echo\n",
               script="echo 'hook stdout noise'\necho 'hook stderr noise' >&2\nexit 1\n")
    write_hook(project_hooks, "no-secrets", extra="matcher:\n  pattern: secret\n",
               script="echo 'no secrets' >&2\nexit 2\n")
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "hello"}}},
        {"jsonrpc": "2.0", "id": "three", "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "a secret"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": {"progressToken": 9}}},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    proc = subprocess.Popen(
        [MCP_HOOKS, "proxy", "--upstream", upstream("alpha", "--tools", "echo"),
         "--user-dir", str(user_dir), "--project-dir", str(project), "--no-log"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # stdin stays open until every answer is out: closing it is the client leaving.
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(stdin)
    proc.stdin.flush()
    answers: dict[Any, dict[str, Any]] = {}
    while len(answers) < 4:
        line = proc.stdout.readline()
        assert line, "the proxy closed stdout early"
        message = json.loads(line)  # every line on stdout is a JSON-RPC message
        if "id" in message:
            answers[message["id"]] = message
    proc.stdin.close()
    assert proc.wait(10) == 0
    assert proc.stdout.read() == ""
    proc.stdout.close()
    assert proc.stderr is not None
    assert "hook stdout noise" not in proc.stderr.read()  # the hook's stdout is its result
    proc.stderr.close()
    assert "hook stdout noise" not in json.dumps(answers)
    hello = answers[2]["result"]
    assert hello["content"] == [{"type": "text", "text": "hello"}]
    assert hello["structuredContent"] == {"result": "hello"}
    assert "resultType" not in hello  # a handshake-era answer
    denied = answers["three"]["result"]
    assert denied["isError"] is True and "no secrets" in denied["content"][0]["text"]
    assert answers[4]["result"]["content"][0]["text"] == "x"  # the SDK path, same answer


# -- one tool vocabulary (vocabulary.MCP_CLIENTS) ----------------------------------------------

AGENT_TOOLS = '''
import json
from mcp.server.mcpserver import MCPServer

server = MCPServer("agent-tools")


def bash(command: str) -> str:
    return "ran: " + command


def edit(file_path: str, old_string: str, new_string: str) -> str:
    return json.dumps({"file_path": file_path, "old_string": old_string,
                       "new_string": new_string}, sort_keys=True)


def git_status(repo_path: str) -> str:
    return "clean: " + repo_path


server.add_tool(bash, name="Bash", description="Run a shell command.")
server.add_tool(edit, name="Edit", description="Replace text in a file.")
server.add_tool(git_status, description="Status of a repository.")
server.run()
'''


def agent_tools(tmp_path: Path) -> str:
    """An ``--upstream`` value for a real MCP server whose tools carry host tool names."""
    script = tmp_path / "agent_tools.py"
    script.write_text(AGENT_TOOLS)
    return f"agent={shlex.join([sys.executable, str(script)])}"


@pytest.mark.parametrize("stdio", ["fast", "sdk"])
async def test_a_hook_on_shell_matches_an_upstream_tool_named_bash(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path, stdio: str
) -> None:
    seen = tmp_path / "seen.jsonl"
    recorder(project_hooks, "no-rm", "before_tool", seen,
             extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n",
             then="echo 'no rm -rf' >&2\nexit 2\n")
    after = tmp_path / "after.jsonl"
    recorder(project_hooks, "audit", "after_tool", after, extra="matcher:\n  tool: Shell\n")
    write_hook(project_hooks, "quieter", extra="matcher:\n  tool: Shell\n  pattern: '^ls$'\n",
               script="""printf '%s' '{"modified_input": {"command": "ls -la"}}'\n""")
    async with proxied(tmp_path, project, user_dir, "--upstream", agent_tools(tmp_path),
                       env={"MCP_HOOKS_PROXY_STDIO": stdio}) as client:
        denied = await client.call_tool("Bash", {"command": "rm -rf /"})
        assert denied.is_error and "no rm -rf" in text_of(denied)
        # the rewrite reaches the upstream under the tool's own key
        assert text_of(await client.call_tool("Bash", {"command": "ls"})) == "ran: ls -la"
    (payload,) = records(seen)
    assert (payload["tool_name"], payload["tool_input"]) == ("Shell", {"command": "rm -rf /"})
    assert payload["host"] == {"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}
    assert payload["mcp_server"] == "agent" and payload["mcp_tool"] == "Bash"
    (ran,) = records(after)  # after the call: what ran, in the vocabulary
    assert (ran["tool_name"], ran["tool_input"]) == ("Shell", {"command": "ls -la"})
    assert ran["host"]["tool_input"] == {"command": "ls -la"}


async def test_a_rewrite_goes_back_in_the_upstream_tools_keys(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    seen = tmp_path / "seen.jsonl"
    recorder(project_hooks, "edit-audit", "before_tool", seen,
             extra="matcher:\n  tool: EditFile\n",
             then="""printf '%s' '{"modified_input": {"path": "/b.txt", "edits": """
             """[{"old_string": "x", "new_string": "safe"}]}}'\n""")
    async with proxied(tmp_path, project, user_dir, "--upstream", agent_tools(tmp_path)) as client:
        result = await client.call_tool("Edit", {"file_path": "/a.txt", "old_string": "x",
                                                 "new_string": "rm"})
        assert json.loads(text_of(result)) == {"file_path": "/b.txt", "old_string": "x",
                                               "new_string": "safe"}
    (payload,) = records(seen)
    assert payload["tool_name"] == "EditFile"
    assert payload["tool_input"] == {"path": "/a.txt",
                                     "edits": [{"old_string": "x", "new_string": "rm"}]}


async def test_a_rewrite_the_upstream_tool_cannot_take_is_refused(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    """Edit holds one edit: a hook's rewrite into two cannot reach the upstream, and the
    original input (what the hook replaced) must not run instead."""
    seen = tmp_path / "seen.jsonl"
    two = ('{"modified_input": {"path": "/a.txt", "edits": [{"old_string": "x", '
           '"new_string": "y"}, {"old_string": "p", "new_string": "q"}]}}')
    recorder(project_hooks, "two-edits", "before_tool", seen,
             extra="matcher:\n  tool: EditFile\n", then=f"printf '%s' '{two}'\n")
    ran = tmp_path / "ran.jsonl"
    recorder(project_hooks, "audit", "after_tool", ran)
    async with proxied(tmp_path, project, user_dir, "--upstream", agent_tools(tmp_path)) as client:
        result = await client.call_tool("Edit", {"file_path": "/a.txt", "old_string": "x",
                                                 "new_string": "rm"})
        assert result.is_error
        assert "exactly one edit" in text_of(result) and "refused" in text_of(result)
    assert len(records(seen)) == 1
    assert not ran.exists() or not records(ran)  # the upstream tool never ran


async def test_an_unmapped_upstream_tool_passes_through_unchanged(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path
) -> None:
    seen = tmp_path / "seen.jsonl"
    recorder(project_hooks, "git-audit", "before_tool", seen,
             extra="matcher:\n  tool: git_status\n")
    async with proxied(tmp_path, project, user_dir, "--upstream", agent_tools(tmp_path)) as client:
        assert text_of(await client.call_tool("git_status", {"repo_path": "."})) == "clean: ."
    (payload,) = records(seen)
    assert (payload["tool_name"], payload["tool_input"]) == ("git_status", {"repo_path": "."})
    assert "host" not in payload
