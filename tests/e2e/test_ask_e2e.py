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

from tests.helpers.host_harness import (
    context,
    install,
    model_requests,
    needs_bridges,
    tool_results,
    write_hook,
)

from .fake_model import FakeModelServer, Script
from .hosts import RUN_TIMEOUT, Host, Sandbox, run_process
from .terminal import Terminal

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
@pytest.mark.parametrize("host_name", ["gemini-cli", "copilot-cli", "qwen-code"])
def test_a_headless_host_never_runs_an_asked_command(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
) -> None:
    """Headless runs of the other hosts: Gemini CLI gets the deny naming the pending ask, not
    its own ``decision: ask`` (which a headless run waits on forever: Gemini CLI 0.61.0 hung
    until killed; with ``--yolo``, without which headless Gemini never offers the shell tool);
    Copilot CLI and Qwen Code get their own ask (Qwen Code in ``--yolo`` mode, which would
    approve it by itself, the deny instead). In each the run ends, the command never runs,
    the model reads the id, and the ask stays pending with the exact command for an
    out-of-band answer. The hook's ask_timeout is 1 s: nobody answers here."""
    host = host_factory(host_name)
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

def onboarded(box: Sandbox) -> None:
    """Claude Code's first-run screens answered as a person would (the theme, the API key in
    the environment, trusting the project folder), so the run opens on the prompt."""
    state = box.home / ".claude.json"
    data = json.loads(state.read_text()) if state.exists() else {}
    data.update(hasCompletedOnboarding=True, theme="dark",
                customApiKeyResponses={"approved": ["sk-fake"], "rejected": []})
    data.setdefault("projects", {})[str(box.project)] = {
        "hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
    state.write_text(json.dumps(data))


@needs_bridges
@pytest.mark.parametrize("answer", ["approve", "refuse", "dialog"])
def test_claude_code_s_open_dialog_is_answered_out_of_band(
    answer: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
) -> None:
    """Interactive Claude Code on a terminal: our PreToolUse asks, Claude Code opens its
    dialog and runs our PermissionRequest bridge beside it. ``mcp-hooks approve`` from
    elsewhere (a phone, the dashboard: any channel) closes the dialog and the command runs;
    ``refuse`` denies it with the person's reason; a person answering Yes in the dialog runs
    it, and the ask is closed as answered there (channel ``claude-code``)."""
    host = host_factory("claude-code")
    write_asker(box)
    command = "echo asked > ask-marker.txt"
    marker = box.project / "ask-marker.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "user")
    onboarded(box)
    env = host.env(box, fake_model.url, [str(mcp_hooks_exe.parent)])

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(mcp_hooks_exe), *args], capture_output=True, text=True,
                              env=env, timeout=60, stdin=subprocess.DEVNULL)

    def told() -> str:
        return " ".join(t for r in model_requests(fake_model) for t in tool_results(r))

    with Terminal([str(host.info.binary), "Do the task."], box.project, env) as tui:
        tui.until(lambda: "proceed?" in tui.screen, RUN_TIMEOUT, "showed the dialog")
        asks = [json.loads(line) for line in cli("pending", "--json").stdout.splitlines()]
        assert len(asks) == 1 and asks[0]["tool_input"]["command"] == command, asks
        ask_id = asks[0]["id"]
        assert not marker.exists()
        if answer == "approve":
            assert cli("approve", ask_id, "--by", "ann").returncode == 0
        elif answer == "refuse":
            assert cli("refuse", ask_id, "--reason", "E2E-REFUSED: not now").returncode == 0
        else:
            tui.send("\r")  # Yes, the dialog's first choice
        tui.until(lambda: bool(told()), RUN_TIMEOUT, "told the model the command's result")
    log = [json.loads(line) for line in cli("log", "--json").stdout.splitlines()]
    answers = [(r["channel"], r["approved"]) for r in log
               if r.get("kind") == "ask_answer" and r.get("ask_id") == ask_id]
    pending = cli("pending", "--json").stdout.strip()
    if answer == "refuse":
        assert not marker.exists(), tui.screen[-2000:]
        assert "E2E-REFUSED: not now" in told(), told()
        assert answers == [("host", None), ("cli", False)]
    else:
        assert marker.exists(), tui.screen[-2000:]
        assert pending == "", pending
        assert answers == [("host", None), ("cli" if answer == "approve" else "claude-code", True)]
