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
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from results import machine, say, verdict, write_section  # noqa: E402


def per_event_us(fn: Callable[[], Any], events: int) -> float:
    start = time.perf_counter()
    for _ in range(events):
        fn()
    return (time.perf_counter() - start) / events * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()
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
    for _ in range(args.runs):  # interleaved: each run measures every case once
        for name, fn in cases.items():
            runs[name].append(per_event_us(fn, args.events))
    medians = {name: sorted(v)[len(v) // 2] for name, v in runs.items()}
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
    hooks.close()
    bare.close()


if __name__ == "__main__":
    say(f"api benchmark on {machine()}")
    main()
