"""Drive ``mcp-hooks serve`` through a real MCP client over stdio, as an agent host would.

Run: ``.venv/bin/python examples/demo_server.py`` (``make demo`` does). It copies the bundled
``block-dangerous-commands`` hook into a throw-away user folder, writes a small project with a
``before_stop`` test gate, starts the server as a subprocess with the MCP SDK's stdio client,
and walks through the protocol: list the hooks, fire ``before_tool`` for a safe and a
dangerous command, fire ``before_stop`` (blocked: keep working), read a resource and the
prompt. Exits non-zero if the server does not answer as expected.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
MCP_HOOKS = str(Path(sys.executable).parent / "mcp-hooks")


def say(text: str) -> None:
    print(text, flush=True)


def show(outcome: dict[str, Any]) -> str:
    parts = [f"decision={outcome['decision']}"]
    for key in ("blocked_by", "reason", "modified_input"):
        if outcome.get(key):
            parts.append(f"{key}={outcome[key]!r}")
    if outcome.get("continue_working"):
        parts.append("continue_working=True")
    ran = ", ".join(f"{h['name']}:{h['status']}" for h in outcome["hooks"]) or "none"
    return " ".join(parts) + f"  (hooks run: {ran})"


def make_fixture(tmp: Path) -> tuple[Path, Path]:
    user = tmp / "user-hooks"
    shutil.copytree(REPO / "hooks" / "block-dangerous-commands",
                    user / "block-dangerous-commands")
    project = tmp / "project"
    gate = project / ".agents" / "hooks" / "tests-must-pass"
    (gate / "scripts").mkdir(parents=True)
    (gate / "HOOK.md").write_text(
        "---\nname: tests-must-pass\ndescription: Keep the agent working until the tests "
        "pass.\ntrigger: before_stop\n---\n\n# Tests must pass\n\nA stand-in test gate.\n"
    )
    run = gate / "scripts" / "run"
    run.write_text("#!/bin/sh\necho 'tests/test_app.py::test_total fails: fix it, then stop' "
                   ">&2\nexit 2\n")
    run.chmod(run.stat().st_mode | stat.S_IXUSR)
    return user, project


async def demo(user: Path, project: Path, log: Path) -> int:
    params = StdioServerParameters(
        command=MCP_HOOKS,
        args=["serve", "--user-dir", str(user), "--project-dir", str(project), "--log", str(log)],
        env=dict(os.environ),
    )
    say(f"$ mcp-hooks serve --user-dir {user} --project-dir {project}  (over stdio)")
    async with Client(params) as client:
        say(f"connected: {client.server_info.name if client.server_info else '?'} "
            f"(protocol {client.protocol_version})")
        say(f"instructions: {client.instructions}\n")
        tools = (await client.list_tools()).tools
        say("tools: " + ", ".join(t.name for t in tools))

        listing = (await client.call_tool("list_hooks", {})).structured_content or {}
        for hook in listing["hooks"]:
            say(f"  hook {hook['name']} ({hook['scope']}, {hook['trigger']}, "
                f"priority {hook['priority']})")

        async def fire(label: str, **arguments: Any) -> dict[str, Any]:
            result = await client.call_tool("fire_hook_event", arguments)
            outcome: dict[str, Any] = result.structured_content or {}
            say(f"\n{label}\n  -> {show(outcome)}")
            return outcome

        session = {"session_id": "demo-session", "work_dir": str(project)}
        safe = await fire("before_tool Bash `ls -la`", event_type="before_tool",
                          tool_name="Bash", tool_input={"command": "ls -la"}, **session)
        danger = await fire("before_tool Bash `rm -rf /`", event_type="before_tool",
                            tool_name="Bash", tool_input={"command": "rm -rf /"}, **session)
        stop = await fire("before_stop", event_type="before_stop",
                          payload={"stop_reason": "task complete"}, **session)
        bad = await client.call_tool("fire_hook_event", {"event_type": "before_lunch"})
        say(f"\nbad request (unknown event) -> isError={bad.is_error}: "
            f"{bad.content[0].model_dump().get('text', '')[:90]}...")

        index = await client.read_resource("hooks://index")
        data = json.loads(index.contents[0].model_dump()["text"])
        say(f"\nresource hooks://index: {len(data['hooks'])} hooks, "
            f"{len(data['invalid'])} invalid")
        prompt = await client.get_prompt("lifecycle-protocol")
        say(f"prompt lifecycle-protocol: {len(prompt.messages)} message(s)")

    ok = (safe["decision"] == "allow" and danger["decision"] == "deny"
          and danger["blocked_by"] == "block-dangerous-commands"
          and stop["continue_working"] is True and bad.is_error)
    say("\ndemo " + ("passed: the agent was gated as expected" if ok else "FAILED"))
    return 0 if ok else 1


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="mcp-hooks-demo-") as tmp_name:
        tmp = Path(tmp_name)
        user, project = make_fixture(tmp)
        return anyio.run(demo, user, project, tmp / "events.jsonl")


if __name__ == "__main__":
    sys.exit(main())
