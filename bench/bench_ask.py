"""Benchmark of the ask (issue 30): how soon a door waiting on an ask sees an out-of-band
answer, and what an ask answered from a stored approval costs next to a deny.

1. **Out-of-band latency**, on the file store and on Redis: an engine fires an event whose
   hook (a Python callable returning ``Ask``) asks; the chain waits, polling the store
   (``engine/asking.py``, ``POLL``). Once the ask is pending, another store object (another
   process's view) answers it (``state.asks.answer``, as ``mcp-hooks approve`` does); the time
   from that call to ``fire`` returning is the latency. Target (issue 30): <= 100 ms.
2. **Stored approval vs deny**: the same engine (file store, event log on) fires one event
   whose callable asks, answered by a stored for-session approval of exactly that call (no
   wait), and one whose callable denies (raises), interleaved; medians. Target: the ask costs
   no more than the deny (ratio <= 1.10, the noise of a shared machine).

Run: ``.venv/bin/python bench/bench_ask.py [--n N]``. Prints the figures and replaces the
``## ask`` section of bench/RESULTS.md. Needs redis-server installed and the redis extra.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from results import machine, percentile, say, verdict, write_section  # noqa: E402

from mcp_hooks import Ask, AskAnswer, Engine, Event, Registry  # noqa: E402
from mcp_hooks.engine.asking import POLL  # noqa: E402
from mcp_hooks.engine.callables import CallableView, HookTable, make_hook  # noqa: E402
from mcp_hooks.settings import Settings  # noqa: E402
from mcp_hooks.state.asks import answer  # noqa: E402
from mcp_hooks.state.files import FileStore  # noqa: E402
from mcp_hooks.state.redis import RedisStore  # noqa: E402
from tests.helpers import servers  # noqa: E402


def _registry(folder: Path, fn: Any) -> Registry:
    table = HookTable()
    table.add(make_hook(fn, "before_tool"))
    registry = Registry(folder / "user-hooks")
    registry.callables = CallableView(lambda: [table])
    return registry


def _event(n: int, session: str = "bench") -> Event:
    return Event.create(event_type="before_tool", tool_name="Shell", session_id=session,
                        tool_input={"command": f"rm -rf build-{n}"})


def latency(store: Any, other: Any, folder: Path, n: int) -> list[float]:
    """Seconds from the out-of-band answer to ``fire`` returning, ``n`` times."""
    registry = _registry(folder, lambda value: Ask("bench asks"))
    took: list[float] = []

    async def main() -> None:
        async with Engine(registry, Settings(ask_timeout=60), store=store) as engine:
            for i in range(n):
                done: dict[str, float] = {}

                async def fire(i: int = i, done: dict[str, float] = done) -> None:
                    outcome = await engine.fire(_event(i))
                    done["at"] = time.perf_counter()
                    assert outcome.decision == "allow", outcome

                def answer_it(done: dict[str, float] = done) -> None:
                    while True:
                        waiting = other.pending_asks()
                        if waiting:
                            break
                        time.sleep(0.005)
                    time.sleep(0.03)  # let the door settle into its wait
                    done["sent"] = time.perf_counter()
                    answer(other, waiting[0].id, AskAnswer(True, by="bench", channel="bench"))

                helper = threading.Thread(target=answer_it)
                helper.start()
                await fire()
                helper.join()
                took.append(done["at"] - done["sent"])

    anyio.run(main)
    return took


def stored_vs_deny(folder: Path, n: int) -> tuple[list[float], list[float]]:
    """Seconds per event: an ask answered by a stored for-session approval, and a deny."""
    store = FileStore(folder / "state", log=folder / "events.jsonl")

    def refuse(value: Any) -> None:
        raise RuntimeError("no")

    asking = _registry(folder, lambda value: Ask("bench asks"))
    denying = _registry(folder, refuse)
    asks: list[float] = []
    denies: list[float] = []

    async def main() -> None:
        async with Engine(asking, Settings(ask_timeout=0), store=store) as ask_engine, \
                Engine(denying, Settings(), store=store) as deny_engine:
            first = await ask_engine.fire(_event(0, "stored"))
            assert first.ask is not None
            answer(store, first.ask.id, AskAnswer(True, for_session=True, channel="bench"))
            for _ in range(20):  # warm up
                await ask_engine.fire(_event(0, "stored"))
                await deny_engine.fire(_event(0, "stored"))
            for _ in range(n):
                start = time.perf_counter()
                outcome = await ask_engine.fire(_event(0, "stored"))
                asks.append(time.perf_counter() - start)
                assert outcome.decision == "allow", outcome
                start = time.perf_counter()
                outcome = await deny_engine.fire(_event(0, "stored"))
                denies.append(time.perf_counter() - start)
                assert outcome.denied

    anyio.run(main)
    return asks, denies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=40, help="asks answered per store")
    args = parser.parse_args()
    say(f"machine: {machine()}")
    ms = 1000.0
    with tempfile.TemporaryDirectory(prefix="bench-ask-") as tmp, servers.redis_server() as r:
        folder = Path(tmp)
        files = latency(FileStore(folder / "state"), FileStore(folder / "state"), folder, args.n)
        redis = latency(RedisStore(r.url), RedisStore(r.url), folder, args.n)
        asks, denies = stored_vs_deny(folder, args.n * 10)
    rows = ["| measure | p50 | p90 | max | target | |", "|---|---|---|---|---|---|"]
    for label, took in (("file store", files), ("Redis", redis)):
        worst = max(took) * ms
        rows.append(f"| out-of-band approval -> the waiting door, {label} | "
                    f"{percentile(took, 50) * ms:.1f} ms | {percentile(took, 90) * ms:.1f} ms | "
                    f"{worst:.1f} ms | <= 100 ms | {verdict(worst <= 100)} |")
    ratio = statistics.median(asks) / statistics.median(denies)
    rows.append(f"| an ask answered from a stored approval, per event | "
                f"{statistics.median(asks) * ms:.3f} ms | | | | |")
    rows.append(f"| a deny, per event | {statistics.median(denies) * ms:.3f} ms | | | | |")
    rows.append(f"| ratio ask / deny | {ratio:.3f} | | | <= 1.10 | {verdict(ratio <= 1.10)} |")
    body = "\n".join([
        f"`bench/bench_ask.py --n {args.n}`: an engine fires `before_tool` with one Python "
        "callable that returns `Ask`; the chain waits polling its store every "
        f"{POLL * 1000:.0f} ms (`engine/asking.py`). Another store object (another "
        "process's view: a second `FileStore` on the same folder, a second Redis client) "
        "answers the pending ask as `mcp-hooks approve` does; the figure is the time from "
        "that answer to `fire` returning (the poll, the store read, the rest of the chain, "
        f"the event log). {args.n} asks per store. The stored-approval row fires the same "
        "call again in the session after a for-session approval (no wait), against an "
        "engine whose callable denies, interleaved, "
        f"{args.n * 10} each, file store with the event log on.",
        "", *rows])
    for line in rows:
        say(line)
    write_section("ask", body)


if __name__ == "__main__":
    main()
