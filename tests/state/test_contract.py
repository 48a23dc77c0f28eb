"""The state store's contract (``mcp_hooks/state/store.py``), on every backend of
``conftest.BACKENDS``: counters, logs, answer-once and queues, with threads and processes
racing; then what the file backend does with a FIFO, a symlink or a folder where a file
belongs, and with a full disk or no file descriptor left."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.errors import ConfigError
from mcp_hooks.state.files import FileStore
from mcp_hooks.state.store import AlreadyAnswered, StateStore, UnknownSignal
from tests.helpers.bounded import bounded
from tests.helpers.store_children import children
from tests.state.conftest import Backend

ROOT = Path(__file__).resolve().parents[2]
HOUR = 3600.0


def _signal(signal_id: str, session: str = "s") -> dict[str, Any]:
    return {"kind": "signal", "signal_id": signal_id, "session_id": session,
            "intensity": "prompt", "hook": "before_tool"}


def _answer(action: str) -> Any:
    def build(sent: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "response", "signal_id": sent["signal_id"], "action": action,
                "session_id": sent.get("session_id")}
    return build


# -- counters ---------------------------------------------------------------------------

def test_increment_counts_per_namespace_session_and_key(store: StateStore) -> None:
    assert store.count("stop", "s", ttl=HOUR) == 0
    assert [store.increment("stop", "s", ttl=HOUR) for _ in range(3)] == [1, 2, 3]
    assert store.count("stop", "s", ttl=HOUR) == 3
    assert store.increment("stop", "other", ttl=HOUR) == 1
    assert store.increment("codex", "s", ttl=HOUR) == 1
    assert store.increment("ladder", "s", "t/e", ttl=HOUR) == 1
    assert store.increment("ladder", "s", "t/f", ttl=HOUR) == 1
    assert store.increment("ladder", "s", "t/e", ttl=HOUR) == 2
    assert store.count("stop", "s", ttl=HOUR) == 3


def test_reset_forgets_a_key_a_session_or_a_namespace(backend: Backend) -> None:
    store = backend.store
    for ns in ("stop", "ladder"):
        for session in ("a", "b"):
            for key in ("", "t/e"):
                store.increment(ns, session, key, ttl=HOUR)
    store.reset("ladder", "a", "t/e")
    assert store.count("ladder", "a", "t/e", ttl=HOUR) == 0
    assert store.count("ladder", "a", "", ttl=HOUR) == 1
    store.reset("stop", "a")
    assert store.count("stop", "a", "", ttl=HOUR) == 0
    assert store.count("stop", "a", "t/e", ttl=HOUR) == 0
    assert store.count("stop", "b", "", ttl=HOUR) == 1
    backend.another().reset("ladder")  # every session of the namespace, from another object
    assert store.count("ladder", "a", "", ttl=HOUR) == 0
    assert store.count("ladder", "b", "t/e", ttl=HOUR) == 0
    assert store.count("stop", "b", "t/e", ttl=HOUR) == 1
    assert store.increment("ladder", "b", "t/e", ttl=HOUR) == 1  # starts over


def test_a_count_expires_ttl_after_its_last_increment(store: StateStore) -> None:
    store.increment("stop", "s", ttl=0.3)
    store.increment("ladder", "s", "t/e", ttl=0.3)
    assert store.count("stop", "s", ttl=0.3) == 1
    time.sleep(1.2)
    assert store.count("stop", "s", ttl=0.3) == 0
    assert store.count("ladder", "s", "t/e", ttl=0.3) == 0
    assert store.increment("stop", "s", ttl=0.3) == 1  # an expired count starts over
    assert store.increment("ladder", "s", "t/e", ttl=0.3) == 1


def test_16_threads_lose_no_increment(backend: Backend) -> None:
    stores = [backend.store, backend.another()]
    seen: list[int] = []

    def work(i: int) -> None:
        for _ in range(10):
            seen.append(stores[i % 2].increment("ladder", "s", "t/e", ttl=HOUR))
            seen.append(stores[i % 2].increment("stop", "s", ttl=HOUR))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert backend.store.count("ladder", "s", "t/e", ttl=HOUR) == 160
    assert backend.store.count("stop", "s", ttl=HOUR) == 160
    assert sorted(seen) == sorted([*range(1, 161), *range(1, 161)])  # each value once per key


def test_two_processes_lose_no_increment(backend: Backend) -> None:
    outs = children(backend, "got = [store.increment('ladder', 's', 't/e', ttl=3600.0)"
                              " for _ in range(40)]\nprint(json.dumps(got))")
    got = sorted(v for out in outs for v in json.loads(out))
    assert got == list(range(1, 81))
    assert backend.store.count("ladder", "s", "t/e", ttl=HOUR) == 80


# -- logs -------------------------------------------------------------------------------

def test_append_and_read_by_session(backend: Backend) -> None:
    store = backend.store
    for n, session in enumerate(["a", "b", "a", None]):
        store.append("events", {"kind": "event", "n": n, "session_id": session})
    store.append("signals", _signal("x", "a"))
    assert [r["n"] for r in backend.another().read("events")] == [0, 1, 2, 3]
    assert [r["n"] for r in store.read("events", "a")] == [0, 2]
    assert [r["signal_id"] for r in store.read("signals", "a")] == ["x"]
    assert list(store.read("signals", "b")) == []


def test_appends_from_16_threads_are_whole(store: StateStore) -> None:
    def work(i: int) -> None:
        for n in range(25):
            store.append("events", {"thread": i, "n": n, "session_id": "s", "pad": "x" * 500})

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = list(store.read("events", "s"))
    assert len(records) == 400
    for i in range(16):  # each thread's records whole and in its order
        assert [r["n"] for r in records if r["thread"] == i] == list(range(25))


# -- answer-once ------------------------------------------------------------------------

def test_the_first_answer_is_stored_a_retry_gets_it_another_is_refused(
        backend: Backend) -> None:
    store = backend.store
    with pytest.raises(UnknownSignal):
        store.answer_once("nope", "acknowledge", _answer("acknowledge"))
    store.append("signals", _signal("sig-1"))
    first = store.answer_once("sig-1", "acknowledge", _answer("acknowledge"))
    assert first["action"] == "acknowledge"
    again = backend.another().answer_once("sig-1", "acknowledge", _answer("acknowledge"))
    assert again == first
    with pytest.raises(AlreadyAnswered, match="acknowledge") as refused:
        store.answer_once("sig-1", "dismiss", _answer("dismiss"))
    assert refused.value.answer == first
    responses = [r for r in store.read("signals") if r.get("kind") == "response"]
    assert responses == [first]  # one answer stored, the retry added nothing


def test_a_build_that_raises_stores_nothing(store: StateStore) -> None:
    store.append("signals", _signal("sig-2"))

    def broken(sent: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("no such action for this intensity")

    with pytest.raises(ValueError):
        store.answer_once("sig-2", "abort", broken)
    assert store.answer_once("sig-2", "dismiss", _answer("dismiss"))["action"] == "dismiss"


def test_16_threads_racing_store_exactly_one_answer(backend: Backend) -> None:
    backend.store.append("signals", _signal("race"))
    stored: list[dict[str, Any]] = []
    refused: list[AlreadyAnswered] = []

    def work(i: int) -> None:
        action = ("acknowledge", "dismiss")[i % 2]
        try:
            stored.append(backend.another().answer_once("race", action, _answer(action)))
        except AlreadyAnswered as exc:
            refused.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stored) == 8 and len(refused) == 8  # the winner's action: 8 get it, 8 refused
    assert all(s == stored[0] for s in stored)
    assert all(r.answer == stored[0] for r in refused)
    assert len([r for r in backend.store.read("signals") if r.get("kind") == "response"]) == 1


def test_two_processes_racing_store_exactly_one_answer(backend: Backend) -> None:
    backend.store.append("signals", _signal("race2"))
    script = """
from mcp_hooks.state.store import AlreadyAnswered
action = ("acknowledge", "dismiss")[int(sys.argv[1])]
def build(sent):
    return {"kind": "response", "signal_id": sent["signal_id"], "action": action}
try:
    print(json.dumps(store.answer_once("race2", action, build)))
except AlreadyAnswered as exc:
    print(json.dumps({"refused": exc.answer}))
"""
    results = [json.loads(out) for out in children(backend, script)]
    winners = [r for r in results if "refused" not in r]
    assert len(winners) == 1
    assert [r["refused"] for r in results if "refused" in r] == winners
    answers = [r for r in backend.store.read("signals") if r.get("kind") == "response"]
    assert answers == winners


# -- queues -----------------------------------------------------------------------------

def test_take_all_returns_the_queue_in_order_once(backend: Backend) -> None:
    store = backend.store
    assert store.take_all("s") == []
    store.put("s", [{"n": 1}, {"n": 2}])
    backend.another().put("s", [{"n": 3}])
    store.put("t", [{"n": 9}])
    assert store.take_all("s") == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert store.take_all("s") == []
    assert backend.another().take_all("t") == [{"n": 9}]


def test_16_threads_taking_deliver_each_item_once(backend: Backend) -> None:
    taken: list[dict[str, Any]] = []
    done = threading.Event()

    def taker() -> None:
        store = backend.another()
        while not done.is_set():
            taken.extend(store.take_all("s"))
        taken.extend(store.take_all("s"))

    threads = [threading.Thread(target=taker) for _ in range(16)]
    for t in threads:
        t.start()
    for n in range(200):
        backend.store.put("s", [{"n": n}])
    done.set()
    for t in threads:
        t.join()
    taken.extend(backend.store.take_all("s"))
    assert sorted(item["n"] for item in taken) == list(range(200))


# -- a count that is not one --------------------------------------------------------------

@pytest.mark.parametrize("value", ["-7", "9223372036854775807", "seven"])
def test_a_malformed_count_counts_0_starts_over_and_is_reported_once(
        backend: Backend, value: str, capfd: pytest.CaptureFixture[str]) -> None:
    if backend.name == "postgres" and not value.lstrip("-").isdigit():
        pytest.skip("PostgreSQL's count column holds integers only")
    store = backend.store
    for session in ("a", "b"):
        store.increment("engine", session, ttl=HOUR)
        backend.corrupt("engine", session, value)
    assert store.count("engine", "a", ttl=HOUR) == 0  # never raises
    assert store.increment("engine", "a", ttl=HOUR) == 1  # starts over
    assert store.increment("engine", "a", ttl=HOUR) == 2
    assert store.increment("engine", "b", ttl=HOUR) == 1
    assert getattr(getattr(store, "health", None), "lost", None) is None  # not a lost store
    err = capfd.readouterr().err
    if backend.name in ("redis", "postgres"):
        assert err.count("not a whole number from 1 to") == 1, err


# -- ids as JSON gives them: lone surrogates ---------------------------------------------

LONE = ["s\udcff", "s\ud800x", "s\udcfe"]  # JSON allows "\udcff"; UTF-8 does not


def test_a_session_id_with_a_lone_surrogate_is_counted_logged_and_queued_apart(
        store: StateStore) -> None:
    for n, session in enumerate(LONE, 1):
        for _ in range(n):
            assert store.increment("engine", session, ttl=HOUR) >= 1
        store.append("events", {"kind": "event", "session_id": session, "n": n})
        store.put(session, [{"n": n}])
    assert store.count("engine", "s", ttl=HOUR) == 0
    for n, session in enumerate(LONE, 1):
        assert store.count("engine", session, ttl=HOUR) == n
        assert [r["n"] for r in store.read("events", session)] == [n]
        assert store.take_all(session) == [{"n": n}]
    store.reset("engine", LONE[0])
    assert store.count("engine", LONE[0], ttl=HOUR) == 0
    assert store.count("engine", LONE[1], ttl=HOUR) == 2
    assert store.increment("ladder", LONE[2], "t/\udcff", ttl=HOUR) == 1
    assert store.count("ladder", LONE[2], "t/\udcff", ttl=HOUR) == 1


# -- the file backend: something else where a file belongs, a full disk ------------------


def _plant(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
        (path / "inside").write_text("x")
    elif kind == "symlink-to-dev-zero":  # endless bytes: a reader that follows it never ends
        path.symlink_to("/dev/zero")
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink-to-dev-zero"])
def test_counters_and_queues_never_hang_on_what_is_not_a_file(tmp_path: Path,
                                                              kind: str) -> None:
    store = FileStore(tmp_path / "state")
    _plant(store.counter_path("claude-code", "s"), kind)
    _plant(store.ladder_path, kind)
    _plant(store.queue_path("s"), kind)
    assert bounded(lambda: store.count("claude-code", "s", ttl=HOUR)) == 0
    assert bounded(lambda: store.count("ladder", "s", "t/e", ttl=HOUR)) == 0
    assert bounded(lambda: store.take_all("s")) == []
    assert bounded(lambda: store.increment("claude-code", "s", ttl=HOUR)) == 1
    assert bounded(lambda: store.increment("ladder", "s", "t/e", ttl=HOUR)) == 1
    bounded(lambda: store.put("s", [{"n": 1}]))
    if kind != "folder":  # a FIFO or symlink is replaced by a real count and ladder
        assert store.increment("claude-code", "s", ttl=HOUR) == 2
        assert store.count("ladder", "s", "t/e", ttl=HOUR) == 1
        assert store.counter_path("claude-code", "s").is_file()


@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink-to-dev-zero"])
def test_a_signal_log_that_is_not_a_file_is_named_never_hangs(tmp_path: Path,
                                                              kind: str) -> None:
    store = FileStore(tmp_path / "state")
    assert store.signals is not None
    _plant(store.signals.path, kind)
    with pytest.raises(ConfigError, match=r"signal log .*signals\.jsonl is .*not a regular file"):
        bounded(lambda: store.answer_once("x", "dismiss", _answer("dismiss")))
    with pytest.raises(ConfigError, match="not a regular file"):
        bounded(lambda: list(store.read("signals")))


def test_today_s_files_are_read_and_written_as_they_were(tmp_path: Path) -> None:
    """Stop files, ladder.json, the aid inbox and the logs of the release before the store."""
    root = tmp_path / "state"
    stop = root / "stop"
    stop.mkdir(parents=True)
    digest = hashlib.sha256(b"codex\0sess").hexdigest()[:32]
    (stop / f"codex-{digest}").write_text("5")
    (root / "ladder.json").write_text(json.dumps({"version": 1, "sessions": {
        "sess": {"counts": {"after_tool/lint": 2}, "at": time.time()}}}))
    aid = root / "aid"
    aid.mkdir()
    inbox = hashlib.sha256(b"sess").hexdigest()[:32]
    (aid / f"{inbox}.jsonl").write_text('{"n": 1}\n')
    store = FileStore(root)
    assert store.count("codex", "sess", ttl=HOUR) == 5
    assert store.increment("codex", "sess", ttl=HOUR) == 6
    assert (stop / f"codex-{digest}").read_text() == "6"
    assert store.increment("ladder", "sess", "after_tool/lint", ttl=HOUR) == 3
    assert json.loads((root / "ladder.json").read_text())["sessions"]["sess"]["counts"] == {
        "after_tool/lint": 3}
    assert store.take_all("sess") == [{"n": 1}]


_FULL = """
import json, os, resource, sys
from pathlib import Path
from mcp_hooks.state.files import FileStore
from mcp_hooks.state.store import StateUnavailable
store = FileStore(Path(sys.argv[1]), log=Path(sys.argv[2]))
store.append("signals", {"kind": "signal", "signal_id": "sig", "intensity": "prompt"})
store.increment("stop", "s", ttl=3600.0)
store.put("s", [{"n": 1}])
if sys.argv[3] == "no-fd":  # every descriptor taken: no file can be opened
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
out = {"count": store.count("stop", "s", ttl=3600.0),
       "increment": store.increment("stop", "s", ttl=3600.0),
       "ladder": store.increment("ladder", "s", "t/e", ttl=3600.0)}
store.append("events", {"kind": "event", "n": 1})
try:
    store.answer_once("sig", "dismiss", lambda sent: {"kind": "response", "action": "dismiss",
                                                       "signal_id": "sig"})
    out["answer"] = "stored"
except StateUnavailable as exc:
    out["answer"] = str(exc)
store.put("s", [{"n": 2}])
out["taken"] = store.take_all("s")
if sys.argv[3] == "no-fd":
    for fd in held:
        os.close(fd)
out["after"] = store.count("stop", "s", ttl=3600.0)
print(json.dumps(out))
"""


def test_with_no_file_descriptor_left_counts_fail_to_0_answers_raise_appends_report(
        tmp_path: Path) -> None:
    """Nothing can be opened: a count reads 0 and an increment is lost (it says 1: the
    engine still guards, the hooks decide), the answer raises saying nothing was recorded,
    the event record is reported on stderr, the queue yields nothing (and keeps its item)."""
    root, log = tmp_path / "state", tmp_path / "state" / "events.jsonl"
    proc = subprocess.run([sys.executable, "-c", _FULL, str(root), str(log), "no-fd"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["count"] == 0 and out["increment"] == 1 and out["ladder"] == 1
    assert "nothing was recorded, so answer again" in out["answer"]
    assert "cannot write the event log" in proc.stderr and "events.jsonl" in proc.stderr
    assert out["taken"] == []
    assert out["after"] == 1  # the increment made without descriptors was lost, not torn
    assert FileStore(root, log=log).take_all("s") == [{"n": 1}]
    assert not [r for r in FileStore(root, log=log).read("signals") if r["kind"] == "response"]


def test_a_full_disk_under_the_logs_reports_and_refuses_the_answer(tmp_path: Path) -> None:
    """The logs on /dev/full (the signal log must be a file: that is named instead)."""
    store = FileStore(tmp_path / "state", log=Path("/dev/full"))
    proc = subprocess.run(
        [sys.executable, "-c", "from mcp_hooks.state.files import FileStore\n"
         "from pathlib import Path\n"
         "FileStore(Path('x'), log=Path('/dev/full')).append('events', {'n': 1})"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0
    assert "cannot write the event log /dev/full: [Errno 28] No space left" in proc.stderr
    assert store.count("stop", "s", ttl=HOUR) == 0
