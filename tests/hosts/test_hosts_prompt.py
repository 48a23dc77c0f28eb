"""Claude Code's permission dialog answered from an ask of ours (``hosts/prompts.py``,
docs/ask.md): the real console script as Claude Code runs it (a new process per call, the
recorded ``PermissionRequest`` payload on stdin). Our ``PreToolUse`` answered ``ask``, Claude
Code shows its dialog and runs the ``PermissionRequest`` bridge meanwhile: an out-of-band
answer (``mcp-hooks approve`` / ``refuse`` from another process) becomes the dialog's answer;
no ask of ours, no answer in time or a fault of ours leaves the dialog to the person. A call
that ran while its ask was pending was approved in the dialog: its ``PostToolUse`` closes the
ask (channel ``claude-code``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.bridges import bridge, fixture, rm_call

ASKS = """cat >/dev/null
echo '{"decision": "ask", "reason": "deletes need a person"}'
"""


@pytest.fixture
def asker(project_hooks: Path) -> Path:
    write_hook(project_hooks, "asker", script=ASKS,
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    return project_hooks


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def _pending() -> list[dict[str, Any]]:
    return [json.loads(line) for line in _cli("pending", "--json").stdout.splitlines()]


def _asked(user_dir: Path, project: Path) -> str:
    """Claude Code's PreToolUse of ``rm -rf``: answered ``ask``; the pending id."""
    payload, flags = rm_call("claude-code", "PreToolUse.rm", project)
    done = bridge("claude-code", payload, user_dir, None, *flags)
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
    (pending,) = _pending()
    return str(pending["id"])


def _prompt(user_dir: Path, project: Path, **changes: Any) -> subprocess.Popen[str]:
    """The PermissionRequest bridge, started as Claude Code starts it beside its dialog."""
    payload = {**fixture("claude-code", "PermissionRequest.rm", project), **changes}
    process = subprocess.Popen([MCP_HOOKS, "bridge", "claude-code", "--user-dir",
                                str(user_dir), "--event", "PermissionRequest"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None
    process.stdin.write(json.dumps(payload))
    process.stdin.close()
    process.stdin = None  # sent and closed, as the host does
    return process


def _waiting(process: subprocess.Popen[str], ask_id: str) -> None:
    assert process.stderr is not None
    line = process.stderr.readline()  # said before it polls: an answer now is seen
    assert f"waiting for an answer to {ask_id}" in line, line


def _answer(process: subprocess.Popen[str]) -> tuple[dict[str, Any] | None, str]:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return (json.loads(out) if out.strip() else None), err


def test_an_out_of_band_approval_answers_the_open_dialog_and_covers_that_run_only(
        asker: Path, user_dir: Path, project: Path) -> None:
    ask_id = _asked(user_dir, project)
    process = _prompt(user_dir, project)
    _waiting(process, ask_id)
    assert _cli("approve", ask_id, "--by", "ann").returncode == 0
    answer, _ = _answer(process)
    assert answer == {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                             "decision": {"behavior": "allow"}}}
    assert _pending() == []
    # the approval was that run's: the same call again is asked again
    again = _asked(user_dir, project)
    assert again != ask_id


def test_an_answer_given_before_the_dialog_s_bridge_started_is_its_answer(
        asker: Path, user_dir: Path, project: Path) -> None:
    ask_id = _asked(user_dir, project)
    assert _cli("approve", ask_id).returncode == 0
    answer, err = _answer(_prompt(user_dir, project))
    assert answer is not None and answer["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    assert "waiting" not in err
    assert _asked(user_dir, project) != ask_id  # taken: that run only


def test_an_out_of_band_refusal_denies_in_the_dialog_with_the_reason(
        asker: Path, user_dir: Path, project: Path) -> None:
    ask_id = _asked(user_dir, project)
    process = _prompt(user_dir, project)
    _waiting(process, ask_id)
    assert _cli("refuse", ask_id, "--reason", "not on prod", "--by", "bob").returncode == 0
    answer, _ = _answer(process)
    assert answer is not None
    decision = answer["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert "refused this call by bob: not on prod" in decision["message"]


def test_a_prompt_with_no_ask_of_ours_is_left_to_the_dialog_even_when_approved_before(
        asker: Path, user_dir: Path, project: Path) -> None:
    """Claude Code's own prompt (no ask of ours for the call) gets no answer at once; a
    for-session approval of ours stored for that very call does not answer it either: our
    approval passes our gate, never Claude Code's own permission."""
    answer, err = _answer(_prompt(user_dir, project, tool_input={"command": "ls"}))
    assert answer is None and "waiting" not in err
    ask_id = _asked(user_dir, project)
    assert _cli("approve", ask_id, "--for-session").returncode == 0
    answer, err = _answer(_prompt(user_dir, project))
    assert answer is None and "waiting" not in err


def test_another_input_than_the_asked_one_is_left_to_the_dialog(
        asker: Path, user_dir: Path, project: Path) -> None:
    _asked(user_dir, project)
    other = {"command": "rm -rf /tmp/build2", "description": "Clean"}
    answer, err = _answer(_prompt(user_dir, project, tool_input=other))
    assert answer is None and "waiting" not in err
    answer, err = _answer(_prompt(user_dir, project, session_id="another-session"))
    assert answer is None and "waiting" not in err


def test_no_answer_in_time_leaves_the_dialog_to_the_person_and_the_ask_pending(
        asker: Path, user_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ask_id = _asked(user_dir, project)
    monkeypatch.setenv("MCP_HOOKS_ASK_TIMEOUT", "0.2")
    process = _prompt(user_dir, project)
    _waiting(process, ask_id)
    answer, _ = _answer(process)
    assert answer is None
    assert [a["id"] for a in _pending()] == [ask_id]


def test_a_fault_of_ours_never_denies_the_dialog(
        asker: Path, user_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that cannot be reached: no answer (the person decides in the dialog), and
    stderr names what broke; a payload that is not JSON the same."""
    monkeypatch.setenv("MCP_HOOKS_STATE", "redis://127.0.0.1:9/0")
    answer, err = _answer(_prompt(user_dir, project))
    assert answer is None
    assert "PermissionRequest" in err and "127.0.0.1:9" in err and "dialog decides" in err
    monkeypatch.delenv("MCP_HOOKS_STATE")
    done = subprocess.run([MCP_HOOKS, "bridge", "claude-code", "--user-dir", str(user_dir),
                           "--event", "PermissionRequest"], input="{not json",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done
    assert "dialog decides" in done.stderr


def test_a_call_approved_in_the_dialog_closes_its_ask_when_it_has_run(
        asker: Path, user_dir: Path, project: Path) -> None:
    ask_id = _asked(user_dir, project)
    post = fixture("claude-code", "PostToolUse.bash", project)
    post["tool_input"] = fixture("claude-code", "PreToolUse.rm", project)["tool_input"]
    done = bridge("claude-code", post, user_dir, None)
    assert done.returncode == 0, done.stderr
    assert _pending() == []
    log = _cli("log", "--json").stdout.splitlines()
    answers = [r for r in map(json.loads, log) if r.get("kind") == "ask_answer"]
    # the first: deferred to the host's ask (PreToolUse); the last: the dialog's answer
    assert [(a["ask_id"], a["channel"], a["approved"]) for a in answers] == [
        (ask_id, "host", None), (ask_id, "claude-code", True)]
    assert _asked(user_dir, project) != ask_id  # it covered the run that happened, no other


def test_install_registers_the_prompt_for_the_bridge_only(project: Path) -> None:
    env = {**os.environ, "HOME": str(project)}

    def install(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([MCP_HOOKS, "install", "claude-code", "--scope", "project",
                               "--project-dir", str(project), *flags], capture_output=True,
                              text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)

    settings = project / ".claude" / "settings.json"
    assert install().returncode == 0
    hooks = json.loads(settings.read_text())["hooks"]
    (entry,) = hooks["PermissionRequest"][0]["hooks"]
    assert entry["command"].startswith("mcp-hooks bridge claude-code --event PermissionRequest")
    refused = install("--via", "http", "--event", "PermissionRequest")
    assert refused.returncode == 64 and "--via command" in refused.stderr
    assert install("--via", "http", "--url", "http://127.0.0.1:1").returncode == 0
    assert "PermissionRequest" not in json.loads(settings.read_text())["hooks"]
    assert subprocess.run([MCP_HOOKS, "uninstall", "claude-code", "--scope", "project",
                           "--project-dir", str(project)], capture_output=True, timeout=60,
                          env=env).returncode == 0
