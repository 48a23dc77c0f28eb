"""Signals: the type, its tables, and every hook run mapped onto signals through the engine."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Engine, Event, EventLog, Registry
from mcp_hooks.errors import ConfigError
from mcp_hooks.settings import Settings
from mcp_hooks.spec.outcome import Outcome, fault_outcome
from mcp_hooks.spec.signals import (
    ACTION_INTENSITY,
    ACTIONS,
    INTENSITIES,
    PAYLOAD_KEYS,
    Signal,
    check_action,
    from_hook_run,
    new_id,
    printed_signal,
)
from mcp_hooks.state.signallog import SignalLog
from tests.conftest import write_hook

ISSUE = {"id": "FEAT-0123", "type": "feature", "title": "Add the API", "status": "open",
         "checklist": [{"text": "code", "done": True}, {"text": "API docs", "done": False}],
         "files_changed": ["api/users.py", "docs/api.md"]}


# -- the type ------------------------------------------------------------------------------


def test_the_seeds_tables() -> None:
    assert INTENSITIES == ("block", "control", "prompt", "aid")
    assert ACTIONS == {
        "block": ("retry_after_fix", "proceed_with_risk", "abort"),
        "control": ("accept_modification", "reject_modification"),
        "prompt": ("acknowledge", "apply_suggestion", "dismiss"),
        "aid": ("suggestion_applied", "suggestion_deferred"),
    }
    assert len(ACTION_INTENSITY) == 10
    assert PAYLOAD_KEYS["block"] == ("reason", "resolvable", "resolution_path")


def test_a_signal_has_the_seeds_structure() -> None:
    signal = Signal.block("checklist incomplete [chk-003]",
                          resolution_path=["complete the API docs"]).with_context(
        source="ChecklistValidator", hook="before_issue_submit", issue_id="FEAT-0123",
        files=["docs/api.md"], correlation_id="c-1", type="checklist_incomplete")
    data = signal.as_dict()
    assert set(data) == {"header", "context", "payload"}
    header = data["header"]
    assert set(header) == {"id", "type", "timestamp", "source", "intensity", "correlation_id"}
    assert uuid.UUID(header["id"]).version == 4
    assert header["timestamp"].endswith("Z") and header["type"] == "checklist_incomplete"
    assert (header["source"], header["intensity"], header["correlation_id"]) == (
        "ChecklistValidator", "block", "c-1")
    assert data["context"] == {"hook": "before_issue_submit", "issue_id": "FEAT-0123",
                               "files": ["docs/api.md"]}
    assert data["payload"] == {"reason": "checklist incomplete [chk-003]", "resolvable": True,
                               "resolution_path": ["complete the API docs"]}
    assert Signal.from_dict(json.loads(json.dumps(data))) == signal
    assert signal.blocks and signal.id == header["id"]


def test_constructors_per_intensity() -> None:
    control = Signal.control([{"field": "batch_size", "from": 1000, "to": 100}])
    prompt = Signal.prompt("25 files changed", suggestions=["split the change"])
    aid = Signal.aid("reviewers notified", follow_ups=["answer the review"])
    assert control.payload == {"modifications": [{"field": "batch_size", "from": 1000,
                                                  "to": 100}], "reversible": True}
    assert prompt.payload == {"severity": "medium", "message": "25 files changed",
                              "suggestions": ["split the change"], "continue_allowed": True}
    assert aid.payload["context_info"] == "reviewers notified"
    assert [s.intensity for s in (control, prompt, aid)] == ["control", "prompt", "aid"]
    assert "split the change" in prompt.text()
    assert Signal.accept() is None
    assert new_id() != new_id()


@pytest.mark.parametrize(("intensity", "payload", "words"), [
    ("loud", {}, "not one of block, control, prompt, aid"),
    ("block", {"message": "x"}, "not 'message'"),
    ("prompt", {"severity": "dire"}, "severity must be one of low, medium, high"),
    ("prompt", {"suggestions": "one"}, "suggestions must be a list"),
    ("control", {"reversible": "yes"}, "reversible must be true or false"),
    ("aid", {"context_info": 3}, "context_info must be a string"),
])
def test_malformed_signals_name_the_key(intensity: str, payload: dict[str, Any],
                                        words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        Signal.make(intensity, payload)  # type: ignore[arg-type]


def test_from_dict_names_what_is_missing() -> None:
    with pytest.raises(ConfigError, match="header needs id"):
        Signal.from_dict({"header": {"intensity": "aid"}})
    with pytest.raises(ConfigError, match="JSON object"):
        Signal.from_dict([])


@pytest.mark.parametrize("intensity", INTENSITIES)
def test_each_intensity_takes_its_own_actions_only(intensity: str) -> None:
    for action in ACTIONS[intensity]:
        check_action(intensity, action)
    for other, actions in ACTIONS.items():
        if other != intensity:
            with pytest.raises(ConfigError, match=f"answers a {other} signal, not a "
                                                  f"{intensity} one; use one of"):
                check_action(intensity, actions[0])
    with pytest.raises(ConfigError, match="unknown action 'shrug'"):
        check_action(intensity, "shrug")


def test_from_hook_run_maps_the_protocol() -> None:
    assert from_hook_run(source="h", hook="before_tool") == []
    (block,) = from_hook_run(source="h", hook="before_tool", deny=True, reason="no",
                             modified_input={"a": 1}, context="ignored when denied")
    assert block.intensity == "block" and block.payload["reason"] == "no"
    control, warning, context = from_hook_run(
        source="h", hook="before_tool", modified_input={"command": "ls -l"},
        original_input={"command": "ls"}, warning="risky", context="read this")
    assert control.payload["modifications"][0]["to"] == {"command": "ls -l"}
    assert control.payload["modifications"][0]["from"] == {"command": "ls"}
    assert (warning.intensity, warning.payload["message"]) == ("prompt", "risky")
    assert (context.intensity, context.payload["severity"]) == ("prompt", "low")


def test_printed_signal() -> None:
    signal = printed_signal({"intensity": "prompt", "message": "big change", "severity": "high",
                             "suggestions": ["split"], "decision": "allow",
                             "files": ["a.py"], "type": "change_size"},
                            source="sizer", hook="before_issue_submit", issue_id="FEAT-1")
    assert signal.payload == {"message": "big change", "severity": "high",
                              "suggestions": ["split"]}
    assert (signal.header.type, signal.context.files, signal.context.issue_id) == (
        "change_size", ("a.py",), "FEAT-1")
    with pytest.raises(ConfigError, match="intensity 'loud'"):
        printed_signal({"intensity": "loud"}, source="s", hook="h")


def test_a_fault_deny_is_a_block_signal() -> None:
    outcome = fault_outcome("before_tool", "the registry broke")
    (signal,) = outcome.signals
    assert signal.blocks and signal.source == "mcp-hooks" and signal.header.type == "fault"
    assert fault_outcome("before_tool", "x", on_fault="warn").signals == []
    assert outcome.as_dict()["signals"] == [signal.as_dict()]


# -- through the engine ---------------------------------------------------------------------


async def fire(registry: Registry, log: EventLog | None = None, **fields: Any) -> Outcome:
    async with Engine(registry, log=log) as engine:
        return await engine.fire(Event.create(**fields))


def shell(**more: Any) -> dict[str, Any]:
    return {"event_type": "before_tool", "tool_name": "Shell",
            "tool_input": {"command": "ls"}, **more}


def printing(stdout: dict[str, Any]) -> str:
    return f"cat >/dev/null\ncat <<'EOF'\n{json.dumps(stdout)}\nEOF\n"


@pytest.mark.anyio
async def test_a_plain_allow_has_no_signal(user_dir: Path) -> None:
    write_hook(user_dir, "quiet")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.decision == "allow" and outcome.signals == []
    assert outcome.as_dict()["signals"] == []


@pytest.mark.anyio
async def test_exit_2_is_a_block_and_the_decision_is_unchanged(user_dir: Path) -> None:
    write_hook(user_dir, "no-rm", script="cat >/dev/null\necho 'rm is not allowed' >&2\nexit 2\n")
    outcome = await fire(Registry(user_dir), **shell(session_id="s1"))
    assert (outcome.decision, outcome.reason, outcome.blocked_by) == (
        "deny", "rm is not allowed", "no-rm")
    (signal,) = outcome.signals
    assert (signal.intensity, signal.source, signal.context.hook) == (
        "block", "no-rm", "before_tool")
    assert signal.payload["reason"] == "rm is not allowed"
    assert signal.header.type == "hook_deny"


@pytest.mark.anyio
async def test_rewrite_is_control_and_context_is_prompt(user_dir: Path) -> None:
    write_hook(user_dir, "a-rewrite", extra="priority: 2\n", script=printing(
        {"modified_input": {"command": "ls -la"}}))
    write_hook(user_dir, "b-context", extra="priority: 1\n", script=printing(
        {"additional_context": "the folder is large"}))
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.modified_input == {"command": "ls -la"}
    assert outcome.additional_context == ["the folder is large"]
    control, prompt = outcome.signals
    assert control.intensity == "control" and control.source == "a-rewrite"
    change = control.payload["modifications"][0]
    assert (change["field"], change["from"], change["to"]) == (
        "tool_input", {"command": "ls"}, {"command": "ls -la"})
    assert prompt.intensity == "prompt" and prompt.payload["message"] == "the folder is large"
    assert control.header.correlation_id == prompt.header.correlation_id is not None


@pytest.mark.anyio
async def test_a_non_blocking_warning_is_a_prompt(user_dir: Path) -> None:
    write_hook(user_dir, "sizer", extra="metadata:\n  on_error: block\n", script=printing(
        {"decision": "warn", "reason": "25 files changed; split the change?"}))
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.decision == "allow" and outcome.warnings == []
    assert outcome.additional_context == ["25 files changed; split the change?"]
    (signal,) = outcome.signals
    assert signal.intensity == "prompt" and signal.payload["severity"] == "medium"
    assert signal.header.type == "hook_warning"


@pytest.mark.anyio
async def test_a_printed_block_signal_denies(user_dir: Path) -> None:
    write_hook(user_dir, "checklist", trigger="pre-issue-submit", script=printing(
        {"intensity": "block", "reason": "checklist incomplete [chk-003]",
         "resolution_path": ["complete the API docs"], "type": "checklist_incomplete"}))
    outcome = await fire(Registry(user_dir), event_type="pre-issue-submit",
                         payload={"issue": ISSUE})
    assert outcome.denied and outcome.reason == "checklist incomplete [chk-003]"
    (signal,) = outcome.signals
    assert signal.header.type == "checklist_incomplete"
    assert signal.payload["resolution_path"] == ["complete the API docs"]
    assert signal.context.hook == "before_issue_submit"
    assert signal.context.issue_id == "FEAT-0123"
    assert signal.context.files == ("api/users.py", "docs/api.md")


@pytest.mark.anyio
async def test_a_printed_prompt_reaches_the_agent_as_context(user_dir: Path) -> None:
    write_hook(user_dir, "sizer", script=printing(
        {"intensity": "prompt", "message": "big change", "suggestions": ["split it"]}))
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.decision == "allow"
    assert outcome.additional_context == ["big change (split it)"]
    (signal,) = outcome.signals
    assert signal.intensity == "prompt" and signal.payload["suggestions"] == ["split it"]


@pytest.mark.anyio
async def test_a_malformed_printed_signal_fails_like_a_hook(user_dir: Path) -> None:
    write_hook(user_dir, "bad", script=printing({"intensity": "prompt", "suggestions": "x"}))
    write_hook(user_dir, "bad-closed", extra="metadata:\n  on_error: block\n",
               script=printing({"intensity": "shout"}))
    outcome = await fire(Registry(user_dir), **shell())
    assert any("bad: its signal cannot be read" in w and "fail open" in w
               for w in outcome.warnings)
    assert outcome.denied and "bad-closed failed and fails closed" in (outcome.reason or "")
    assert [s.intensity for s in outcome.signals] == ["block"]


@pytest.mark.anyio
async def test_signals_are_listed_strongest_first(user_dir: Path) -> None:
    write_hook(user_dir, "a-aid", extra="priority: 2\n", script=printing(
        {"intensity": "aid", "context_info": "see the style guide"}))
    write_hook(user_dir, "b-deny", extra="priority: 1\n", script="cat >/dev/null\nexit 2\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert [s.intensity for s in outcome.signals] == ["block", "aid"]


@pytest.mark.anyio
async def test_every_signal_is_logged_beside_the_event_log(user_dir: Path,
                                                           tmp_path: Path) -> None:
    write_hook(user_dir, "refuser", script="cat >/dev/null\necho nope >&2\nexit 2\n")
    log = EventLog(tmp_path / "state" / "events.jsonl")
    outcome = await fire(Registry(user_dir), log, **shell(session_id="s1"))
    (line,) = SignalLog.beside(log).read()
    assert {k: line[k] for k in ("hook", "intensity", "source", "consumed", "action")} == {
        "hook": "before_tool", "intensity": "block", "source": "refuser", "consumed": False,
        "action": None}
    assert line["signal_id"] == outcome.signals[0].id and line["session_id"] == "s1"
    assert Signal.from_dict(line["signal"]) == outcome.signals[0]


@pytest.mark.anyio
async def test_the_loop_guard_turns_its_blocks_into_prompts(user_dir: Path) -> None:
    write_hook(user_dir, "gate", trigger="before_stop",
               script="cat >/dev/null\necho 'tests fail' >&2\nexit 2\n")
    async with Engine(Registry(user_dir), settings=Settings(stop_block_cap=1)) as engine:
        first = await engine.fire(Event.create(event_type="before_stop", session_id="s"))
        second = await engine.fire(Event.create(event_type="before_stop", session_id="s"))
    assert first.denied and [s.intensity for s in first.signals] == ["block"]
    assert not second.denied
    (signal,) = second.signals
    assert signal.intensity == "prompt" and "loop guard" in signal.payload["message"]


@pytest.mark.anyio
async def test_a_printed_adjustment_without_a_rewrite_reaches_the_agent(user_dir: Path) -> None:
    write_hook(user_dir, "splitter", script=printing(
        {"intensity": "control", "reversible": True,
         "modifications": [{"action": "split_batch", "description": "split into 2 batches"}]}))
    outcome = await fire(Registry(user_dir), **shell())
    assert not outcome.denied and outcome.modified_input is None
    assert [s.intensity for s in outcome.signals] == ["control"]
    assert outcome.additional_context == ["split into 2 batches"]
