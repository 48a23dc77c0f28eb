"""CPU per event of one policy-server replica, by door (issue 34 item 2): the figure of
``bench_scale.py`` (d), measured for the MCP tool ``fire_hook_event`` and for the forward
endpoint ``POST /hooks/fire`` each, and (``--before DIR``) for replicas run from another
source tree too (``git archive main mcp_hooks | tar -x -C DIR``), runs interleaved, so the
ratio is of one run on one machine.

One replica (``serve --transport http --stateless --state redis://``, a token set so the
forward endpoint is mounted) with bench_persistent's persistent Python hook, a fresh replica
per run; ``--drivers`` client processes (``bench_scale.py --drive``) with ``--concurrency``
calls in flight each for ``--seconds``; CPU per event is the replica's and its hook
processes' utime + stime over every call answered. py-spy (``pip install py-spy``) profiles
the first round. Run: ``.venv/bin/python bench/bench_doors.py [--before DIR] [--rounds R]
[--seconds S] [--drivers D] [--concurrency C] [--no-write]``; replaces the section
``## fast lane: policy server (issue 34 item 2)`` of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench_scale import DOORS, PROFILED, _stop, hook_folder, load, start_replica  # noqa: E402
from results import machine, percentile, say, verdict, write_section  # noqa: E402

TOKEN = "bench-doors-token"  # the replicas' forward endpoint is mounted with a token


def doors_run(tmp: Path, redis_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """CPU per event of one replica on Redis through each door, this tree's code and
    (``--before DIR``) another's, interleaved over ``--rounds`` rounds; a fresh replica per
    run (its resident hook processes started by the run's own warm-up)."""
    user = hook_folder(tmp / "door-user")
    project = tmp / "door-project"
    project.mkdir()
    codes = [("after", None), *([("before", args.before)] if args.before else [])]
    found: dict[str, Any] = {}
    n = 10
    for round_ in range(args.rounds):
        for label, code in codes:
            for door in DOORS:
                n += 1
                proc, url = start_replica(tmp, n, redis_url, user, project, TOKEN, code)
                spy = tmp / f"profile-{label}-{door}.txt" if round_ == 0 else None
                try:
                    run = load([url], args.drivers, args.concurrency, args.seconds, [proc.pid],
                               spy, ["--door", door, "--token", TOKEN, "--user", str(user),
                                     "--project", str(project)])
                finally:
                    _stop(proc)
                entry = found.setdefault(f"{label} {door}", {"cpu_ms": [], "own_ms": [],
                                                             "events_s": [], "errors": 0,
                                                             "profile": {}})
                entry["cpu_ms"].append(run["cpu_s"] / max(1, run["all_calls"]) * 1000)
                entry["own_ms"].append(run["own_cpu_s"] / max(1, run["all_calls"]) * 1000)
                entry["events_s"].append(run["events_s"])
                entry["errors"] += run["errors"]
                entry["profile"] = run["profile"] or entry["profile"]
                if spy is not None and spy.exists():
                    entry["leaves"] = leaves(spy)
    return found


def leaves(raw: Path, top: int = 10) -> list[tuple[str, float]]:
    """The modules whose own code py-spy's samples (``raw`` output) were in, busiest first,
    as shares of the busy samples (the event loop's wait in ``select`` left out)."""
    busy, hits = 0, {}  # type: int, dict[str, int]
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        leaf = stack.rsplit(";", 1)[-1]
        if "select" in leaf.split(" (")[0]:
            continue
        where = leaf.rpartition("(")[2].split(":")[0]
        module = where.split("site-packages/")[-1].split("mcp_hooks/", 1)[-1]
        busy += int(count)
        hits[module] = hits.get(module, 0) + int(count)
    ranked = sorted(hits.items(), key=lambda item: -item[1])[:top]
    return [(module, hit / max(1, busy)) for module, hit in ranked]


READING = (
    'Reading: the store calls around each event no longer take a worker thread each (before: '
    'three `anyio.to_thread` hops an event, `threading.py` the largest self-time module of '
    'the replica in py-spy); they run on `redis.asyncio` through `state/bridge.py` (a '
    "greenlet per call, about 10 % of the replica's samples). That is the part of the CPU per"
    ' event this change could move (on a loaded machine, load 2-5, three runs on 2026-11-29 '
    'gave after / before 0.89-0.99 for the tool door and 0.92-0.99 for `/hooks/fire`; at '
    'load 1-3, the run above, the merged tree with issue 33 gave 0.80 and 0.83); the 0.6 ms '
    'is not met. The hook '
    "is not what bounds it (the total minus the replica's own column, about 0.1 ms): the "
    "replica is. From its profiles: (1) on the tool door, the MCP SDK's streamable HTTP "
    'transport (the largest inclusive share: each message built and validated as pydantic '
    "models), which the proxy's fast path of issue 34 item 1 (forwarding bytes, the SDK kept "
    'for the rest) would apply to here too; (2) on `/hooks/fire`, the MAC check and the nonce'
    ' claim, the latter still a worker-thread hop (`server/forward.py` `_claimed`: '
    '`anyio.to_thread`, about 10 % of samples), which the same lane would take (`store.claim`'
    " run by `bridge.run`); (3) the hook pool's pipe I/O (`runner/resident.py`). Events/s "
    "is this run's share of a shared machine (the loaded runs gave the tool door fewer events/s"
    " after than before, 142-155 against 187-211, the quieter one more, 420 against 325); the"
    ' CPU per event is the figure that carries over.')
DOORS_SECTION = "fast lane: policy server (issue 34 item 2)"
DOOR_NAMES = {"tool": "`fire_hook_event` (MCP tool)", "forward": "`POST /hooks/fire`"}


def doors_report(args: argparse.Namespace, found: dict[str, Any]) -> list[str]:
    """The table: the median CPU per event of each door, before and after, and the ratio."""
    def median(values: list[float]) -> float:
        return percentile(values, 50)

    before = ("; before: replicas run from the `--before` tree (main's `mcp_hooks`), after: "
              "this tree's" if args.before else "")
    lines = [f"`bench/bench_doors.py --seconds {args.seconds:.0f} --drivers "
             f"{args.drivers} --concurrency {args.concurrency} --rounds {args.rounds}"
             f"{' --before DIR' if args.before else ''}`: one replica (`serve --transport "
             "http --stateless --state redis://`, a token set), bench_persistent's persistent "
             "Python hook, a fresh replica per run, the runs interleaved; CPU per event as "
             "bench_scale.py (d) measures it (the replica and its hook processes, over "
             f"every call){before}.",
             "", "| door | code | CPU per event, median of runs (ms) | runs | the replica's "
             "own (ms) | events/s (median) | errors | <= 0.6 ms |",
             "|---|---|---|---|---|---|---|---|"]
    for door in DOORS:
        for label in ("before", "after"):
            entry = found.get(f"{label} {door}")
            if entry is None:
                continue
            cpu = median(entry["cpu_ms"])
            runs = ", ".join(f"{v:.2f}" for v in entry["cpu_ms"])
            lines.append(f"| {DOOR_NAMES[door]} | {label} | **{cpu:.3f}** | {runs} | "
                         f"{median(entry['own_ms']):.3f} | "
                         f"{median(entry['events_s']):.0f} | {entry['errors']} | "
                         f"{verdict(cpu <= 0.6)} |")
        if f"before {door}" in found:
            ratio = (median(found[f"after {door}"]["cpu_ms"])
                     / median(found[f"before {door}"]["cpu_ms"]))
            lines.append(f"| {DOOR_NAMES[door]} | after / before | {ratio:.2f} | | | | | |")
    lines += ["", READING]
    for key, entry in found.items():
        if entry.get("leaves"):
            lines += ["", f"py-spy on the replica, {key} (first round): where its own time "
                      "goes, by module (self time, the loop's idle wait left out):", ""]
            lines += [f"- `{module}`: {share:.0%}" for module, share in entry["leaves"]]
        if entry["profile"]:
            lines += ["", f"py-spy on the replica, {key} (first round; inclusive shares):", ""]
            lines += [f"- {PROFILED[frame]}: {share:.0%}" for frame, share in sorted(
                entry["profile"].items(), key=lambda item: -item[1]) if share >= 0.005]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="each load run")
    parser.add_argument("--drivers", type=int, default=2, help="client processes")
    parser.add_argument("--concurrency", type=int, default=16, help="calls in flight each")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--before", metavar="DIR",
                        help="also replicas run from this source tree (the baseline)")
    parser.add_argument("--no-write", action="store_true", help="leave RESULTS.md alone")
    args = parser.parse_args()
    from tests.helpers import servers

    os.environ.setdefault("MCP_HOOKS_TRUST_PROJECT_HOOKS", "1")
    say(f"machine: {machine()}")
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-doors-")))
        redis = stack.enter_context(servers.redis_server())
        found = doors_run(tmp, f"{redis.url}?prefix=doors:", args)
    lines = doors_report(args, found)
    for line in lines:
        say(line)
    if not args.no_write:
        write_section(DOORS_SECTION, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
