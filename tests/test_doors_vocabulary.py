"""One vocabulary on every door: the same ``tool: Shell`` hook decides the same whatever door
the call comes through and whatever the caller calls its shell.

The doors: ``mcp-hooks fire --tool`` (a subprocess), the MCP server's ``fire_hook_event``
(a real in-memory client), the Claude Code bridge (a subprocess fed Claude Code's payload),
``Hooks.fire`` and ``Hooks.afire``, each framework adapter's core (``adapters._firing.Firing``,
the one place every adapter fires through), and a hooks.yaml entry with ``when: {tool:
[Shell]}``. The names: Claude Code's ``Bash``, Gemini CLI's ``run_shell_command`` (with its
``directory`` key), Codex's ``shell`` and the canonical ``Shell``; ``PowerShell`` is the
control that must pass (a matcher matches the whole name).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_hooks.adapters._firing import LOGGERS, Firing
from mcp_hooks.api import Hooks
from mcp_hooks.server import build_server
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from tests.conftest import write_hook

pytestmark = pytest.mark.anyio

MCP_HOOKS = str(Path(sys.executable).parent / "mcp-hooks")
SHELL_NAMES = ["Bash", "run_shell_command", "shell", "Shell"]
NOT_SHELL = "PowerShell"
NO_RM = """\
cat > seen.json
echo "no rm -rf in this project (R-1)" >&2
exit 2
"""
# a rewrite in canonical keys: the command and its folder (``cwd``)
TO_CWD = """\
cat > seen.json
echo '{"modified_input": {"command": "ls", "cwd": "sub"}}'
"""


def tool_input(name: str) -> dict[str, Any]:
    data: dict[str, Any] = {"command": "rm -rf build"}
    if name == "run_shell_command":
        data["directory"] = "."  # Gemini CLI's key for the folder: cwd to hooks
    return data


Door = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@pytest.fixture
def guarded(user_dir: Path, project: Path) -> Path:
    write_hook(user_dir, "no-rm", script=NO_RM,
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    return project


@pytest.fixture
async def mcp_client(user_dir: Path, project: Path) -> AsyncIterator[Client]:
    async with HookService(Settings.from_env(
            project_dir=project, user_dir=user_dir, no_log=True)) as service, \
            Client(build_server(service)) as client:
        yield client


def doors(user_dir: Path, project: Path, client: Client) -> dict[str, Door]:
    """Each door as ``door(tool_name, tool_input) -> {"denied": bool, "input": rewrite}``."""

    async def cli(name: str, data: dict[str, Any]) -> dict[str, Any]:
        done = subprocess.run(
            [MCP_HOOKS, "fire", "pre-tool-call", "--tool", name, "--input", json.dumps(data),
             "--user-dir", str(user_dir), "--project-dir", str(project), "--json"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode in (0, 2), done.stderr
        outcome = json.loads(done.stdout)
        assert (done.returncode == 2) == (outcome["decision"] == "deny")
        return {"denied": done.returncode == 2, "input": outcome["modified_input"]}

    async def mcp(name: str, data: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool("fire_hook_event", {
            "event_type": "before_tool", "tool_name": name, "tool_input": data,
            "work_dir": str(project)})
        assert not result.is_error, result.content
        outcome = result.structured_content
        assert outcome is not None
        return {"denied": outcome["decision"] == "deny", "input": outcome["modified_input"]}

    async def bridge(name: str, data: dict[str, Any]) -> dict[str, Any]:
        payload = {"hook_event_name": "PreToolUse", "session_id": "doors", "cwd": str(project),
                   "tool_name": name, "tool_input": data, "tool_use_id": "t1"}
        done = subprocess.run(
            [MCP_HOOKS, "bridge", "claude-code", "--user-dir", str(user_dir),
             "--project-dir", str(project)],
            input=json.dumps(payload), capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        said = json.loads(done.stdout) if done.stdout.strip() else {}
        specific = said.get("hookSpecificOutput") or {}
        return {"denied": specific.get("permissionDecision") == "deny",
                "input": specific.get("updatedInput")}

    async def hooks_fire(name: str, data: dict[str, Any]) -> dict[str, Any]:
        with Hooks(project, user_dir=user_dir) as hooks:
            outcome = hooks.fire("before_tool", tool_name=name, tool_input=data)
        return {"denied": outcome.denied, "input": outcome.modified_input}

    async def hooks_afire(name: str, data: dict[str, Any]) -> dict[str, Any]:
        async with Hooks(project, user_dir=user_dir) as hooks:
            outcome = await hooks.afire("before_tool", tool_name=name, tool_input=data)
        return {"denied": outcome.denied, "input": outcome.modified_input}

    found: dict[str, Door] = {"cli": cli, "mcp": mcp, "bridge claude-code": bridge,
                              "Hooks.fire": hooks_fire, "Hooks.afire": hooks_afire}
    for framework in LOGGERS:
        def adapter(framework: str = framework) -> Door:
            async def fire(name: str, data: dict[str, Any]) -> dict[str, Any]:
                firing = Firing(project, user_dir=user_dir, framework=framework)
                try:
                    outcome = await firing.fire("before_tool", tool_name=name,
                                                tool_input=data)
                finally:
                    await firing.aclose()
                return {"denied": outcome.denied, "input": outcome.modified_input}
            return fire
        found[f"adapter {framework}"] = adapter()
    return found


DOORS = ["cli", "mcp", "bridge claude-code", "Hooks.fire", "Hooks.afire",
         *(f"adapter {f}" for f in LOGGERS)]


@pytest.mark.parametrize("door", DOORS)
async def test_the_same_shell_hook_decides_the_same_on_every_door(
        guarded: Path, user_dir: Path, mcp_client: Client, door: str) -> None:
    fire = doors(user_dir, guarded, mcp_client)[door]
    decided = {name: (await fire(name, tool_input(name)))["denied"]
               for name in [*SHELL_NAMES, NOT_SHELL]}
    assert decided == {"Bash": True, "run_shell_command": True, "shell": True, "Shell": True,
                       NOT_SHELL: False}
    seen = json.loads((guarded / "seen.json").read_text())  # the last call the hook saw
    assert seen["tool_name"] == "Shell" and seen["tool_input"] == {"command": "rm -rf build"}


@pytest.mark.parametrize("door", DOORS)
async def test_a_rewrite_goes_back_in_the_callers_keys_on_every_door(
        user_dir: Path, project: Path, mcp_client: Client, door: str) -> None:
    write_hook(user_dir, "to-sub", script=TO_CWD, extra="matcher:\n  tool: Shell\n")
    fire = doors(user_dir, project, mcp_client)[door]
    gemini = await fire("run_shell_command", {"command": "rm -rf build", "directory": "."})
    seen = json.loads((project / "seen.json").read_text())
    assert seen["tool_name"] == "Shell" and seen["tool_input"] == {
        "command": "rm -rf build", "cwd": "."}  # hooks read the canonical keys
    assert seen["host"]["tool_name"] == "run_shell_command"  # the caller's own is kept
    assert seen["host"]["tool_input"] == {"command": "rm -rf build", "directory": "."}
    assert gemini["input"] == {"command": "ls", "directory": "sub"}  # Gemini's key again
    claude = await fire("Bash", {"command": "rm -rf build"})
    assert claude["input"] == {"command": "ls", "cwd": "sub"}  # Bash has no folder key


HOOKS_YAML = """\
hooks:
  pre-tool-use:
    - oracle: PermissionChecker
      config: {dangerous_commands: ["DROP TABLE"], require_confirmation: false}
      when: {tool: [Shell]}
"""


@pytest.mark.parametrize("door", ["cli", "mcp", "Hooks.fire", "adapter langchain"])
async def test_hooks_yaml_when_tool_reads_the_same_vocabulary(
        user_dir: Path, project: Path, mcp_client: Client, door: str) -> None:
    (project / ".ahp").mkdir()
    (project / ".ahp" / "hooks.yaml").write_text(HOOKS_YAML)
    fire = doors(user_dir, project, mcp_client)[door]
    drop = {"command": "psql -c 'DROP TABLE users'"}
    decided = {name: (await fire(name, drop))["denied"] for name in [*SHELL_NAMES, NOT_SHELL]}
    assert decided == {"Bash": True, "run_shell_command": True, "shell": True, "Shell": True,
                       NOT_SHELL: False}


# -- a tool event without a tool name ------------------------------------------------------


def test_the_cli_refuses_a_tool_event_without_tool(guarded: Path, user_dir: Path) -> None:
    for event in ("pre-tool-call", "after_tool", "after_tool_failure"):
        done = subprocess.run(
            [MCP_HOOKS, "fire", event, "--input", '{"command": "rm -rf /"}',
             "--user-dir", str(user_dir), "--project-dir", str(guarded)],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 64, (done.stdout, done.stderr)  # a usage error, not allow
        assert "--tool" in done.stderr and done.stdout == ""
    assert not (guarded / "seen.json").exists()


async def test_the_api_and_adapters_warn_of_a_tool_event_without_tool_name(
        guarded: Path, user_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with Hooks(guarded, user_dir=user_dir) as hooks:
        outcome = hooks.fire("before_tool", tool_input={"command": "rm -rf /"})
        assert not outcome.denied  # nothing could match: said, not hidden
        assert any("without a tool name" in w and "tool_name=" in w for w in outcome.warnings)
        with Hooks(user_dir=guarded / "none") as nothing:  # no hook at all: the fast path
            empty = nothing.fire("after_tool", tool_output="x")
        assert any("without a tool name" in w for w in empty.warnings)
        named = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"})
        assert named.warnings == []
    firing = Firing(guarded, user_dir=user_dir, framework="langchain")
    with caplog.at_level(logging.WARNING, logger=LOGGERS["langchain"]):
        for _ in range(3):
            await firing.fire("before_tool", tool_input={"command": "rm -rf /"})
    await firing.aclose()
    said = [r for r in caplog.records if r.name == LOGGERS["langchain"]]
    assert len(said) == 1 and "without a tool name" in said[0].getMessage()  # once a session


async def test_fire_hook_event_warns_of_a_tool_event_without_tool_name(
        guarded: Path, mcp_client: Client) -> None:
    result = await mcp_client.call_tool("fire_hook_event", {
        "event_type": "before_tool", "tool_input": {"command": "rm -rf /"}})
    outcome = result.structured_content
    assert outcome is not None and outcome["decision"] == "allow"
    assert any("without a tool name" in w for w in outcome["warnings"])
    assert not (guarded / "seen.json").exists()


# -- nothing skipped in silence ------------------------------------------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "hosts"
# each host's shell call, and whether it has a user-facing message field (systemMessage)
HOST_SHELL = {
    "claude-code": ("PreToolUse.bash", True), "codex": ("PreToolUse.bash", True),
    "gemini-cli": ("BeforeTool.shell", True), "cursor": ("beforeShellExecution", False),
    "copilot-cli": ("preToolUse.bash", False), "kimi-cli": ("PreToolUse.shell", False),
}
HELD_BACK = "not trusted, so not run: guard"


@pytest.fixture
def cloned(project_hooks: Path, untrusted: None) -> Path:
    """A project whose guard nobody trusted yet (a fresh clone): it must not run, and say so."""
    write_hook(project_hooks, "guard", script=NO_RM, extra="matcher:\n  tool: Shell\n")
    return project_hooks.parent.parent


def test_the_cli_says_what_it_skipped_on_stderr(cloned: Path, user_dir: Path) -> None:
    for json_flag in ([], ["--json"]):
        done = subprocess.run(
            [MCP_HOOKS, "fire", "pre-tool-call", "--tool", "Bash", "--input",
             '{"command": "rm -rf build"}', "--user-dir", str(user_dir), "--project-dir",
             str(cloned), *json_flag],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 0 and not (cloned / "seen.json").exists()
        assert HELD_BACK in done.stderr and f"mcp-hooks trust {cloned}" in done.stderr
        assert done.stderr.count(HELD_BACK) == 1


@pytest.mark.parametrize("host", sorted(HOST_SHELL))
def test_each_bridge_shows_the_user_what_it_skipped(cloned: Path, user_dir: Path,
                                                    host: str) -> None:
    name, has_message = HOST_SHELL[host]
    payload = (FIXTURES / host / f"{name}.json").read_text().replace("$PROJECT", str(cloned))
    flags = ["--event", "preToolUse"] if host == "copilot-cli" else []  # its payload has none
    done = subprocess.run([MCP_HOOKS, "bridge", host, "--user-dir", str(user_dir), *flags],
                          input=payload, capture_output=True, text=True, timeout=60, cwd=cloned)
    assert done.returncode == 0, done.stderr
    assert not (cloned / "seen.json").exists()
    assert HELD_BACK in done.stderr  # the host's log and terminal
    if has_message:  # the host shows this field to the user
        assert HELD_BACK in json.loads(done.stdout)["systemMessage"]


@pytest.mark.parametrize("framework", sorted(LOGGERS))
async def test_each_adapter_logs_what_it_skipped_once_per_session(
        cloned: Path, user_dir: Path, framework: str,
        caplog: pytest.LogCaptureFixture) -> None:
    firing = Firing(cloned, user_dir=user_dir, framework=framework)
    with caplog.at_level(logging.WARNING, logger=LOGGERS[framework]):
        for session in ("one", "one", "two"):
            outcome = await firing.fire("before_tool", tool_name="Bash", session_id=session,
                                        tool_input={"command": "rm -rf build"})
            assert not outcome.denied
    await firing.aclose()
    said = [r.getMessage() for r in caplog.records if r.name == LOGGERS[framework]]
    assert len(said) == 2 and all(HELD_BACK in s for s in said)  # once in each session
    assert LOGGERS[framework].split(".")[0] in ("langchain", "openai", "as")  # the framework's
    trusting = Firing(cloned, user_dir=user_dir, framework=framework, trust_project_hooks=True)
    try:
        refused = await trusting.fire("before_tool", tool_name="Bash",
                                      tool_input={"command": "rm -rf build"})
    finally:
        await trusting.aclose()
    assert refused.denied and "R-1" in (refused.reason or "")  # trusted: the guard runs
