"""The event log: whole lines under concurrency, never failing the caller."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from mcp_hooks.eventlog import EventLog

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
