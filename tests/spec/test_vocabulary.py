"""``mcp_hooks.spec.vocabulary`` beyond the host tables (tests/hosts/test_hosts_vocab.py): the
union that
``fire_hook_event`` and the proxy read, a caller's call through it, and what the model is told."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_hooks.engine.engine import Engine
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.server import prompts
from mcp_hooks.spec.outcome import Event, Outcome
from mcp_hooks.spec.toolcall import caller_tool
from mcp_hooks.spec.vocabulary import (
    CANONICAL_KEYS,
    HOST_TABLES,
    MCP_CLIENTS,
    MCP_SERVER_TOOLS,
    also_named,
    matcher_problem,
    tool,
    tool_catalogue,
    union,
    vocabulary,
)
from tests.conftest import write_hook


def test_the_mcp_table_is_every_host_name_but_the_mcp_servers_own() -> None:
    names = {n for table in HOST_TABLES.values() for n in table.tools}
    assert set(MCP_CLIENTS.tools) == names - MCP_SERVER_TOOLS
    for table in HOST_TABLES.values():
        for name, entry in table.tools.items():
            if name in MCP_SERVER_TOOLS:
                continue
            merged = MCP_CLIENTS.get(name)
            assert merged is not None
            assert merged.canonical == entry.canonical
            # an edit shape is kept, or merged with others told apart by their keys
            assert merged.edits == entry.edits or entry.edits in (merged.edits or "").split("|")
            assert set(entry.keys) <= set(merged.keys)  # every host's renames apply
    assert MCP_CLIENTS.canonical("Bash", {"command": "ls"}) == ("Shell", {"command": "ls"})
    assert MCP_CLIENTS.canonical("Read", {"target_file": "/a"}) == ("ReadFile", {"path": "/a"})
    assert MCP_CLIENTS.canonical("write_file", {"path": "/a"}) == ("write_file", {"path": "/a"})


def test_an_ambiguous_union_is_refused() -> None:
    one = vocabulary(tool("edit", "EditFile", edits="copilot-edit"))
    other = vocabulary(tool("edit", "WriteFile"))
    with pytest.raises(ValueError, match="'edit' is EditFile"):
        union(one, other)
    keys = vocabulary(tool("Read", "ReadFile", ("file", "path")))
    clash = vocabulary(tool("Read", "ReadFile", ("file", "content")))
    with pytest.raises(ValueError, match="'file' is renamed to both"):
        union(keys, clash)
    assert set(union(one, other, leave_out=frozenset({"edit"})).tools) == set()
    # edit shapes that share keys cannot be told apart: refused
    claude = vocabulary(tool("edit", "EditFile", edits="claude-edit"))
    gemini = vocabulary(tool("edit", "EditFile", edits="gemini-replace"))
    with pytest.raises(ValueError, match="'edit' is EditFile"):
        union(claude, gemini)
    with pytest.raises(ValueError, match="'edit' is EditFile"):
        union(claude, vocabulary(tool("edit", "EditFile")))


@pytest.mark.parametrize(("sent", "rewritten"), [
    ({"path": "/a", "old_str": "x", "new_str": "y"},                    # Copilot CLI
     {"path": "/a", "old_str": "x", "new_str": "NEW"}),
    ({"file_path": "/a", "old_string": "x", "new_string": "y"},         # Qwen Code
     {"file_path": "/a", "old_string": "x", "new_string": "NEW"}),
    ({"filePath": "/a", "oldString": "x", "newString": "y", "replaceAll": False},  # OpenCode
     {"filePath": "/a", "oldString": "x", "newString": "NEW", "replaceAll": False}),
])
def test_three_hosts_edit_tools_share_a_name_and_each_is_read_in_its_shape(
        sent: dict[str, object], rewritten: dict[str, object]) -> None:
    """Copilot CLI, Qwen Code and OpenCode all name a tool ``edit``, in three shapes: the
    merged table reads each call in the shape its keys show and writes a rewrite back in it."""
    call = caller_tool(MCP_CLIENTS, "edit", sent)
    assert call.tool_name == "EditFile"
    assert call.tool_input["path"] == "/a"
    assert [(e["old_string"], e["new_string"]) for e in call.tool_input["edits"]] == [("x", "y")]
    edits = [dict(e, new_string="NEW") for e in call.tool_input["edits"]]
    assert call.answer(Outcome("before_tool", modified_input={**call.tool_input,
                                                              "edits": edits})
                       ).modified_input == rewritten


def test_a_call_keeps_the_callers_view_and_answers_in_its_keys() -> None:
    call = caller_tool(MCP_CLIENTS, "Write", {"file_path": "/a", "content": "x"})
    assert (call.tool_name, call.tool_input) == ("WriteFile", {"path": "/a", "content": "x"})
    assert call.host == {"tool_name": "Write", "tool_input": {"file_path": "/a", "content": "x"}}
    assert call.payload({"mcp_server": "fs", "host": {"name": "mine"}}) == {
        "mcp_server": "fs", "host": {"name": "mine", **call.host}}
    rewritten = Outcome("before_tool", modified_input={"path": "/b", "content": "y"})
    assert call.answer(rewritten).modified_input == {"file_path": "/b", "content": "y"}

    edit = caller_tool(MCP_CLIENTS, "Edit", {"file_path": "/a", "old_string": "a",
                                             "new_string": "b"})
    two = Outcome("before_tool", modified_input={"path": "/a", "edits": [
        {"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}]},
        warnings=["earlier"])
    dropped = edit.answer(two)
    assert dropped.modified_input is None
    assert dropped.warnings[0] == "earlier" and "exactly one edit" in dropped.warnings[1]

    plain = caller_tool(MCP_CLIENTS, "git_status", {"repo_path": "."})
    assert (plain.tool_name, plain.tool_input, plain.host, plain.tool) == (
        "git_status", {"repo_path": "."}, None, None)
    assert plain.payload({"a": 1}) == {"a": 1}
    same = Outcome("before_tool", modified_input={"repo_path": "/x"})
    assert plain.answer(same) is same
    # a canonical name sent as it is needs no host view
    assert caller_tool(MCP_CLIENTS, "Shell", {"command": "ls"}).host is None


def test_the_catalogue_lists_every_canonical_tool() -> None:
    listed = {t["name"]: t for t in tool_catalogue()}
    assert list(listed) == list(CANONICAL_KEYS)
    assert listed["EditFile"]["input_keys"] == ["path", "edits"]
    assert {"Edit", "MultiEdit", "edit", "replace", "StrReplaceFile", "editor"} == set(
        listed["EditFile"]["caller_names"])
    assert "write_file" not in listed["WriteFile"]["caller_names"]


@pytest.mark.parametrize(("matcher", "problem"), [
    ("Bash", "Bash reach hooks as Shell"), ("Write|Edit", "add EditFile|WriteFile"),
    ("Shell|Bash", None), ("git_status", None), ("write_file", None), ("Shell", None),
])
def test_matcher_problem(matcher: str, problem: str | None) -> None:
    found = matcher_problem(matcher)
    assert found is None if problem is None else problem in (found or "")


def test_what_the_prompt_says_is_what_the_table_does() -> None:
    section = prompts._PROTOCOL.split("## Tool names", 1)[1].split("##", 1)[0]
    section = " ".join(section.split())
    claims = re.findall(r"`(\w+)` \(([^)]*)\) for ([\w, ]+?)(?:;|\.)", section)
    assert len(claims) >= 5
    for canonical, keys, names in claims:
        assert [k.strip() for k in keys.split(",")] == list(CANONICAL_KEYS[canonical])
        for name in names.split(","):
            assert MCP_CLIENTS.canonical(name.strip(), {})[0] == canonical, name


@pytest.mark.parametrize(("matcher", "sent"), [
    ("Bash", "Bash"),        # a Claude-style hook, a Claude-style caller
    ("Bash", "Shell"),       # the same hook, a caller (or bridge) that says Shell
    ("run_shell_command", "Bash"),  # a Gemini-style hook, a Claude-style caller
    ("Write|Edit", "Edit"),  # several host names
    ("Shell", "Bash"),       # the canonical hook, as the issue asks
])
def test_a_hook_written_for_one_host_guards_on_every_door(
    tmp_path: Path, user_dir: Path, matcher: str, sent: str
) -> None:
    """Every door renames a host's tool before hooks see it (Bash -> Shell), so a matcher of
    only host names would silently guard nothing: hookfile widens it with their canonical
    names, and the deny reaches a caller that says either name."""
    write_hook(user_dir, "no-rm", extra=f"matcher:\n  tool: {matcher}\n",
               script="echo 'no' >&2\nexit 2\n")
    engine = Engine(Registry(user_dir=user_dir, watch=False), one_shot=True)
    tool_name, _ = MCP_CLIENTS.canonical(sent, {"command": "rm -rf /"})
    outcome = engine.fire_blocking(Event("before_tool", tool_name=tool_name,
                                         tool_input={"command": "rm -rf /"},
                                         work_dir=str(tmp_path)))
    assert (outcome.decision, outcome.blocked_by) == ("deny", "no-rm")
    other = engine.fire_blocking(Event("before_tool", tool_name="ReadFile",
                                       tool_input={"path": "/etc/hosts"}, work_dir=str(tmp_path)))
    assert other.decision == "allow" and not other.hooks  # still only the tools it names


def test_also_named_adds_only_canonical_names_of_host_tools() -> None:
    assert also_named(frozenset({"Bash"})) == {"Shell"}
    assert also_named(frozenset({"Shell"})) == frozenset()
    assert also_named(frozenset({"git_status"})) == frozenset()
    assert "ReadFile" in also_named(frozenset({"read_file"}))  # Gemini's, behind any door


def test_copilot_reads_its_vs_code_style_shell_name_too() -> None:
    """Copilot CLI's PascalCase events (PreToolUse, as VS Code writes them) send Claude's
    ``Bash``; a hook on ``Shell`` must still see the call as ``Shell``."""
    copilot = HOST_TABLES["copilot-cli"]
    assert copilot.canonical("Bash", {"command": "ls"}) == ("Shell", {"command": "ls"})
    assert copilot.canonical("bash", {"command": "ls"}) == ("Shell", {"command": "ls"})
