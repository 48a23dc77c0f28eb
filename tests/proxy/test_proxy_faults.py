"""Issue 9 in the gating proxy: a call the gate cannot decide is refused and never reaches the
upstream; odd input on either side never takes the proxy down; hooks never see the proxy's or
the upstreams' secrets; untrusted project hooks do not gate.

A real ``mcp-hooks proxy`` process fed raw JSON-RPC lines (its hand-written stdio fast path),
real upstreams (tests/helpers/upstream_server.py, and a hand-written one that answers with JSON too
deep for Python's parser), real subprocess hooks.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.proxied import proxied, records, text_of, upstream
from tests.helpers.raw_session import (
    INIT,
    INITIALIZED,
    RawSession,
    call_line,
    nested,
    proxy_argv,
    raw_session,
)

pytestmark = pytest.mark.anyio

SECRET = "up-secret-0123456789abcdef"
BEARER = "bearer-secret-9876543210zyx"

# An upstream written by hand: it answers ``deep`` with JSON nested 5,000 levels (valid, and
# deeper than Python's parser goes) and ``odd`` with a lone surrogate, ``hello`` normally.
RAW_UPSTREAM = textwrap.dedent('''
    import json, sys
    TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("deep", "odd", "hello")]
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue
        rid, method = json.dumps(msg["id"]), msg["method"]
        if method == "initialize":
            version = msg["params"]["protocolVersion"]
            out = ('{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%s,"capabilities":'
                   '{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}}'
                   % (rid, json.dumps(version)))
        elif method == "tools/list":
            out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": TOOLS}})
        elif method == "tools/call" and msg["params"]["name"] == "deep":
            out = ('{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":{"a":'
                   % rid) + "[" * 5000 + "]" * 5000 + "}}}"
        elif method == "tools/call" and msg["params"]["name"] == "odd":
            out = ('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text",'
                   '"text":"odd \\\\udcff"}]}}' % rid)
        elif method == "tools/call":
            out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "content": [{"type": "text", "text": "hello"}]}})
        else:
            out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32601, "message": "Method not found"}})
        sys.stdout.write(out + "\\n")
        sys.stdout.flush()
''')


@contextmanager
def proxy_session(argv: list[str]) -> Iterator[RawSession]:
    """A raw session with the proxy, handed over once no upstream is ``starting`` (the proxy
    answers ``initialize`` at once), so that calls take the fast path from the first."""
    with raw_session(argv) as proxy:
        for n in count():
            rid = f"status-{n}"
            proxy.send({"jsonrpc": "2.0", "id": rid, "method": "resources/read",
                        "params": {"uri": "hooks://proxy/status"}})
            status = json.loads(proxy.pop(rid)["result"]["contents"][0]["text"])
            if not status["proxy"]["upstreams_starting"]:
                break
            time.sleep(0.05)
        yield proxy


def result_of(session: RawSession, rid: Any) -> dict[str, Any]:
    answer = session.answer(rid)
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def text(result: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in result["content"])


def test_odd_input_through_the_fast_path(
    project: Path, user_dir: Path, project_hooks: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "before.jsonl"
    write_hook(project_hooks, "recorder", extra="matcher:\n  tool: write_file\n",
               script=f"cat >> '{seen}'\necho >> '{seen}'\nexit 0\n")
    write_hook(project_hooks, "no-env", extra="priority: 900\nmatcher:\n  pattern: '\\.env'\n",
               script="echo 'no .env' >&2\nexit 2\n")
    root = tmp_path / "files"
    root.mkdir()
    argv = proxy_argv(project, user_dir, "--upstream",
                      upstream("files", "--root", str(root), "--tools", "write_file"))
    huge = "y" * (3 << 20)
    with proxy_session(argv) as proxy:
        proxy.send(
            call_line(1, "write_file", '{"path":"sur.txt","content":"a\\udcffb"}'),
            call_line(2, "write_file", '{"path":"deep.txt","content":"x","extra":'
                      + nested(5000) + "}"),
            call_line(3, "write_file", json.dumps({"path": "huge.txt", "content": huge})),
            call_line(4, "write_file", json.dumps({"path": ".env", "content": huge})),
            call_line([1, 2], "write_file", '{"path":"list-id.txt","content":"x"}'),
            b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"write_file",\n',
            call_line(8, "write_file", '{"path":"after.txt","content":"still here"}'),
        )
        surrogate = result_of(proxy, 1)
        assert surrogate.get("isError") is not True, surrogate
        # read as U+FFFD: the hook gates exactly what the upstream (a strict UTF-8 reader
        # that would drop the line unanswered) receives
        first = json.loads(seen.read_text().splitlines()[0])
        assert first["tool_input"] == {"path": "sur.txt", "content": "a\ufffdb"}
        assert (root / "sur.txt").read_text() == "a\ufffdb"

        too_deep = proxy.answer(2)
        assert too_deep["error"]["code"] == types.PARSE_ERROR
        assert not (root / "deep.txt").exists()  # never reached the upstream

        assert "wrote 3145728 characters" in text(result_of(proxy, 3))
        denied = result_of(proxy, 4)
        assert denied["isError"] is True and "no .env" in text(denied)
        assert not (root / ".env").exists()

        listed = proxy.pop(None)  # not a valid JSON-RPC id: refused (id null)
        assert listed["error"]["code"] == types.INVALID_REQUEST
        assert not (root / "list-id.txt").exists()
        assert proxy.answer(6)["error"]["code"] == types.PARSE_ERROR
        assert "wrote 10 characters" in text(result_of(proxy, 8))
        proxy.send(b"\xff\xfe not even text\n")
        assert proxy.pop(None)["error"]["code"] == types.PARSE_ERROR


def test_a_call_the_gate_cannot_decide_is_refused_and_not_run(
    project: Path, user_dir: Path, project_hooks: Path, tmp_path: Path
) -> None:
    write_hook(project_hooks, "gate", extra="matcher:\n  tool: write_file\n")
    root = tmp_path / "files"
    root.mkdir()
    argv = proxy_argv(project, user_dir, "--upstream",
                      upstream("files", "--root", str(root), "--tools", "write_file,echo"))
    with proxy_session(argv) as proxy:
        # too deep for the engine to hand to the gate hook (but not for Python's parser)
        proxy.send(call_line(1, "write_file", '{"path":"deep.txt","content":"x","extra":'
                             + nested(300) + "}"))
        refused = result_of(proxy, 1)
        assert refused["isError"] is True
        assert "Blocked by mcp-hooks" in text(refused) and "nests" in text(refused)
        assert not (root / "deep.txt").exists()
        # a hook in scope that does not load: every write_file is refused, saying why
        broken = write_hook(project_hooks, "broken")
        (broken / "HOOK.md").write_text("---\nname: broken\ntrigger: before_tool\n---\n")
        proxy.send(call_line(2, "write_file", '{"path":"a.txt","content":"x"}'))
        refused = result_of(proxy, 2)
        assert refused["isError"] is True and "broken" in text(refused)
        assert not (root / "a.txt").exists()
        # the same through the SDK path (a progress token keeps it off the fast path)
        proxy.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "write_file", "arguments": {"path": "b.txt", "content": "x"},
            "_meta": {"progressToken": 3}}})
        refused = result_of(proxy, 3)
        assert refused["isError"] is True and "broken" in text(refused)
        assert not (root / "b.txt").exists()


def test_odd_answers_from_an_upstream_never_take_the_proxy_down(
    project: Path, user_dir: Path, tmp_path: Path
) -> None:
    script = tmp_path / "raw_upstream.py"
    script.write_text(RAW_UPSTREAM)
    argv = proxy_argv(project, user_dir, "--upstream",
                      f"raw={shlex.join([sys.executable, str(script)])}")
    with proxy_session(argv) as proxy:
        proxy.send(call_line(1, "deep", "{}"), call_line(2, "odd", "{}"),
                   call_line(3, "hello", "{}"))
        deep = proxy.answer(1)
        assert "error" in deep and "too deep" in deep["error"]["message"], deep
        odd = result_of(proxy, 2)
        assert odd["content"][0]["text"] == "odd \udcff"  # escaped on the wire, as it came
        assert text(result_of(proxy, 3)) == "hello"
        proxy.send(call_line(4, "deep", "{}"), call_line(5, "hello", "{}"))
        assert "error" in proxy.answer(4)
        assert text(result_of(proxy, 5)) == "hello"


async def test_hooks_never_see_the_upstreams_secrets(
    project: Path, user_dir: Path, project_hooks: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = tmp_path / "env.txt"
    write_hook(project_hooks, "env-dump", script=f"env > '{seen}'\nexit 0\n")
    root = tmp_path / "files"
    root.mkdir()
    config = tmp_path / "mcp.json"
    upstream_cmd = shlex.split(upstream("files", "--root", str(root), "--tools", "echo")
                               .split("=", 1)[1])
    config.write_text(json.dumps({"mcpServers": {
        "files": {"command": upstream_cmd[0], "args": upstream_cmd[1:],
                  "env": {"FILES_API_TOKEN": "${UP_SECRET}"}},
        "remote": {"url": "http://127.0.0.1:9/mcp", "timeout": 2,
                   "headers": {"Authorization": "Bearer ${UP_BEARER}"}},
    }}))
    monkeypatch.setenv("UP_SECRET", SECRET)
    monkeypatch.setenv("UP_BEARER", BEARER)
    monkeypatch.setenv("PLAIN_SETTING", "kept")
    async with proxied(tmp_path, project, user_dir, "--config", str(config),
                       "--startup-timeout", "5") as client:
        result = await client.call_tool("echo", {"text": "hi"})
        assert text_of(result) == "hi"
    dumped = seen.read_text()
    assert "PLAIN_SETTING=kept" in dumped
    assert SECRET not in dumped and BEARER not in dumped
    assert "UP_SECRET" not in dumped and "UP_BEARER" not in dumped


@pytest.mark.usefixtures("untrusted")
async def test_untrusted_project_hooks_do_not_gate_until_trusted(
    project: Path, user_dir: Path, project_hooks: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "before.jsonl"
    write_hook(project_hooks, "no-echo", script="echo 'project says no' >&2\nexit 2\n")
    write_hook(user_dir, "user-recorder", script=f"cat >> '{seen}'\necho >> '{seen}'\n")
    async with proxied(tmp_path, project, user_dir, "--upstream",
                       upstream("alpha", "--tools", "echo")) as client:
        allowed = await client.call_tool("echo", {"text": "one"})
        assert text_of(allowed) == "one"
        assert len(records(seen)) == 1  # the user hook gates; the project one is held back
        import subprocess

        done = subprocess.run([MCP_HOOKS, "trust", str(project), "--yes"], capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        denied = await client.call_tool("echo", {"text": "two"})
        assert denied.is_error and "project says no" in text_of(denied)


def test_proxy_exits_cleanly_after_odd_input(project: Path, user_dir: Path) -> None:
    argv = proxy_argv(project, user_dir, "--upstream", upstream("alpha", "--tools", "echo"))
    with proxy_session(argv) as proxy:
        proxy.send(b"[]\n", b"7\n", b'"text"\n', b"null\n",
                   b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}\n',
                   b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":'
                   b'{"requestId":[1]}}\n',
                   call_line(2, "echo", '{"text":"ok"}'))
        assert proxy.answer(1)["error"]["code"] in (types.INVALID_REQUEST, types.INVALID_PARAMS)
        assert text(result_of(proxy, 2)) == "ok"
    assert INIT["id"] == 0 and INITIALIZED["method"].startswith("notifications/")
    assert os.environ.get("MCP_HOOKS_TOKEN") is None
