"""Benchmark of the dashboard and ``/metrics`` (issue 31, Figures).

- **first byte**: a real ``mcp-hooks dashboard`` over a ``file:`` event log of 100,000
  events (~0.5 KB each, shaped as the engine writes them); the time to the first byte of
  ``GET /activity`` (the page) and of ``GET /api/events`` (its 200 rows), p50 and max of N.
  Target <= 200 ms.
- **new event shown**: an event appended to the log, then polled for as the page polls
  (``api/events?after=CURSOR`` every ``POLL`` s): the time from the append to the answer
  that carries it, p50 and max. Target <= 1 s.
- **/metrics cost**: Python calls per event (``cProfile``'s count, as ``compare.py`` counts)
  of a one-shot engine firing one matching ``exit 0`` hook, without an observer and with
  ``metrics.Metrics``. Target: within 2 %.

Run: ``.venv/bin/python bench/bench_dashboard.py [--n N] [--events 100000]``. Prints the
figures and replaces the ``## dashboard`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import calls_per_event
from results import make_hook, percentile, say, write_section

from mcp_hooks import Engine, Event, Registry
from mcp_hooks.metrics import metrics_for

POLL = 0.5  # the page's poll (static/dashboard.js POLL_MS)
BIN = Path(sys.executable).parent / "mcp-hooks"


def record(n: int) -> dict[str, object]:
    return {"ts": f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}."
            f"{n % 1000:03d}Z", "kind": "event", "event": "before_tool",
            "event_type": "PreToolUse", "session_id": f"session-{n % 100}",
            "work_dir": "/srv/project", "tool_name": "Bash",
            "decision": "deny" if n % 10 == 0 else "allow",
            "reason": "no rm -rf here" if n % 10 == 0 else None,
            "blocked_by": "no-rm" if n % 10 == 0 else None, "continue_working": True,
            "modified_input": False, "warnings": [], "replica": f"replica-{n % 3}",
            "hooks": [{"name": "no-rm", "scope": "user", "priority": 0, "mode": "sync",
                       "status": "deny" if n % 10 == 0 else "allow", "exit_code": 0,
                       "duration_ms": 3.2, "message": None}],
            "hooks_digest": "sha256:" + "ab" * 32}


def first_byte(port: int, path: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    t0 = time.perf_counter()
    conn.request("GET", path)
    answer = conn.getresponse()  # returns once the status line and headers are in
    took = time.perf_counter() - t0
    answer.read()
    conn.close()
    assert answer.status == 200, (path, answer.status)
    return took


def get(port: int, path: str) -> dict[str, object]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path)
    data: dict[str, object] = json.loads(conn.getresponse().read())
    conn.close()
    return data


def dashboard_figures(tmp: Path, events: int, n: int) -> dict[str, float]:
    log = tmp / "events.jsonl"
    with log.open("w") as out:
        for i in range(events):
            out.write(json.dumps(record(i)) + "\n")
    proc = subprocess.Popen([str(BIN), "dashboard", "--port", "0", "--log", str(log),
                             "--project-dir", str(tmp)], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        port = int(re.search(r":(\d+)/activity", line).group(1))  # type: ignore[union-attr]
        page = [first_byte(port, "/activity") for _ in range(n)]
        api = [first_byte(port, "/api/events") for _ in range(n)]
        shown = []
        for i in range(n):  # the page's clock: a poll every POLL s; the event lands between
            cursor = get(port, "/api/events?limit=1")["cursor"]
            next_poll = time.perf_counter() + POLL
            time.sleep(POLL * (i % 5) / 5)
            with log.open("a") as out:
                out.write(json.dumps({**record(events + i), "session_id": f"new-{i}"}) + "\n")
            appended = time.perf_counter()
            while True:
                time.sleep(max(0.0, next_poll - time.perf_counter()))
                next_poll += POLL
                fresh = get(port, f"/api/events?after={cursor}")
                rows = fresh["events"]
                assert isinstance(rows, list)
                if any(r["session"] == f"new-{i}" for r in rows):
                    break
                cursor = fresh["cursor"]
            shown.append(time.perf_counter() - appended)
    finally:
        proc.terminate()
        proc.wait(10)
    return {"log MB": log.stat().st_size / 1e6,
            "activity p50": percentile(page, 50), "activity max": max(page),
            "api p50": percentile(api, 50), "api max": max(api),
            "shown p50": percentile(shown, 50), "shown max": max(shown)}


def metrics_figures(tmp: Path) -> dict[str, float]:
    make_hook(tmp / "hooks", "only")
    event = Event.create(event_type="before_tool", tool_name="Shell",
                         tool_input={"command": "ls"}, session_id="bench", work_dir=str(tmp))
    plain = Engine(Registry(tmp / "hooks", watch=False), log=None, one_shot=True)
    counted = Engine(Registry(tmp / "hooks", watch=False), log=None, one_shot=True,
                     observer=metrics_for(True, "serve"))
    for engine in (plain, counted):  # warm: imports, caches
        for _ in range(20):
            engine.fire_blocking(event)
    without = calls_per_event(lambda: plain.fire_blocking(event), 100)
    with_metrics = calls_per_event(lambda: counted.fire_blocking(event), 100)
    return {"calls without": without, "calls with": with_metrics,
            "ratio": with_metrics / without}


def ms(found: dict[str, float], name: str) -> str:
    """``p50 | max`` of a figure, in milliseconds."""
    return f"{found[name + ' p50'] * 1000:.1f} ms | {found[name + ' max'] * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        d = dashboard_figures(Path(folder), args.events, args.n)
    with tempfile.TemporaryDirectory() as folder:
        m = metrics_figures(Path(folder))
    body = f"""\
A real `mcp-hooks dashboard` over a `file:` log of {args.events:,} events ({d['log MB']:.0f} MB);
{args.n} requests each; the new event polled for as the page polls ({POLL:g} s).

| figure | p50 | max | target |
|---|---|---|---|
| `GET /activity`, first byte | {ms(d, 'activity')} | <= 200 ms |
| `GET /api/events` (200 rows), first byte | {ms(d, 'api')} | <= 200 ms |
| a new event shown after it is logged | {ms(d, 'shown')} | <= 1 s |

`/metrics` on an event (one-shot engine, one matching `exit 0` hook, calls per event as
`compare.py` counts them): {m['calls without']:.0f} without, {m['calls with']:.0f} with
`--metrics`: x{m['ratio']:.3f} (target within 2 %).
"""
    say(body)
    write_section("dashboard", body)


if __name__ == "__main__":
    main()
