"""Patch tools against the bundled protect-hooks and protect-secrets, as shipped.

OpenCode's ``apply_patch`` (and its older ``patch``) carry the patch in ``patchText``; the
``opencode`` bridge (the real console script, a new process per call) maps them to
``ApplyPatch``, and the guards read every string of a patch tool's input for the files its
headers name, whatever the key. A tool declared a reader in protect-hooks' HOOK.md passes,
unless it is a host's file, patch, editor or shell tool: those are always read for what they
write.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Engine, Event, Outcome, Registry
from tests.conftest import MCP_HOOKS

pytestmark = pytest.mark.anyio

LIBRARY = Path(__file__).resolve().parents[2] / "hooks"
HOOKS_PREFIX = "Hook configuration protected:"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----"


def envelope(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch", ""])


@pytest.fixture
def guards(user_dir: Path) -> Path:
    """The two guards, copied alone into a user hooks folder (user hooks need no trust)."""
    for name in ("protect-hooks", "protect-secrets"):
        shutil.copytree(LIBRARY / name, user_dir / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return user_dir


def opencode(guards: Path, project: Path, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """One ``tool.execute.before`` through ``mcp-hooks bridge opencode``: its answer."""
    payload = {"hook_event_name": "tool.execute.before", "cwd": str(project),
               "session_id": "ses_patch", "call_id": "call_1", "tool": tool, "args": args}
    done = subprocess.run([MCP_HOOKS, "bridge", "opencode", "--user-dir", str(guards)],
                          input=json.dumps(payload), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout) if done.stdout.strip() else {}
    return answer


@pytest.mark.parametrize("tool", ["apply_patch", "patch"])
@pytest.mark.parametrize(("body", "guard"), [
    (["*** Add File: .agents/hooks/evil/HOOK.md", "+---", "+name: evil"], HOOKS_PREFIX),
    (["*** Update File: src/a.py", "*** Move to: .agents/hooks/guard/scripts/run.py", "@@",
      "-a", "+b"], HOOKS_PREFIX),
    (["*** Delete File: .claude/settings.json"], HOOKS_PREFIX),
    (["  *** add file: .ahp/hooks.yaml", "+hooks: {}"], HOOKS_PREFIX),
    (["*** Add File: .env", "+KEY=1"], "Secret file protected:"),
    (["*** Add File: notes.txt", *("+" + line for line in PEM.splitlines())],
     "Secret protected:"),
])
def test_opencode_patch_tools_are_refused(guards: Path, project: Path, tool: str,
                                          body: list[str], guard: str) -> None:
    answer = opencode(guards, project, tool, {"patchText": envelope(*body)})
    assert answer.get("decision") == "deny", answer
    assert answer["reason"].startswith(guard), answer


DRIVER = """
import { McpHooks } from "./plugin.mjs";
const hooks = await McpHooks({ directory: process.argv[2] });
for (const tool of ["apply_patch", "patch"]) {
  const args = { patchText: process.argv[3] };
  try {
    const input = { tool, sessionID: "ses_1", callID: "call_" + tool };
    await hooks["tool.execute.before"](input, { args });
    console.log(tool + " ALLOWED");
  } catch (error) {
    console.log(tool + " REFUSED " + error.message);
  }
}
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run OpenCode's plugin")
def test_opencode_plugin_under_node_refuses_a_patch_into_the_hooks(
    project: Path, tmp_path: Path
) -> None:
    """What ``install opencode`` writes, run by node as OpenCode runs it: the plugin's
    ``tool.execute.before`` throws, so the patch tool never runs."""
    user_hooks = Path(os.environ["XDG_CONFIG_HOME"]) / "agents" / "hooks"
    for name in ("protect-hooks", "protect-secrets"):
        shutil.copytree(LIBRARY / name, user_hooks / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "home").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"),
           "PATH": f"{Path(MCP_HOOKS).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([MCP_HOOKS, "install", "opencode", "--scope", "project"], env=env,
                          cwd=project, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    driver = tmp_path / "driver"
    driver.mkdir()
    shutil.copy(project / ".opencode" / "plugins" / "mcp-hooks.js", driver / "plugin.mjs")
    (driver / "run.mjs").write_text(DRIVER)
    patch = envelope("*** Add File: .agents/hooks/evil/HOOK.md", "+---")
    ran = subprocess.run(["node", str(driver / "run.mjs"), str(project), patch], env=env,
                         cwd=project, capture_output=True, text=True, timeout=120, check=False)
    assert ran.returncode == 0, ran.stderr
    for tool in ("apply_patch", "patch"):
        assert f"{tool} REFUSED {HOOKS_PREFIX}" in ran.stdout, ran.stdout + ran.stderr
    assert not (project / ".agents" / "hooks" / "evil").exists()


@pytest.mark.parametrize("tool", ["apply_patch", "patch"])
def test_an_ordinary_opencode_patch_passes(guards: Path, project: Path, tool: str) -> None:
    (project / "src").mkdir()
    patch = envelope("*** Add File: src/new.py", "+x = 1", "*** Update File: .env.example",
                     "@@", "-A=", "+A=changeme")
    assert opencode(guards, project, tool, {"patchText": patch}) == {}


async def fire(user_dir: Path, project: Path, tool: str, tool_input: Any) -> Outcome:
    async with Engine(Registry(user_dir, watch=False)) as engine:
        return await engine.fire(Event.create(
            event_type="before_tool", work_dir=str(project), tool_name=tool,
            tool_input=tool_input))


@pytest.mark.parametrize(("tool", "tool_input"), [
    # a name the engine does not rename reaches the guard with the host's own key
    ("apply_patch", {"patchText": envelope("*** Add File: .agents/hooks/x/HOOK.md", "+x")}),
    # any patch tool: every string is read, nested or under a key of its own
    ("mcp__files__apply_patch", {"changes": [{"diff_text": envelope(
        "*** Update File: ../project/.codex/hooks.json", "@@", "-a", "+b")}]}),
    ("ApplyPatch", {"patch": "--- a/src/x\n+++ b/.agents/hooks/guard/HOOK.md\n@@ -1 +1 @@\n"}),
])
async def test_every_string_of_a_patch_tool_is_read(guards: Path, project: Path, tool: str,
                                                    tool_input: Any) -> None:
    outcome = await fire(guards, project, tool, tool_input)
    assert outcome.denied and outcome.blocked_by == "protect-hooks", outcome
    assert (outcome.reason or "").startswith(HOOKS_PREFIX)


async def test_protect_secrets_reads_patches_in_the_shell(guards: Path, project: Path) -> None:
    command = "apply_patch <<'EOF'\n" + envelope("*** Add File: config/.env", "+K=1") + "EOF"
    outcome = await fire(guards, project, "Shell", {"command": command})
    assert outcome.denied and outcome.blocked_by == "protect-secrets", outcome


def declare_readers(user_dir: Path, *names: str) -> None:
    hook_md = user_dir / "protect-hooks" / "HOOK.md"
    text = hook_md.read_text()
    hook_md.write_text(text.replace("  persistent: true\n",
                                    f"  persistent: true\n  readers: [{', '.join(names)}]\n", 1))


@pytest.mark.parametrize(("tool", "tool_input"), [
    ("str_replace_based_edit_tool", {"command": "create", "path": ".agents/hooks/x/HOOK.md",
                                     "file_text": "---\n---\n"}),
    ("apply_patch", {"patchText": envelope("*** Add File: .agents/hooks/x/HOOK.md", "+x")}),
    ("Write", {"file_path": ".claude/settings.json", "content": "{}"}),
    ("edit", {"filePath": ".agents/hooks/guard/HOOK.md", "oldString": "a", "newString": "b"}),
    ("Bash", {"command": "rm -rf .agents/hooks"}),
])
async def test_a_file_tool_declared_a_reader_is_still_read_for_its_writes(
    guards: Path, project: Path, tool: str, tool_input: dict[str, Any]
) -> None:
    declare_readers(guards, "str_replace_based_edit_tool", "apply_patch", "Write", "edit",
                    "Bash", "attach_file")
    outcome = await fire(guards, project, tool, tool_input)
    assert outcome.denied and outcome.blocked_by == "protect-hooks", outcome
    # a declared reader that is no file tool still passes
    reader = await fire(guards, project, "attach_file", {"path": ".agents/hooks/guard/HOOK.md"})
    assert not reader.denied, reader.reason


async def test_the_refusal_says_the_declaration_does_not_apply(guards: Path,
                                                               project: Path) -> None:
    declare_readers(guards, "Write")
    outcome = await fire(guards, project, "Write", {"file_path": ".agents/hooks/x/HOOK.md"})
    assert outcome.denied
    assert "Write is a file tool, read for what it writes whatever" in (outcome.reason or "")
