"""Benchmark of ``metadata.processes`` (issue 21, item 4): events/s of one persistent Python
hook under 2 concurrent callers, with ``processes: 1`` (today: the second event in flight runs
one-shot) against ``processes: 2`` (each caller gets a resident process), interleaved rounds
in one run.

Each caller is a task on one event loop firing ``before_tool`` events through one ``Engine``
(event log off) one after another; a round is both callers' events, timed from the first
start to the last answer. The hook answers at once (a hand-written loop over stdin lines), so
the figure is the engine's and the pool's cost, plus a spawn for every fallback.

Run: ``.venv/bin/python bench/bench_processes.py [--events N] [--rounds N]``. Prints the
figures (it writes nothing: bench/RESULTS.md is left alone).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
from pathlib import Path

from mcp_hooks.engine.engine import Engine
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.spec.outcome import Event

LOOP_HOOK = """\
import json, os, sys
if os.environ.get("MCP_HOOKS_PERSISTENT") == "1":
    for line in sys.stdin:
        event = json.loads(line)
        sys.stdout.write(json.dumps({"_mcp_hooks_event_id": event["_mcp_hooks_event_id"]})
                         + "\\n")
        sys.stdout.flush()
else:  # run one-shot (a fallback): counted
    with open(json.load(sys.stdin)["tool_input"]["spawns"], "a") as f:
        f.write("x")
"""


def hook_folder(root: Path, processes: int) -> Path:
    folder = root / f"p{processes}" / "looped"
    (folder / "scripts").mkdir(parents=True)
    (folder / "HOOK.md").write_text(
        f"---\nname: looped\ndescription: answers at once\ntrigger: before_tool\n"
        f"metadata:\n  persistent: true\n  processes: {processes}\n---\n\n# looped\n")
    (folder / "scripts" / "run.py").write_text(LOOP_HOOK)
    return folder.parent


async def rate(engine: Engine, project: Path, events: int, spawns: Path) -> float:
    """Events/s of one round: 2 callers, ``events`` each."""

    async def caller() -> None:
        for _ in range(events):
            await engine.fire(Event.create(event_type="before_tool", tool_name="Shell",
                                           tool_input={"spawns": str(spawns)},
                                           work_dir=str(project)))

    began = time.perf_counter()
    await asyncio.gather(caller(), caller())
    return 2 * events / (time.perf_counter() - began)


async def main(events: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        engines: dict[int, Engine] = {}
        figures: dict[int, list[float]] = {1: [], 2: []}
        async with contextlib.AsyncExitStack() as stack:  # left in reverse order
            for processes in (1, 2):
                registry = Registry(hook_folder(root, processes), project)
                stack.callback(registry.close)
                engines[processes] = await stack.enter_async_context(Engine(registry))
            spawns = {p: root / f"spawns{p}" for p in (1, 2)}
            for processes in (1, 2):  # warm: the resident processes started
                await rate(engines[processes], project, 5, root / "warm")
                spawns[processes].write_text("")
            for _ in range(rounds):
                for processes in (1, 2):
                    figures[processes].append(await rate(engines[processes], project, events,
                                                         spawns[processes]))
            spawned = {p: len(spawns[p].read_text()) for p in (1, 2)}
    one, two = (statistics.median(figures[p]) for p in (1, 2))
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}, 2 callers, "
          f"{events} events each, {rounds} rounds (median)")
    total = 2 * events * rounds
    print(f"processes: 1  {one:8.0f} events/s  ({spawned[1]} of {total} events spawned)")
    print(f"processes: 2  {two:8.0f} events/s  ({spawned[2]} of {total} events spawned; "
          f"{two / one:.1f}x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.events, args.rounds))
