"""Issue 9 in the MCP server: it fails closed, keeps its secrets, never stalls on what it finds
on disk, and shows trust.

Real clients (in memory, a stdio subprocess, HTTP), a real ``mcp-hooks serve`` process fed raw
JSON-RPC lines where the SDK client would refuse to send them, and real subprocess hooks.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_hooks.server import MAX_PAYLOAD_BYTES, build_server
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.raw_session import nested, raw_session

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token-0123456789abcdef"


def serve_argv(project: Path, user_dir: Path, *extra: str) -> list[str]:
    return [MCP_HOOKS, "serve", "--project-dir", str(project), "--user-dir", str(user_dir),
            "--no-log", *extra]


def fire_line(rid: int | str, arguments_json: str) -> bytes:
    """A ``tools/call`` of fire_hook_event whose arguments are given as raw JSON text."""
    return (f'{{"jsonrpc":"2.0","id":{json.dumps(rid)},"method":"tools/call","params":'
            f'{{"name":"fire_hook_event","arguments":{arguments_json}}}}}\n').encode()


@asynccontextmanager
async def stdio_client(project: Path, user_dir: Path, *extra: str) -> AsyncIterator[Client]:
    argv = serve_argv(project, user_dir, *extra)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(params, mode="legacy") as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None
    return structured


def env_recorder(root: Path, name: str, out: Path, trigger: str = "before_tool") -> Path:
    return write_hook(root, name, trigger=trigger, script=f"env > '{out}'\nexit 0\n")


# -- 1. secrets ---------------------------------------------------------------------------------


async def test_a_hook_served_over_http_with_a_token_cannot_read_it(
    project: Path, user_dir: Path, project_hooks: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "env.txt"
    env_recorder(project_hooks, "env-dump", seen)
    env = {**os.environ, "MCP_HOOKS_TOKEN": TOKEN, "COPY_OF_THE_TOKEN": TOKEN,
           "PLAIN_SETTING": "kept"}
    argv = serve_argv(project, user_dir, "--transport", "http", "--port", "0")
    with background(argv, env=env) as server:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http, Client(
            streamable_http_client(server.url, http_client=http), mode="legacy"
        ) as client:
            outcome = await call(client, "fire_hook_event", event_type="before_tool",
                                 tool_name="Bash", tool_input={"command": "ls"})
    assert [h["name"] for h in outcome["hooks"]] == ["env-dump"]
    dumped = seen.read_text()
    assert "PLAIN_SETTING=kept" in dumped  # the hook did get the ordinary environment
    assert TOKEN not in dumped
    assert "MCP_HOOKS_TOKEN" not in dumped and "COPY_OF_THE_TOKEN" not in dumped


async def test_a_token_given_on_the_command_line_is_hidden_too(
    project: Path, user_dir: Path, project_hooks: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "env.txt"
    env_recorder(project_hooks, "env-dump", seen)
    env = {**os.environ, "DEPLOY_KEY": TOKEN}
    argv = serve_argv(project, user_dir, "--transport", "http", "--port", "0", "--token", TOKEN)
    with background(argv, env=env) as server:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http, Client(
            streamable_http_client(server.url, http_client=http), mode="legacy"
        ) as client:
            await call(client, "fire_hook_event", event_type="before_tool", tool_name="Bash",
                       tool_input={"command": "ls"})
    assert TOKEN not in seen.read_text() and "DEPLOY_KEY" not in seen.read_text()


# -- 2. faults are outcomes --------------------------------------------------------------------


async def test_an_engine_fault_is_a_deny_not_a_tool_error(
    project: Path, user_dir: Path, project_hooks: Path
) -> None:
    broken = write_hook(project_hooks, "broken")
    (broken / "HOOK.md").write_text("---\nname: broken\ntrigger: before_tool\n---\n")
    for on_fault in ("block", "warn"):
        async with HookService(Settings.from_env(project_dir=project, user_dir=user_dir,
                                        on_fault=on_fault, no_log=True)) as service, \
                Client(build_server(service)) as client:
            result = await client.call_tool("fire_hook_event", {
                "event_type": "before_tool", "tool_name": "Bash", "tool_input": {}})
            assert not result.is_error
            outcome = result.structured_content
            assert outcome is not None
            if on_fault == "block":
                assert outcome["decision"] == "deny" and outcome["blocked_by"] == "mcp-hooks"
                assert "broken" in outcome["reason"]
            else:
                assert outcome["decision"] == "allow"
                assert any("broken" in w for w in outcome["warnings"])
            # an event the broken hook could not handle is not held up
            other = await call(client, "fire_hook_event", event_type="session_start")
            assert other["decision"] == "allow"


async def test_hooks_that_cannot_be_loaded_fail_closed_and_the_server_goes_on(
    project: Path, tmp_path: Path
) -> None:
    """A user folder no registry can read (a NUL in its path): it is an invalid root that
    could hold a hook of any event, so blocking events are faults, and the listing says why."""
    bad_user_dir = Path(str(tmp_path / "user") + "\0x")
    async with HookService(Settings.from_env(
            project_dir=project, user_dir=bad_user_dir, no_log=True)) as service, \
            Client(build_server(service)) as client:
        for _ in range(2):
            denied = await call(client, "fire_hook_event", event_type="before_tool",
                                tool_name="Bash", tool_input={"command": "ls"})
            assert denied["decision"] == "deny" and denied["blocked_by"] == "mcp-hooks"
            assert "path is not valid" in denied["reason"]
            ended = await call(client, "fire_hook_event", event_type="session_end")
            assert ended["decision"] == "allow" and ended["warnings"]
            listing = await call(client, "list_hooks")
            assert "path is not valid" in str(listing["invalid"])
        events = await client.read_resource("hooks://events")
        assert events.contents


def test_too_deep_event_data_is_judged_by_the_engine(
    project: Path, user_dir: Path, project_hooks: Path
) -> None:
    """300 levels: more than the engine hands to hooks (and than the SDK client sends)."""
    arguments = '{"event_type":"before_tool","tool_name":"Bash","tool_input":{"a":' \
        + nested(300) + "}}"
    with raw_session(serve_argv(project, user_dir)) as server:
        server.send(fire_line(1, arguments))
        assert server.outcome(1)["decision"] == "allow"  # no hook would have seen it
        write_hook(project_hooks, "gate")
        server.send(fire_line(2, arguments))
        denied = server.outcome(2)
        assert denied["decision"] == "deny" and denied["blocked_by"] == "mcp-hooks"
        assert "nests" in denied["reason"]


async def test_a_lone_surrogate_in_a_hook_answer_still_reaches_the_client(
    project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "rewrite",
               script="printf '%s' '{\"modified_input\": {\"command\": \"ls \\udcff\"}}'\n")
    async with stdio_client(project, user_dir) as client:
        result = await client.call_tool("fire_hook_event", {
            "event_type": "before_tool", "tool_name": "Bash", "tool_input": {"command": "ls"}})
        assert not result.is_error
        text = result.content[0]
        assert isinstance(text, types.TextContent)
        assert json.loads(text.text)["modified_input"] == {"command": "ls \udcff"}
        assert result.structured_content is not None
        assert result.structured_content["modified_input"]["command"].startswith("ls \ufffd")
        assert (await call(client, "fire_hook_event", event_type="session_start"))["hooks"] == []


# -- 2. odd input on the wire ------------------------------------------------------------------


def test_odd_input_over_stdio_gets_answers_and_the_server_stays_up(
    project: Path, user_dir: Path, project_hooks: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "payloads.jsonl"
    write_hook(project_hooks, "recorder",
               script=f"cat >> '{seen}'\necho >> '{seen}'\nexit 0\n",
               extra="matcher:\n  tool: Shell\n")
    write_hook(project_hooks, "no-rm", script="echo 'no rm' >&2\nexit 2\n",
               extra="priority: 900\nmatcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    huge = "x" * (3 << 20)
    with raw_session(serve_argv(project, user_dir)) as server:
        server.send(
            fire_line(1, '{"event_type":"before_tool","tool_name":"Bash",'
                         '"tool_input":{"command":"echo \\udcff"}}'),
            fire_line(2, '{"event_type":"before_tool","tool_name":"Bash",'
                         '"tool_input":{"a":' + nested(5000) + '}}'),
            fire_line(3, '{"event_type":"before_tool","tool_name":"Bash",'
                         '"tool_input":{"a":' + nested(300) + '}}'),
            fire_line(4, json.dumps({"event_type": "before_tool", "tool_name": "Bash",
                                     "tool_input": {"command": "rm -rf /", "blob": huge}})),
            b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name": \n',
            b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":7}\n',
            fire_line(7, '{"event_type":"before_tool","tool_name":"Bash",'
                         '"tool_input":{"command":"rm -rf /"}}'),
        )
        surrogate = server.outcome(1)
        assert surrogate["decision"] == "allow"
        assert [h["name"] for h in surrogate["hooks"]] == ["recorder"]
        payload = json.loads(seen.read_text().splitlines()[0])
        assert payload["tool_input"] == {"command": "echo \udcff"}  # the escape, as sent

        too_deep = server.answer(2)
        assert too_deep["error"]["code"] == types.PARSE_ERROR  # answered, by its id
        assert "deeper" in too_deep["error"]["message"]

        deep = server.outcome(3)
        assert deep["decision"] == "deny" and deep["blocked_by"] == "mcp-hooks"

        big = server.outcome(4)
        assert big["decision"] == "deny" and big["blocked_by"] == "mcp-hooks"
        assert "1 MiB" in big["reason"]

        broken = server.answer(5)  # not JSON, but its id comes before the break
        assert broken["error"]["code"] == types.PARSE_ERROR
        server.send(b'{"params": {}, \n')
        assert server.pop(None)["error"]["code"] == types.PARSE_ERROR  # no id to read
        assert server.answer(6)["error"]["code"] == types.INVALID_REQUEST

        assert server.outcome(7)["reason"] == "no rm"
        assert len(seen.read_text().splitlines()) == 1  # 7 was denied before the recorder ran


async def test_odd_input_over_http_gets_answers_and_the_server_stays_up(
    project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "no-rm", script="echo 'no rm' >&2\nexit 2\n",
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    argv = serve_argv(project, user_dir, "--transport", "http", "--port", "0", "--stateless")
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
    bodies = [
        fire_line(1, '{"event_type":"before_tool","tool_name":"Bash",'
                     '"tool_input":{"command":"rm -rf \\udcff"}}'),
        fire_line(2, '{"event_type":"before_tool","tool_name":"Bash",'
                     '"tool_input":{"a":' + nested(5000) + '}}'),
        fire_line(3, json.dumps({"event_type": "before_tool", "tool_name": "Bash",
                                 "tool_input": {"blob": "x" * (3 << 20)}})),
    ]
    with background(argv) as server:
        async with httpx2.AsyncClient(timeout=60) as http:
            for body in bodies:
                response = await http.post(server.url, content=body, headers=headers)
                assert response.status_code < 500, response.text
                text = response.text
                data = json.loads(text[text.index("{"):text.rindex("}") + 1])
                if "error" in data:  # refused by the SDK's parser: a JSON-RPC error
                    assert data["error"]["code"] in (types.PARSE_ERROR, types.INVALID_REQUEST)
                else:  # read: the outcome must be a deny
                    assert data["result"]["structuredContent"]["decision"] == "deny", data
        async with Client(server.url, mode="legacy") as client:
            outcome = await call(client, "fire_hook_event", event_type="before_tool",
                                 tool_name="Bash", tool_input={"command": "rm -rf /"})
            assert outcome["reason"] == "no rm"


# -- 3. discovery never stalls the server ------------------------------------------------------


async def test_symlink_loops_at_start_and_while_serving(
    project: Path, user_dir: Path, project_hooks: Path
) -> None:
    os.symlink("loop", project_hooks / "loop")
    async with stdio_client(project, user_dir, "--log-level", "ERROR") as client:
        listing = await call(client, "list_hooks")
        assert [(i["name"], i["event"], i["in_scope"]) for i in listing["invalid"]] == [
            ("loop", None, True)]
        denied = await call(client, "fire_hook_event", event_type="before_tool",
                            tool_name="Bash", tool_input={"command": "ls"})
        assert denied["decision"] == "deny" and "loop" in denied["reason"]
        os.remove(project_hooks / "loop")
        fine = await call(client, "fire_hook_event", event_type="before_tool",
                          tool_name="Bash", tool_input={"command": "ls"})
        assert fine["decision"] == "allow"
        os.symlink("loop2", user_dir / "loop2")  # a loop made while the server runs
        denied = await call(client, "fire_hook_event", event_type="session_start")
        assert denied["decision"] == "deny" and "loop2" in denied["reason"]
        listing = await call(client, "list_hooks")
        assert [i["name"] for i in listing["invalid"]] == ["loop2"]
        index = await client.read_resource("hooks://index")
        assert "loop2" in index.contents[0].model_dump()["text"]


async def test_yaml_alias_expansion_is_refused_as_an_invalid_hook(
    project: Path, user_dir: Path, project_hooks: Path
) -> None:
    laughs = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, 10):
        prev = chr(ord("a") + level - 1)
        name = chr(ord("a") + level)
        laughs.append(f"{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev},"
                      f" *{prev}, *{prev}, *{prev}]")
    hook = write_hook(project_hooks, "laughs")
    (hook / "HOOK.md").write_text(
        "---\nname: laughs\ndescription: d\ntrigger: before_tool\nmetadata:\n"
        + "".join(f"  {line}\n" for line in laughs) + "---\n")
    async with stdio_client(project, user_dir, "--log-level", "ERROR") as client:
        listing = await call(client, "list_hooks")
        assert [i["name"] for i in listing["invalid"]] == ["laughs"]
        assert listing["invalid"][0]["event"] == "before_tool"
        denied = await call(client, "fire_hook_event", event_type="before_tool",
                            tool_name="Bash", tool_input={})
        assert denied["decision"] == "deny"


async def test_a_backtracking_pattern_over_a_big_input_does_not_stall_the_server(
    project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "nested-plus", script="exit 2\n",
               extra="matcher:\n  tool: Shell\n  pattern: '(a+)+b'\n")
    write_hook(project_hooks, "lookahead", extra="matcher:\n  pattern: 'rm(?=\\s)'\n")
    argv = serve_argv(project, user_dir, "--transport", "http", "--port", "0")
    big = {"command": "a" * 1_000_000}
    with background(argv) as server:
        async with Client(server.url, mode="legacy") as slow, \
                Client(server.url, mode="legacy") as other:
            listing = await call(other, "list_hooks")
            assert [i["name"] for i in listing["invalid"]] == ["lookahead"]
            assert "RE2" in listing["invalid"][0]["reason"]
            results: dict[str, dict[str, Any]] = {}

            async def fire_big() -> None:
                results["big"] = await call(slow, "fire_hook_event", event_type="before_tool",
                                            tool_name="Bash", tool_input=big)

            async def meanwhile() -> None:
                for i in range(5):
                    results[f"other{i}"] = await call(other, "fire_hook_event",
                                                      event_type="session_start")

            async with anyio.create_task_group() as tg:
                tg.start_soon(fire_big)
                tg.start_soon(meanwhile)
    # the lookahead hook is broken and could handle before_tool: the big call is denied for
    # it, and the pattern was matched to the end without stalling anyone
    assert results["big"]["decision"] == "deny" and "lookahead" in results["big"]["reason"]
    assert all(results[f"other{i}"]["decision"] == "allow" for i in range(5))


async def test_a_backtracking_pattern_over_a_big_input_matches_in_linear_time(
    project: Path, user_dir: Path, project_hooks: Path
) -> None:
    write_hook(project_hooks, "nested-plus", script="echo 'found it' >&2\nexit 2\n",
               extra="matcher:\n  tool: Shell\n  pattern: '(a+)+b'\n")
    async with HookService(Settings.from_env(
            project_dir=project, user_dir=user_dir, no_log=True)) as service, \
            Client(build_server(service)) as client:
        miss = await call(client, "fire_hook_event", event_type="before_tool",
                          tool_name="Bash", tool_input={"command": "a" * 1_000_000})
        assert miss["decision"] == "allow" and miss["hooks"] == []
        hit = await call(client, "fire_hook_event", event_type="before_tool",
                         tool_name="Bash", tool_input={"command": "a" * 1_000_000 + "b"})
        assert hit["reason"] == "found it"
    assert MAX_PAYLOAD_BYTES > 1_000_010


# -- 4. trust ----------------------------------------------------------------------------------


def trust_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, "trust", str(project), *args], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ), stdin=subprocess.DEVNULL)


@pytest.mark.usefixtures("untrusted")
async def test_untrusted_project_hooks_over_mcp_until_trusted(
    project: Path, user_dir: Path, project_hooks: Path, tmp_path: Path
) -> None:
    ran = tmp_path / "ran.txt"
    write_hook(user_dir, "guard", script=f"echo user >> '{ran}'\nexit 0\n")
    write_hook(project_hooks, "guard",
               script=f"echo project >> '{ran}'\necho 'project says no' >&2\nexit 2\n")
    write_hook(project_hooks, "proj-only", trigger="session_start")
    async with stdio_client(project, user_dir) as client:
        listing = await call(client, "list_hooks")
        shown = {(h["name"], h["scope"]): h for h in listing["hooks"]}
        assert shown["guard", "user"]["trust"] == "trusted"
        assert shown["guard", "project"]["trust"] == "untrusted"
        assert shown["guard", "project"]["fix"].startswith("mcp-hooks trust ")
        assert shown["proj-only", "project"]["trust"] == "untrusted"
        index = json.loads((await client.read_resource("hooks://index"))
                           .contents[0].model_dump()["text"])
        assert {(h["name"], h["scope"], h["trust"]) for h in index["hooks"]} == {
            ("guard", "user", "trusted"), ("guard", "project", "untrusted"),
            ("proj-only", "project", "untrusted")}

        outcome = await call(client, "fire_hook_event", event_type="before_tool",
                             tool_name="Bash", tool_input={"command": "ls"})
        assert outcome["decision"] == "allow"
        assert [(h["name"], h["scope"]) for h in outcome["hooks"]] == [("guard", "user")]
        notes = [w for w in outcome["warnings"] if "not trusted" in w]
        assert len(notes) == 1 and "guard" in notes[0] and "mcp-hooks trust" in notes[0]
        assert ran.read_text() == "user\n"  # the untrusted one neither ran nor shadowed

        doc = await call(client, "get_hook", name="proj-only")
        assert doc["trust"] == "untrusted" and "# proj-only" in doc["text"]
        assert any("mcp-hooks trust" in n for n in doc["notes"])
        guard_doc = await call(client, "get_hook", name="guard")
        assert guard_doc["scope"] == "user" and guard_doc["trust"] == "trusted"

        done = trust_cli(project, "--yes")
        assert done.returncode == 0, done.stderr

        # no restart: the registry sees the trust store change on the next event
        denied = await call(client, "fire_hook_event", event_type="before_tool",
                            tool_name="Bash", tool_input={"command": "ls"})
        assert denied["decision"] == "deny" and denied["reason"] == "project says no"
        assert not any("not trusted" in w for w in denied["warnings"])
        assert ran.read_text() == "user\nproject\n"
        listing = await call(client, "list_hooks")
        guard = [h for h in listing["hooks"] if h["name"] == "guard"]
        assert len(guard) == 1 and guard[0]["trust"] == "trusted"
        assert guard[0]["replaces"] == str(user_dir / "guard")

        # a change after trust: not run again until trusted again
        script = project_hooks / "guard" / "scripts" / "run"
        script.write_text(script.read_text().replace("project says no", "changed"))
        outcome = await call(client, "fire_hook_event", event_type="before_tool",
                             tool_name="Bash", tool_input={"command": "ls"})
        assert outcome["decision"] == "allow"
        assert any("guard (changed)" in w for w in outcome["warnings"])
        listing = await call(client, "list_hooks")
        assert {(h["scope"], h["trust"]) for h in listing["hooks"] if h["name"] == "guard"} \
            == {("user", "trusted"), ("project", "changed")}
