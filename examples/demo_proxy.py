"""The proxy scene of ``make demo``: hooks enforced on another MCP server's tools.

A real MCP server (``examples/notes_server.py``, which writes files) runs behind ``mcp-hooks
proxy``; an MCP client, as an agent host would, calls its ``write_file`` tool twice. The write
to ``.env`` is refused by the bundled ``protect-secrets`` hook before the server ever sees it;
the harmless note passes through. No cooperation from the model or the server is needed.

Run: ``.venv/bin/python examples/demo_proxy.py [--user-dir HOOKS] [--log FILE]`` (default: the
bundled ``hooks/`` and a throw-away log). Exits 1 if a decision is not the expected one.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
MCP_HOOKS = str(Path(sys.executable).parent / "mcp-hooks")
BOLD, RED, GREEN, DIM, END = (("\033[1m", "\033[31m", "\033[32m", "\033[2m", "\033[0m")
                              if sys.stdout.isatty() else ("",) * 5)


def say(text: str = "") -> None:
    print(text, flush=True)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def scene(user_dir: Path, log: Path, tmp: Path) -> list[str]:
    failures: list[str] = []
    notes, project = tmp / "notes", tmp / "project"
    notes.mkdir()
    project.mkdir()
    server = shlex.join([sys.executable, str(REPO / "examples" / "notes_server.py"),
                         "--root", str(notes)])
    args = ["proxy", "--upstream", f"notes={server}", "--user-dir", str(user_dir),
            "--project-dir", str(project), "--log", str(log)]
    say(f"{DIM}$ mcp-hooks proxy --upstream notes='python examples/notes_server.py "
        f"--root notes/'{END}")
    params = StdioServerParameters(command=MCP_HOOKS, args=args, env=dict(os.environ),
                                   cwd=str(project))
    async with Client(params) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        say(f"  the agent sees the upstream's tools, now gated: {', '.join(tools)}")

        secret = {"path": ".env", "content": "STRIPE_KEY=sk_live_" + "x" * 24 + "\n"}
        say(f"{BOLD}agent calls write_file {json.dumps(secret)}{END}")
        refused = await client.call_tool("write_file", secret)
        if refused.is_error:
            first = text_of(refused).splitlines()[0]
            say(f"  -> {RED}REFUSED{END} {first}")
        else:
            say(f"  -> {GREEN}passed{END} {text_of(refused)}")
            failures.append("the write to .env should have been refused")
        written = (notes / ".env").exists()
        say(f"     {DIM}.env on disk: {'yes' if written else 'no (the server never saw the call)'}"
            f"{END}")
        if written:
            failures.append(".env was written")

        note = {"path": "notes.md", "content": "# Standup\n- proxy demo works\n"}
        say(f"{BOLD}agent calls write_file {json.dumps(note)}{END}")
        passed = await client.call_tool("write_file", note)
        if passed.is_error:
            say(f"  -> {RED}REFUSED{END} {text_of(passed)}")
            failures.append("the harmless write should have passed")
        else:
            say(f"  -> {GREEN}ALLOWED{END}, passed through: {text_of(passed)}")
        if (notes / "notes.md").read_text() != note["content"]:
            failures.append("notes.md does not hold what was written")

        status = json.loads((await client.read_resource("hooks://proxy/status"))
                            .contents[0].model_dump()["text"])
        for upstream in status["upstreams"]:
            say(f"     {DIM}hooks://proxy/status: {upstream['name']} is {upstream['state']}, "
                f"{len(upstream['tools'])} tools{END}")
    return failures


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user-dir", type=Path, default=REPO / "hooks",
                        help="the hook library (default: the bundled hooks/)")
    parser.add_argument("--log", type=Path, help="event log (default: a throw-away one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-hooks-proxy-demo-") as tmp_name:
        tmp = Path(tmp_name)
        failures = await scene(args.user_dir, args.log or tmp / "events.jsonl", tmp)
    for failure in failures:
        print(f"demo_proxy: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
