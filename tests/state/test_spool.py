"""The spool of a shared store (``state/spool.py``): log records the store could not take
wait in a local file and reach the store once it is back, each exactly once; a replay killed
half way and done again stores nothing twice. Real Redis and PostgreSQL servers, stopped and
started again mid-test (``tests/helpers/restartable.py``); real child processes, killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.state.spool import ID, Spool
from mcp_hooks.state.store import StateStore
from mcp_hooks.state.url import open_store
from tests.helpers.restartable import restartable

KINDS = ["redis", "postgres"]


def spooled(state: Path) -> list[dict[str, Any]]:
    """Every record waiting in any spool under the state folder."""
    found = []
    for path in sorted((state / "mcp-hooks" / "spool").glob("*/*.jsonl")):
        for line in path.read_text().splitlines():
            found.append(json.loads(line)["record"])
    return found


def events(store: StateStore) -> list[dict[str, Any]]:
    return list(store.read("events"))


@pytest.mark.parametrize("kind", KINDS)
def test_records_the_store_could_not_take_arrive_once_when_it_is_back(
        kind: str, tmp_path: Path) -> None:
    state = Path(os.environ["XDG_STATE_HOME"])
    with restartable(kind) as server:
        store = open_store(server.url, replica="replica-a")
        store.append("events", {"kind": "event", "session_id": "s", "n": 0})
        server.stop()
        for n in range(1, 6):
            store.append("events", {"kind": "event", "session_id": "s", "n": n})
        waiting = spooled(state)
        assert [r["n"] for r in waiting] == [1, 2, 3, 4, 5]
        assert len({r[ID] for r in waiting}) == 5 and all(r["replica"] == "replica-a"
                                                          for r in waiting)
        server.start()
        store.append("events", {"kind": "event", "session_id": "s", "n": 6})
        seen = [r["n"] for r in events(store)]
        if kind == "redis":  # a Redis without persistence came back empty
            assert sorted(seen) == [1, 2, 3, 4, 5, 6]
        else:
            assert sorted(seen) == [0, 1, 2, 3, 4, 5, 6]
        assert spooled(state) == []
        store.append("events", {"kind": "event", "session_id": "s", "n": 7})  # nothing again
        assert sorted(r["n"] for r in events(store)).count(3) == 1


CHILD = """
import os, sys
from mcp_hooks.state.url import open_store
store = open_store(sys.argv[1], replica="successor")
real = store._send
sent = []
def send(log, record):
    real(log, record)
    sent.append(record)
    if len(sent) == int(sys.argv[2]):
        os.kill(os.getpid(), 9)  # killed half way through the replay
store._spool.replay(send)
"""


@pytest.mark.parametrize("kind", KINDS)
def test_a_replay_killed_half_way_and_done_again_stores_each_record_once(
        kind: str, tmp_path: Path) -> None:
    state = Path(os.environ["XDG_STATE_HOME"])
    with restartable(kind) as server:
        store = open_store(server.url, replica="dead-replica")
        server.stop()
        for n in range(10):
            store.append("events", {"kind": "event", "session_id": "s", "n": n})
        assert len(spooled(state)) == 10
        server.start()
        child = subprocess.run([sys.executable, "-c", CHILD, server.url, "4"],
                               capture_output=True, text=True, timeout=120)
        assert child.returncode == -9, child.stderr
        reader = open_store(server.url)
        assert sorted(r["n"] for r in events(reader)) == [0, 1, 2, 3]
        assert len(spooled(state)) == 10  # the file stays whole until all of it was taken
        # a new process on this machine replays it all again, on its first write
        again = open_store(server.url, replica="next")
        again.append("events", {"kind": "event", "session_id": "s", "n": 10})
        assert sorted(r["n"] for r in events(reader)) == list(range(11))
        assert spooled(state) == []


def test_sixteen_threads_spooling_at_once_lose_nothing_and_double_nothing(
        tmp_path: Path) -> None:
    state = Path(os.environ["XDG_STATE_HOME"])
    with restartable("redis") as server:
        store = open_store(server.url, replica="busy")
        server.stop()

        def write(t: int) -> None:
            for n in range(20):
                store.append("events", {"kind": "event", "session_id": f"t{t}", "n": n})

        threads = [threading.Thread(target=write, args=(t,)) for t in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(spooled(state)) == 320
        server.start()
        store.append("events", {"kind": "event", "session_id": "last"})
        got = events(store)
        assert len(got) == 321 and len({r[ID] for r in got}) == 321
        assert spooled(state) == []


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_a_spool_that_is_not_a_regular_file_is_named_and_never_followed(
        kind: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    spool = Spool("redis://127.0.0.1:1/0", "r", root=tmp_path / "state")
    spool.folder.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.write_text("")
    if kind == "symlink":
        spool.path.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(spool.path)
    else:
        spool.path.mkdir()
    spool.put("events", {"kind": "event", ID: "x"})  # returns: no hang on a FIFO
    spool.put("events", {"kind": "event", ID: "y"})
    err = capfd.readouterr().err
    assert err.count("mcp-hooks: a log record the state store could not take is lost") == 1
    assert str(spool.path) in err
    assert target.read_text() == ""  # nothing written through the link


def test_a_spool_on_a_full_disk_says_so(tmp_path: Path,
                                        capfd: pytest.CaptureFixture[str]) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    spool = Spool("redis://127.0.0.1:1/0", "r", root=tmp_path / "state")
    spool.folder.mkdir(parents=True)
    spool.path.symlink_to("/dev/full")  # refused as a symlink before it is written
    spool.put("events", {"kind": "event", ID: "x"})
    assert str(spool.path) in capfd.readouterr().err


def test_sixteen_threads_writing_while_the_store_comes_back_store_each_record_once(
        tmp_path: Path) -> None:
    """The store returns while 16 threads write: some records spooled, some replayed while
    others are spooled still or sent directly; in the end each is in the store once."""
    state = Path(os.environ["XDG_STATE_HOME"])
    with restartable("redis") as server:
        store = open_store(server.url, replica="racing")
        server.stop()
        halfway = threading.Barrier(17)

        def write(t: int) -> None:
            for n in range(40):
                if n == 20:
                    halfway.wait(timeout=120)
                store.append("events", {"kind": "event", "session_id": f"t{t}", "n": n})

        threads = [threading.Thread(target=write, args=(t,)) for t in range(16)]
        for thread in threads:
            thread.start()
        halfway.wait(timeout=120)
        server.start()
        for thread in threads:
            thread.join(timeout=120)
        store.append("events", {"kind": "event", "session_id": "last"})
        got = [(r["session_id"], r.get("n")) for r in events(store)]
        assert len(got) == 641 and len(set(got)) == 641
        assert spooled(state) == []
        assert not list((state / "mcp-hooks" / "spool").glob("*/*.jsonl"))  # removed


def test_a_replay_interrupted_by_a_base_exception_leaves_the_spool_whole(
        tmp_path: Path) -> None:
    state = Path(os.environ["XDG_STATE_HOME"])
    with restartable("redis") as server:
        store = open_store(server.url, replica="interrupted")
        server.stop()
        for n in range(5):
            store.append("events", {"kind": "event", "session_id": "s", "n": n})
        server.start()
        real = store._send  # type: ignore[attr-defined]
        calls = []

        def send(log: Any, record: dict[str, Any]) -> None:
            calls.append(record["n"])
            if len(calls) == 2:
                raise KeyboardInterrupt
            real(log, record)

        with pytest.raises(KeyboardInterrupt):
            store._spool.replay(send)  # type: ignore[attr-defined]
        assert len(spooled(state)) == 5 and store._spool.pending  # type: ignore[attr-defined]
        store.append("events", {"kind": "event", "session_id": "s", "n": 5})
        assert sorted(r["n"] for r in events(store)) == [0, 1, 2, 3, 4, 5]
        assert spooled(state) == []


def test_a_replay_that_waited_for_the_lock_never_removes_a_newer_spool(tmp_path: Path) -> None:
    """Two replicas replay one spool folder: the one that waited for a file's lock while the
    other replayed and removed it must not remove the new file its writer made since."""
    import fcntl
    import time

    url = "redis://127.0.0.1:1/0"
    writer = Spool(url, "a", root=tmp_path)
    other = Spool(url, "b", root=tmp_path)
    writer.put("events", {"kind": "event", ID: "old"})
    old = writer.path
    holder = os.open(old, os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)  # "replica a" is replaying its file
    sent: list[str] = []
    waiting = threading.Thread(target=other.replay,
                               args=(lambda log, record: sent.append(record[ID]),))
    waiting.start()
    for _ in range(10_000):  # until "replica b" has the file open, waiting for its lock
        if sum(os.path.realpath(f"/proc/self/fd/{fd}") == str(old)
               for fd in os.listdir("/proc/self/fd")) >= 2:
            break
        time.sleep(0.01)
    os.unlink(old)  # "replica a" sent it all and removed it
    writer.put("events", {"kind": "event", ID: "new"})  # the store is lost again: a new file
    fcntl.flock(holder, fcntl.LOCK_UN)
    os.close(holder)
    waiting.join(timeout=60)
    assert not waiting.is_alive()
    kept = [json.loads(line)["record"][ID] for line in old.read_text().splitlines()] \
        if old.exists() else []
    assert "new" in kept + sent, "a record spooled after the replay was removed unsent"


def test_a_record_postgres_refuses_as_data_is_set_aside_and_the_rest_replayed(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A NUL in a session id: PostgreSQL's text column refuses the record. Spooled during an
    outage, it once stayed at the head of the spool and every later replay failed on it; now
    it is set aside in ``.refused`` with one report, and everything behind it arrives."""
    state = Path(os.environ["XDG_STATE_HOME"])
    with restartable("postgres") as server:
        store = open_store(server.url, replica="replica-a")
        server.stop()
        for n in range(5):
            session = "s\x00nul" if n == 1 else "s"
            store.append("events", {"kind": "event", "session_id": session, "n": n})
        assert len(spooled(state)) == 5
        server.start()
        store.append("events", {"kind": "event", "session_id": "s", "n": 5})
        assert sorted(r["n"] for r in events(store)) == [0, 2, 3, 4, 5]
        assert spooled(state) == []
        aside = [json.loads(line) for path in (state / "mcp-hooks" / "spool").glob("*/*.refused")
                 for line in path.read_text().splitlines()]
        assert [(a["log"], a["record"]["n"], a["record"]["session_id"]) for a in aside] == [
            ("events", 1, "s\x00nul")]
        assert "NUL" in aside[0]["error"]
        # a refused record while the store is up: set aside at once, the store not lost
        store.append("events", {"kind": "event", "session_id": "t\x00", "n": 6})
        assert store.health.lost is None and spooled(state) == []
        store.append("events", {"kind": "event", "session_id": "s", "n": 7})
        assert sorted(r["n"] for r in events(store)) == [0, 2, 3, 4, 5, 7]
        err = capfd.readouterr().err
        assert err.count("refused a events record as data") == 1 and ".refused" in err
        # a later process finds nothing stuck
        again = open_store(server.url, replica="next")
        assert again._spool.pending is False  # type: ignore[attr-defined]


def test_a_long_utf8_replica_name_still_spools_and_replays(tmp_path: Path) -> None:
    """128 characters of UTF-8 (the longest --replica-id) %-quote to 1,152: over a file
    name's 255, so every record of an outage was lost. The name is shortened with a digest."""
    state = Path(os.environ["XDG_STATE_HOME"])
    replica = "é" * 64 + "漢" * 64
    with restartable("redis") as server:
        store = open_store(server.url, replica=replica)
        server.stop()
        for n in range(3):
            store.append("events", {"kind": "event", "session_id": "s", "n": n})
        assert [r["n"] for r in spooled(state)] == [0, 1, 2]
        names = [p.name for p in (state / "mcp-hooks" / "spool").glob("*/*.jsonl")]
        assert len(names) == 1 and len(names[0]) <= 255
        other = Spool(server.url, replica[:-1] + "x")  # another long name: another file
        assert other.path.name != names[0]
        server.start()
        store.append("events", {"kind": "event", "session_id": "s", "n": 3})
        got = events(store)
        assert sorted(r["n"] for r in got) == [0, 1, 2, 3]
        assert {r["replica"] for r in got} == {replica} and spooled(state) == []
