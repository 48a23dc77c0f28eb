"""The asks' part of the state store contract (``store.py``, ``asks.py``) on every backend:
put, answer once (16 threads, two processes), unknown / expired / answered ids refused, the
approval bound to its call and taken once, for-session kept, the pending list."""

from __future__ import annotations

import json
import threading
import time

import pytest

from mcp_hooks.errors import ConfigError
from mcp_hooks.spec.asking import AskAnswer, AskRequest, binding_of
from mcp_hooks.state.store import AskAnswered, AskExpired, UnknownAsk
from tests.helpers.store_children import children
from tests.state.conftest import Backend


def _ask(session: str = "s1", command: str = "rm -rf build", ttl: float = 600.0,
         created: float | None = None) -> AskRequest:
    return AskRequest.new(session_id=session, event_type="before_tool", tool_name="bash",
                          tool_input={"command": command}, hook="careful",
                          reason="a person must approve deletes",
                          created=time.time() if created is None else created, ttl=ttl)


def test_binding_names_the_exact_call() -> None:
    one = binding_of("s", "before_tool", "bash", {"a": 1, "b": [1, 2]})
    assert one == binding_of("s", "before_tool", "bash", {"b": [1, 2], "a": 1})  # key order
    assert one != binding_of("s", "before_tool", "bash", {"a": 1, "b": [2, 1]})
    assert one != binding_of("t", "before_tool", "bash", {"a": 1, "b": [1, 2]})
    assert one != binding_of("s", "before_tool", "sh", {"a": 1, "b": [1, 2]})
    ask = _ask()
    assert ask.id.startswith("ask-") and len(ask.id) == 14
    assert _ask().id != ask.id  # random: an agent cannot derive the id from its call


def test_put_get_pending_answer(backend: Backend) -> None:
    store = backend.store
    ask = _ask()
    store.put_ask(ask)
    assert [a.id for a in backend.another().pending_asks()] == [ask.id]
    record = store.get_ask(ask.id)
    assert record is not None and record.request == ask and record.answer is None
    assert store.pending_for(ask.binding, "s1") == ask
    assert store.approval_for(ask.binding, "s1") is None  # nothing answered yet
    answered = backend.another().answer_ask(ask.id, AskAnswer(True, by="ann", channel="cli"))
    assert answered == ask
    record = store.get_ask(ask.id)
    assert record is not None and record.answer is not None
    assert record.answer.approved and record.answer.by == "ann" and record.answer.at > 0
    assert store.pending_asks() == [] and store.pending_for(ask.binding, "s1") is None


def test_unknown_expired_answered_are_clear_errors(backend: Backend) -> None:
    store = backend.store
    with pytest.raises(UnknownAsk, match="mcp-hooks pending"):
        store.answer_ask("ask-0000000000", AskAnswer(True))
    old = _ask(created=time.time() - 100, ttl=50)
    store.put_ask(old)
    with pytest.raises(AskExpired, match="expired"):
        store.answer_ask(old.id, AskAnswer(True))
    assert store.pending_asks() == []
    ask = _ask()
    store.put_ask(ask)
    store.answer_ask(ask.id, AskAnswer(False, reason="no", by="bob"))
    with pytest.raises(AskAnswered, match="refused by bob"):
        store.answer_ask(ask.id, AskAnswer(True, by="eve"))
    record = store.get_ask(ask.id)
    assert record is not None and record.answer is not None
    assert not record.answer.approved  # never a second decision
    for cls in (UnknownAsk, AskExpired, AskAnswered):
        assert issubclass(cls, ConfigError)


def test_an_approval_covers_its_call_once(backend: Backend) -> None:
    store = backend.store
    ask = _ask()
    store.put_ask(ask)
    store.answer_ask(ask.id, AskAnswer(True, by="ann"))
    other = binding_of("s1", "before_tool", "bash", {"command": "rm -rf /"})
    assert store.approval_for(other, "s1") is None  # another input: not covered
    assert store.approval_for(ask.binding, "s2") is None  # another session: not covered
    taken = backend.another().approval_for(ask.binding, "s1")
    assert taken is not None and taken.approved and taken.by == "ann"
    assert store.approval_for(ask.binding, "s1") is None  # one run only


def test_a_for_session_approval_is_kept(backend: Backend) -> None:
    store = backend.store
    ask = _ask()
    store.put_ask(ask)
    store.answer_ask(ask.id, AskAnswer(True, for_session=True))
    for _ in range(3):
        kept = store.approval_for(ask.binding, "s1")
        assert kept is not None and kept.for_session
    assert store.approval_for(ask.binding, "s2") is None


def test_16_threads_answering_at_once_exactly_one_wins(backend: Backend) -> None:
    ask = _ask()
    backend.store.put_ask(ask)
    won: list[int] = []
    refused: list[int] = []

    def work(i: int) -> None:
        try:
            backend.another().answer_ask(ask.id, AskAnswer(i % 2 == 0, by=f"p{i}"))
            won.append(i)
        except AskAnswered:
            refused.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(won) == 1 and len(refused) == 15
    record = backend.store.get_ask(ask.id)
    assert record is not None and record.answer is not None
    assert record.answer.by == f"p{won[0]}"


def test_16_threads_taking_one_approval_exactly_one_gets_it(backend: Backend) -> None:
    ask = _ask()
    backend.store.put_ask(ask)
    backend.store.answer_ask(ask.id, AskAnswer(True))
    got: list[int] = []

    def work(i: int) -> None:
        if backend.another().approval_for(ask.binding, "s1") is not None:
            got.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(got) == 1


def test_two_processes_answering_at_once_exactly_one_wins(backend: Backend) -> None:
    ask = _ask()
    backend.store.put_ask(ask)
    script = f"""
from mcp_hooks.spec.asking import AskAnswer
from mcp_hooks.state.store import AskAnswered
try:
    store.answer_ask({ask.id!r}, AskAnswer(True, by=sys.argv[1]))
    print(json.dumps("won"))
except AskAnswered:
    print(json.dumps("refused"))
"""
    results = sorted(json.loads(out) for out in children(backend, script))
    assert results == ["refused", "won"]
