"""Signals through the host bridges: ``mcp-hooks bridge <host>`` as the hosts run it (a new
process per call, the host's payload on stdin), with HOOK.md hooks that emit each intensity.

- block: the host's deny form (and the block signal in the signal log);
- prompt (``decision: warn``, or a printed prompt signal): its message in the host's context
  field where the event has one, and the warning shown to the user with its signal id and
  the ``mcp-hooks respond`` actions (``systemMessage`` where the host shows one, stderr);
- control: a rewrite of the tool input in the host's rewrite form; an adjustment the host
  has no form for is shown to the user;
- aid: an async hook's advice reaches the host as context of the session's next event.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.paths import state_dir
from tests.conftest import MCP_HOOKS, write_hook

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hosts"

WARN = """echo '{"decision": "warn", "reason": "25 files changed; split the commit"}'\n"""
PRINTED_PROMPT = """echo '{"intensity": "prompt", "severity": "high", \
"message": "pushing to main", "suggestions": ["open a pull request"]}'\n"""
CONTROL = """echo '{"intensity": "control", "modifications": [{"field": "tool_input", \
"description": "tests run in CI mode"}], "modified_input": {"command": "npm test -- --ci"}}'\n"""
ADJUST = """echo '{"intensity": "control", "modifications": [{"field": "batch", \
"description": "split into 2 batches"}]}'\n"""
BLOCK = """echo '{"intensity": "block", "reason": "no force push", \
"resolution_path": ["push without --force"]}'\n"""
ADVICE = """echo '{"additional_context": "tip: make -j2 builds faster here"}'\n"""


@pytest.fixture
def hooks(project_hooks: Path) -> Path:
    shell = "matcher:\n  tool: Shell\n  pattern: '{}'\n"
    write_hook(project_hooks, "size-warning", script=WARN, extra=shell.format("^git commit"))
    write_hook(project_hooks, "main-guard", script=PRINTED_PROMPT,
               extra=shell.format("^git push origin main$"))
    write_hook(project_hooks, "ci-mode", script=CONTROL, extra=shell.format("^npm test$"))
    write_hook(project_hooks, "batcher", script=ADJUST, extra=shell.format("^npm run many$"))
    write_hook(project_hooks, "no-force", script=BLOCK, extra=shell.format("--force"))
    write_hook(project_hooks, "advisor", script=ADVICE,
               extra="async: true\n" + shell.format("^make$"))
    return project_hooks


def shell_call(host: str, project: Path, command: str, session: str = "s-1",
               ) -> tuple[dict[str, Any], list[str]]:
    """A before_tool shell call of ``command`` in the host's own payload shape."""
    name, flags = {
        "claude-code": ("PreToolUse.bash", []), "codex": ("PreToolUse.bash", []),
        "gemini-cli": ("BeforeTool.shell", []), "cursor": ("preToolUse", []),
        "copilot-cli": ("preToolUse.ok", ["--event", "preToolUse"]),
        "kimi-cli": ("PreToolUse.shell", []),
    }[host]
    text = (FIXTURES / host / f"{name}.json").read_text().replace("$PROJECT", str(project))
    payload: dict[str, Any] = json.loads(text)
    if host == "copilot-cli":
        payload["toolArgs"] = {"command": command}
        payload["sessionId"] = session
    else:
        payload["tool_input"]["command"] = command
        payload["conversation_id" if host == "cursor" else "session_id"] = session
    return payload, flags


def bridge(host: str, payload: dict[str, Any], user_dir: Path, *flags: str,
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, "bridge", host, "--user-dir", str(user_dir), *flags],
                          input=json.dumps(payload), capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


def answer(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout) if result.stdout.strip() else {}
    return data


def logged_signals() -> list[dict[str, Any]]:
    """The signal log's lines (beside the default event log, under XDG_STATE_HOME)."""
    done = subprocess.run([MCP_HOOKS, "signals", "--json", "-n", "1000"], capture_output=True,
                          text=True, env=dict(os.environ), timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


HOSTS = ["claude-code", "codex", "gemini-cli", "cursor", "copilot-cli", "kimi-cli"]


# -- prompt -------------------------------------------------------------------------------


# where the host's before_tool takes context: the model reads the warning there
CONTEXT_OF = {
    "claude-code": lambda r: json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"],
    "codex": lambda r: json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"],
    "kimi-cli": lambda r: r.stdout,
}
SHOWS_USER = {"claude-code", "codex", "gemini-cli"}  # systemMessage


@pytest.mark.parametrize("host", HOSTS)
def test_a_warning_is_context_and_shown_to_the_user_with_its_signal(
        host: str, hooks: Path, user_dir: Path, project: Path) -> None:
    payload, flags = shell_call(host, project, "git commit -m wip")
    result = bridge(host, payload, user_dir, *flags)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    assert "deny" not in result.stdout  # a prompt never blocks
    assert "permissionDecision" not in json.dumps(data)  # nor approves anything
    if host in CONTEXT_OF:
        assert "25 files changed; split the commit" in CONTEXT_OF[host](result)
    else:  # no context form on this event: the bridge says so
        assert "takes no context" in result.stderr
    [signal] = [s for s in logged_signals() if s["source"] == "size-warning"]
    assert signal["intensity"] == "prompt" and signal["consumed"] is False
    sid = signal["signal_id"]
    shown = (f"warning from size-warning: 25 files changed; split the commit [prompt signal "
             f"{sid}; answer: mcp-hooks respond {sid} acknowledge|apply_suggestion|dismiss]")
    assert shown in result.stderr
    if host in SHOWS_USER:
        assert shown in data["systemMessage"]


def test_a_printed_prompt_signal_carries_its_suggestions(hooks: Path, user_dir: Path,
                                                          project: Path) -> None:
    payload, _ = shell_call("claude-code", project, "git push origin main")
    data = answer(bridge("claude-code", payload, user_dir))
    context = data["hookSpecificOutput"]["additionalContext"]
    assert context == "pushing to main (open a pull request)"
    assert "warning from main-guard: pushing to main (open a pull request) [prompt signal" \
        in data["systemMessage"]


def test_plain_context_is_not_a_warning(hooks: Path, user_dir: Path, project: Path) -> None:
    write_hook(hooks, "note", trigger="before_agent",
               script="""echo '{"additional_context": "Project rule: use pnpm"}'\n""")
    text = (FIXTURES / "claude-code" / "UserPromptSubmit.json").read_text()
    data = answer(bridge("claude-code", json.loads(text.replace("$PROJECT", str(project))),
                         user_dir))
    assert data == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                           "additionalContext": "Project rule: use pnpm"}}


# -- control ------------------------------------------------------------------------------


REWRITE_OF = {
    "claude-code": lambda o: o["hookSpecificOutput"]["updatedInput"],
    "codex": lambda o: o["hookSpecificOutput"]["updatedInput"],
    "gemini-cli": lambda o: o["hookSpecificOutput"]["tool_input"],
    "cursor": lambda o: o["updated_input"],
    "copilot-cli": lambda o: o["modifiedArgs"],
}


@pytest.mark.parametrize("host", HOSTS)
def test_a_control_signal_is_the_hosts_rewrite_form(host: str, hooks: Path, user_dir: Path,
                                                    project: Path) -> None:
    payload, flags = shell_call(host, project, "npm test")
    result = bridge(host, payload, user_dir, *flags)
    if host == "kimi-cli":  # Kimi has no rewrite form: said, not applied silently
        assert result.returncode == 0 and "Kimi CLI cannot rewrite" in result.stderr
        return
    data = answer(result)
    assert REWRITE_OF[host](data)["command"] == "npm test -- --ci"
    assert "adjusted from" not in result.stderr  # the rewrite is carried, not just told
    assert any(s["source"] == "ci-mode" and s["intensity"] == "control"
               for s in logged_signals())


@pytest.mark.parametrize("host", ["claude-code", "cursor"])
def test_an_adjustment_with_no_host_form_is_shown_to_the_user(
        host: str, hooks: Path, user_dir: Path, project: Path) -> None:
    payload, flags = shell_call(host, project, "npm run many")
    result = bridge(host, payload, user_dir, *flags)
    data = answer(result)
    assert "updatedInput" not in json.dumps(data) and "updated_input" not in data
    assert "adjusted from batcher: split into 2 batches [control signal" in result.stderr
    assert "accept_modification|reject_modification" in result.stderr


# -- block --------------------------------------------------------------------------------


DENY_OF = {
    "claude-code": lambda o: o["hookSpecificOutput"]["permissionDecisionReason"],
    "codex": lambda o: o["hookSpecificOutput"]["permissionDecisionReason"],
    "gemini-cli": lambda o: o["reason"],
    "cursor": lambda o: o["agent_message"],
    "copilot-cli": lambda o: o["permissionDecisionReason"],
    "kimi-cli": lambda o: o["hookSpecificOutput"]["permissionDecisionReason"],
}


@pytest.mark.parametrize("host", HOSTS)
def test_a_block_signal_is_the_hosts_deny(host: str, hooks: Path, user_dir: Path,
                                          project: Path) -> None:
    payload, flags = shell_call(host, project, "git push --force")
    data = answer(bridge(host, payload, user_dir, *flags))
    assert DENY_OF[host](data) == "no force push"
    [signal] = [s for s in logged_signals() if s["source"] == "no-force"]
    assert signal["intensity"] == "block"


# -- aid ----------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["claude-code", "gemini-cli"])
def test_an_async_hooks_advice_is_context_on_the_next_turn(
        host: str, hooks: Path, user_dir: Path, project: Path) -> None:
    session = f"aid-{host}"
    payload, flags = shell_call(host, project, "make", session)
    first = answer(bridge(host, payload, user_dir, *flags))
    assert "tip:" not in json.dumps(first)  # the advice comes after the reply
    # the next turn: a prompt, whose context the host hands the model
    name = "UserPromptSubmit" if host == "claude-code" else "BeforeAgent"
    text = (FIXTURES / host / f"{name}.json").read_text().replace("$PROJECT", str(project))
    prompt = json.loads(text)
    prompt["session_id"] = session
    context = ""
    for _ in range(240):  # a hang bound, not a timing: the detached hook may be slow
        got = answer(bridge(host, prompt, user_dir, *flags))
        context = got.get("hookSpecificOutput", {}).get("additionalContext", "")
        if context:
            break
        time.sleep(0.25)
    assert "tip: make -j2 builds faster here" in context
    assert "advisor" in context
    again = answer(bridge(host, prompt, user_dir, *flags))  # handed over once
    assert "tip:" not in json.dumps(again)
    assert any(s["source"] == "advisor" and s["intensity"] == "aid" for s in logged_signals())


# where a host shows a session's context, and an event of it that has no context form
NO_CONTEXT_THEN_CONTEXT = {
    "claude-code": ("Stop", "UserPromptSubmit", "session_id",
                    lambda o: o.get("hookSpecificOutput", {}).get("additionalContext", "")),
    "cursor": ("stop", "sessionStart", "conversation_id",
               lambda o: o.get("additional_context", "")),
}


@pytest.mark.parametrize("host", sorted(NO_CONTEXT_THEN_CONTEXT))
def test_aid_handed_over_on_an_event_with_no_context_form_waits_for_the_next(
        host: str, hooks: Path, user_dir: Path, project: Path) -> None:
    stop, shows, session_key, context_of = NO_CONTEXT_THEN_CONTEXT[host]
    session = f"aid-kept-{host}"
    payload, flags = shell_call(host, project, "make", session)
    answer(bridge(host, payload, user_dir, *flags))
    for _ in range(240):  # a hang bound: the detached hook logs its aid once it waits
        if any(s["source"] == "advisor" for s in logged_signals()):
            break
        time.sleep(0.25)
    [aid] = [s for s in logged_signals() if s["source"] == "advisor"]

    def call(name: str) -> subprocess.CompletedProcess[str]:
        text = (FIXTURES / host / f"{name}.json").read_text().replace("$PROJECT", str(project))
        data = json.loads(text)
        data[session_key] = session
        return bridge(host, data, user_dir)

    waiting = sorted((state_dir() / "aid").glob("*.jsonl"))
    assert len(waiting) == 1 and "tip: make -j2" in waiting[0].read_text()
    stopped = call(stop)  # the reply cannot show it: the bridge leaves it waiting, untaken
    assert "tip:" not in json.dumps(answer(stopped)) and "tip:" not in stopped.stderr
    assert [p.read_text() for p in sorted((state_dir() / "aid").glob("*"))] == [
        waiting[0].read_text()]  # the same item, neither taken nor put back
    shown = call(shows)
    context = context_of(answer(shown))
    assert "tip: make -j2 builds faster here" in context and "advisor" in context
    again = answer(call(shows))  # handed over once
    assert "tip:" not in json.dumps(again)
    logged = [s for s in logged_signals() if s["source"] == "advisor"]
    assert [s["signal_id"] for s in logged] == [aid["signal_id"]]  # logged once, not again
