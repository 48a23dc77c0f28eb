"""The answer protocol, one row per field: what a hook's stdout JSON does to its verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.engine.judge import ANSWER_FIELDS, Verdict, judge
from mcp_hooks.runner import RunResult
from mcp_hooks.spec.hookfile import load_hook
from tests.conftest import write_hook

FAIL_CLOSED = "metadata:\n  on_error: block\n"

# (id, stdout, event, fails closed, expected verdict attributes, a text the warning holds)
ROWS: list[tuple[str, Any, str, bool, dict[str, Any], str | None]] = [
    ("nothing", {}, "before_tool", False, {"status": "allow", "deny": False}, None),
    ("deny", {"decision": "deny", "reason": "no"}, "before_tool", False,
     {"status": "deny", "deny": True, "reason": "no", "message": "no"}, None),
    ("block-is-deny", {"decision": " BLOCK "}, "before_tool", False,
     {"deny": True, "reason": "blocked by hook h"}, None),
    ("approve", {"decision": "approve"}, "before_tool", False, {"deny": False}, None),
    ("warn", {"decision": "warning", "reason": "careful"}, "before_tool", True,
     {"deny": False, "notice": "careful", "context": "careful"}, None),
    ("unknown-open", {"decision": "maybe"}, "before_tool", False,
     {"deny": False}, "'maybe' is not allow or deny; treated as allow"),
    ("unknown-closed", {"decision": 3, "reason": "r"}, "before_tool", True,
     {"deny": True, "reason": "hook h fails closed and its decision 3 is not allow or deny: r"},
     "denied (fails closed)"),
    ("input", {"modified_input": {"command": "ls"}}, "before_tool", False,
     {"modified_input": {"command": "ls"}}, None),
    ("input-not-object", {"modified_input": ["ls"]}, "before_tool", False,
     {"modified_input": None}, "modified_input must be a JSON object; ignored"),
    ("input-wrong-event", {"modified_input": {"a": 1}}, "after_tool", False,
     {"modified_input": None}, "not after_tool; ignored"),
    ("input-model-no-messages", {"modified_input": {"a": 1}}, "before_model", False,
     {"modified_input": None}, 'must be {"messages": [...]}'),
    ("input-model", {"modified_input": {"messages": []}}, "before_model", False,
     {"modified_input": {"messages": []}}, None),
    ("output", {"modified_output": "new"}, "after_tool", False,
     {"modified_output": "new"}, None),
    ("output-wrong-event", {"modified_output": "new"}, "before_tool", False,
     {"modified_output": None}, "modified_output only applies to after_tool"),
    ("context-list", {"additional_context": ["a", 2]}, "before_tool", False,
     {"context": "a\n2"}, None),
    ("context-empty-list-keeps-the-warning", {"decision": "warn", "additional_context": []},
     "before_tool", False, {"context": "warning from hook h"}, None),
    ("log", {"log": "did things"}, "before_tool", False, {"message": "did things"}, None),
    ("log-under-a-deny", {"decision": "deny", "reason": "why", "log": "x"}, "before_tool",
     False, {"message": "why"}, None),
    ("not-an-object", [1], "before_tool", False, {"status": "error", "deny": False},
     "stdout must be a JSON object, got list; allowed (fail open)"),
    ("not-json", "nope", "before_tool", True, {"status": "error", "deny": True},
     "stdout is not JSON"),
]


def _hook(tmp_path: Path, fails_closed: bool) -> Any:
    hook_dir = write_hook(tmp_path, "h", extra=FAIL_CLOSED if fails_closed else "")
    return load_hook(hook_dir, "user")[0]


@pytest.mark.parametrize(("stdout", "event", "closed", "expected", "warning"),
                         [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_each_answer_field(tmp_path: Path, stdout: Any, event: str, closed: bool,
                          expected: dict[str, Any], warning: str | None) -> None:
    out = (stdout if isinstance(stdout, str) else json.dumps(stdout)).encode()
    verdict = judge(_hook(tmp_path, closed), event,
                    RunResult(0, stdout=out, stdout_size=len(out)))
    assert {name: getattr(verdict, name) for name in expected} == expected
    if warning is None:
        assert verdict.warning is None
    else:
        assert verdict.warning is not None and warning in verdict.warning


def test_a_json_deny_on_exit_2_is_read_as_the_answer(tmp_path: Path) -> None:
    out = b'{"decision": "deny", "reason": "from json", "log": "ignored"}'
    verdict = judge(_hook(tmp_path, False), "before_tool",
                    RunResult(2, stdout=out, stdout_size=len(out), stderr=b"prints"))
    assert (verdict.deny, verdict.reason) == (True, "from json")


def test_the_field_table_names_the_protocols_fields() -> None:
    assert [name for name, _ in ANSWER_FIELDS] == [
        "modified_input", "modified_output", "additional_context", "log"]
    assert isinstance(judge.__doc__, str) and isinstance(Verdict("allow"), Verdict)
