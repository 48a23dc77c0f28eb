"""A hook's ask through real Claude Code (issue 30, ``docs/ask.md``): the bridge answers
``permissionDecision: "ask"`` with the hook's reason; in a headless run (``-p``) nobody can be
asked, so Claude Code refuses the call (a permission denial, with or without ``--allowedTools
Bash``): the command does not run, the model reads the hook's reason and the pending id.
After ``mcp-hooks approve`` of that id, the same call in the same session (``--resume``)
passes our gate; it runs where Claude Code's own rules allow it (``--allowedTools Bash``),
and stays refused by Claude Code's own permission where they do not (our approval grants
no host permission)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from .fake_model import FakeModelServer, Script
from .hosts import RUN_TIMEOUT, Host, Sandbox, run_process
from .test_real_hosts import (
    context,
    install,
    model_requests,
    needs_bridges,
    tool_results,
    write_hook,
)

pytestmark = pytest.mark.e2e

ASK_REASON = "E2E-ASK: a person must approve writing ask-marker.txt"


def write_asker(box: Sandbox) -> Path:
    seen = box.root / "ask-payloads"
    body = (f"echo '{json.dumps({'decision': 'ask', 'reason': ASK_REASON})}'\n")
    write_hook(box.user_hooks, "asker", trigger="before_tool", payload_dir=seen,
               matcher={"tool": "Shell", "pattern": "ask-marker"}, body=body)
    return seen


@needs_bridges
@pytest.mark.parametrize("pre_approved", [True, False])
def test_claude_code_headless_never_runs_an_asked_command(
    pre_approved: bool,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
) -> None:
    host = host_factory("claude-code")
    seen = write_asker(box)
    command = "echo asked > ask-marker.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "user")
    env = host.env(box, fake_model.url, [str(mcp_hooks_exe.parent)])
    result = host.run(box, fake_model.url, extra_path=[str(mcp_hooks_exe.parent)],
                      pre_approved=True)
    why = context(host, box, fake_model, result)
    assert not result.timed_out, why
    assert seen.exists() and list(seen.glob("*.json")), f"the asking hook never ran\n{why}"
    assert not (box.project / "ask-marker.txt").exists(), f"an asked command ran headless\n{why}"
    pending = subprocess.run([str(mcp_hooks_exe), "pending", "--json"], capture_output=True,
                             text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    asks = [json.loads(line) for line in pending.stdout.splitlines()]
    assert len(asks) == 1 and asks[0]["tool_input"]["command"] == command, pending
    after = [r for r in model_requests(fake_model) if tool_results(r)]
    assert after, f"the model was never told\n{why}"
    told = " ".join(tool_results(after[0]))
    assert ASK_REASON in told or asks[0]["id"] in told, f"the model was not told why\n{why}"

    # a person approves; the agent makes the same call again in the same session (the
    # approval covers that session only): it runs
    approved = subprocess.run([str(mcp_hooks_exe), "approve", asks[0]["id"]],
                              capture_output=True, text=True, env=env, timeout=60,
                              stdin=subprocess.DEVNULL)
    assert approved.returncode == 0, approved.stderr
    session = json.loads(result.stdout)["session_id"]
    assert asks[0]["session_id"] == session
    fake_model.script = Script(commands=[command], followups=[("Do the task again", command)])
    argv = [*host.argv("Do the task again.", pre_approved), "--resume", session]
    again = run_process(argv, cwd=box.project, env=env, timeout=RUN_TIMEOUT)
    why = context(host, box, fake_model, again)
    if pre_approved:
        assert (box.project / "ask-marker.txt").exists(), why
    else:  # our gate passes; Claude Code's own permission still refuses it headless
        assert not (box.project / "ask-marker.txt").exists(), why
        last = tool_results(model_requests(fake_model)[-1])[-1]
        assert "E2E-ASK" not in last and "mcp-hooks" not in last, why


@needs_bridges
def test_gemini_cli_headless_never_runs_an_asked_command(
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
) -> None:
    """Gemini CLI gets the deny naming the pending ask, not its own ``decision: ask`` (which
    a headless run waits on forever: Gemini CLI 0.61.0 hung until killed): headless, with
    ``--yolo`` (without it, headless Gemini never offers the shell tool), the run ends, the
    command never runs, the model reads the id, and the ask stays pending with the exact
    command for an out-of-band answer. The hook's ask_timeout is 1 s: nobody answers here."""
    host = host_factory("gemini-cli")
    seen = write_asker(box)
    hook_md = box.user_hooks / "asker" / "HOOK.md"
    hook_md.write_text(hook_md.read_text().replace(
        "priority: 100\n", 'priority: 100\nmetadata: {"ask_timeout": 1}\n', 1))
    command = "echo asked > ask-marker.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "user")
    env = host.env(box, fake_model.url, [str(mcp_hooks_exe.parent)])
    result = host.run(box, fake_model.url, extra_path=[str(mcp_hooks_exe.parent)],
                      pre_approved=True)
    why = context(host, box, fake_model, result)
    assert not result.timed_out, why
    assert seen.exists() and list(seen.glob("*.json")), f"the asking hook never ran\n{why}"
    assert not (box.project / "ask-marker.txt").exists(), f"an asked command ran headless\n{why}"
    pending = subprocess.run([str(mcp_hooks_exe), "pending", "--json"], capture_output=True,
                             text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    asks = [json.loads(line) for line in pending.stdout.splitlines()]
    assert len(asks) == 1 and asks[0]["tool_input"]["command"] == command, pending
    after = [r for r in model_requests(fake_model) if tool_results(r)]
    assert after, f"the model was never told\n{why}"
    assert asks[0]["id"] in " ".join(tool_results(after[0])), f"the model was not told\n{why}"
