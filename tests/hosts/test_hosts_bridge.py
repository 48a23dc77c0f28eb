"""``mcp-hooks bridge <host>`` as the hosts run it: the real console script, a new process
per call, the host's payload on stdin, real HOOK.md hooks in a project folder.

Payloads come from tests/fixtures/hosts (the hosts' docs and real runs). Each host answers
in its own form: blocks, rewrites, context, stop gates; a plain allow grants no permission;
a call mcp-hooks cannot decide is denied in the host's form (a warning only where the event
cannot block, or under ``MCP_HOOKS_ON_FAULT=warn``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.hosts.doctor import host_deny_reason
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.bridges import bridge, fixture, rm_call

RECORD = 'cat > "$RECORD_DIR/$AGENT_HOOKS_EVENT.json"\n'
REWRITE_EDIT = """\
import json, sys
payload = json.load(sys.stdin)
data = dict(payload["tool_input"])
data["edits"] = [dict(e, new_string="REWRITTEN") for e in data["edits"]]
print(json.dumps({"modified_input": data}))
"""
REWRITE_SHELL = """\
import json, sys
payload = json.load(sys.stdin)
data = dict(payload["tool_input"])
data["command"] = data["command"] + " -- --ci"
print(json.dumps({"modified_input": data}))
"""


@pytest.fixture
def hooks(project_hooks: Path, tmp_path: Path) -> Path:
    """The hook library every bridge test runs against; returns the record folder."""
    records = tmp_path / "records"
    records.mkdir()
    for event in ("before_tool", "after_tool", "after_tool_failure", "before_stop",
                  "before_agent", "session_start"):
        write_hook(project_hooks, f"record-{event.replace('_', '-')}", trigger=event,
                   script=RECORD, extra="priority: 1000\n")
    write_hook(project_hooks, "deny-rm", script='echo "rm -rf is not allowed here" >&2\nexit 2\n',
               extra="priority: 900\nmatcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    write_hook(project_hooks, "protect-env",
               script="""echo '{"decision": "deny", "reason": "secrets stay out"}'\n""",
               extra="priority: 900\nmatcher:\n  tool: WriteFile|EditFile\n  pattern: '\\.env$'\n")
    write_hook(project_hooks, "rewrite-edit", script=REWRITE_EDIT, entry="scripts/run.py",
               extra="matcher:\n  tool: EditFile\n")
    write_hook(project_hooks, "rewrite-shell", script=REWRITE_SHELL, entry="scripts/run.py",
               extra="matcher:\n  tool: Shell\n  pattern: '^npm test$'\n")
    write_hook(project_hooks, "prompt-rule", trigger="before_agent",
               script="""echo '{"additional_context": "Project rule: use pnpm"}'\n""")
    write_hook(project_hooks, "after-note", trigger="after_tool",
               script="""echo '{"additional_context": "formatted the file"}'\n""")
    write_hook(project_hooks, "tests-gate", trigger="before_stop",
               script='echo "Run the test suite before finishing" >&2\nexit 2\n')
    return records


def out(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    if not result.stdout.strip():
        return {}
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def recorded(records: Path, event: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((records / f"{event}.json").read_text())
    return data


# -- a dangerous shell command is blocked in each host's own form ----------------------------


@pytest.mark.parametrize(("host", "name", "check"), [
    ("claude-code", "PreToolUse.rm", lambda o: o["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "rm -rf is not allowed here"}),
    ("codex", "PreToolUse.bash", lambda o: o["hookSpecificOutput"]["permissionDecision"] == "deny"
        and o["hookSpecificOutput"]["permissionDecisionReason"] == "rm -rf is not allowed here"),
    ("gemini-cli", "BeforeTool.rm", lambda o: o == {
        "decision": "deny", "reason": "rm -rf is not allowed here"}),
    ("kimi-cli", "PreToolUse.rm", lambda o: o["hookSpecificOutput"]["permissionDecision"] == "deny"
        and o["hookSpecificOutput"]["permissionDecisionReason"] == "rm -rf is not allowed here"),
    ("cursor", "beforeShellExecution", lambda o: o["permission"] == "deny"
        and o["agent_message"] == "rm -rf is not allowed here"),
    ("copilot-cli", "preToolUse.bash", lambda o: o == {
        "permissionDecision": "deny", "permissionDecisionReason": "rm -rf is not allowed here"}),
    ("qwen-code", "PreToolUse.rm", lambda o: o["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "rm -rf is not allowed here"}),
    # Cline: an input its own tool refuses (so it does not run) and the reason as context
    ("cline", "PreToolUse.rm", lambda o: o == {"overrideInput": None, "context": (
        "mcp-hooks refused this run_commands call, so it did not run: rm -rf is not allowed "
        "here")}),
    ("opencode", "tool.execute.before.rm", lambda o: o == {
        "decision": "deny", "reason": "rm -rf is not allowed here"}),
])
def test_a_dangerous_command_is_blocked(host: str, name: str, check: Any, hooks: Path,
                                        user_dir: Path, project: Path) -> None:
    payload, flags = rm_call(host, name, project)
    result = bridge(host, payload, user_dir, hooks, *flags)
    answer = out(result)
    assert check(answer), answer
    seen = recorded(hooks, "before_tool")
    assert seen["tool_name"] == "Shell" and "rm -rf" in seen["tool_input"]["command"]
    assert seen["host"]["name"] == host


@pytest.mark.parametrize(("host", "name", "flags"), [
    ("claude-code", "PreToolUse.bash", []), ("codex", "PreToolUse.bash", []),
    ("gemini-cli", "BeforeTool.shell", []), ("kimi-cli", "PreToolUse.shell", []),
    ("cursor", "beforeShellExecution.ok", []), ("copilot-cli", "preToolUse.ok",
                                                ["--event", "preToolUse"]),
    ("qwen-code", "PreToolUse.shell", []), ("cline", "PreToolUse.run_commands", []),
    ("opencode", "tool.execute.before.bash", []),
])
def test_an_allowed_command_grants_no_permission(host: str, name: str, flags: list[str],
                                                 hooks: Path, user_dir: Path,
                                                 project: Path) -> None:
    result = bridge(host, fixture(host, name, project), user_dir, hooks, *flags)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""  # no decision at all: the host's own prompts happen
    seen = recorded(hooks, "before_tool")
    assert seen["tool_name"] == "Shell"
    assert seen["event_type"] == "before_tool"
    assert seen["work_dir"] == str(project)


def test_the_hook_sees_canonical_input_and_the_hosts_own(hooks: Path, user_dir: Path,
                                                         project: Path) -> None:
    payload = fixture("claude-code", "PreToolUse.bash", project)
    out(bridge("claude-code", payload, user_dir, hooks))
    seen = recorded(hooks, "before_tool")
    assert seen["tool_input"] == {"command": "echo hello > marker.txt",
                                  "description": "Write hello to marker.txt"}
    assert seen["tool_use_id"] == "toolu_01FakeModelCall0000000001"
    assert seen["session_id"] == payload["session_id"]
    host = seen["host"]
    assert host["tool_name"] == "Bash" and host["event"] == "PreToolUse"
    assert host["payload"]["permission_mode"] == "default"
    assert "tool_input" not in host["payload"]


def test_mcp_and_unknown_tools_pass_unchanged(hooks: Path, user_dir: Path,
                                              project: Path) -> None:
    out(bridge("claude-code", fixture("claude-code", "PreToolUse.mcp", project), user_dir, hooks))
    seen = recorded(hooks, "before_tool")
    assert seen["tool_name"] == "mcp__memory__create_entities"
    assert seen["tool_input"] == {"entities": [{"name": "x", "entityType": "y",
                                                "observations": []}]}
    out(bridge("gemini-cli", fixture("gemini-cli", "BeforeTool.mcp", project), user_dir, hooks))
    assert recorded(hooks, "before_tool")["tool_name"] == "mcp__github__create_issue"


def test_a_secret_write_is_blocked_on_every_file_tool(hooks: Path, user_dir: Path,
                                                      project: Path) -> None:
    gemini = out(bridge("gemini-cli", fixture("gemini-cli", "BeforeTool.write_file", project),
                        user_dir, hooks))
    assert gemini == {"decision": "deny", "reason": "secrets stay out"}
    copilot = out(bridge("copilot-cli", fixture("copilot-cli", "preToolUse.create", project),
                         user_dir, hooks, "--event", "preToolUse"))
    assert copilot["permissionDecision"] == "deny"
    assert recorded(hooks, "before_tool")["tool_input"]["content"] == "A=1\n"


# -- rewrites go back in the host's shape --------------------------------------------------


def test_claude_code_rewrite_is_updated_input_without_a_permission_decision(
        hooks: Path, user_dir: Path, project: Path) -> None:
    answer = out(bridge("claude-code", fixture("claude-code", "PreToolUse.edit", project),
                        user_dir, hooks))
    specific = answer["hookSpecificOutput"]
    assert specific["updatedInput"] == {"file_path": f"{project}/src/app.py",
                                        "old_string": "hi", "new_string": "REWRITTEN",
                                        "replace_all": False}
    assert "permissionDecision" not in specific


def test_claude_code_multiedit_rewrite_keeps_its_list(hooks: Path, user_dir: Path,
                                                      project: Path) -> None:
    answer = out(bridge("claude-code", fixture("claude-code", "PreToolUse.multiedit", project),
                        user_dir, hooks))
    edits = answer["hookSpecificOutput"]["updatedInput"]["edits"]
    assert [e["new_string"] for e in edits] == ["REWRITTEN", "REWRITTEN"]
    assert edits[1]["replace_all"] is True


TWO_EDITS = """\
import json, sys
payload = json.load(sys.stdin)
data = dict(payload["tool_input"])
data["edits"] = [{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}]
print(json.dumps({"modified_input": data}))
"""


@pytest.mark.parametrize("on_fault", ["block", "warn"])
def test_a_rewrite_the_hosts_tool_cannot_take_is_refused_not_dropped(
        project_hooks: Path, user_dir: Path, project: Path, on_fault: str) -> None:
    """Claude's Edit holds one edit; a hook that rewrites it into two cannot be expressed.
    Running the original input would run what the hook replaced: under the default fail-closed
    policy the call is denied, saying why; with --on-fault warn the rewrite is dropped."""
    write_hook(project_hooks, "two-edits", script=TWO_EDITS, entry="scripts/run.py",
               extra="matcher:\n  tool: EditFile\n")
    answer = out(bridge("claude-code", fixture("claude-code", "PreToolUse.edit", project),
                        user_dir, None, "--on-fault", on_fault))
    specific = answer.get("hookSpecificOutput", {})
    assert "updatedInput" not in specific
    if on_fault == "block":
        assert specific["permissionDecision"] == "deny"
        assert "exactly one edit" in specific["permissionDecisionReason"]
        assert "refused rather than run" in specific["permissionDecisionReason"]
    else:
        assert specific.get("permissionDecision") != "deny"
        assert "exactly one edit" in json.dumps(answer)


def test_codex_rewrite_carries_allow_only_with_updated_input(hooks: Path, user_dir: Path,
                                                             project: Path) -> None:
    payload = fixture("codex", "PreToolUse.bash", project)
    payload["tool_input"]["command"] = "npm test"
    answer = out(bridge("codex", payload, user_dir, hooks))
    assert answer["hookSpecificOutput"] == {"hookEventName": "PreToolUse",
                                            "updatedInput": {"command": "npm test -- --ci"},
                                            "permissionDecision": "allow"}


@pytest.mark.parametrize(("host", "name", "flags", "pick", "expected"), [
    ("gemini-cli", "BeforeTool.replace", [], lambda o: o["hookSpecificOutput"]["tool_input"],
     {"file_path": "/a.py", "instruction": "rename", "old_string": "x",
      "new_string": "REWRITTEN", "allow_multiple": False}),
    ("copilot-cli", "preToolUse.edit", ["--event", "preToolUse"], lambda o: o["modifiedArgs"],
     {"path": "/a.py", "old_str": "x", "new_str": "REWRITTEN"}),
])
def test_rewrites_in_gemini_and_copilot_shapes(host: str, name: str, flags: list[str],
                                               pick: Any, expected: dict[str, Any],
                                               hooks: Path, user_dir: Path,
                                               project: Path) -> None:
    answer = out(bridge(host, fixture(host, name, project), user_dir, hooks, *flags))
    got = pick(answer)
    for key in ("file_path", "path"):
        if key in expected:
            expected[key] = f"{project}{expected[key]}"
    assert got == expected
    assert "permissionDecision" not in answer


def test_cursor_rewrite_is_updated_input_on_pre_tool_use(hooks: Path, user_dir: Path,
                                                         project: Path) -> None:
    payload = fixture("cursor", "preToolUse", project)
    payload["tool_input"]["command"] = "npm test"
    answer = out(bridge("cursor", payload, user_dir, hooks))
    assert answer == {"updated_input": {"command": "npm test -- --ci"}}


def test_kimi_has_no_rewrite_so_it_warns(hooks: Path, user_dir: Path, project: Path) -> None:
    result = bridge("kimi-cli", fixture("kimi-cli", "PreToolUse.strreplace", project),
                    user_dir, hooks)
    assert result.returncode == 0
    assert result.stdout.strip() == ""
    assert "Kimi CLI cannot rewrite" in result.stderr
    assert recorded(hooks, "before_tool")["tool_input"]["edits"] == [
        {"old_string": "x", "new_string": "y", "replace_all": False}]


# -- context ------------------------------------------------------------------------------


@pytest.mark.parametrize(("host", "name", "pick"), [
    ("claude-code", "UserPromptSubmit", lambda r: json.loads(r)["hookSpecificOutput"][
        "additionalContext"]),
    ("codex", "UserPromptSubmit", lambda r: json.loads(r)["hookSpecificOutput"][
        "additionalContext"]),
    ("gemini-cli", "BeforeAgent", lambda r: json.loads(r)["hookSpecificOutput"][
        "additionalContext"]),
    ("kimi-cli", "UserPromptSubmit", lambda r: r.strip()),
])
def test_context_reaches_the_hosts_context_field(host: str, name: str, pick: Any, hooks: Path,
                                                 user_dir: Path, project: Path) -> None:
    result = bridge(host, fixture(host, name, project), user_dir, hooks)
    assert result.returncode == 0, result.stderr
    assert pick(result.stdout) == "Project rule: use pnpm"
    assert recorded(hooks, "before_agent")["prompt"]


def test_after_tool_context_and_failures(hooks: Path, user_dir: Path, project: Path) -> None:
    claude = out(bridge("claude-code", fixture("claude-code", "PostToolUse.bash", project),
                        user_dir, hooks))
    assert claude["hookSpecificOutput"]["additionalContext"] == "formatted the file"
    seen = recorded(hooks, "after_tool")
    assert seen["tool_output"]["noOutputExpected"] is True
    gemini = out(bridge("gemini-cli", fixture("gemini-cli", "AfterTool.error", project),
                        user_dir, hooks))
    assert gemini == {}
    failure = recorded(hooks, "after_tool_failure")
    assert failure["error"]["message"] == "exit code 1"
    cursor = bridge("cursor", fixture("cursor", "afterShellExecution", project), user_dir, hooks)
    assert cursor.stdout.strip() == "" and "Cursor takes no context" in cursor.stderr


# -- stop gates and loops ------------------------------------------------------------------


def test_claude_code_stop_gate_and_loop_guard_across_runs(hooks: Path, user_dir: Path,
                                                         project: Path) -> None:
    first = fixture("claude-code", "Stop", project)
    again = fixture("claude-code", "Stop.active", project)
    cap = ("--stop-block-cap", "2")
    one = out(bridge("claude-code", first, user_dir, hooks, *cap))
    assert one == {"decision": "block", "reason": "Run the test suite before finishing"}
    assert recorded(hooks, "before_stop")["stop_block_count"] == 0
    two = out(bridge("claude-code", again, user_dir, hooks, *cap))
    assert two["decision"] == "block"
    seen = recorded(hooks, "before_stop")
    assert seen["stop_hook_active"] is True and seen["stop_block_count"] == 1
    three = out(bridge("claude-code", again, user_dir, hooks, *cap))
    assert "decision" not in three
    assert "loop guard" in three["systemMessage"]
    assert recorded(hooks, "before_stop")["stop_block_count"] == 2
    # a new turn (the host says it is not a continuation) starts counting again
    four = out(bridge("claude-code", first, user_dir, hooks, *cap))
    assert four["decision"] == "block"
    assert recorded(hooks, "before_stop")["stop_block_count"] == 0


@pytest.mark.parametrize(("host", "name", "flags", "check"), [
    ("codex", "Stop", [], lambda o: o == {"decision": "block",
                                         "reason": "Run the test suite before finishing"}),
    ("gemini-cli", "AfterAgent", [], lambda o: o == {
        "decision": "deny", "reason": "Run the test suite before finishing"}),
    ("kimi-cli", "Stop", [], lambda o: o["hookSpecificOutput"]["permissionDecision"] == "deny"),
    ("cursor", "stop", [], lambda o: o == {
        "followup_message": "Run the test suite before finishing"}),
    ("copilot-cli", "agentStop", ["--event", "agentStop"], lambda o: o == {
        "decision": "block", "reason": "Run the test suite before finishing"}),
])
def test_stop_gates_in_each_hosts_form(host: str, name: str, flags: list[str], check: Any,
                                       hooks: Path, user_dir: Path, project: Path) -> None:
    answer = out(bridge(host, fixture(host, name, project), user_dir, hooks, *flags))
    assert check(answer), answer
    assert recorded(hooks, "before_stop")["event_type"] == "before_stop"


def test_the_hosts_loop_flags_reach_the_loop_guard(hooks: Path, user_dir: Path,
                                                   project: Path) -> None:
    loop = out(bridge("cursor", fixture("cursor", "stop.loop", project), user_dir, hooks,
                      "--stop-block-cap", "2"))
    assert "followup_message" not in loop
    seen = recorded(hooks, "before_stop")
    assert seen["stop_block_count"] == 2 and seen["stop_hook_active"] is True
    retry = out(bridge("gemini-cli", fixture("gemini-cli", "AfterAgent.retry", project),
                       user_dir, hooks))
    assert retry["decision"] == "deny"
    assert recorded(hooks, "before_stop")["stop_hook_active"] is True


# -- our own faults close the gate (issue 9): never open by accident -------------------------

# host -> (blocking event, shell tool payload with the command given, non-blocking event)
FAULT_HOSTS: dict[str, tuple[str, Any, str]] = {
    "claude-code": ("PreToolUse", lambda c: {"tool_name": "Bash", "tool_input": {"command": c}},
                    "SessionEnd"),
    "codex": ("PreToolUse", lambda c: {"tool_name": "Bash", "tool_input": {"command": c}},
              "PostCompact"),
    "gemini-cli": ("BeforeTool", lambda c: {"tool_name": "run_shell_command",
                                            "tool_input": {"command": c}}, "SessionEnd"),
    "cursor": ("beforeShellExecution", lambda c: {"command": c}, "sessionEnd"),
    "copilot-cli": ("preToolUse", lambda c: {"toolName": "bash", "toolArgs": {"command": c}},
                    "sessionEnd"),
    "kimi-cli": ("PreToolUse", lambda c: {"tool_name": "Shell", "tool_input": {"command": c}},
                 "SessionEnd"),
    "qwen-code": ("PreToolUse", lambda c: {"tool_name": "run_shell_command",
                                           "tool_input": {"command": c}}, "SessionEnd"),
    "cline": ("PreToolUse", lambda c: {"hookName": "tool_call", "tool_call": {
        "id": "c1", "name": "run_commands", "input": {"commands": [c]}}}, "TaskComplete"),
    "opencode": ("tool.execute.before", lambda c: {"tool": "bash", "args": {"command": c}},
                 "session.idle"),
}
DEEP = "[" * 5000 + "]" * 5000
UNREADABLE = {
    "not-json": "rm -rf / please",
    "array": '[{"tool_name": "Bash"}]',
    "lone-surrogate": '{"tool_input": {"command": "\\udcff"}, "toolArgs": {"command": '
                      '"\\udcff"}, "command": "\\udcff"}',
    "deep": '{"tool_input": {"command": "ls", "x": ' + DEEP + '}}',
}
WHY = {"not-json": "not JSON", "array": "JSON object", "lone-surrogate": "lone surrogate",
       "deep": "nested too deeply", "wrong-type": "must be a string"}


def host_deny(host: str, result: subprocess.CompletedProcess[str]) -> str:
    """The reason of a deny in ``host``'s own PreToolUse-style form (fails if not one)."""
    answer = out(result)
    if host in ("claude-code", "codex", "kimi-cli", "qwen-code"):
        specific = answer["hookSpecificOutput"]
        assert specific["permissionDecision"] == "deny", answer
        return str(specific["permissionDecisionReason"])
    if host == "cline":  # overrideInput null (the tool does not run) or, failing that, cancel
        assert answer.get("cancel") is True or (
            "overrideInput" in answer and answer["overrideInput"] is None), answer
        return str(answer.get("errorMessage") or answer["context"])
    if host in ("gemini-cli", "opencode"):
        assert answer["decision"] == "deny", answer
        return str(answer["reason"])
    if host == "cursor":
        assert answer["permission"] == "deny", answer
        return str(answer["agent_message"])
    assert answer["permissionDecision"] == "deny", answer
    return str(answer["permissionDecisionReason"])


def _fault_stdin(host: str, kind: str) -> str:
    if kind == "wrong-type":
        return json.dumps(FAULT_HOSTS[host][1](["rm", "-rf", "/"]))
    return UNREADABLE[kind]


def test_the_lone_surrogate_case_is_raw_json_escape_text() -> None:
    assert "\\udcff" in UNREADABLE["lone-surrogate"]
    assert json.loads(UNREADABLE["lone-surrogate"])["command"] == "\udcff"


@pytest.mark.parametrize("kind", [*UNREADABLE, "wrong-type"])
@pytest.mark.parametrize("host", list(FAULT_HOSTS))
def test_a_call_we_cannot_read_is_denied_in_the_hosts_form(host: str, kind: str,
                                                           user_dir: Path) -> None:
    event = FAULT_HOSTS[host][0]
    result = bridge(host, _fault_stdin(host, kind), user_dir, None, "--event", event)
    reason = host_deny(host, result)
    assert WHY[kind] in reason and "mcp-hooks" in reason
    assert "mcp-hooks doctor" in reason and "MCP_HOOKS_ON_FAULT=warn" in reason  # the fix
    assert WHY[kind] in result.stderr


@pytest.mark.parametrize("kind", list(UNREADABLE))
@pytest.mark.parametrize("host", list(FAULT_HOSTS))
def test_a_non_blocking_event_gets_the_warning_only(host: str, kind: str,
                                                    user_dir: Path) -> None:
    event = FAULT_HOSTS[host][2]
    result = bridge(host, UNREADABLE[kind], user_dir, None, "--event", event)
    assert result.returncode == 0, result.stderr
    assert host_deny_reason(host, result.stdout, result.stderr, 0) is None
    assert "decision" not in result.stdout
    assert WHY[kind] in result.stderr and "allowed" in result.stderr


@pytest.mark.parametrize("kind", [*UNREADABLE, "wrong-type"])
@pytest.mark.parametrize("host", list(FAULT_HOSTS))
def test_on_fault_warn_carries_on_with_the_warning(host: str, kind: str, user_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_HOOKS_ON_FAULT", "warn")
    event = FAULT_HOSTS[host][0]
    result = bridge(host, _fault_stdin(host, kind), user_dir, None, "--event", event)
    assert result.returncode == 0, result.stderr
    assert host_deny_reason(host, result.stdout, result.stderr, 0) is None
    assert WHY[kind] in result.stderr and "allowed (on-fault: warn)" in result.stderr


@pytest.mark.parametrize(("host", "stdin", "flags", "message"), [
    ("claude-code", "this is not json", [], "not JSON"),
    ("codex", "[1, 2, 3]", [], "JSON object"),
    ("gemini-cli", "", [], "no payload"),
    ("claude-code", '{"hook_event_name": "Elicitation"}', [], "not bridged"),
    ("kimi-cli", DEEP, [], "nested too deeply"),
])
def test_with_no_event_known_the_universal_block_is_exit_2(host: str, stdin: str,
                                                          flags: list[str], message: str,
                                                          user_dir: Path) -> None:
    result = bridge(host, stdin, user_dir, None, *flags)
    assert result.returncode == 2
    assert result.stdout == ""
    assert message in result.stderr and "blocked" in result.stderr


def test_copilot_has_no_exit_code_block_so_it_denies_in_json(user_dir: Path) -> None:
    result = bridge("copilot-cli", '{"sessionId": "s", "toolName": "bash"}', user_dir)
    reason = host_deny("copilot-cli", result)
    assert "no event name" in reason


def test_the_payloads_event_is_used_when_the_flag_is_unknown(user_dir: Path) -> None:
    result = bridge("cursor", '{"hook_event_name": "stop", "loop_count": 0}', user_dir, None,
                    "--event", "nope")
    assert "not bridged" in out(result)["followup_message"]
    # a stop the host reports as a continuation is never kept going by a fault
    again = bridge("cursor", '{"hook_event_name": "stop", "loop_count": 1}', user_dir, None,
                   "--event", "nope")
    assert "followup_message" not in out(again) and "allowed" in again.stderr


def test_a_fault_on_the_stop_gate_blocks(user_dir: Path) -> None:
    first = bridge("claude-code", "{oops", user_dir, None, "--event", "Stop")
    assert out(first)["decision"] == "block"


def test_unknown_host_is_a_usage_error(user_dir: Path) -> None:
    result = bridge("vim", "{}", user_dir)
    assert result.returncode == 64 and "unknown host" in result.stderr


def test_a_crashing_hook_fails_open_with_a_warning_the_user_sees(
        user_dir: Path, project: Path, project_hooks: Path) -> None:
    write_hook(project_hooks, "broken", script="echo boom >&2\nexit 3\n")
    answer = out(bridge("claude-code", fixture("claude-code", "PreToolUse.bash", project),
                        user_dir))
    assert "hookSpecificOutput" not in answer
    assert "broken" in answer["systemMessage"] and "fail open" in answer["systemMessage"]


def test_a_missing_work_dir_falls_back_and_still_answers(hooks: Path, user_dir: Path,
                                                         project: Path) -> None:
    payload = fixture("claude-code", "PreToolUse.rm", project)
    payload["cwd"] = str(project / "does-not-exist")
    result = subprocess.run(
        [MCP_HOOKS, "bridge", "claude-code", "--user-dir", str(user_dir)],
        input=json.dumps(payload), capture_output=True, text=True, cwd=project,
        env={**os.environ, "RECORD_DIR": str(hooks)}, timeout=60,
    )
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_bridge_imports_no_server_stack(hooks: Path, user_dir: Path, project: Path) -> None:
    code = (
        "import sys, io, json\n"
        "from mcp_hooks import cli\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({json.dumps(fixture('claude-code', 'PreToolUse.bash', project)).encode()!r}))\n"  # noqa: E501
        f"cli.main(['bridge', 'claude-code', '--user-dir', {str(user_dir)!r}])\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('mcp', 'starlette', 'httpx', 'uvicorn') or m == 'mcp_hooks.server')\n"
        # nor a shared store's (issue 34: 6 ms of every start), with the file store in use,
        # nor subprocess (4 ms) when posix_spawn starts the hook, nor shutil, secrets, getpass
        "bad += sorted(m for m in ('mcp_hooks.state.remote', 'socket', 'uuid', 'platform', "
        "'subprocess', 'shutil', 'secrets', 'getpass') if m in sys.modules)\n"
        "print(json.dumps(bad), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "RECORD_DIR": str(hooks)}, timeout=60)
    assert json.loads(result.stderr.strip().splitlines()[-1]) == []


# -- Copilot CLI as the real program reads answers (1.0.102, measured in tests/e2e) -----------


def test_copilot_takes_context_on_prompts_and_after_tools(hooks: Path, user_dir: Path,
                                                          project: Path) -> None:
    """Top-level ``additionalContext`` reaches the model on ``userPromptSubmitted`` and
    ``postToolUse`` (not only on ``postToolUseFailure``)."""
    prompt = out(bridge("copilot-cli", fixture("copilot-cli", "userPromptSubmitted", project),
                        user_dir, hooks, "--event", "userPromptSubmitted"))
    assert prompt.get("additionalContext") == "Project rule: use pnpm", prompt
    after = out(bridge("copilot-cli", fixture("copilot-cli", "postToolUse", project), user_dir,
                       hooks, "--event", "postToolUse"))
    assert after.get("additionalContext") == "formatted the file", after
    assert recorded(hooks, "after_tool")["tool_name"] == "Shell"


def test_copilot_blocks_a_prompt_with_decision_block(user_dir: Path, project: Path) -> None:
    """A ``before_agent`` deny stops the prompt (``decision: block``), not just a note."""
    write_hook(user_dir, "no-prompts", trigger="before_agent",
               script='echo "prompts are closed today" >&2\nexit 2\n')
    result = bridge("copilot-cli", fixture("copilot-cli", "userPromptSubmitted", project),
                    user_dir, None, "--event", "userPromptSubmitted")
    assert out(result) == {"decision": "block", "reason": "prompts are closed today"}


# -- hosts 7, 8, 9 (Qwen Code, Cline, OpenCode): bad stdin, rewrites, context, stops ---------

NEW_HOSTS = ("qwen-code", "cline", "opencode")
PAD = "x" * (8 << 20)  # 8 MB
ODD = "\u202e\u200b\ufeff\u00e9\u0301\U0001f642\u0000"  # bidi override, zero-width, BOM, NUL
BAD_STDIN: dict[str, tuple[bytes, str]] = {  # kind -> (stdin, what the reason says)
    "empty": (b"", "no payload"),
    "blank": (b" \n\t\n", "no payload"),
    "not-utf8": (b'{"tool_name": "\xff\xfe"}', "not UTF-8"),
    "huge-garbage": (b"{" + PAD.encode() + b"}", "not JSON"),
    "truncated": (b'{"tool_name": "run_shell_command", "tool_input": {"comm', "not JSON"),
}


def bridge_bytes(host: str, data: bytes, user_dir: Path, *args: str,
                 records: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ)
    if records is not None:
        env["RECORD_DIR"] = str(records)
    return subprocess.run([MCP_HOOKS, "bridge", host, "--user-dir", str(user_dir), *args],
                          input=data, capture_output=True, env=env, timeout=120)


def as_text(result: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(result.args, result.returncode,
                                       result.stdout.decode(), result.stderr.decode())


@pytest.mark.parametrize("kind", list(BAD_STDIN))
@pytest.mark.parametrize("host", NEW_HOSTS)
def test_bad_stdin_is_denied_in_the_new_hosts_form(host: str, kind: str,
                                                   user_dir: Path) -> None:
    """Empty, blank, non-UTF-8, huge or cut-off stdin on the gate event: the host's own
    block form (never exit 1, which every host reads as "carry on"), saying what broke."""
    data, why = BAD_STDIN[kind]
    result = as_text(bridge_bytes(host, data, user_dir, "--event", FAULT_HOSTS[host][0]))
    assert result.returncode != 1
    reason = host_deny(host, result)
    assert why in reason and "mcp-hooks doctor" in reason
    assert host_deny_reason(host, result.stdout, result.stderr, result.returncode) == reason


@pytest.mark.parametrize("host", NEW_HOSTS)
def test_huge_and_odd_unicode_payloads_are_read_and_judged(host: str, hooks: Path,
                                                           user_dir: Path,
                                                           project: Path) -> None:
    """A valid payload is judged whatever it carries: 8 MB beside the command, or a command
    full of bidi overrides, zero-width characters, a BOM and a NUL; the deny hook still
    matches ``rm -rf`` and the host gets its deny, with the text intact for the hooks."""
    command = f"echo {ODD} && rm -rf build"
    payload = FAULT_HOSTS[host][1](command)
    payload["padding"] = PAD
    payload["cwd"] = str(project)
    if host == "cline":
        payload["workspaceRoots"] = [str(project)]
    data = json.dumps(payload).encode()
    result = as_text(bridge_bytes(host, data, user_dir, "--event", FAULT_HOSTS[host][0],
                                  records=hooks))
    assert "rm -rf is not allowed here" in host_deny(host, result)
    assert recorded(hooks, "before_tool")["tool_input"]["command"] == command


@pytest.mark.parametrize("host", NEW_HOSTS)
def test_without_an_event_the_new_hosts_still_block(host: str, user_dir: Path) -> None:
    """No ``--event`` and none in the payload: the host's most universal block (Qwen Code:
    exit 2 with the reason; Cline, which ignores exit codes: ``cancel``; OpenCode's plugin:
    our JSON deny)."""
    result = bridge(host, '{"tool": 1}', user_dir)
    if host == "qwen-code":
        assert result.returncode == 2 and "no event name" in result.stderr
        return
    assert result.returncode == 0
    assert "no event name" in host_deny(host, result)


def test_cline_denies_a_tool_it_cannot_refuse_by_cancelling(hooks: Path, user_dir: Path,
                                                            project: Path) -> None:
    """An MCP tool might run with any input, so its deny is ``cancel`` (the run ends)."""
    write_hook(project / ".agents" / "hooks", "no-issues",
               script='echo "no issues today" >&2\nexit 2\n',
               extra="priority: 950\nmatcher:\n  tool: mcp__github__create_issue\n")
    result = bridge("cline", fixture("cline", "PreToolUse.mcp", project), user_dir, hooks)
    assert out(result) == {"cancel": True, "errorMessage": "no issues today"}
    assert "the run is cancelled" in result.stderr


def test_qwen_cannot_apply_a_rewrite_so_it_is_refused(hooks: Path, user_dir: Path,
                                                      project: Path) -> None:
    """Qwen Code 0.24.4 does not read ``updatedInput``: the original would run, so the call
    is denied saying why (``--on-fault warn``: allowed as sent, with the warning)."""
    payload = fixture("qwen-code", "PreToolUse.shell", project)
    payload["tool_input"]["command"] = "npm test"
    specific = out(bridge("qwen-code", payload, user_dir, hooks))["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "updatedInput" in specific["permissionDecisionReason"]
    warned = bridge("qwen-code", payload, user_dir, hooks, "--on-fault", "warn")
    assert "permissionDecision" not in warned.stdout and "updatedInput" in warned.stderr


@pytest.mark.parametrize(("host", "name", "pick", "expected"), [
    ("cline", "PreToolUse.run_commands", lambda o: o["overrideInput"],
     {"commands": ["npm test -- --ci"]}),
    ("cline", "PreToolUse.editor", lambda o: o["overrideInput"],
     {"path": "$PROJECT/src/a.py", "old_text": "A=1", "new_text": "REWRITTEN"}),
    ("opencode", "tool.execute.before.bash", lambda o: o["args"],
     {"command": "npm test -- --ci"}),
    ("opencode", "tool.execute.before.edit", lambda o: o["args"],
     {"filePath": "$PROJECT/src/a.py", "oldString": "A=1", "newString": "REWRITTEN"}),
])
def test_rewrites_in_cline_and_opencode_shapes(host: str, name: str, pick: Any,
                                               expected: dict[str, Any], hooks: Path,
                                               user_dir: Path, project: Path) -> None:
    payload = fixture(host, name, project)
    tool_input = payload["tool_call"]["input"] if host == "cline" else payload["args"]
    for key in ("commands", "command"):
        if key in tool_input:
            tool_input[key] = ["npm test"] if key == "commands" else "npm test"
    for key in ("path", "filePath"):
        if key in tool_input:
            tool_input[key] = f"{project}/src/a.py"  # not .env: the rewrite hook runs
    answer = out(bridge(host, payload, user_dir, hooks))
    assert pick(answer) == json.loads(json.dumps(expected).replace("$PROJECT", str(project)))


@pytest.mark.parametrize(("host", "name", "pick"), [
    ("qwen-code", "PostToolUse.shell", lambda o: o["hookSpecificOutput"]["additionalContext"]),
    ("cline", "PostToolUse.run_commands", lambda o: o["context"]),
    ("opencode", "tool.execute.after.bash", lambda o: o["context"]),
    ("qwen-code", "UserPromptSubmit", lambda o: o["hookSpecificOutput"]["additionalContext"]),
])
def test_context_in_the_new_hosts_forms(host: str, name: str, pick: Any, hooks: Path,
                                        user_dir: Path, project: Path) -> None:
    answer = out(bridge(host, fixture(host, name, project), user_dir, hooks))
    assert pick(answer) in ("formatted the file", "Project rule: use pnpm")


def test_qwens_continuation_prompt_is_before_model_not_before_agent(
        hooks: Path, user_dir: Path, project: Path) -> None:
    """Qwen fires UserPromptSubmit before every model call: only a real prompt runs the
    before_agent hooks (the "use pnpm" rule is added once, not after every tool result)."""
    answer = bridge("qwen-code", fixture("qwen-code", "UserPromptSubmit.continuation", project),
                    user_dir, hooks)
    assert out(answer) == {}
    assert not (hooks / "before_agent.json").exists()


def test_qwen_stop_gate_and_the_hosts_without_one(hooks: Path, user_dir: Path,
                                                  project: Path) -> None:
    qwen = out(bridge("qwen-code", fixture("qwen-code", "Stop", project), user_dir, hooks))
    assert qwen == {"decision": "block", "reason": "Run the test suite before finishing"}
    assert recorded(hooks, "before_stop")["stop_hook_active"] is False
    # Cline's TaskComplete comes after the run has ended: after_stop, no before_stop gate
    cline = bridge("cline", fixture("cline", "TaskComplete", project), user_dir, hooks)
    assert cline.returncode == 0 and cline.stdout.strip() == ""
    idle = bridge("opencode", fixture("opencode", "session.idle", project), user_dir, hooks)
    assert idle.returncode == 0 and idle.stdout.strip() == ""
    assert recorded(hooks, "before_stop")["host"]["name"] == "qwen-code"  # the only one
