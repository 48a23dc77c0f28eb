"""The event catalogue as data."""

from __future__ import annotations

import pytest

from mcp_hooks.errors import UnknownEventError
from mcp_hooks.events import ALIASES, EVENTS, TOOL_EVENTS, canonical_event, catalogue

SEED_000 = {
    "pre-session": "session_start", "post-session": "session_end",
    "pre-agent-turn": "before_agent", "post-agent-turn": "after_agent",
    "pre-agent-turn-stop": "before_stop", "post-agent-turn-stop": "after_stop",
    "pre-tool-call": "before_tool", "post-tool-call": "after_tool",
    "post-tool-call-failure": "after_tool_failure", "pre-subagent": "subagent_start",
    "post-subagent": "subagent_stop", "pre-context-compact": "pre_compact",
    "post-context-compact": "post_compact",
}
OTHERS = {"pre-tool-use": "before_tool", "post-tool-use": "after_tool",
          "pre_reply": "before_agent", "post_reply": "after_agent",
          "pre_acting": "before_tool", "post_acting": "after_tool"}


def test_nineteen_canonical_events_in_six_layers() -> None:
    assert list(EVENTS) == [
        "session_start", "session_end", "before_agent", "after_agent", "before_stop",
        "after_stop", "before_tool", "after_tool", "after_tool_failure", "subagent_start",
        "subagent_stop", "pre_compact", "post_compact",
        "before_issue_start", "after_issue_start", "before_issue_submit",
        "after_issue_submit", "before_issue_close", "after_issue_close"]
    assert {e.layer for e in EVENTS.values()} == {"session", "turn", "react", "subagent",
                                                  "context", "issue"}
    assert {"before_tool", "after_tool", "after_tool_failure"} == TOOL_EVENTS
    # a fault of ours on these is only a warning: they happen after the fact
    assert {n for n, e in EVENTS.items() if not e.can_block} == {
        "session_end", "after_stop", "post_compact", "after_tool_failure",
        "after_issue_start", "after_issue_submit", "after_issue_close"}


@pytest.mark.parametrize(("alias", "canonical"), [*SEED_000.items(), *OTHERS.items()])
def test_every_alias_resolves(alias: str, canonical: str) -> None:
    assert canonical_event(alias) == canonical
    assert ALIASES[alias] == canonical


def test_canonical_names_resolve_to_themselves() -> None:
    assert all(canonical_event(name) == name for name in EVENTS)


def test_unknown_event_names_the_choices() -> None:
    with pytest.raises(UnknownEventError, match=r"unknown event type 'PreToolUse'.*before_tool"):
        canonical_event("PreToolUse")


def test_payload_fields() -> None:
    data = {e["name"]: e for e in catalogue()}
    assert data["before_tool"]["payload_fields"][:5] == [
        "event_type", "timestamp", "session_id", "work_dir", "context"]
    assert {"tool_name", "tool_input", "tool_use_id"} <= set(data["before_tool"]["payload_fields"])
    assert "tool_output" in data["after_tool"]["payload_fields"]
    assert "error" in data["after_tool_failure"]["payload_fields"]
    assert {"stop_reason", "step_count", "final_message", "stop_hook_active"} <= set(
        data["before_stop"]["payload_fields"])
    assert {"subagent_name", "subagent_type", "task_description"} <= set(
        data["subagent_start"]["payload_fields"])
    assert {"duration_seconds", "total_steps", "exit_reason"} <= set(
        data["session_end"]["payload_fields"])
