"""The event log: whole lines under concurrency, never failing the caller."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mcp_hooks.eventlog import EventLog, async_record, default_log_path, now
from mcp_hooks.runner import RunResult

WRITER = """
import sys
from mcp_hooks.eventlog import EventLog
log = EventLog(sys.argv[1])
for i in range(200):
    log.append({"writer": sys.argv[2], "i": i, "blob": "z" * 70000})
"""


def test_lines_are_never_torn_across_threads_and_processes(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)

    def thread_writer(n: int) -> None:
        for i in range(200):
            log.append({"writer": f"t{n}", "i": i, "blob": "y" * 50000})

    threads = [threading.Thread(target=thread_writer, args=(n,)) for n in range(4)]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"p{n}"])
             for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        assert p.wait(timeout=120) == 0
    lines = path.read_text().splitlines()
    assert len(lines) == 7 * 200
    records = [json.loads(line) for line in lines]  # every line is whole JSON
    for writer in [*(f"t{n}" for n in range(4)), *(f"p{n}" for n in range(3))]:
        assert [r["i"] for r in records if r["writer"] == writer] == list(range(200))


def test_read_skips_garbage_and_filters_sessions(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"session_id": "a", "n": 1}\nnot json\n[1]\n{"session_id": "b", "n": 2}\n')
    log = EventLog(path)
    assert [r["n"] for r in log.read()] == [1, 2]
    assert [r["n"] for r in log.read("b")] == [2]
    assert list(EventLog(tmp_path / "missing.jsonl").read()) == []


def test_unserialisable_values_are_written_as_text(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "e.jsonl")
    log.append({"path": tmp_path, "obj": object()})
    record = next(log.read())
    assert record["path"] == str(tmp_path)


SHORT_WRITER = """
import os, resource, signal, sys
from mcp_hooks.eventlog import EventLog
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
path, limit = sys.argv[1], int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
log = EventLog(path)
log.append({"n": "cut", "blob": "x" * 5000})
log.append({"n": "also cut", "blob": "y" * 5000})
if sys.argv[3] == "raise":
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    log.append({"n": "after, same process"})
"""


def _short_write(path: Path, limit: int, then: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SHORT_WRITER, str(path), str(limit), then],
                          capture_output=True, text=True, timeout=60)


def test_a_short_write_never_swallows_the_next_record(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append({"n": "before"})
    size = path.stat().st_size
    # The limit lets the record's first 100 bytes in and nothing more: a real short write,
    # then EFBIG, and the newline that would end the fragment cannot be written either.
    done = _short_write(path, size + 100, "stop")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cannot write the event log") == 1  # reported once
    assert path.stat().st_size == size + 100  # the fragment is there, without its newline
    assert not path.read_bytes().endswith(b"\n")
    log.append({"n": "after"})  # another writer: starts a line of its own
    assert [r["n"] for r in log.read()] == ["before", "after"]
    lines = path.read_bytes().split(b"\n")
    assert lines[1].startswith(b'{"n": "cut"') and lines[2] == b'{"n": "after"}'


def test_a_short_write_with_room_for_the_newline_ends_the_fragment(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append({"n": "before"})
    size = path.stat().st_size
    # Room for the fragment and then some: the first record is cut, its fragment is ended
    # by the newline written after the failure, the second does not fit at all.
    done = _short_write(path, size + 4000, "raise")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cannot write the event log") == 1
    data = path.read_bytes()
    assert data.endswith(b'{"n": "after, same process"}\n')
    assert [r["n"] for r in log.read()] == ["before", "after, same process"]


def test_lone_surrogates_and_non_utf8_names_are_logged_escaped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    name = os.fsdecode(b"caf\xe9.txt")  # a file name that is not UTF-8: 'caf\udce9.txt'
    log.append({"s": "bad \udcff and \ud800", "path": Path(tmp_path, name), "ok": "é"})
    log.append({"n": 2})
    raw = path.read_bytes()
    raw.decode("ascii")  # escaped, so the line is plain ASCII (and valid UTF-8)
    assert b"\\udcff" in raw and b"\\ud800" in raw
    records = list(log.read())
    assert records[0]["s"] == "bad \udcff and \ud800"  # round-trips as the same string
    assert records[0]["path"] == str(Path(tmp_path, name)) and records[0]["ok"] == "é"
    assert records[1] == {"n": 2}


def test_readers_skip_fragments(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": "cu\n{"n": 2}\n' + b"[" * 100000 + b"\n{\xff\n")
    assert [r["n"] for r in EventLog(path).read()] == [1, 2]


@pytest.mark.parametrize(("result", "status"), [
    (RunResult(exit_code=0, stdout=b"ok\n", duration_ms=1.23456), "allow"),
    (RunResult(exit_code=3, stderr=b"bad \xff"), "error"),
    (RunResult(exit_code=None, timed_out=True), "timeout"),
    (RunResult(exit_code=None, spawn_error="not executable"), "error"),
])
def test_async_record_says_how_the_hook_ended(result: RunResult, status: str) -> None:
    hook = {"name": "fmt", "scope": "user", "priority": 0}
    record = async_record("after_tool", "s1", hook, result)
    assert (record["kind"], record["event"], record["session_id"]) == (
        "async_result", "after_tool", "s1")
    assert record["hook"]["status"] == status and record["hook"]["mode"] == "async"
    assert record["hook"]["name"] == "fmt" and record["hook"]["message"] == result.spawn_error
    assert record["hook"]["duration_ms"] == round(result.duration_ms, 3)
    assert record["hook"].get("stdout") == (result.stdout.decode() if result.stdout else None)
    if result.stderr:
        assert record["hook"]["stderr"] == "bad \ufffd"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["ts"])


def test_now_and_the_default_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now())
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_log_path() == tmp_path / "mcp-hooks" / "events.jsonl"
