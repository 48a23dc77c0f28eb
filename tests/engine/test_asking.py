"""A hook's ``ask`` in the engine's chain (``engine/asking.py``), with real hook processes
and a real file store: the door's approver, the out-of-band answer, the fallback, the
approval bound to the exact call, and the event-log records."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Ask, AskAnswer, AskRequest, Engine, Event, Registry
from mcp_hooks.engine.callables import CallableView, HookTable, make_hook
from mcp_hooks.settings import Settings
from mcp_hooks.spec.outcome import Outcome
from mcp_hooks.state.asks import answer
from mcp_hooks.state.files import FileStore
from tests.conftest import write_hook
from tests.helpers.issue_asks import issue_that_asks

ASKS = """cat >/dev/null
echo '{"decision": "ask", "reason": "deletes need a person"}'
"""


def _shell(command: str = "rm -rf build", session: str = "s1") -> Event:
    return Event.create(event_type="before_tool", tool_name="Shell", session_id=session,
                        tool_input={"command": command})


async def _fire(user_dir: Path, store: FileStore, event: Event, *, approve: Any = None,
                **settings: Any) -> Outcome:
    async with Engine(Registry(user_dir), Settings(**settings), store=store) as engine:
        return await engine.fire(event, approve=approve)


def _records(store: FileStore, kind: str) -> list[dict[str, Any]]:
    return [r for r in store.read("events") if r.get("kind") == kind]


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "state")


def _answering(answer: AskAnswer | None, seen: list[AskRequest]) -> Any:
    async def approve(request: AskRequest) -> AskAnswer | None:
        seen.append(request)
        return answer
    return approve


@pytest.mark.anyio
async def test_approved_goes_on_and_a_later_hook_can_still_deny(
        user_dir: Path, store: FileStore) -> None:
    write_hook(user_dir, "asker", script=ASKS)
    seen: list[AskRequest] = []
    outcome = await _fire(user_dir, store, _shell(),
                          approve=_answering(AskAnswer(True, by="ann", channel="test"), seen))
    assert outcome.decision == "allow" and outcome.ask is None
    assert seen[0].reason == "deletes need a person" and seen[0].tool_input == {
        "command": "rm -rf build"} and seen[0].hook == "asker"
    assert any("approved by ann" in w for w in outcome.warnings)
    write_hook(user_dir, "zz-later", script="cat >/dev/null\necho no >&2\nexit 2\n",
               extra="priority: 1\n")
    outcome = await _fire(user_dir, store, _shell(),
                          approve=_answering(AskAnswer(True), []))
    assert outcome.denied and outcome.blocked_by == "zz-later"
    answers = _records(store, "ask_answer")
    assert answers[0]["approved"] is True and answers[0]["by"] == "ann"
    assert answers[0]["channel"] == "test"
    assert _records(store, "ask")[0]["tool_input"] == {"command": "rm -rf build"}


@pytest.mark.anyio
async def test_refused_denies_with_the_persons_reason(user_dir: Path, store: FileStore) -> None:
    write_hook(user_dir, "asker", script=ASKS)
    outcome = await _fire(user_dir, store, _shell(), approve=_answering(
        AskAnswer(False, reason="not on Fridays", by="bob", channel="test"), []))
    assert outcome.denied and outcome.blocked_by == "asker"
    assert "refused" in (outcome.reason or "") and "not on Fridays" in (outcome.reason or "")
    assert "bob" in (outcome.reason or "")


@pytest.mark.anyio
async def test_no_answer_denies_names_the_id_and_a_retry_after_approval_passes(
        user_dir: Path, store: FileStore) -> None:
    write_hook(user_dir, "asker", script=ASKS, extra="metadata:\n  ask_timeout: 0.2\n")
    outcome = await _fire(user_dir, store, _shell())
    assert outcome.denied and outcome.ask is not None
    ask_id = outcome.ask.id
    assert f"mcp-hooks approve {ask_id}" in (outcome.reason or "")
    assert "deletes need a person" in (outcome.reason or "")
    assert [a.id for a in store.pending_asks()] == [ask_id]
    assert _records(store, "ask_timeout")[0]["ask_id"] == ask_id
    # a retry before the answer waits on the same ask, not a new one
    again = await _fire(user_dir, store, _shell())
    assert again.ask is not None and again.ask.id == ask_id
    # another input is another call: its own ask
    other = await _fire(user_dir, store, _shell("rm -rf /"))
    assert other.ask is not None and other.ask.id != ask_id
    store.answer_ask(ask_id, AskAnswer(True, by="ann", channel="cli"))
    passed = await _fire(user_dir, store, _shell())
    assert passed.decision == "allow" and passed.ask is None
    # one approval, one run: the next identical call asks again
    third = await _fire(user_dir, store, _shell())
    assert third.denied and third.ask is not None and third.ask.id != ask_id


@pytest.mark.anyio
async def test_for_session_approval_covers_the_same_call_in_that_session_only(
        user_dir: Path, store: FileStore) -> None:
    write_hook(user_dir, "asker", script=ASKS)
    first = await _fire(user_dir, store, _shell(), approve=_answering(
        AskAnswer(True, for_session=True, channel="test"), []))
    assert first.decision == "allow"
    for _ in range(2):
        assert (await _fire(user_dir, store, _shell(), ask_timeout=0)).decision == "allow"
    assert (await _fire(user_dir, store, _shell(session="s2"), ask_timeout=0)).denied


@pytest.mark.anyio
async def test_on_ask_unavailable_allow_lets_it_through_warned(
        user_dir: Path, store: FileStore) -> None:
    write_hook(user_dir, "asker", script=ASKS,
               extra="metadata:\n  ask_timeout: 0\n  on_ask_unavailable: allow\n")
    outcome = await _fire(user_dir, store, _shell())
    assert outcome.decision == "allow" and outcome.ask is not None
    assert any("on_ask_unavailable: allow" in w for w in outcome.warnings)
    global_allow = await _fire(user_dir, store, _shell("ls"), ask_timeout=0,
                               on_ask_unavailable="allow")
    assert global_allow.decision == "allow"


@pytest.mark.anyio
async def test_an_out_of_band_answer_reaches_the_waiting_chain(
        user_dir: Path, store: FileStore, tmp_path: Path) -> None:
    write_hook(user_dir, "asker", script=ASKS)
    other = FileStore(tmp_path / "state")  # another process's view of the same files

    def answer_when_asked() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            waiting = other.pending_asks()
            if waiting:
                answer(other, waiting[0].id, AskAnswer(True, by="phone", channel="http"))
                return
            time.sleep(0.01)

    helper = threading.Thread(target=answer_when_asked)
    helper.start()
    outcome = await _fire(user_dir, store, _shell(), ask_timeout=60)
    helper.join(60)
    assert outcome.decision == "allow"
    assert _records(store, "ask_answer")[-1]["by"] == "phone"


@pytest.mark.anyio
async def test_an_event_that_cannot_block_allows_an_ask_warned(
        user_dir: Path, store: FileStore) -> None:
    write_hook(user_dir, "asker", trigger="session_end", script=ASKS)
    outcome = await _fire(user_dir, store, Event.create(event_type="session_end",
                                                        session_id="s1"))
    assert outcome.decision == "allow" and outcome.ask is None
    assert any("cannot block" in w for w in outcome.warnings)
    assert store.pending_asks() == []


@pytest.mark.anyio
async def test_the_ask_binds_the_input_after_earlier_rewrites(
        user_dir: Path, store: FileStore) -> None:
    write_hook(user_dir, "a-rewrite", extra="priority: 900\n", script="""cat >/dev/null
echo '{"modified_input": {"command": "rm -rf build --safe"}}'
""")
    write_hook(user_dir, "asker", script=ASKS)
    seen: list[AskRequest] = []
    await _fire(user_dir, store, _shell(), approve=_answering(None, seen), ask_timeout=0)
    assert seen[0].tool_input == {"command": "rm -rf build --safe"}


@pytest.mark.anyio
async def test_a_callable_asks_with_Ask(user_dir: Path, store: FileStore) -> None:
    table = HookTable()
    table.add(make_hook(lambda value: Ask("a person checks payments"), "before_tool"))
    registry = Registry(user_dir)
    registry.callables = CallableView(lambda: [table])
    seen: list[AskRequest] = []
    async with Engine(registry, Settings(), store=store) as engine:
        outcome = await engine.fire(_shell(), approve=_answering(
            AskAnswer(False, reason="no"), seen))
    assert outcome.denied and seen[0].reason == "a person checks payments"


def test_a_one_shot_engine_waits_without_an_event_loop(user_dir: Path, store: FileStore,
                                                       tmp_path: Path) -> None:
    write_hook(user_dir, "asker", script=ASKS, extra="metadata:\n  ask_timeout: 0.1\n")
    engine = Engine(Registry(user_dir), Settings(), store=store, one_shot=True)
    outcome = engine.fire_blocking(_shell())
    assert outcome.denied and outcome.ask is not None
    json.dumps(outcome.as_dict())
    assert Outcome.from_dict(json.loads(outcome.to_json())).ask == outcome.ask


@pytest.mark.anyio
async def test_a_hooks_yaml_entry_with_ask_true_asks_on_its_prompt(
        tmp_path: Path, store: FileStore) -> None:
    made = issue_that_asks(tmp_path)
    seen: list[AskRequest] = []
    async with Engine(made.registry, Settings(), store=store, control=made.control) as engine:
        refused = await engine.fire(made.event, approve=_answering(
            AskAnswer(False, reason="split"), seen))
        approved = await engine.fire(made.event, approve=_answering(AskAnswer(True), seen))
    assert refused.denied and "split" in (refused.reason or "")
    assert "25" in seen[0].reason and seen[0].hook == "file-change-limiter"
    assert approved.decision == "allow"


HOOKKIT_ASKS = """#!/usr/bin/env python3
from mcp_hooks.hookkit import ask, hook

@hook
def main(event):
    return ask("hookkit asks: " + event["tool_input"]["command"])
"""


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.anyio
async def test_hookkit_ask_one_shot_and_persistent(user_dir: Path, store: FileStore,
                                                   persistent: bool) -> None:
    write_hook(user_dir, "kit", script=HOOKKIT_ASKS, entry="scripts/run.py",
               extra="metadata:\n  persistent: true\n" if persistent else "")
    seen: list[AskRequest] = []
    outcome = await _fire(user_dir, store, _shell(),
                          approve=_answering(AskAnswer(False, reason="no"), seen))
    assert outcome.denied and seen[0].reason == "hookkit asks: rm -rf build"


@pytest.mark.anyio
async def test_an_approval_for_other_arguments_is_refused_and_logged(
        user_dir: Path, store: FileStore) -> None:
    write_hook(user_dir, "asker", script=ASKS, extra="metadata:\n  ask_timeout: 0\n")
    first = await _fire(user_dir, store, _shell("rm -rf build"))
    assert first.ask is not None
    answer(store, first.ask.id, AskAnswer(True, by="ann", channel="cli"))
    other = await _fire(user_dir, store, _shell("rm -rf /"))
    assert other.denied and other.ask is not None and other.ask.id != first.ask.id
    assert any("approved for other arguments" in w for w in other.warnings)
    mismatch = _records(store, "ask_mismatch")
    assert mismatch[0]["approved_ask"] == first.ask.id
    assert mismatch[0]["tool_input"] == {"command": "rm -rf /"}
    assert (await _fire(user_dir, store, _shell("rm -rf build"))).decision == "allow"
