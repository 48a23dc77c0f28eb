"""``format_outcome``'s text, pinned case by case: the head, notes, reason, rewrites, context,
one line per hook run, warnings (a fault the reason already tells is left out), colours."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_hooks.cli.report import format_outcome
from mcp_hooks.spec.outcome import HookRun, Outcome, Status


def run(status: Status, code: int | None, msg: str | None, name: str = "guard") -> HookRun:
    return HookRun(name, "project", 10, "sync", status, code, 1.25, msg)


CASES: dict[str, tuple[Outcome, dict[str, Any]]] = {
    "allowed, no hook": (Outcome("before_tool"), {}),
    "allowed, no hook, why and notes": (
        Outcome("before_tool"), {"why_none": "no hook for Bash", "notes": ["add one", "or two"]}),
    "allowed, colored": (Outcome("before_tool", hooks=[run("allow", 0, None)]), {"color": True}),
    "denied, keep working": (
        Outcome("before_stop", "deny", "tests fail", "tester", continue_working=True,
                hooks=[run("deny", 2, "tests fail\nline two")]), {}),
    "denied, colored, fault told once": (
        Outcome("before_tool", "deny", "hook guard failed: boom", "guard",
                hooks=[run("error", 1, "boom"), run("timeout", None, "", "slow")],
                warnings=["fault: boom; failed closed", "fault: other; x", "plain warning"]),
        {"color": True}),
    "rewrites and context": (
        Outcome("after_tool", modified_input={"a": 1}, modified_output="out",
                additional_context=["read this", "two\nlines"],
                hooks=[run("allow", 0, "  " + "x" * 100)]), {"notes": ["unused"]}),
    "scheduled run": (
        Outcome("after_tool", hooks=[run("scheduled", None, None, "bg-hook")]),
        {"answerable": False}),
}

EXPECTED: dict[str, list[str]] = {
    'allowed, no hook': [
        'ALLOWED  before_tool  (no hook matched)',
    ],
    'allowed, no hook, why and notes': [
        'ALLOWED  before_tool  (no hook for Bash)',
        '  add one',
        '  or two',
    ],
    'allowed, colored': [
        '\x1b[1;32mALLOWED\x1b[0m  before_tool',
        '  ok   guard                        project p10   sync  exit'
             ' 0        1.2 ms',
    ],
    'denied, keep working': [
        'DENIED  before_stop  by tester  (keep working)',
        '  reason: tests fail',
        '  DENY guard                        project p10   sync  exit'
             ' 2        1.2 ms  tests fail',
    ],
    'denied, colored, fault told once': [
        '\x1b[1;31mDENIED\x1b[0m  before_tool  by guard',
        '  reason: hook guard failed: boom',
        '  ERR  guard                        project p10   sync  exit'
             ' 1        1.2 ms  (the reason above)',
        '  TIME slow                         project p10   sync  exit'
             ' -        1.2 ms',
        '\x1b[33m  warning: fault: other; x\x1b[0m',
        '\x1b[33m  warning: plain warning\x1b[0m',
    ],
    'rewrites and context': [
        'ALLOWED  after_tool',
        "  modified input: {'a': 1}",
        '  modified output: out',
        '  context: read this',
        '  context: two',
        '           lines',
        '  ok   guard                        project p10   sync  exit'
             ' 0        1.2 ms  xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
             'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
    ],
    'scheduled run': [
        'ALLOWED  after_tool',
        '  bg   bg-hook                      project p10   sync  exit'
             ' -        1.2 ms',
    ],
}


@pytest.mark.parametrize("name", list(CASES))
def test_format_outcome_prints_each_case_as_pinned(name: str) -> None:
    outcome, options = CASES[name]
    assert format_outcome(outcome, **options).split("\n") == EXPECTED[name]
