"""Benchmark of the state backends (issue 21, item 1): what each store operation costs on
``file:``, Redis and PostgreSQL, and what a shared store adds to an event over ``file:``.

Real servers on loopback, started as the tests start them (``tests/helpers/servers.py``: a
``redis-server`` and an ``initdb`` + ``pg_ctl`` cluster in a temporary folder), one client
store object each, the three backends interleaved operation by operation. Per operation, p50
and p99 of N calls:

- ``increment`` (a stop count or ladder step, with expiry), ``count``;
- ``append`` (one event record, ~300 bytes, to the event log);
- ``put`` + ``take_all`` (one aid item queued, then taken);
- ``answer_once`` (a fresh signal answered; the signal's own ``append`` not timed);
- ``event``: what the engine asks of its store on every event (``take_all`` of the session's
  aid, then ``append`` of the event's record); the added latency per event of a shared store
  is its ``event`` minus file's, at p50 and p99. Targets (issue 21): p50 <= 0.3 ms, p99 <= 3 ms.

Run: ``.venv/bin/python bench/bench_store.py [--n N]``. Prints the figures and replaces the
``## store`` section of bench/RESULTS.md. Needs redis-server and PostgreSQL installed
(``apt-get install -y redis-server postgresql``) and the dev extras (redis, psycopg).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from results import machine, percentile, say, verdict, write_section  # noqa: E402

from mcp_hooks.state.files import FileStore  # noqa: E402
from mcp_hooks.state.postgres import PostgresStore  # noqa: E402
from mcp_hooks.state.redis import RedisStore  # noqa: E402
from tests.helpers import servers  # noqa: E402

OPS = ("increment", "count", "append", "put+take_all", "answer_once", "event")
RECORD = {"kind": "event", "event": "before_tool", "decision": "allow", "tool": "Shell",
          "hooks": [{"name": "guard", "status": "ok", "exit_code": 0, "ms": 1.2}],
          "blocked_by": None, "reason": "", "pad": "x" * 120}


def _ops(store: Any, counter: itertools.count[int]) -> dict[str, Callable[[], Any]]:
    def answer() -> None:
        n = next(counter)
        sid = f"sig-{n}"
        store.append("signals", {"kind": "signal", "signal_id": sid, "session_id": "s",
                                 "intensity": "prompt"})
        start = time.perf_counter()
        store.answer_once(sid, "acknowledge", lambda sent: {
            "kind": "response", "signal_id": sid, "action": "acknowledge", "session_id": "s"})
        return time.perf_counter() - start  # type: ignore[return-value]

    def queue() -> None:
        store.put("s", [{"aid": "x" * 80}])
        store.take_all("s")

    def event() -> None:
        store.take_all("s2")
        store.append("events", {**RECORD, "session_id": "s2"})

    return {
        "increment": lambda: store.increment("stop", "s", ttl=3600.0),
        "count": lambda: store.count("stop", "s", ttl=3600.0),
        "append": lambda: store.append("events", {**RECORD, "session_id": "s"}),
        "put+take_all": queue,
        "answer_once": answer,  # times itself: the signal's append is set-up
        "event": event,
    }


def run(n: int) -> dict[str, dict[str, list[float]]]:
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-store-")))
        redis = stack.enter_context(servers.redis_server())
        pg = stack.enter_context(servers.postgres_server())
        stores: dict[str, Any] = {
            "file": FileStore(folder / "state", log=folder / "events.jsonl"),
            "redis": RedisStore(redis.url),
            "postgres": PostgresStore(pg.url),
        }
        ops = {name: _ops(store, itertools.count()) for name, store in stores.items()}
        samples: dict[str, dict[str, list[float]]] = {
            name: {op: [] for op in OPS} for name in stores}
        for name in stores:  # warm up: connections, the schema, the Lua scripts loaded
            for op in OPS:
                for _ in range(20):
                    ops[name][op]()
        for _ in range(n):
            for op in OPS:  # interleaved: the same moment for every operation and backend
                for name in stores:
                    start = time.perf_counter()
                    took = ops[name][op]()
                    elapsed = time.perf_counter() - start
                    samples[name][op].append(took if isinstance(took, float) else elapsed)
        for store in stores.values():
            with contextlib.suppress(AttributeError):
                store.close()
        return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="calls per operation and backend")
    args = parser.parse_args()
    say(f"machine: {machine()}")
    samples = run(args.n)
    ms = 1000.0
    rows = ["| operation | file p50 / p99 | Redis p50 / p99 | PostgreSQL p50 / p99 |",
            "|---|---|---|---|"]
    for op in OPS:
        cells = [f"{percentile(samples[b][op], 50) * ms:.3f} / "
                 f"{percentile(samples[b][op], 99) * ms:.2f} ms"
                 for b in ("file", "redis", "postgres")]
        rows.append(f"| `{op}` | " + " | ".join(cells) + " |")
    added = []
    for backend, label in (("redis", "Redis"), ("postgres", "PostgreSQL")):
        p50 = (percentile(samples[backend]["event"], 50)
               - percentile(samples["file"]["event"], 50)) * ms
        p99 = (percentile(samples[backend]["event"], 99)
               - percentile(samples["file"]["event"], 99)) * ms
        added.append(f"- {label} over `file:` per event: p50 {p50:+.3f} ms (target <= 0.3: "
                     f"{verdict(p50 <= 0.3)}), p99 {p99:+.2f} ms (target <= 3: "
                     f"{verdict(p99 <= 3.0)})")
    body = "\n".join([
        f"`bench/bench_store.py --n {args.n}`: one store object per backend on loopback "
        "(`redis-server` 7 and PostgreSQL started for the run, fsync off as in the tests), "
        "the backends and operations interleaved call by call, single-threaded. `event` is "
        "what the engine asks of its store on every event: `take_all` of the session's aid, "
        "then `append` of the event record. A shared store's p99 is a round trip to another "
        "process: on a loaded machine it is the scheduler's delay (see the load average).",
        "", *rows, "", "Added latency per event of a shared store:", *added])
    for line in [*rows, *added]:
        say(line)
    write_section("store", body)


if __name__ == "__main__":
    main()
