"""The shared stores' reader operations: ``follow``, ``signal_ids``, ``trust_*`` (Redis and
PostgreSQL, the real servers of ``tests/helpers/servers.py``), and ``TrustStore(shared=...)``
over them from many threads."""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.registry.trust import SharedDigests, TrustStore
from mcp_hooks.state.url import close_store, open_store

DIGEST = "ab" * 32
OTHER = "cd" * 32


@pytest.fixture(params=["redis", "postgres"])
def store(request: pytest.FixtureRequest) -> Any:
    opened = open_store(str(request.getfixturevalue(f"{request.param}_url")))
    yield opened
    close_store(opened)


def test_signal_ids_are_the_sent_ids_with_that_start(store: Any) -> None:
    for signal_id in ("b-2", "a-1", "a-2", "a%x", "a_y"):
        store.append("signals", {"kind": "signal", "signal_id": signal_id, "session_id": "s"})
    store.append("signals", {"kind": "response", "signal_id": "a-9", "session_id": "s"})
    assert store.signal_ids("a-", 10) == ["a-1", "a-2"]
    assert store.signal_ids("a", 10) == ["a%x", "a-1", "a-2", "a_y"]
    assert len(store.signal_ids("a", 2)) == 2
    assert store.signal_ids("a%", 10) == ["a%x"] and store.signal_ids("a_", 10) == ["a_y"]
    assert store.signal_ids("*", 10) == [] and store.signal_ids("%", 10) == []


def test_follow_yields_only_what_is_appended_after_it_starts(store: Any) -> None:
    store.append("events", {"event": "old", "session_id": "s"})
    follow = store.follow("events", "s", 0.05)
    got: queue.Queue[str] = queue.Queue()

    def pump() -> None:  # until the last record: the thread ends before the store closes
        for record in follow:
            got.put(record["event"])
            if record["event"] == "last-b":
                return

    threading.Thread(target=pump, daemon=True).start()
    first = None
    for n in range(200):  # until the follower has its starting point and yields one
        store.append("events", {"event": "elsewhere", "session_id": "t"})
        store.append("events", {"event": f"new-{n}", "session_id": "s"})
        try:
            first = got.get(timeout=0.5)
            break
        except queue.Empty:
            continue
    assert first is not None and first.startswith("new-")
    k = int(first.split("-")[1])
    store.append("events", {"event": "last-a", "session_id": "s"})
    store.append("events", {"event": "last-b", "session_id": "s"})
    rest = [got.get(timeout=60)]
    while rest[-1] != "last-b":
        rest.append(got.get(timeout=60))
    # each once, in order, this session's only: new-(k+1)... (appended while waiting), then
    assert rest == [f"new-{i}" for i in range(k + 1, k + len(rest) - 1)] + ["last-a", "last-b"]


def test_trust_entries_round_trip(store: Any) -> None:
    assert isinstance(store, SharedDigests)
    assert store.trust_entries() == {}
    store.trust_put("/p", {"a": {"sha256": DIGEST, "trusted_at": "t"},
                           "b": {"sha256": OTHER, "trusted_at": "t"}})
    store.trust_put("/q:x", {"a": {"sha256": DIGEST, "trusted_at": "t"}})
    assert store.trust_entries()["/p"]["b"]["sha256"] == OTHER
    store.trust_drop("/p", ["a", "never-trusted"])
    assert store.trust_entries() == {"/p": {"b": {"sha256": OTHER, "trusted_at": "t"}},
                                     "/q:x": {"a": {"sha256": DIGEST, "trusted_at": "t"}}}


def test_sixteen_threads_trust_and_read_at_once(store: Any, tmp_path: Path) -> None:
    """16 threads trust a hook each in one project while others read status: nothing is
    lost, nothing raises, every status read is one the store could have had."""
    trust = TrustStore(shared=store, where="the store")
    project = tmp_path / "project"
    project.mkdir()
    errors: list[BaseException] = []
    seen: set[str] = set()
    start = threading.Barrier(32)

    def writer(n: int) -> None:
        try:
            start.wait()
            trust.trust(project, {f"hook-{n}": DIGEST})
        except BaseException as exc:  # the test reports whatever it was
            errors.append(exc)

    def reader(n: int) -> None:
        try:
            start.wait()
            for _ in range(20):
                seen.add(trust.status(project, f"hook-{n}", DIGEST))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(16)]
    threads += [threading.Thread(target=reader, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert seen <= {"trusted", "untrusted"}
    fresh = TrustStore(shared=store, where="the store")
    assert {fresh.status(project, f"hook-{n}", DIGEST) for n in range(16)} == {"trusted"}
    assert fresh.status(project, "hook-0", OTHER) == "changed"
    assert fresh.revoke(project) == sorted(f"hook-{n}" for n in range(16))
    assert TrustStore(shared=store).status(project, "hook-0", DIGEST) == "untrusted"
