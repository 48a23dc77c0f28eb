"""Benchmark of the library API (issue 13, item 3's performance lines), interleaved in one run.

- a Python callable hook per event: ``Hooks.fire("before_tool", ...)`` with one matching
  callable (allow, nothing changed), log off. Target: median <= 20 µs.
- the same event with a callable that rewrites the input (a new dict), and one that raises
  (a deny): what a verdict other than the shared allow costs.
- firing with no matching hook (the fast path: ``Engine.wakes`` says nothing would act).
  Target: median <= 5 µs. Measured twice: with no hooks.yaml at all and (the default) with
  the control layer asked too, since that check is part of the fast path.
- floors in the same run: a bare Python function call, and ``Engine.wakes`` alone.

Run: ``.venv/bin/python bench/bench_api.py [--events N] [--runs N]``. Prints the figures and
replaces the ``## api`` section of bench/RESULTS.md.

``--against PYTHON`` (issue 34 item 5, the callable's figure against another checkout, e.g.
main's: the Python of a venv with it installed, or a wrapper setting ``PYTHONPATH``): runs the
cases above in a new process of each Python in turn, ``--rounds`` times, the side that goes
first swapped every round, each process importing its own ``mcp_hooks``; the medians over the
rounds of each side, their ratios, the calls per event (``compare.calls_per_event``), and the
load average before and after; replaces the ``## fast lane: callables`` section.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if "--child" not in sys.argv:  # a child measures the mcp_hooks its own Python has installed
    sys.path.insert(0, str(HERE.parent))
from results import machine, say, verdict, write_section  # noqa: E402

CALLABLE = "one callable, allow"
FLOORS = ("floor: a bare Python function call", "Engine.wakes alone (no hooks.yaml asked)")
SECTION = "fast lane: callables (issue 34 item 5)"


def per_event_us(fn: Callable[[], Any], events: int) -> float:
    start = time.perf_counter()
    for _ in range(events):
        fn()
    return (time.perf_counter() - start) / events * 1e6


def measure(events: int, runs_of: int) -> dict[str, float]:
    """Every case's median µs per event, interleaved in this process, and the callable's
    Python function calls per event."""
    root = Path(tempfile.mkdtemp(prefix="mcp-hooks-bench-api-"))
    os.environ["XDG_STATE_HOME"] = str(root / "state")
    os.environ["XDG_CONFIG_HOME"] = str(root / "config")
    os.environ["HOME"] = str(root)
    (root / "user").mkdir()
    (root / "project" / ".agents" / "hooks").mkdir(parents=True)

    from mcp_hooks import Hooks

    hooks = Hooks(root / "project", user_dir=root / "user")
    bare = Hooks(root / "project", user_dir=root / "user")
    bare._engine.control = None  # the registry alone: what the fast path costs without hooks.yaml

    @hooks.before_tool(tool="Shell")
    def guard(tool_input: dict[str, Any]) -> None:
        if "rm -rf" in tool_input["command"]:
            raise PermissionError("no rm -rf")

    hooks.on("after_tool", lambda output: output + "!", tool="Shell")

    def deny_all(tool_input: dict[str, Any]) -> None:
        raise PermissionError("denied")

    hooks.on("before_tool", deny_all, tool="ReadFile")
    call = {"tool_name": "Shell", "tool_input": {"command": "ls -la"}}

    def floor() -> None:
        guard({"command": "ls -la"})

    cases: dict[str, Callable[[], Any]] = {
        "floor: a bare Python function call": floor,
        "Engine.wakes alone (no hooks.yaml asked)": lambda: bare._engine.wakes("session_end"),
        "no matching hook, no hooks.yaml": lambda: bare.fire("session_end"),
        "no matching hook (with the hooks.yaml check)": lambda: hooks.fire("session_end"),
        "one callable, allow": lambda: hooks.fire("before_tool", **call),
        "one callable, output rewritten": lambda: hooks.fire(
            "after_tool", tool_output="done", **call),
        "one callable, raises (deny)": lambda: hooks.fire(
            "before_tool", tool_name="ReadFile", tool_input={"path": "x"}),
    }
    assert hooks.fire("before_tool", **call).hooks[0].status == "allow"
    assert hooks.fire("before_tool", tool_name="ReadFile", tool_input={}).denied
    runs: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs_of):  # interleaved: each run measures every case once
        for name, fn in cases.items():
            runs[name].append(per_event_us(fn, events))
    medians = {name: sorted(v)[len(v) // 2] for name, v in runs.items()}
    from compare import calls_per_event

    medians["calls per event"] = calls_per_event(cases[CALLABLE])
    hooks.close()
    bare.close()
    return medians


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--against", help="the Python of another checkout (see the docstring)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import mcp_hooks

        print(json.dumps({"from": mcp_hooks.__file__, **measure(args.events, args.runs)}))
        return
    if args.against:
        against(args.against, args.rounds, args.events, args.runs)
        return
    medians = measure(args.events, args.runs)
    medians.pop("calls per event")
    lines = ["| case | median µs per event |", "|---|---|"]
    lines += [f"| {name} | {value:.2f} |" for name, value in medians.items()]
    callable_us = medians["one callable, allow"]
    fast_us = medians["no matching hook, no hooks.yaml"]
    fast_control_us = medians["no matching hook (with the hooks.yaml check)"]
    body = "\n".join([
        f"{args.runs} interleaved runs of {args.events} events each, `Hooks.fire` (sync), "
        "log off.", "", *lines, "",
        f"- a Python callable hook per event: {callable_us:.1f} µs, target <= 20 µs: "
        f"{verdict(callable_us <= 20)}",
        f"- no matching hook: {fast_us:.1f} µs without hooks.yaml, target <= 5 µs: "
        f"{verdict(fast_us <= 5)}; {fast_control_us:.1f} µs with the control layer's "
        f"check (`ControlLayer.wakes`) in the fast path: {verdict(fast_control_us <= 5)}",
    ])
    for line in body.splitlines():
        say(line)
    write_section("api", body)


def against(other: str, rounds: int, events: int, runs: int) -> None:
    """``--against``: this checkout and another, a new process each, alternately."""
    sides = {"this": sys.executable, "other": other}
    found: dict[str, list[dict[str, Any]]] = {"this": [], "other": []}
    loads = [os.getloadavg()[0]]
    argv = [str(Path(__file__).resolve()), "--child", "--events", str(events),
            "--runs", str(runs)]
    with tempfile.TemporaryDirectory(prefix="bench-api-against-") as tmp:
        for r in range(rounds):
            for side in (("this", "other") if r % 2 == 0 else ("other", "this")):
                done = subprocess.run([sides[side], *argv], capture_output=True, text=True,
                                      cwd=tmp, check=True, timeout=900)
                found[side].append(json.loads(done.stdout.strip().splitlines()[-1]))
            loads.append(os.getloadavg()[0])
            say(f"round {r + 1}/{rounds}: {CALLABLE} " + ", ".join(
                f"{side} {found[side][-1][CALLABLE]:.2f} µs" for side in found))
    med = {side: {k: statistics.median(run[k] for run in runs_)
                  for k in runs_[0] if k != "from"} for side, runs_ in found.items()}
    pairs = [t[CALLABLE] / o[CALLABLE] for t, o in zip(found["this"], found["other"],
                                                         strict=True)]
    lines = ["| median over the rounds, µs per event | this checkout | the other | this / other |",
             "|---|---|---|---|"]
    for key in (*FLOORS, CALLABLE, "calls per event"):
        this, that = med["this"][key], med["other"][key]
        lines.append(f"| {key} | {this:.2f} | {that:.2f} | {this / that:.3f} |")
    this = med["this"]
    body = "\n".join([
        f"`bench/bench_api.py --against {other}` ({rounds} rounds, each a new process per "
        f"side, the side that goes first swapped every round; in each, {runs} interleaved "
        f"runs of {events} events per case). This checkout's `mcp_hooks`: "
        f"`{found['this'][0]['from']}`; the other's: `{found['other'][0]['from']}`. Load "
        f"average {min(loads):.1f} to {max(loads):.1f} through the run.", "", *lines, "",
        f"- one callable: {this[CALLABLE]:.1f} µs, {this[CALLABLE] / this[FLOORS[0]]:.0f}x the "
        f"bare call of the same callable and {this[CALLABLE] / this[FLOORS[1]]:.1f}x "
        f"`Engine.wakes` alone; target <= 12 µs: {verdict(this[CALLABLE] <= 12)}",
        f"- this / other for the callable, per round: median {statistics.median(pairs):.3f}, "
        f"{min(pairs):.3f} to {max(pairs):.3f}",
    ])
    for line in body.splitlines():
        say(line)
    write_section(SECTION, body)


if __name__ == "__main__":
    say(f"api benchmark on {machine()}")
    main()
