"""Where a long-lived engine makes the store calls around an event: in place for a local
store (a file store answers in µs, less than a worker thread's hop; bench/RESULTS.md
``## fast lane: engine``). A shared store's calls stay off the event loop:
tests/server/test_server_store_paths.py."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Engine, Event, EventLog, Registry
from mcp_hooks.state.files import FileStore
from tests.conftest import write_hook


class ThreadNoting(FileStore):
    """A real file store that notes the thread of each append (the event's log record)."""

    def __init__(self, log: EventLog) -> None:
        super().__init__(log=log)
        self.threads: list[int] = []

    def append(self, log: Any, record: dict[str, Any]) -> None:
        self.threads.append(threading.get_ident())
        super().append(log, record)


@pytest.mark.anyio
async def test_a_file_stores_calls_run_on_the_loops_thread(user_dir: Path, project: Path,
                                                          tmp_path: Path) -> None:
    write_hook(user_dir, "allow-all")
    log = EventLog(tmp_path / "events.jsonl")
    store = ThreadNoting(log)
    async with Engine(Registry(user_dir, project), log=log, store=store) as engine:
        for _ in range(3):
            outcome = await engine.fire(Event.create(
                event_type="before_tool", tool_name="Shell", tool_input={"command": "ls"},
                work_dir=str(project), session_id="s"))
            assert outcome.decision == "allow"
    assert store.threads == [threading.get_ident()] * 3  # no worker-thread hop per event
    assert [r["decision"] for r in log.read()] == ["allow"] * 3
