"""A small MCP server to put behind the proxy in tests, benchmarks and the demo.

Run as ``python tests/helpers/upstream_server.py [--name NAME] [--root DIR] [--tools a,b]``. It
speaks
MCP over stdio by default (``--http PORT`` / ``--sse PORT`` serve HTTP on loopback) and has
tools that echo, fail, sleep, crash the process, return structured output, write files, and
grow the tool list at run time (to test list-changed pass-through); a resource, a resource
template and a prompt.

``--fail-start`` exits with status 3 and a message on stderr before speaking MCP, and
``--silent`` never answers anything: the two ways an upstream can fail to start.
``--start-after FILE`` reads nothing until FILE exists (then serves, or fails with
``--fail-start``): a slow start whose end a test decides, with no clock involved.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel


class Sum(BaseModel):
    """Structured output of ``add``."""

    total: int
    terms: list[int]


def build(name: str, root: Path, keep: set[str] | None = None) -> MCPServer:
    """The test server, named ``name``, writing files under ``root``, with the tools in
    ``keep`` (default all)."""
    server: MCPServer = MCPServer(name, instructions=f"Test upstream {name}.")
    calls = {"n": 0}

    def tool(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            if keep is None or fn.__name__ in keep:
                server.add_tool(fn, description=description)
            return fn

        return register

    @tool("Return the text unchanged.")
    def echo(text: str) -> str:
        calls["n"] += 1
        return text

    @tool("Add two integers; structured output.")
    def add(a: int, b: int) -> Sum:
        calls["n"] += 1
        return Sum(total=a + b, terms=[a, b])

    @tool("Always fail with the given message (an isError result).")
    def fail(message: str = "upstream failure") -> str:
        raise ToolError(message)

    @tool("Sleep, then say how long.")
    async def sleep(seconds: float) -> str:
        import anyio

        await anyio.sleep(seconds)
        return f"slept {seconds}"

    async def rendezvous(folder: str, count: int) -> str:
        """Wait until ``count`` calls sharing ``folder`` are under way at once (each leaves a
        file there), so a test sees calls overlap without timing them."""
        import tempfile

        import anyio

        os.close(tempfile.mkstemp(dir=folder)[0])
        while len(os.listdir(folder)) < count:
            await anyio.sleep(0.02)
        return f"met {count}"

    async def request_id(ctx: Context) -> str:
        """The JSON-RPC id of this call's request, as the server received it."""
        return repr(ctx.request_id)

    if keep is not None and "request_id" in keep:  # only on request: not in the default set
        server.add_tool(request_id, description=request_id.__doc__)
    if keep is not None and "rendezvous" in keep:  # only on request: not in the default set
        server.add_tool(rendezvous, description="Wait until COUNT calls sharing FOLDER are "
                        "under way at once.")

    for extra in _asking_tools():  # only on request: not in the default set
        if keep is not None and extra.__name__ in keep:
            server.add_tool(extra, description=extra.__doc__)

    @tool("Report progress three times, then finish.")
    async def progress(ctx: Context) -> str:
        for step in (1, 2, 3):
            await ctx.report_progress(step, 3, f"step {step}")
        return "done"

    @tool("Exit the whole server process in the middle of the call.")
    def crash(code: int = 1) -> str:
        sys.stderr.write(f"{name}: crashing on purpose with exit status {code}\n")
        sys.stderr.flush()
        os._exit(code)

    @tool("Process id of this server (to see restarts).")
    def pid() -> int:
        return os.getpid()

    @tool("Write a text file under the server's root folder.")
    def write_file(path: str, content: str) -> str:
        target = (root / path).resolve()
        if root.resolve() not in (target, *target.parents):
            raise ToolError(f"{path} is outside {root}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return f"wrote {len(content)} characters to {path}"

    @tool("Read a text file under the server's root folder.")
    def read_file(path: str) -> str:
        return (root / path).read_text()

    @tool("Add a tool named NAME at run time and announce the list change.")
    async def grow(tool: str, ctx: Context) -> str:
        def extra(text: str = "") -> str:
            return f"{tool}:{text}"

        server.add_tool(extra, name=tool, description=f"added at run time as {tool}")
        await ctx.notify_tools_changed()  # 2026-07-28 listen streams
        if ctx.protocol_version and not ctx.protocol_version.startswith("2026"):
            await ctx.session.send_tool_list_changed()  # handshake-era sessions
        return f"added {tool}"

    @server.resource("test://info", name="info", mime_type="text/plain")
    def info() -> str:
        return f"upstream {name}"

    @server.resource("test://items/{item}", name="item", mime_type="text/plain")
    def item(item: str) -> str:
        return f"{name} item {item}"

    @server.prompt(description="Greet someone.")
    def greet(who: str) -> str:
        return f"Hello {who}, from {name}."

    return server


class Reply(BaseModel):
    """The form ``ask_user`` shows."""

    answer: str
    sure: bool = False


def _modern(ctx: Context) -> bool:
    return bool(ctx.protocol_version and ctx.protocol_version.startswith("2026"))


def _asking_tools() -> list[Callable[..., Any]]:
    """Tools that ask the client during the call: on a handshake-era connection with a
    server-to-client request, on 2026-07-28 with an ``input_required`` result."""

    async def ask_user(question: str, ctx: Context) -> Any:
        """Ask the user QUESTION in a form; say what came back."""
        if not _modern(ctx):
            got = await ctx.elicit(question, Reply)
            data = got.data.model_dump() if got.action == "accept" else None
            return json.dumps({"action": got.action, "content": data})
        responses = ctx.input_responses
        if not responses:
            schema = {"type": "object", "properties": {"answer": {"type": "string"},
                                                       "sure": {"type": "boolean"}},
                      "required": ["answer"]}
            return types.InputRequiredResult(input_requests={"q": types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=question,
                                                     requested_schema=schema))})
        reply = responses["q"]
        assert isinstance(reply, types.ElicitResult)
        return json.dumps({"action": reply.action, "content": reply.content})

    async def sample(prompt: str, ctx: Context) -> Any:
        """Ask the client's model to complete PROMPT; say what it answered."""
        params = types.CreateMessageRequestParams(messages=[types.SamplingMessage(
            role="user", content=types.TextContent(type="text", text=prompt))], max_tokens=50)
        if not _modern(ctx):
            result = await ctx.session.send_request(
                types.CreateMessageRequest(params=params), types.CreateMessageResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id))
        else:
            responses = ctx.input_responses
            if not responses:
                return types.InputRequiredResult(input_requests={
                    "s": types.CreateMessageRequest(params=params)})
            result = responses["s"]
        assert isinstance(result, types.CreateMessageResult)
        content = result.content
        text = content.text if isinstance(content, types.TextContent) else repr(content)
        return f"{result.model}: {text}"

    return [ask_user, sample]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="upstream")
    parser.add_argument("--root", type=Path, default=Path.cwd())
    parser.add_argument("--tools", help="comma-separated tools to keep (default: all)")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP instead")
    parser.add_argument("--sse", type=int, metavar="PORT", help="serve SSE instead")
    parser.add_argument("--fail-start", action="store_true")
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--start-after", type=Path, metavar="FILE")
    args = parser.parse_args()
    while args.start_after is not None and not args.start_after.exists():
        time.sleep(0.05)
    if args.fail_start:
        sys.stderr.write(f"{args.name}: cannot start: missing configuration (on purpose)\n")
        sys.exit(3)
    if args.silent:
        while True:
            time.sleep(3600)
    server = build(args.name, args.root, set(args.tools.split(",")) if args.tools else None)
    if args.http:
        server.run("streamable-http", port=args.http)
    elif args.sse:
        server.run("sse", port=args.sse)
    else:
        server.run()


if __name__ == "__main__":
    main()
