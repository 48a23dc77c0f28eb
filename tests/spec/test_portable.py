"""``mcp-hooks validate --portable`` and ``mcp_hooks.spec.portable``: what another implementation of
the current Agent Hooks spec would reject, one line per problem naming file and field."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_hooks.registry.bundle import LIBRARY_DIR
from mcp_hooks.spec.events import EVENTS, SPEC_NAMES
from mcp_hooks.spec.portable import SPEC_FIELDS, check_hook
from tests.conftest import MCP_HOOKS, write_hook

LIBRARY = LIBRARY_DIR


def validate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, "validate", "--portable", *args], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ))


def problems(hook_dir: Path) -> list[tuple[str | None, str]]:
    return [(p.field, p.message) for p in check_hook(hook_dir)]


def test_the_bundled_library_is_portable() -> None:
    hooks = sorted(p for p in LIBRARY.iterdir() if (p / "HOOK.md").is_file())
    assert len(hooks) >= 7
    for hook_dir in hooks:
        assert check_hook(hook_dir) == [], hook_dir
    done = validate(str(LIBRARY))
    assert done.returncode == 0, done.stderr
    assert f"{len(hooks)} hook(s) checked, 0 problem(s); portable" in done.stdout
    assert done.stderr == ""


def test_a_portable_hook_passes(tmp_path: Path) -> None:
    hook = write_hook(tmp_path, "my-hook", trigger="pre-tool-call",
                      extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\ntimeout: 5000\n"
                      "async: false\npriority: 999\nmetadata:\n  on_error: block\n")
    assert problems(hook) == []


@pytest.mark.parametrize(("trigger", "kebab"), [
    ("before_tool", "pre-tool-call"), ("before_stop", "pre-agent-turn-stop"),
    ("session_end", "post-session"), ("pre-tool-use", "pre-tool-call"),
    ("pre_acting", "pre-tool-call"),
])
def test_a_trigger_only_we_read_names_the_kebab_one(
    tmp_path: Path, trigger: str, kebab: str
) -> None:
    hook = write_hook(tmp_path, "gate", trigger=trigger)
    ((field, message),) = problems(hook)
    assert field == "trigger"
    assert repr(trigger) in message and repr(kebab) in message


def test_every_event_has_one_spec_name() -> None:
    # the issue-lifecycle (seed 002) and agent-loop (seeds 003/004) events are mcp-hooks'
    # extensions, not the spec's
    from mcp_hooks.spec.events import LOOP_NAMES

    spec_events = {n for n, e in EVENTS.items() if e.layer != "issue" and n not in LOOP_NAMES}
    assert set(SPEC_NAMES) == spec_events
    assert len(set(SPEC_NAMES.values())) == len(spec_events) == 13
    for canonical, kebab in SPEC_NAMES.items():
        assert kebab in EVENTS[canonical].aliases


def test_name_unknown_keys_and_ranges(tmp_path: Path) -> None:
    root = tmp_path / "hooks"
    hook = write_hook(root, "real-name", trigger="pre-tool-call",
                      extra="on_error: block\npriority: 2000\nmatcher:\n  tool: Shell\n"
                      "  pattern: '\\p{L}+'\n")  # RE2 reads it, Python's re does not
    (hook / "HOOK.md").write_text((hook / "HOOK.md").read_text().replace(
        "name: real-name", "name: other-name"))
    found = problems(hook)
    fields = [f for f, _ in found]
    # our own loader rejects the unlike name first; the portable check lists everything
    assert sorted(f for f in fields if f) == ["matcher.pattern", "name", "on_error", "priority"]
    message = dict(found)
    assert "'other-name' but the folder is 'real-name'" in message["name"]
    assert "move it under metadata" in message["on_error"]
    assert "from 0 to 1000, got 2000" in message["priority"]
    assert "Python re" in message["matcher.pattern"]


@pytest.mark.parametrize(("name", "why"), [
    ("My-Hook", "lowercase"), ("-hook", "hyphen"), ("a--b", "consecutive"),
    ("my_hook", "only letters, digits and hyphens"), ("x" * 65, "64"),
])
def test_names_another_implementation_refuses(tmp_path: Path, name: str, why: str) -> None:
    hook = write_hook(tmp_path, name, trigger="pre-tool-call")
    assert any(f == "name" and why in m for f, m in problems(hook)), problems(hook)


def test_flow_style_and_a_lower_case_file_name(tmp_path: Path) -> None:
    hook = write_hook(tmp_path, "flow", trigger="pre-tool-call",
                      extra="matcher: {tool: Shell}\n")
    (message,) = [m for f, m in problems(hook) if f is None]
    assert "line 5" in message and "flow-style" in message
    (hook / "HOOK.md").rename(hook / "hook.md")
    assert any("HOOK.md (upper case)" in m for _, m in problems(hook))


def test_a_host_tool_name_without_its_canonical_one(tmp_path: Path) -> None:
    bash_only = write_hook(tmp_path, "bash-only", trigger="pre-tool-call",
                           extra="matcher:\n  tool: Bash|git_status\n")
    ((field, message),) = problems(bash_only)
    assert field == "matcher.tool" and "Bash reach hooks as Shell" in message
    both = write_hook(tmp_path, "both", trigger="pre-tool-call",
                      extra="matcher:\n  tool: Shell|Bash|write_file\n")
    assert problems(both) == []


def test_the_command_prints_one_line_per_problem_and_exits_1(tmp_path: Path) -> None:
    write_hook(tmp_path, "old-style", trigger="before_tool", extra="retries: 3\n")
    write_hook(tmp_path, "fine", trigger="pre-agent-turn-stop")
    done = validate(str(tmp_path))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    hook_md = tmp_path / "old-style" / "HOOK.md"
    assert f"not portable: {hook_md}: retries: not a field of the spec" in done.stderr
    assert any(line.startswith(f"not portable: {hook_md}: trigger: 'before_tool'")
               and "'pre-tool-call'" in line for line in lines)
    assert "ok  fine" in done.stdout and "old-style" not in done.stdout
    assert lines[-1] == "2 hook(s) checked, 2 problem(s)"
    # without --portable the same folder is valid for mcp-hooks (unknown keys only warn)
    plain = subprocess.run([MCP_HOOKS, "validate", str(tmp_path)], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ))
    assert plain.returncode == 0, plain.stderr


def test_spec_fields_are_our_known_fields() -> None:
    from mcp_hooks.spec.hookfields import KNOWN_KEYS

    assert set(SPEC_FIELDS) == KNOWN_KEYS
