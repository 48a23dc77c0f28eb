"""``engine/sessionlog.py``: the ending session's records, as ``session_end`` hooks get them."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_hooks.engine.sessionlog import MAX_RECORDS, TEXT_CAP, session_log
from mcp_hooks.spec.outcome import Event
from mcp_hooks.state.files import FileStore

END = Event.create(event_type="session_end", session_id="s")


def test_the_newest_records_of_the_session_cut_to_what_a_summary_needs(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state")
    for n in range(MAX_RECORDS + 5):
        store.append("events", {"ts": f"t{n:05d}", "kind": "event", "event": "before_tool",
                                "session_id": "s", "tool_name": "Shell",
                                "tool_input": {"command": "secret"}, "decision": "deny",
                                "reason": "x" * (TEXT_CAP * 3), "replica": "host:1",
                                "hooks": [{"name": "h", "status": "deny", "exit_code": 2,
                                           "stdout": "big output", "message": "no"}]})
    store.append("events", {"ts": "other", "event": "before_tool", "session_id": "other"})
    given = session_log(store, END)
    records = given["records"]
    assert len(records) == MAX_RECORDS and given["omitted"] == 5
    assert records[0]["ts"] == "t00005" and records[-1]["ts"] == f"t{MAX_RECORDS + 4:05d}"
    assert records[0]["hooks"] == [{"name": "h", "status": "deny", "exit_code": 2,
                                    "message": "no"}]
    assert len(records[0]["reason"]) == TEXT_CAP
    assert "secret" not in json.dumps(given) and "big output" not in json.dumps(given)


def test_a_log_that_cannot_be_read_gives_none_and_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    given = session_log(FileStore(tmp_path / "state", log=folder), END)
    assert given == {"records": [], "omitted": 0, "error": "the event log could not be read"}
    assert str(tmp_path) not in json.dumps(given)


def test_no_log_no_records(tmp_path: Path) -> None:
    assert session_log(FileStore(tmp_path / "state", log=None), END) == {
        "records": [], "omitted": 0}


def test_an_event_without_a_session_gets_none(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state")
    store.append("events", {"event": "before_tool", "session_id": None})
    assert session_log(store, Event.create(event_type="session_end")) == {
        "records": [], "omitted": 0}
