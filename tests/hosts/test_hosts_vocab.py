"""The shared tool vocabulary and each host's translation of its own payloads.

Every fixture in tests/fixtures/hosts (from the hosts' docs and from real runs) is translated
here; the bridge tests run the same fixtures through the real ``mcp-hooks bridge``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.hosts import HOSTS, UnknownHostError, get_host, host_name
from mcp_hooks.hosts.answering import load_payload
from mcp_hooks.hosts.base import BridgeInputError
from mcp_hooks.spec.vocabulary import (
    CLAUDE_CODE,
    CLINE,
    CODEX,
    COPILOT_CLI,
    CURSOR,
    GEMINI_CLI,
    KIMI_CLI,
    OPENCODE,
    QWEN_CODE,
    RewriteError,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hosts"


def fixture(host: str, name: str, project: Path) -> dict[str, Any]:
    text = (FIXTURES / host / f"{name}.json").read_text().replace("$PROJECT", str(project))
    data: dict[str, Any] = json.loads(text)
    return data


def all_fixtures() -> list[tuple[str, str]]:
    return sorted((p.parent.name, p.stem) for p in FIXTURES.glob("*/*.json"))


def event_of(name: str, host: str = "") -> str:
    """The host event a fixture is named after (OpenCode's event names hold dots)."""
    if host:
        known = get_host(host)
        events = sorted([*known.events, *known.prompt_events], key=len, reverse=True)
        return next(e for e in events if name == e or name.startswith(e + "."))
    return name.split(".")[0]


# -- the vocabulary -------------------------------------------------------------------------


@pytest.mark.parametrize(("vocab", "tool", "canonical"), [
    (CLAUDE_CODE, "Bash", "Shell"), (CODEX, "Bash", "Shell"),
    (GEMINI_CLI, "run_shell_command", "Shell"), (KIMI_CLI, "Shell", "Shell"),
    (CURSOR, "Shell", "Shell"), (COPILOT_CLI, "bash", "Shell"),
    (CLAUDE_CODE, "Write", "WriteFile"), (GEMINI_CLI, "write_file", "WriteFile"),
    (KIMI_CLI, "WriteFile", "WriteFile"), (COPILOT_CLI, "create", "WriteFile"),
    (CLAUDE_CODE, "Edit", "EditFile"), (CLAUDE_CODE, "MultiEdit", "EditFile"),
    (GEMINI_CLI, "replace", "EditFile"), (KIMI_CLI, "StrReplaceFile", "EditFile"),
    (COPILOT_CLI, "edit", "EditFile"), (CLAUDE_CODE, "Read", "ReadFile"),
    (GEMINI_CLI, "read_file", "ReadFile"), (COPILOT_CLI, "view", "ReadFile"),
    (CODEX, "apply_patch", "ApplyPatch"), (GEMINI_CLI, "google_web_search", "WebSearch"),
    (KIMI_CLI, "FetchURL", "WebFetch"), (CLAUDE_CODE, "Task", "Agent"),
    (QWEN_CODE, "run_shell_command", "Shell"), (QWEN_CODE, "edit", "EditFile"),
    (QWEN_CODE, "write_file", "WriteFile"), (QWEN_CODE, "grep_search", "Grep"),
    (QWEN_CODE, "agent", "Agent"), (CLINE, "run_commands", "Shell"),
    (CLINE, "editor", "EditFile"), (CLINE, "read_files", "ReadFile"),
    (CLINE, "apply_patch", "ApplyPatch"), (OPENCODE, "bash", "Shell"),
    (OPENCODE, "edit", "EditFile"), (OPENCODE, "write", "WriteFile"),
    (OPENCODE, "read", "ReadFile"), (OPENCODE, "grep", "Grep"), (OPENCODE, "task", "Agent"),
])
def test_each_host_tool_has_its_canonical_name(vocab: Any, tool: str, canonical: str) -> None:
    assert vocab.canonical(tool, {})[0] == canonical


def test_unknown_and_mcp_tools_pass_unchanged() -> None:
    data = {"entities": [{"name": "x"}], "file_path": "untouched"}
    assert CLAUDE_CODE.canonical("mcp__memory__create_entities", data) == (
        "mcp__memory__create_entities", data)
    assert CLAUDE_CODE.canonical("NotebookEdit", {"notebook_path": "a"}) == (
        "NotebookEdit", {"notebook_path": "a"})
    assert CLAUDE_CODE.canonical("PowerShell", {"command": "ls"})[0] == "PowerShell"


def test_keys_are_renamed_and_the_rest_kept() -> None:
    name, data = CLAUDE_CODE.canonical("Write", {"file_path": "/a", "content": "x", "extra": 1})
    assert (name, data) == ("WriteFile", {"path": "/a", "content": "x", "extra": 1})
    name, data = GEMINI_CLI.canonical(
        "run_shell_command", {"command": "ls", "dir_path": "/p", "description": "d"})
    assert data == {"command": "ls", "cwd": "/p", "description": "d"}
    assert KIMI_CLI.canonical("ReadFile", {"path": "/a", "line_offset": 3, "n_lines": 9})[1] == {
        "path": "/a", "offset": 3, "limit": 9}
    assert COPILOT_CLI.canonical("create", {"path": "/a", "file_text": "t"})[1] == {
        "path": "/a", "content": "t"}
    assert CODEX.canonical("apply_patch", {"command": "*** Begin Patch"})[1] == {
        "patch": "*** Begin Patch"}


@pytest.mark.parametrize(("vocab", "tool", "host_input"), [
    (CLAUDE_CODE, "Edit", {"file_path": "/a", "old_string": "x", "new_string": "y",
                           "replace_all": True}),
    (CLAUDE_CODE, "MultiEdit", {"file_path": "/a", "edits": [
        {"old_string": "x", "new_string": "y"}, {"old_string": "p", "new_string": "q"}]}),
    (GEMINI_CLI, "replace", {"file_path": "/a", "old_string": "x", "new_string": "y",
                             "allow_multiple": False, "instruction": "i"}),
    (KIMI_CLI, "StrReplaceFile", {"path": "/a", "edit": {"old": "x", "new": "y",
                                                        "replace_all": False}}),
    (KIMI_CLI, "StrReplaceFile", {"path": "/a", "edit": [{"old": "x", "new": "y"},
                                                        {"old": "p", "new": "q"}]}),
    (COPILOT_CLI, "edit", {"path": "/a", "old_str": "x", "new_str": "y"}),
    (QWEN_CODE, "edit", {"file_path": "/a", "old_string": "x", "new_string": "y",
                         "replace_all": False}),
    (CLINE, "editor", {"path": "/a", "old_text": "x", "new_text": "y"}),
    (OPENCODE, "edit", {"filePath": "/a", "oldString": "x", "newString": "y",
                        "replaceAll": True}),
])
def test_edits_are_one_list_and_round_trip(vocab: Any, tool: str,
                                           host_input: dict[str, Any]) -> None:
    name, data = vocab.canonical(tool, host_input)
    assert name == "EditFile"
    assert data["path"] == "/a"
    assert isinstance(data["edits"], list) and data["edits"][0]["old_string"] == "x"
    assert data["edits"][0]["new_string"] == "y"
    assert vocab.get(tool).to_host(data, host_input) == host_input


def test_a_rewrite_goes_back_to_the_hosts_keys() -> None:
    edit = CLAUDE_CODE.get("Edit")
    assert edit is not None
    sent = {"file_path": "/a", "old_string": "x", "new_string": "y"}
    rewritten = {"path": "/b", "edits": [{"old_string": "x", "new_string": "z"}]}
    assert edit.to_host(rewritten, sent) == {"file_path": "/b", "old_string": "x",
                                             "new_string": "z"}
    read = GEMINI_CLI.get("read_file")
    assert read is not None
    assert read.to_host({"path": "/c"}, {"absolute_path": "/a"}) == {"absolute_path": "/c"}
    assert read.to_host({"path": "/c"}, {"file_path": "/a"}) == {"file_path": "/c"}


def test_a_rewrite_the_host_tool_cannot_take_is_refused() -> None:
    edit = CLAUDE_CODE.get("Edit")
    assert edit is not None
    two = {"path": "/a", "edits": [{"old_string": "a", "new_string": "b"},
                                   {"old_string": "c", "new_string": "d"}]}
    with pytest.raises(RewriteError, match="exactly one edit"):
        edit.to_host(two, {"file_path": "/a", "old_string": "a", "new_string": "b"})
    with pytest.raises(RewriteError, match="list"):
        edit.to_host({"path": "/a", "edits": "nope"}, {})


# -- host names and payload reading ---------------------------------------------------------


def test_host_names_and_aliases() -> None:
    assert set(HOSTS) == {"claude-code", "codex", "gemini-cli", "cursor", "copilot-cli",
                          "kimi-cli", "qwen-code", "cline", "opencode"}
    assert host_name("claude") == "claude-code" and host_name("Gemini") == "gemini-cli"
    assert host_name("qwen") == "qwen-code" and host_name("cline-cli") == "cline"
    with pytest.raises(UnknownHostError, match="unknown host 'vim'"):
        host_name("vim")
    for name in HOSTS:
        assert get_host(name).name == name


@pytest.mark.parametrize(("raw", "message"), [
    (b"", "no payload"), (b"not json", "not JSON"), (b"[1, 2]", "JSON object"),
    (b'"text"', "JSON object"),
])
def test_bad_stdin_is_a_clear_input_error(raw: bytes, message: str) -> None:
    with pytest.raises(BridgeInputError, match=message):
        load_payload(raw)


def test_unknown_or_missing_event_is_an_input_error() -> None:
    host = get_host("claude-code")
    with pytest.raises(BridgeInputError, match="not bridged"):
        host.event_of({"hook_event_name": "Elicitation"}, None)
    with pytest.raises(BridgeInputError, match="no event name"):
        host.event_of({}, None)
    assert host.event_of({"hook_event_name": "Stop"}, "PreToolUse") == "PreToolUse"


# -- every fixture translates -----------------------------------------------------------------


@pytest.mark.parametrize(("host_label", "name"), all_fixtures())
def test_every_fixture_translates(host_label: str, name: str, tmp_path: Path) -> None:
    host = get_host(host_label)
    payload = fixture(host_label, name, tmp_path)
    named = host.event_of(payload, event_of(name, host_label))
    # a permission prompt (hosts/prompts.py) is read as the gate call whose ask it answers
    call = host.translate(host.prompt_events.get(named, named), payload)
    fields = call.fields
    assert call.event in {"session_start", "session_end", "before_agent", "after_agent",
                          "before_stop", "before_tool", "after_tool", "after_tool_failure",
                          "subagent_start", "subagent_stop", "pre_compact", "post_compact",
                          "before_model", "after_stop"}
    assert fields["work_dir"] == str(tmp_path)
    assert fields["session_id"]
    host_view = fields["payload"]["host"]
    assert host_view["name"] == host_label
    assert host_view["event"] == host.prompt_events.get(named, event_of(name, host_label))
    if call.event in ("before_tool", "after_tool", "after_tool_failure"):
        assert isinstance(fields["tool_input"], dict)
        assert host_view["tool_name"] == call.host_tool_name
        assert host_view["tool_input"] == call.host_tool_input


@pytest.mark.parametrize(("host_label", "name", "tool", "key", "value"), [
    ("claude-code", "PreToolUse.bash", "Shell", "command", "echo hello > marker.txt"),
    ("codex", "PreToolUse.bash", "Shell", "command", "echo hello > marker.txt"),
    ("codex", "PreToolUse.apply_patch", "ApplyPatch", "patch", "*** Begin Patch"),
    ("gemini-cli", "BeforeTool.shell", "Shell", "command", "echo hello > marker.txt"),
    ("gemini-cli", "BeforeTool.write_file", "WriteFile", "path", "/.env"),
    ("gemini-cli", "BeforeTool.mcp", "mcp__github__create_issue", "title", "t"),
    ("kimi-cli", "PreToolUse.shell", "Shell", "command", "echo hello > marker.txt"),
    ("cursor", "beforeShellExecution", "Shell", "command", "rm -rf node_modules"),
    ("cursor", "beforeMCPExecution", "database_query", "query", "SELECT * FROM users"),
    ("cursor", "beforeReadFile", "ReadFile", "path", "/secrets.env"),
    ("cursor", "afterFileEdit", "EditFile", "path", "/main.ts"),
    ("copilot-cli", "preToolUse.bash", "Shell", "command", "rm -rf dist"),
    ("copilot-cli", "PreToolUse.vscode", "Shell", "command", "rm -rf dist"),
    ("copilot-cli", "preToolUse.create", "WriteFile", "content", "A=1\n"),
    ("qwen-code", "PreToolUse.shell", "Shell", "command", "echo hello > marker.txt"),
    ("qwen-code", "PreToolUse.rm", "Shell", "cwd", "$PROJECT"),
    ("qwen-code", "PreToolUse.edit", "EditFile", "path", "/.env"),
    ("cline", "PreToolUse.run_commands", "Shell", "command", "echo hello > marker.txt"),
    ("cline", "PreToolUse.rm", "Shell", "command", "ls\nrm -rf build"),
    ("cline", "PreToolUse.editor", "EditFile", "path", "/.env"),
    ("cline", "PreToolUse.mcp", "mcp__github__create_issue", "title", "t"),
    ("opencode", "tool.execute.before.bash", "Shell", "command", "echo hello > marker.txt"),
    ("opencode", "tool.execute.before.edit", "EditFile", "path", "/.env"),
    ("opencode", "tool.execute.before.write", "WriteFile", "path", "/.env"),
])
def test_fixture_tools_reach_hooks_in_canonical_form(
    host_label: str, name: str, tool: str, key: str, value: str, tmp_path: Path
) -> None:
    host = get_host(host_label)
    payload = fixture(host_label, name, tmp_path)
    call = host.translate(host.event_of(payload, event_of(name, host_label)), payload)
    assert call.fields["tool_name"] == tool
    got = call.fields["tool_input"][key]
    value = value.replace("$PROJECT", str(tmp_path))
    assert got.endswith(value) if key == "path" else got.startswith(value)


def test_ids_and_host_fields_are_carried(tmp_path: Path) -> None:
    kimi = get_host("kimi-cli")
    call = kimi.translate("PreToolUse", fixture("kimi-cli", "PreToolUse.shell", tmp_path))
    assert call.fields["tool_use_id"] == "call_1"
    claude = get_host("claude-code")
    call = claude.translate("Stop", fixture("claude-code", "Stop.active", tmp_path))
    assert call.fields["payload"]["stop_hook_active"] is True
    assert call.fields["payload"]["final_message"] == "Done."
    cursor = get_host("cursor")
    call = cursor.translate("stop", fixture("cursor", "stop.loop", tmp_path))
    assert call.fields["payload"]["stop_block_count"] == 2
    assert call.fields["payload"]["stop_hook_active"] is True
    assert call.session_id == "conv-123"
    gemini = get_host("gemini-cli")
    call = gemini.translate("AfterTool", fixture("gemini-cli", "AfterTool.error", tmp_path))
    assert call.event == "after_tool_failure"
    assert call.fields["error"]["message"] == "exit code 1"


# -- hosts 7, 8, 9: what their payloads carry (real runs of Qwen Code 0.24.4, Cline 3.0.65,
# OpenCode 1.18.33 through the plugin install writes) -------------------------------------


def test_qwen_prompts_continuations_outputs_and_failures(tmp_path: Path) -> None:
    qwen = get_host("qwen-code")
    first = qwen.translate("UserPromptSubmit", fixture("qwen-code", "UserPromptSubmit",
                                                       tmp_path))
    assert first.event == "before_agent"
    assert first.fields["payload"]["prompt"] == "Do the task."
    # Qwen fires UserPromptSubmit before every model call: an empty prompt is a continuation
    again = qwen.translate("UserPromptSubmit", fixture(
        "qwen-code", "UserPromptSubmit.continuation", tmp_path))
    assert again.event == "before_model"
    post = qwen.translate("PostToolUse", fixture("qwen-code", "PostToolUse.shell", tmp_path))
    assert post.fields["tool_output"].startswith("Command: echo hello > marker.txt")
    assert post.fields["tool_use_id"].startswith("toolu_")
    failed = qwen.translate("PostToolUseFailure", fixture(
        "qwen-code", "PostToolUseFailure.shell", tmp_path))
    assert failed.event == "after_tool_failure" and "Exit Code: 1" in failed.fields["error"]
    stop = qwen.translate("Stop", fixture("qwen-code", "Stop.active", tmp_path))
    assert stop.fields["payload"]["stop_hook_active"] is True
    assert stop.fields["payload"]["final_message"] == "Done."


def test_cline_events_come_from_the_flag_or_its_hook_name(tmp_path: Path) -> None:
    cline = get_host("cline")
    payload = fixture("cline", "PreToolUse.run_commands", tmp_path)
    assert cline.event_of(payload, None) == "PreToolUse"  # hookName: tool_call
    assert cline.known_event(None, payload) == "PreToolUse"
    call = cline.translate("PreToolUse", payload)
    assert call.session_id == payload["taskId"] and call.fields["tool_use_id"] == "call_e2e_1"
    assert call.fields["payload"]["host"]["tool_input"] == {
        "commands": ["echo hello > marker.txt"]}
    with pytest.raises(BridgeInputError, match="no 'tool_call' object"):
        cline.translate("PreToolUse", {"hookName": "tool_call"})
    done = cline.translate("TaskComplete", fixture("cline", "TaskComplete", tmp_path))
    assert done.event == "after_stop"  # Cline has no stop gate: the run has ended
    assert done.fields["payload"]["final_message"] == "Done."
    assert done.fields["payload"]["stop_reason"] == "completed"


def test_cline_and_opencode_report_a_failed_command(tmp_path: Path) -> None:
    """Both report a command that exits 1 as a result; the bridge reads it as a failure."""
    cline = get_host("cline")
    ok = cline.translate("PostToolUse", fixture("cline", "PostToolUse.run_commands", tmp_path))
    assert ok.event == "after_tool" and ok.fields["tool_output"][0]["success"] is True
    failed = cline.translate("PostToolUse", fixture("cline", "PostToolUse.failed", tmp_path))
    assert failed.event == "after_tool_failure"
    assert failed.fields["error"] == "Command exited with code 1"
    opencode = get_host("opencode")
    ok = opencode.translate("tool.execute.after", fixture(
        "opencode", "tool.execute.after.bash", tmp_path))
    assert ok.event == "after_tool" and ok.fields["tool_output"] == "(no output)"
    failed = opencode.translate("tool.execute.after", fixture(
        "opencode", "tool.execute.after.failed", tmp_path))
    assert failed.event == "after_tool_failure" and failed.fields["error"].startswith(
        "exit code 1")


@pytest.mark.parametrize(("commands", "text"), [
    (["ls", "rm -rf build"], "ls\nrm -rf build"),
    ("make", "make"),
    ([{"command": "git", "args": ["commit", "-m", "a b"]}], 'git commit -m "a b"'),
])
def test_clines_command_list_is_one_shell_text(commands: Any, text: str) -> None:
    name, data = CLINE.canonical("run_commands", {"commands": commands})
    assert (name, data) == ("Shell", {"command": text})
    run = CLINE.get("run_commands")
    assert run is not None
    # untouched, the list goes back as it was sent; rewritten, as one command
    sent = {"commands": commands}
    back = run.to_host({"command": text}, sent)
    assert back == (sent if isinstance(commands, list) else {"commands": [text]})
    assert run.to_host({"command": "make test"}, sent) == {"commands": ["make test"]}
    with pytest.raises(RewriteError, match="must be a string"):
        run.to_host({"command": ["x"]}, sent)
