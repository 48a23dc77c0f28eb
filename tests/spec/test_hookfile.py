"""HOOK.md parsing and validation: every field, type and range, and clear errors."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_hooks.errors import HookFileError
from mcp_hooks.spec.hookfields import HookFileProblems, problems_of
from mcp_hooks.spec.hookfile import load_hook
from tests.conftest import write_hook


def load(hook_dir: Path, strict: bool = False) -> object:
    return load_hook(hook_dir, "user", strict=strict)


def test_defaults_and_every_field(user_dir: Path) -> None:
    hook = write_hook(user_dir, "full", trigger="pre-tool-call", extra=(
        "matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n"
        "timeout: 5000\nasync: true\npriority: 999\nmetadata:\n  owner: sec\n"
    ))
    spec, warnings = load_hook(hook, "project")
    assert warnings == []
    assert (spec.name, spec.trigger, spec.event) == ("full", "pre-tool-call", "before_tool")
    assert (spec.matcher_tool, spec.matcher_pattern) == ("Shell", "rm -rf")
    assert (spec.timeout, spec.is_async, spec.priority) == (5000, True, 999)
    assert spec.metadata == {"owner": "sec"} and spec.scope == "project"
    assert spec.entry == (str(hook / "scripts" / "run"),)
    assert spec.on_error == "allow"

    plain = write_hook(user_dir, "plain")
    spec, _ = load_hook(plain, "user")
    assert (spec.timeout, spec.is_async, spec.priority) == (30000, False, 100)
    assert spec.matcher_tool is None and spec.metadata == {}


def test_lowercase_hook_md_is_accepted(user_dir: Path) -> None:
    hook = write_hook(user_dir, "lower")
    (hook / "HOOK.md").rename(hook / "hook.md")
    spec, _ = load_hook(hook, "user")
    assert spec.hook_file.name == "hook.md"


def test_entry_script_order(user_dir: Path) -> None:
    hook = write_hook(user_dir, "order", entry="scripts/run.py", script="print('x')\n")
    spec, _ = load_hook(hook, "user")
    assert spec.entry == (sys.executable, str(hook / "scripts" / "run.py"))
    (hook / "scripts" / "run.sh").write_text("exit 0\n")  # not executable: run with sh
    spec, _ = load_hook(hook, "user")
    assert spec.entry == ("/bin/sh", str(hook / "scripts" / "run.sh"))
    (hook / "scripts" / "run.sh").chmod(0o755)
    spec, _ = load_hook(hook, "user")
    assert spec.entry == (str(hook / "scripts" / "run.sh"),)
    (hook / "scripts" / "run").write_text("#!/bin/sh\nexit 0\n")
    (hook / "scripts" / "run").chmod(0o755)
    spec, _ = load_hook(hook, "user")
    assert spec.entry == (str(hook / "scripts" / "run"),)


@pytest.mark.parametrize(("extra", "field", "words"), [
    ("timeout: 50\n", "timeout", "must be from 100 to 600000, got 50"),
    ("timeout: 600001\n", "timeout", "must be from 100 to 600000, got 600001"),
    ("timeout: '5000'\n", "timeout", "must be an integer, got '5000'"),
    ("timeout: true\n", "timeout", "must be an integer, got True"),
    ("priority: -1\n", "priority", "must be from 0 to 1000, got -1"),
    ("priority: 1001\n", "priority", "must be from 0 to 1000"),
    ("priority: 1.5\n", "priority", "must be an integer, got 1.5"),
    ("async: 'yes'\n", "async", "must be true or false, got 'yes'"),
    ("metadata: [1, 2]\n", "metadata", "must be a mapping, got a list"),
    ("matcher: Shell\n", "matcher", "must be a mapping, got 'Shell'"),
    ("matcher:\n  tool: 5\n", "matcher.tool", "must be a string, got 5"),
    ("matcher:\n  tools: Shell\n", "matcher.tools", "takes tool and pattern"),
    ("matcher:\n  tool: '(unclosed'\n", "matcher.tool", "does not compile"),
    ("matcher:\n  pattern: '[a-'\n", "matcher.pattern", "does not compile"),
    ("metadata:\n  on_error: explode\n", "metadata.on_error", "allow (fail open"),
])
def test_wrong_types_and_ranges_name_the_field(user_dir: Path, extra: str, field: str,
                                               words: str) -> None:
    hook = write_hook(user_dir, "bad", extra=extra)
    with pytest.raises(HookFileError) as info:
        load(hook)
    assert info.value.field == field
    assert words in info.value.reason
    assert str(info.value).startswith(f"{hook / 'HOOK.md'}: {field}: ")


@pytest.mark.parametrize(("front", "field", "words"), [
    ("description: x\ntrigger: before_tool\n", "name", "required field is missing"),
    ("name: miss\ntrigger: before_tool\n", "description", "required field is missing"),
    ("name: miss\ndescription: x\n", "trigger", "required field is missing"),
    ("name: miss\ndescription: ''\ntrigger: before_tool\n", "description",
     "must be 1-1024 characters long, got 0"),
    ("name: miss\ndescription: x\ntrigger: before_lunch\n", "trigger", "unknown event type"),
    ("name: other-name\ndescription: x\ntrigger: before_tool\n", "name", "but the folder is"),
    ("name: Miss\ndescription: x\ntrigger: before_tool\n", "name", "kebab-case"),
    (f"name: {'a' * 65}\ndescription: x\ntrigger: before_tool\n", "name",
     "must be 1-64 characters long, got 65"),
    (f"name: miss\ndescription: {'d' * 1025}\ntrigger: before_tool\n", "description",
     "must be 1-1024 characters long, got 1025"),
])
def test_missing_and_invalid_required_fields(user_dir: Path, front: str, field: str,
                                             words: str) -> None:
    hook = user_dir / "miss"
    (hook / "scripts").mkdir(parents=True)
    (hook / "scripts" / "run.sh").write_text("exit 0\n")
    (hook / "HOOK.md").write_text(f"---\n{front}---\n")
    with pytest.raises(HookFileError) as info:
        load(hook)
    assert info.value.field == field and words in info.value.reason


@pytest.mark.parametrize(("text", "words"), [
    ("no frontmatter here\n", "no YAML frontmatter"),
    ("---\nname: x\n", "not closed"),
    ("---\nname: [unclosed\n---\n", "line 2: malformed YAML"),
    ("---\n- a\n- b\n---\n", "must be a mapping"),
    ("---\nname: a\n  bad: indent\n---\n", "malformed YAML"),
])
def test_malformed_files(user_dir: Path, text: str, words: str) -> None:
    hook = write_hook(user_dir, "broken")
    (hook / "HOOK.md").write_text(text)
    with pytest.raises(HookFileError) as info:
        load(hook)
    assert words in info.value.reason and info.value.field is None


def test_not_utf8(user_dir: Path) -> None:
    hook = write_hook(user_dir, "latin")
    (hook / "HOOK.md").write_bytes(b"---\nname: latin\ndescription: caf\xe9\n---\n")
    with pytest.raises(HookFileError, match="not UTF-8"):
        load(hook)


def test_missing_hook_md(user_dir: Path) -> None:
    (user_dir / "empty").mkdir()
    with pytest.raises(HookFileError, match=r"no HOOK\.md"):
        load(user_dir / "empty")


def test_missing_and_non_executable_script(user_dir: Path) -> None:
    hook = write_hook(user_dir, "noexec", executable=False)
    with pytest.raises(HookFileError) as info:
        load(hook)
    assert info.value.field == "scripts/run" and "chmod +x" in info.value.reason
    (hook / "scripts" / "run").unlink()
    with pytest.raises(HookFileError) as info:
        load(hook)
    assert info.value.field == "scripts" and "no entry script" in info.value.reason


def test_unknown_keys_warn_and_fail_when_strict(user_dir: Path) -> None:
    hook = write_hook(user_dir, "extra", extra="colour: blue\n")
    spec, warnings = load_hook(hook, "user")
    assert spec.name == "extra"
    assert warnings == [f"{hook / 'HOOK.md'}: colour: unknown field; put extensions under metadata"]
    with pytest.raises(HookFileError) as info:
        load(hook, strict=True)
    assert info.value.field == "colour"


def test_matcher_on_a_non_tool_event_is_ignored_with_a_warning(user_dir: Path) -> None:
    hook = write_hook(user_dir, "stopper", trigger="before_stop",
                      extra="matcher:\n  tool: Shell\n")
    spec, warnings = load_hook(hook, "user")
    assert spec.matcher_tool is None
    assert any("matchers apply to tool events only" in w for w in warnings)


def test_matcher_semantics(user_dir: Path) -> None:
    hook = write_hook(user_dir, "m", extra="matcher:\n  tool: 'Write|Edit'\n  pattern: '\\.env$'\n")
    spec, _ = load_hook(hook, "user")
    assert spec.matches("Write", {"path": "app/.env"})
    assert spec.matches("Edit", {"nested": [{"deep": {"path": ".env"}}]})
    assert not spec.matches("Writer", {"path": ".env"})  # tool is a full match
    assert not spec.matches("ReWrite", {"path": ".env"})
    # host tool names also match the canonical names every door hands hooks (Write ->
    # WriteFile, Edit -> EditFile), so a hook written for one host guards on all of them
    assert spec.tool_names == {"Write", "Edit", "WriteFile", "EditFile"}
    assert spec.matches("WriteFile", {"path": ".env"})
    assert not spec.matches("ReadFile", {"path": ".env"})
    assert not spec.matches("Write", {"path": ".env.example"})
    assert not spec.matches(None, {"path": ".env"})
    assert not spec.matches("Write", {"size": 5})


def test_crlf_and_a_byte_order_mark_read_as_yaml_reads_them(user_dir: Path) -> None:
    """A Windows checkout (CRLF) or an editor's BOM must not make a guard vanish."""
    hook = write_hook(user_dir, "crlf", extra="matcher:\n  pattern: rm -rf\npriority: 7\n")
    text = (hook / "HOOK.md").read_text()
    (hook / "HOOK.md").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    spec, warnings = load_hook(hook, "user")
    assert (spec.name, spec.matcher_pattern, spec.priority, warnings) == ("crlf", "rm -rf", 7, [])
    (hook / "HOOK.md").write_bytes(text.replace("\n", "\r").encode())  # old Mac line breaks
    assert load_hook(hook, "user")[0].priority == 7


@pytest.mark.parametrize("front", [
    "name: laughs\ndescription: &a lol\ntrigger: before_tool\nmetadata:\n  x: *a\n",
    "name: laughs\ndescription: d\ntrigger: before_tool\nmetadata: &m {a: [1, 2]}\n",
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nname: laughs\ndescription: d\n"
    "trigger: before_tool\n",
])
def test_yaml_anchors_and_aliases_are_refused(user_dir: Path, front: str) -> None:
    hook = write_hook(user_dir, "laughs")
    (hook / "HOOK.md").write_text(f"---\n{front}---\n")
    with pytest.raises(HookFileError, match="anchors and aliases") as info:
        load(hook)
    assert info.value.trigger == "before_tool"  # still told which event it would have woken


@pytest.mark.parametrize(("pattern", "words"), [
    ("(?=rm)", "lookahead"),
    ("(?<!x)rm", "lookahead and lookbehind"),
    (r"(a)\1", "backreferences"),
    ("(?P<x>a)(?P=x)", "backreferences"),
    ("rm\\Z", "write \\z"),
    ("(unclosed", "does not compile"),
])
def test_patterns_that_cannot_run_in_linear_time_are_refused_by_name(
        user_dir: Path, pattern: str, words: str) -> None:
    hook = write_hook(user_dir, "slow", extra=f"matcher:\n  pattern: '{pattern}'\n")
    with pytest.raises(HookFileError, match=r"matcher\.pattern") as info:
        load(hook)
    assert words in info.value.reason


def test_a_huge_hook_md_is_refused_without_reading_it_all(user_dir: Path) -> None:
    hook = write_hook(user_dir, "huge")
    with (hook / "HOOK.md").open("a") as f:
        f.write("x" * (2 << 20))
    with pytest.raises(HookFileError, match="over 1 MiB"):
        load(hook)


def test_deep_frontmatter_is_refused_not_a_crash(tmp_path: Path) -> None:
    """PyYAML's C loader overflows its stack (SIGSEGV) on tens of thousands of levels: a
    60 KB HOOK.md in a cloned repository would take every hook down with the process."""
    import subprocess

    from tests.conftest import MCP_HOOKS

    hooks = tmp_path / "hooks"
    hook = write_hook(hooks, "deep")
    (hook / "HOOK.md").write_text("---\nname: deep\ndescription: d\ntrigger: before_tool\n"
                                  "metadata: " + "[" * 30000 + "]" * 30000 + "\n---\n")
    done = subprocess.run([MCP_HOOKS, "list", "--user-dir", str(hooks), "--project-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "nests more than 64 levels deep" in done.stdout


# -- errors that teach ----------------------------------------------------------------------


def bare_hook(root: Path, name: str, front: str, script: bytes = b"#!/bin/sh\nexit 0\n",
              entry: str = "scripts/run") -> Path:
    """A hook folder with exactly this frontmatter (no defaults filled in)."""
    hook = root / name
    (hook / "scripts").mkdir(parents=True)
    (hook / "HOOK.md").write_text(f"---\n{front}---\n")
    (hook / entry).write_bytes(script)
    (hook / entry).chmod(0o755)
    return hook


@pytest.mark.parametrize(("typo", "meant"), [
    ("triger", "trigger"), ("Trigger", "trigger"), ("descripton", "description"),
    ("nmae", "name"),
])
def test_a_misspelled_required_key_is_named_with_did_you_mean(user_dir: Path, typo: str,
                                                              meant: str) -> None:
    fields = {"name": "typo", "description": "x", "trigger": "before_tool"}
    fields[typo] = fields.pop(meant)
    hook = bare_hook(user_dir, "typo", "".join(f"{k}: {v}\n" for k, v in fields.items()))
    with pytest.raises(HookFileError) as info:
        load(hook)
    assert info.value.field == typo  # the line to fix, not the field it left missing
    assert f"did you mean {meant!r}?" in info.value.reason
    assert "required field is missing" not in str(info.value)


def test_misspelled_optional_and_metadata_keys_warn_with_did_you_mean(user_dir: Path) -> None:
    hook = write_hook(user_dir, "typos", extra="priorty: 900\nmetadata:\n  on_eror: block\n"
                      "  owner: sec\n")
    spec, warnings = load_hook(hook, "user")
    assert spec.priority == 100 and spec.on_error == "allow"  # as written: the defaults
    hook_md = hook / "HOOK.md"
    assert warnings == [
        f"{hook_md}: priorty: unknown field; did you mean 'priority'? (extensions go under "
        "metadata)",
        f"{hook_md}: metadata.on_eror: not a key mcp-hooks reads; did you mean 'on_error'? "
        "(as written, on_error keeps its default)",
    ]  # and `owner`, far from any key we read, is the author's own: no word about it
    with pytest.raises(HookFileError, match="did you mean 'priority'"):
        load(hook, strict=True)
    bad_matcher = write_hook(user_dir, "m-typo", extra="matcher:\n  tol: Shell\n")
    with pytest.raises(HookFileError) as info:
        load(bad_matcher)
    assert info.value.field == "matcher.tol" and "did you mean 'tool'?" in info.value.reason


def test_every_problem_of_a_hook_is_reported_not_the_first(user_dir: Path) -> None:
    hook = bare_hook(user_dir, "many", "name: Many\ndescription: ''\ntriger: before_tool\n"
                     "timeout: 5\npriority: high\nmatcher:\n  pattern: '[a-'\nmetadata:\n"
                     "  on_error: explode\n  persistent: maybe\n  limits:\n    cpu: 1\n",
                     script=b"#!/bin/sh\r\nexit 0\r\n")
    with pytest.raises(HookFileProblems) as info:
        load(hook)
    found = [(p.field, p.reason) for p in problems_of(info.value)]
    assert [field for field, _ in found] == [
        "triger", "description", "timeout", "priority", "name", "matcher.pattern",
        "metadata.on_error", "metadata.limits.cpu", "metadata.persistent", "scripts/run"]
    assert all(p.file == hook / "HOOK.md" for p in info.value.problems)
    # on one line (a listing, a fault's reason) it still says all of them, in that order
    assert info.value.field is None
    assert str(info.value).startswith(f"{hook / 'HOOK.md'}: triger: unknown field")
    assert all(f"{field}: {reason}" in str(info.value) for field, reason in found)


CRLF_FIX = "ends in a carriage return (CRLF): convert {rel} to LF line endings"


@pytest.mark.parametrize(("entry", "script", "what"), [
    ("scripts/run", b"#!/bin/sh\r\nexit 0\r\n", "the #! line"),
    ("scripts/run", b"#!/usr/bin/env python3\r\nprint()\r\n", "the #! line"),
    ("scripts/run.sh", b"#!/bin/sh\r\nexit 0\r\n", "the #! line"),
    ("scripts/run.sh", b"echo hi\r\nexit 0\r\n", "its first line"),  # run with sh
])
def test_a_crlf_script_is_refused_at_load_by_name(user_dir: Path, entry: str, script: bytes,
                                                  what: str) -> None:
    hook = write_hook(user_dir, "crlf", entry=entry)
    (hook / entry).write_bytes(script)
    with pytest.raises(HookFileError) as info:
        load(hook)
    assert info.value.field == entry
    assert info.value.reason.startswith(f"{what} {CRLF_FIX.format(rel=entry)}")
    assert f"sed -i 's/\\r$//' {hook / entry}" in info.value.reason
    (hook / entry).write_bytes(script.replace(b"\r\n", b"\n"))  # the fix it names works
    assert load_hook(hook, "user")[0].name == "crlf"


def test_what_a_carriage_return_cannot_break_still_loads(user_dir: Path) -> None:
    py = write_hook(user_dir, "py", entry="scripts/run.py", script="print('x')\r\n")
    assert load_hook(py, "user")[0].entry[1].endswith("run.py")  # Python reads CRLF
    binary = write_hook(user_dir, "binary")
    (binary / "scripts" / "run").write_bytes(b"\x7fELF\x02\x01\r\x00\n")  # not a #! script
    assert load_hook(binary, "user")[0].name == "binary"
    later = write_hook(user_dir, "later-cr", script="exit 0\r\n")  # only the #! line counts
    assert load_hook(later, "user")[0].name == "later-cr"


def _within(seconds: float, work: Callable[[], object]) -> object:
    """``work()``'s result or exception, from a thread: a hang fails the test, not the run."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed back to the test below
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "hung: the read waited on the file"
    return box.get("error", box.get("value"))


@pytest.mark.parametrize("odd", ["fifo", "folder"])
def test_a_hook_md_swapped_for_a_fifo_is_refused_not_waited_on(tmp_path: Path, odd: str) -> None:
    """A prompt-injected agent may swap a loaded hook's HOOK.md for a FIFO, then ask the
    server's ``get_hook`` (or a person ``mcp-hooks show``) to read it: opening a FIFO to
    read waits for a writer that never comes, one server thread at a time. It is refused
    at once, naming the file and the fix."""
    from mcp_hooks.service import BadRequest, read_hook

    hook = write_hook(tmp_path / "hooks", "fmt")
    spec, _ = load_hook(hook, "user")
    (hook / "HOOK.md").unlink()
    os.mkfifo(hook / "HOOK.md") if odd == "fifo" else (hook / "HOOK.md").mkdir()
    for read in (spec.read_text, lambda: read_hook(spec)):
        error = _within(60, read)
        assert isinstance(error, (HookFileError, BadRequest)), error
        assert "not a regular file" in str(error) and str(hook / "HOOK.md") in str(error)
    again = _within(60, lambda: load_hook(hook, "user"))  # listed afresh: no HOOK.md file
    assert isinstance(again, HookFileError) and "no HOOK.md" in str(again)
