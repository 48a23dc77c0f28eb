"""The records built on every event at once (issue 34 item 5): ``Event.of`` (``Hooks.fire``'s
keywords), ``Outcome.whole`` and ``HookRun.whole`` are the dataclasses their constructors
make, checked and frozen the same."""

from __future__ import annotations

import dataclasses

import pytest

from mcp_hooks.errors import InvalidEventError
from mcp_hooks.spec.outcome import Event, HookRun, Outcome


def test_event_of_is_the_event_its_keywords_make() -> None:
    made = Event.of("before_tool", {"tool_name": "Shell", "tool_input": {"command": "ls"},
                                    "session_id": "s", "messages": [1], "phase": "x"})
    assert made == Event(event_type="before_tool", tool_name="Shell",
                         tool_input={"command": "ls"}, session_id="s",
                         payload={"messages": [1], "phase": "x"})
    assert Event.of("session_end", {}) == Event(event_type="session_end")
    assert Event.of("session_end", {}).payload == {} and Event.of("x", {}).context == {}
    given = {"payload": {"a": 1}, "b": 2}  # a keyword beside the payload joins it
    assert Event.of("session_end", given).payload == {"a": 1, "b": 2}
    assert given == {"payload": {"a": 1}, "b": 2}  # the caller's dicts are not changed
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.tool_name = "Edit"  # type: ignore[misc]
    assert dataclasses.replace(made, tool_name="Edit").tool_name == "Edit"


@pytest.mark.parametrize(("event_type", "fields", "named"), [
    ("before_tool", {"tool_input": "ls"}, "tool_input"),
    ("before_tool", {"tool_name": 3}, "tool_name"),
    ("before_tool", {"payload": [1]}, "payload"),
    (None, {}, "event_type"),
    ("pre-issue-submit", {"issue": "not an object"}, r"payload\.issue"),
])
def test_event_of_names_a_field_of_the_wrong_shape_as_event_does(
        event_type: str, fields: dict[str, object], named: str) -> None:
    with pytest.raises(InvalidEventError, match=named) as of:
        Event.of(event_type, fields)
    extra = {k: v for k, v in fields.items() if k not in ("tool_input", "tool_name", "payload")}
    known = {k: v for k, v in fields.items() if k not in extra}
    with pytest.raises(InvalidEventError) as made:
        Event(event_type=event_type, **known,  # type: ignore[arg-type]
              **({"payload": extra} if extra else {}))
    assert str(of.value) == str(made.value)


def test_whole_records_are_their_constructors_records() -> None:
    run = HookRun.whole(name="h", scope="user", priority=100, mode="sync", status="allow",
                        exit_code=0, duration_ms=0.5, message=None, would=None)
    assert run == HookRun(name="h", scope="user", priority=100, mode="sync", status="allow",
                          exit_code=0, duration_ms=0.5)
    fields = {f.name: None for f in dataclasses.fields(Outcome)}
    outcome = Outcome.whole(**{**fields, "event_type": "before_tool", "decision": "allow",
                               "additional_context": [], "continue_working": False,
                               "hooks": [run], "warnings": [], "signals": []})
    assert outcome == Outcome(event_type="before_tool", hooks=[run])
    assert outcome.as_dict() == Outcome(event_type="before_tool", hooks=[run]).as_dict()
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.decision = "deny"  # type: ignore[misc]
    assert dataclasses.replace(outcome, decision="deny").denied
    with pytest.raises(TypeError, match="every field"):
        Outcome.whole(event_type="before_tool")
    with pytest.raises(TypeError, match="every field"):
        HookRun.whole(name="h")
