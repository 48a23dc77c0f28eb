"""The event catalogue as data."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_hooks.errors import UnknownEventError
from mcp_hooks.spec.events import ALIASES, EVENTS, TOOL_EVENTS, canonical_event, catalogue

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


def test_twenty_four_canonical_events_in_seven_layers() -> None:
    assert list(EVENTS) == [
        "session_start", "session_end", "before_agent", "after_agent", "before_stop",
        "after_stop", "before_tool", "after_tool", "after_tool_failure", "subagent_start",
        "subagent_stop", "pre_compact", "post_compact",
        "before_issue_start", "after_issue_start", "before_issue_submit",
        "after_issue_submit", "before_issue_close", "after_issue_close",
        "before_model", "after_model", "reasoning_chunk", "tool_output_chunk", "error"]
    assert {e.layer for e in EVENTS.values()} == {"session", "turn", "react", "subagent",
                                                  "context", "issue", "model"}
    # a tool's streamed output is a tool event: matchers apply to it
    assert {"before_tool", "after_tool", "after_tool_failure", "tool_output_chunk"} == (
        TOOL_EVENTS)
    # a fault of ours on these is only a warning: they happen after the fact
    assert {n for n, e in EVENTS.items() if not e.can_block} == {
        "session_end", "after_stop", "post_compact", "after_tool_failure",
        "after_issue_start", "after_issue_submit", "after_issue_close",
        "reasoning_chunk", "tool_output_chunk", "error"}
    assert {n for n, e in EVENTS.items() if e.notify_only} == {
        "reasoning_chunk", "tool_output_chunk"}


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


# -- the issue lifecycle (the control layer's extension, seed 002) ------------------------

SEED_002 = {
    "pre-issue-start": "before_issue_start", "post-issue-start": "after_issue_start",
    "pre-issue-submit": "before_issue_submit", "post-issue-submit": "after_issue_submit",
    "pre-issue-close": "before_issue_close", "post-issue-close": "after_issue_close",
}


@pytest.mark.parametrize(("alias", "canonical"), SEED_002.items())
def test_issue_events_take_the_seeds_spellings(alias: str, canonical: str) -> None:
    from mcp_hooks.spec.events import SPEC_NAMES, spec_name

    assert canonical_event(alias) == canonical
    assert spec_name(canonical) == alias  # what a hook writes
    assert canonical not in SPEC_NAMES  # not the Agent Hooks spec's: not portable
    info = EVENTS[canonical]
    assert info.layer == "issue" and info.fields == ("issue",)
    assert info.can_block == canonical.startswith("before_")
    entry = next(e for e in catalogue() if e["name"] == canonical)
    assert entry["spec_name"] == alias and "issue" in entry["payload_fields"]


def test_the_issue_payload_object_is_checked() -> None:
    from mcp_hooks.errors import InvalidEventError
    from mcp_hooks.spec.events import issue_problem
    from mcp_hooks.spec.outcome import Event

    good = {"id": "FEAT-0123", "type": "feature", "title": "t", "status": "open",
            "checklist": [{"text": "docs", "done": False}], "files_changed": ["a.py"]}
    assert issue_problem(good) is None and issue_problem({}) is None
    for bad, words in [
        ([], "must be a JSON object"),
        ({"id": 12}, "id must be a string"),
        ({"checklist": {"text": "x"}}, "checklist must be a list"),
        ({"checklist": [{"text": "x", "done": "yes"}]}, "checklist[0] must be"),
        ({"files_changed": "a.py"}, "files_changed must be a list of paths"),
    ]:
        assert words in (issue_problem(bad) or "")
        with pytest.raises(InvalidEventError, match=r"payload\.issue"):
            Event.create(event_type="pre-issue-submit", payload={"issue": bad})
    assert Event.create(event_type="pre-issue-submit", payload={"issue": good}).payload == {
        "issue": good}


@pytest.mark.anyio
async def test_a_hook_md_hook_subscribes_to_an_issue_event(tmp_path: Any) -> None:
    import json

    from mcp_hooks import Engine, Event, Registry
    from tests.conftest import write_hook

    seen = tmp_path / "seen.json"
    write_hook(tmp_path / "hooks", "on-submit", trigger="pre-issue-submit",
               script=f"cat > {seen}\n")
    async with Engine(Registry(tmp_path / "hooks")) as engine:
        outcome = await engine.fire(Event.create(
            event_type="before_issue_submit", work_dir=str(tmp_path),
            payload={"issue": {"id": "FEAT-1", "files_changed": ["a.py"]}}))
    assert outcome.decision == "allow" and [h.name for h in outcome.hooks] == ["on-submit"]
    payload = json.loads(seen.read_text())
    assert payload["event_type"] == "pre-issue-submit"  # as the hook spells its trigger
    assert payload["issue"] == {"id": "FEAT-1", "files_changed": ["a.py"]}


# -- the agent loop (the AgentScope seeds 003 and 004, Python and Java spellings) ----------

SEEDS_003_004 = {
    "pre_reasoning": "before_model", "post_reasoning": "after_model",
    "PreReasoning": "before_model", "PostReasoning": "after_model",
    "ReasoningChunk": "reasoning_chunk", "ActingChunk": "tool_output_chunk",
    "acting_chunk": "tool_output_chunk", "Error": "error",
    "PreCall": "before_agent", "PostCall": "after_agent",
    "PreActing": "before_tool", "PostActing": "after_tool",
    "pre-reasoning": "before_model", "post-reasoning": "after_model",
}


@pytest.mark.parametrize(("alias", "canonical"), SEEDS_003_004.items())
def test_agent_loop_events_take_the_seeds_spellings(alias: str, canonical: str) -> None:
    assert canonical_event(alias) == canonical


def test_agent_loop_events_in_the_catalogue() -> None:
    from mcp_hooks.spec.events import LOOP_NAMES, SPEC_NAMES, spec_name

    data = {e["name"]: e for e in catalogue()}
    assert "messages" in data["before_model"]["payload_fields"]
    assert {"messages", "response"} <= set(data["after_model"]["payload_fields"])
    assert {"error", "phase"} <= set(data["error"]["payload_fields"])
    assert {"tool_name", "chunk"} <= set(data["tool_output_chunk"]["payload_fields"])
    assert data["before_model"]["can_block"] and data["after_model"]["can_block"]
    for name in ("reasoning_chunk", "tool_output_chunk"):
        assert data[name]["notify_only"] and not data[name]["can_block"]
    assert not data["error"]["can_block"] and not data["error"]["notify_only"]
    for name, kebab in LOOP_NAMES.items():
        assert name not in SPEC_NAMES and spec_name(name) == kebab == data[name]["spec_name"]
