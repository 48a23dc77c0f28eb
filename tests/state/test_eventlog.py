"""The event log: whole lines under concurrency, never failing the caller."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_hooks.engine.launch import async_record
from mcp_hooks.runner import RunResult
from mcp_hooks.state.eventlog import EventLog, default_log_path, now
from mcp_hooks.state.signallog import SignalLog

WRITER = """
import sys
from mcp_hooks.state.eventlog import EventLog
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
from mcp_hooks.state.eventlog import EventLog
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


def test_a_short_write_leaves_no_torn_record(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append({"n": "before"})
    before = path.read_bytes()
    # The limit lets the record's first 100 bytes in and nothing more: a real short write,
    # then EFBIG. The log is truncated back to where the record began.
    done = _short_write(path, len(before) + 100, "stop")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cannot write the event log") == 1  # reported once
    assert "File too large" in done.stderr
    assert path.read_bytes() == before  # no fragment of either record
    log.append({"n": "after"})
    assert path.read_bytes() == before + b'{"n": "after"}\n'


def test_a_cut_record_is_taken_back_and_the_next_fits(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append({"n": "before"})
    before = path.read_bytes()
    # Room for most of the first record: it and the second fail and are taken back; once
    # the limit is lifted, the same process logs again, right after the first line.
    done = _short_write(path, len(before) + 4000, "raise")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cannot write the event log") == 1
    assert path.read_bytes() == before + b'{"n": "after, same process"}\n'


def test_a_fragment_left_by_a_killed_writer_is_ended_by_the_next(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": "cut sho')  # a writer killed mid-line: no take-back
    log = EventLog(path)
    log.append({"n": 2})
    assert path.read_bytes() == b'{"n": 1}\n{"n": "cut sho\n{"n": 2}\n'
    assert [r["n"] for r in log.read()] == [1, 2]


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a disk that really fills up (needs root; skipped otherwise)."""
    where = tmp_path / "tiny"
    where.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                              capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.skip("no mount command to make a tiny file system")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs (it needs root): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], capture_output=True, timeout=60, check=False)


@pytest.mark.parametrize("kind", [EventLog, SignalLog])
def test_a_full_disk_leaves_only_whole_records(tiny_fs: Path, kind: type[EventLog],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_fs / "log.jsonl"
    log = kind(path)
    for n in range(40):  # 40 x 3000 bytes: twice what fits; 3000 cuts pages mid-record
        log.append({"n": n, "blob": "x" * 2980})
    data = path.read_bytes()
    assert 0 < len(data) < 40 * 3000 and data.endswith(b"\n")
    records = [json.loads(line) for line in data.splitlines()]  # every line whole
    assert [r["n"] for r in records] == list(range(len(records)))
    err = capsys.readouterr().err
    assert err.count(f"cannot write the {log.what}") == 1 and "No space left" in err
    kept = data[: len(data) // 2].rsplit(b"\n", 2)[0] + b"\n"
    path.write_bytes(kept)  # room again
    log.append({"n": "after"})
    assert path.read_bytes() == kept + b'{"n": "after"}\n'


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


# -- what is not a regular file, and a log too big to read whole ------------------------------


def _not_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """A folder, a FIFO no one writes and a device that never ends, each where a log goes."""
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "full").symlink_to("/dev/full")  # reads as endless zeros
    return {"folder": (tmp_path / "folder", "a folder"), "fifo": (tmp_path / "fifo", "a FIFO"),
            "device": (tmp_path / "full", "a device")}


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_log_refuses_what_is_not_a_file(tmp_path: Path, kind: str) -> None:
    from tests.conftest import MCP_HOOKS

    path, said = _not_files(tmp_path)[kind]
    for follow in ((), ("--follow",)):
        done = subprocess.run([MCP_HOOKS, "log", "--log", str(path), *follow],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 64, done.stderr
        assert done.stderr.strip() == (f"mcp-hooks log: the event log {path} is {said}, not a "
                                       "regular file; point --log (MCP_HOOKS_LOG) at a file")


FIFO_WRITER = """
import os, sys
from mcp_hooks.state.eventlog import EventLog
log = EventLog(sys.argv[1])
for n in range(2000):  # far more than a pipe holds: a blocking write would hang here
    log.append({"n": n, "blob": "x" * 100})
EventLog(os.devnull).append({"n": 1})
print("done")
"""


def test_a_writer_never_hangs_on_a_fifo_and_takes_dev_null(tmp_path: Path) -> None:
    fifo = _not_files(tmp_path)["fifo"][0]
    done = subprocess.run([sys.executable, "-c", FIFO_WRITER, str(fifo)], capture_output=True,
                          text=True, timeout=60)  # only to stop a hang
    assert done.returncode == 0 and done.stdout == "done\n", done.stderr
    assert done.stderr == (f"mcp-hooks: not logging: the event log {fifo} is a FIFO, not a "
                           "regular file; point --log (MCP_HOOKS_LOG) at a file\n")


def test_read_takes_the_end_of_a_log_too_big_to_read_whole(tmp_path: Path) -> None:
    from mcp_hooks.state.eventlog import READ_LIMIT

    path = tmp_path / "events.jsonl"
    filler = json.dumps({"n": "filler", "blob": "y" * 1000}).encode() + b"\n"
    with path.open("wb") as f:
        f.write(b'{"n": "first"}\n')
        f.write(filler * (READ_LIMIT // len(filler) + 10))
        f.write(b'{"n": "last"}\n')
    records = list(EventLog(path).read())
    assert records[-1] == {"n": "last"} and {"n": "first"} not in records
    assert all(r["n"] == "filler" for r in records[:-1])  # the window's cut line is skipped
    assert len(records) - 1 < READ_LIMIT // len(filler) + 10


def test_a_moved_or_removed_log_is_opened_afresh_and_one_descriptor_is_kept(
        tmp_path: Path) -> None:
    """The descriptor is kept between appends (no open per event), yet a log moved away
    (rotated) or removed gets the next record at its path, never the old file."""
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append({"n": 1})
    before = set(os.listdir("/proc/self/fd"))
    for n in range(2, 6):
        log.append({"n": n})
    assert set(os.listdir("/proc/self/fd")) == before  # the same descriptor, no new one
    path.rename(tmp_path / "events.1.jsonl")
    log.append({"n": 6})
    path.unlink()
    log.append({"n": 7})
    assert [r["n"] for r in EventLog(tmp_path / "events.1.jsonl").read()] == [1, 2, 3, 4, 5]
    assert [r["n"] for r in log.read()] == [7]
    log.close()
    assert len(set(os.listdir("/proc/self/fd"))) == len(before) - 1
