"""The users of the state store: each keeps its state where the engine's one store says,
so two engines over one store (two processes, two server replicas on one machine) behave
as one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_hooks import Engine, Event, Registry
from mcp_hooks.control.ladder import Ladder
from mcp_hooks.errors import ConfigError
from mcp_hooks.settings import Settings
from mcp_hooks.spec.signals import Signal
from mcp_hooks.state.files import FileStore
from mcp_hooks.state.inbox import AidInbox
from mcp_hooks.state.memory import MemoryStore
from mcp_hooks.state.signallog import respond, signal_record
from mcp_hooks.state.store import StateStore
from tests.conftest import write_hook


def test_two_engines_over_one_store_count_one_session_s_stops_together(
        user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "gate", trigger="before_stop", script="echo 'not yet' >&2\nexit 2\n")
    store = FileStore(tmp_path / "state")
    engines = [Engine(Registry(user_dir, watch=False), Settings(stop_block_cap=2), one_shot=True,
                      store=FileStore(tmp_path / "state")) for _ in range(2)]
    stops = [engines[n % 2].fire_blocking(Event.create(event_type="before_stop",
                                                       session_id="s"))
             for n in range(4)]
    assert [o.continue_working for o in stops] == [True, True, False, True]  # cap 2, shared
    assert "loop guard" in stops[2].warnings[-1]
    assert store.count("engine", "s", ttl=3600.0) == 1  # counting again after the allow


@pytest.mark.parametrize("make", [MemoryStore, lambda: FileStore(Path("unused"))])
def test_respond_answers_once_through_any_store(make: object, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store: StateStore = make()  # type: ignore[operator]
    signal = Signal.prompt("pushing to main", source="main-guard")
    store.append("signals", signal_record(signal, "s"))
    answer = respond(store, signal.id, "acknowledge", {"why": "ok"})
    assert (answer["action"], answer["session_id"], answer["details"]) == (
        "acknowledge", "s", {"why": "ok"})
    with pytest.raises(ConfigError, match=f"signal {signal.id} was already answered: "
                                          "acknowledge"):
        respond(store, signal.id, "acknowledge")  # the user is told, as before
    with pytest.raises(ConfigError, match="answers a block signal, not a prompt one"):
        respond(store, _with(store, Signal.prompt("again")), "abort")  # nothing stored
    assert [r["action"] for r in store.read("signals") if r["kind"] == "response"] == [
        "acknowledge"]


def _with(store: StateStore, signal: Signal) -> str:
    store.append("signals", signal_record(signal, "s"))
    return signal.id


def test_ladder_and_inbox_keep_their_state_in_the_store_they_are_given(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state")
    ladder = Ladder(store=store)
    assert [ladder.record("s", "after_tool", "lint", violated=True) for _ in range(2)] == [1, 2]
    saved = json.loads((tmp_path / "state" / "ladder.json").read_text())
    assert saved["sessions"]["s"]["counts"] == {"after_tool/lint": 2}
    AidInbox(store=store).put("s", [Signal.aid("tip: use make -j2")])
    assert [s.text() for s in AidInbox(store=FileStore(tmp_path / "state")).take("s")] == [
        "tip: use make -j2"]
    assert AidInbox(store=store).take("s") == []
