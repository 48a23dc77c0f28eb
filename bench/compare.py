"""Old layout against new in one run (issue 20, Figures): every figure of bench/RESULTS.md
that the package's code decides, measured against two installed copies of the package,
alternately, in one run, with medians and ratios.

Each figure is a probe: a short run of the existing benchmark's own measurement (its floor
beside it where it has one), made in a new process by the Python of one package's venv, so
each side imports only its own ``mcp_hooks``. A round runs every probe once per side, the
side that goes first swapped every round; the table gives, per measure, the median over the
rounds of each side's median, the ratio new / old of those, and the spread: the lowest and
highest of the rounds' own new / old ratios (each from an old and a new run made one after
the other, so a busy machine's drift mostly cancels).

The probes reuse the benchmarks' code (``bench_engine``, ``bench_persistent``,
``bench_server``, ``bench_proxy``); the old layout's modules are found under the new names
they have since had (``_alias_old_layout``), nothing else differs.

Set up the old side once, e.g. for the layout before commit abb92f3::

    git worktree add ../bench-old 59fd83d
    python3 -m venv ../bench-old/.venv && ../bench-old/.venv/bin/pip install -e ../bench-old

Run: ``.venv/bin/python bench/compare.py --old ../bench-old/.venv/bin/python [--rounds N]
[--only persistent,callable]``. Prints the table and replaces the ``## old vs new layout``
section of bench/RESULTS.md (not with ``--only``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from results import machine, make_hook, median_us, say, write_section  # noqa: E402

# new name -> the old layout's (commit 59fd83d), for what the benchmarks import
OLD_NAMES = {
    "mcp_hooks.engine.engine": "mcp_hooks.engine",
    "mcp_hooks.registry.discovery": "mcp_hooks.discovery",
    "mcp_hooks.registry.trust": "mcp_hooks.trust",
    "mcp_hooks.spec.hookfile": "mcp_hooks.hookfile",
    "mcp_hooks.spec.outcome": "mcp_hooks.outcome",
    "mcp_hooks.state.eventlog": "mcp_hooks.eventlog",
    "mcp_hooks.registry.digest": "mcp_hooks.trust",
}
# new name -> the module that held its names before the split of issue 33 (<= 500 lines)
SPLIT_NAMES = {"mcp_hooks.registry.digest": "mcp_hooks.registry.trust"}


def _alias_old_layout() -> str:
    """Under the old layout, make the new module names import the old modules; the layout."""
    try:
        importlib.import_module("mcp_hooks.spec.outcome")
    except ImportError:
        pass
    else:
        for new, before in SPLIT_NAMES.items():
            try:
                importlib.import_module(new)
            except ImportError:
                sys.modules[new] = importlib.import_module(before)
        return "new"
    for new, old in OLD_NAMES.items():
        parent = new.rsplit(".", 1)[0]
        if parent not in sys.modules:
            try:
                importlib.import_module(parent)
            except ImportError:
                package = types.ModuleType(parent)
                package.__path__ = []
                sys.modules[parent] = package
        sys.modules[new] = importlib.import_module(old)
    return "old"


# -- the probes: each runs in its own process, returns {measure: median µs} ---------------------


def calls_per_event(once: Callable[[], Any], events: int = 200) -> float:
    """Python function calls per event (``cProfile``'s count): the work, whatever the load.
    ``once`` may return a coroutine: it is run to its end on the running loop's thread."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    for _ in range(events):
        once()
    profile.disable()
    return float(pstats.Stats(profile).total_calls) / events  # type: ignore[attr-defined]


async def acalls_per_event(once: Callable[[], Any], events: int = 200) -> float:
    """``calls_per_event`` for a coroutine function."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    for _ in range(events):
        await once()
    profile.disable()
    return float(pstats.Stats(profile).total_calls) / events  # type: ignore[attr-defined]


def probe_oneshot(tmp: Path, n: int) -> dict[str, float]:
    """One matching `exit 0` sh hook: the async engine, the one-shot engine, posix_spawn."""
    from bench_engine import payload_for, raw_posix_spawn

    from mcp_hooks import Engine, Event, Registry

    script = str(make_hook(tmp / "one", "only"))
    data = payload_for({"command": "ls -la"})
    event = Event.create(event_type="before_tool", tool_name="Shell",
                         tool_input={"command": "ls -la"}, session_id="bench",
                         work_dir=str(tmp))
    one_shot = Engine(Registry(tmp / "one", watch=False), log=None, one_shot=True)
    samples: dict[str, list[float]] = {"engine": [], "one-shot engine": [], "posix_spawn": []}

    async def run() -> None:
        async with Engine(Registry(tmp / "one"), log=None) as engine:
            cases: list[tuple[str, Callable[[], Any]]] = [
                ("engine", lambda: engine.fire(event)),
                ("one-shot engine", lambda: one_shot.fire_blocking(event)),
                ("posix_spawn", lambda: raw_posix_spawn(script, data, str(tmp)))]
            for i in range(n + 20):
                for label, fn in cases[i % 3:] + cases[:i % 3]:
                    t0 = time.perf_counter()
                    result = fn()
                    if asyncio.iscoroutine(result):
                        result = await result
                    if i >= 20:
                        samples[label].append(time.perf_counter() - t0)
                    assert label == "posix_spawn" or result.hooks[0].status == "allow"
            counts["engine"] = await acalls_per_event(lambda: engine.fire(event), 50)

    counts: dict[str, float] = {}
    asyncio.run(run())
    found = {label: median_us(values) for label, values in samples.items()}
    found["engine, calls per event"] = counts["engine"]
    found["one-shot engine, calls per event"] = calls_per_event(
        lambda: one_shot.fire_blocking(event), 50)
    return found


def probe_nomatch(tmp: Path, n: int) -> dict[str, float]:
    """10,000 installed hooks (made once by the driver, in ``many/``): an event none matches,
    with 20 trusted project hooks and an untrusted one checked every event; index build."""
    from mcp_hooks import Engine, Event, Registry
    from mcp_hooks.registry.digest import hook_digest
    from mcp_hooks.registry.trust import TrustStore

    shared = tmp.parent
    project = shared / "trusted-project"
    store = TrustStore(tmp / "trust.json")
    hooks_dir = project / ".agents" / "hooks"
    store.trust(project, {f"proj-{i:02d}": hook_digest(hooks_dir / f"proj-{i:02d}")
                          for i in range(20)})
    t0 = time.perf_counter()
    registry = Registry(shared / "many", project, trust_project_hooks=False, trust_store=store)
    index = time.perf_counter() - t0
    assert len(registry.hooks()) == 10_020, registry.invalid[:3]
    miss = Event.create(event_type="before_tool", tool_name="NoSuchTool",
                        tool_input={"command": "ls"}, work_dir=str(tmp))
    samples: list[float] = []

    async def run() -> None:
        async with Engine(registry, log=None) as engine:
            for i in range(n + 20):
                t = time.perf_counter()
                outcome = await engine.fire(miss)
                if i >= 20:
                    samples.append(time.perf_counter() - t)
                assert outcome.hooks == []
            counts.append(await acalls_per_event(lambda: engine.fire(miss)))

    counts: list[float] = []
    asyncio.run(run())
    registry.close()
    return {"no-match event": median_us(samples), "calls per event": counts[0],
            "index of 10,000 (ms)": index * 1e3}


def probe_mcp(tmp: Path, n: int) -> dict[str, float]:
    """`fire_hook_event` (no match) over stdio against an echo tool on a bare SDK server."""
    import anyio
    from bench_server import overhead

    found = anyio.run(overhead, tmp, n)
    return {"fire_hook_event": found["fire_ms"] * 1e3, "bare echo tool": found["echo_ms"] * 1e3,
            "fire / echo": found["ratio"]}


def probe_proxy(tmp: Path, n: int) -> dict[str, float]:
    """tools/call direct, through the proxy (no match), and with one matching hook."""
    import anyio
    from bench_proxy import measure

    found = anyio.run(measure, n)
    return {"direct": found["direct"], "proxied": found["proxied"],
            "proxied, 1 hook": found["hooked"], "proxied / direct":
            found["proxied"] / found["direct"]}


def probe_callable(tmp: Path, n: int) -> dict[str, float]:
    """`Hooks.fire` with one matching Python callable (allow), and with none matching."""
    from mcp_hooks import Hooks

    def per_event_us(fn: Callable[[], Any], events: int) -> float:  # as bench_api's
        start = time.perf_counter()
        for _ in range(events):
            fn()
        return (time.perf_counter() - start) / events * 1e6

    (tmp / "user").mkdir()
    (tmp / "project" / ".agents" / "hooks").mkdir(parents=True)
    hooks = Hooks(tmp / "project", user_dir=tmp / "user")

    @hooks.before_tool(tool="Shell")
    def guard(tool_input: dict[str, Any]) -> None:
        if "rm -rf" in tool_input["command"]:
            raise PermissionError("no rm -rf")

    call = {"tool_name": "Shell", "tool_input": {"command": "ls -la"}}
    assert hooks.fire("before_tool", **call).hooks[0].status == "allow"
    runs: dict[str, list[float]] = {"one callable": [], "no match": []}
    for _ in range(15):
        runs["one callable"].append(per_event_us(lambda: hooks.fire("before_tool", **call), n))
        runs["no match"].append(per_event_us(lambda: hooks.fire("session_end"), n))
    found = {label: statistics.median(values) for label, values in runs.items()}
    found["one callable, calls per event"] = calls_per_event(
        lambda: hooks.fire("before_tool", **call))
    hooks.close()
    return found


def probe_persistent(tmp: Path, n: int) -> dict[str, float]:
    """One matching persistent Python hook through `Engine.fire`, event log on, against the
    protocol's floor (the same script, one line written, the answer awaited)."""
    from bench_persistent import engine_case, floor_case, hook_folder

    project = tmp / "project"
    project.mkdir()
    hook_folder(tmp / "user", True)
    samples: dict[str, list[float]] = {"Engine.fire": [], "protocol floor": []}

    async def run() -> None:
        async with contextlib.AsyncExitStack() as stack:
            fire = await engine_case(stack, tmp / "user", project, tmp / "events.jsonl",
                                     {"command": "ls -la"}, warm=50)
            floor = await floor_case(stack, tmp / "user" / "py-guard" / "scripts" / "run.py")
            for _ in range(50):
                await floor()
            for i in range(n):
                first, second = (fire, floor) if i % 2 else (floor, fire)
                a, b = await first(), await second()
                samples["Engine.fire"].append(a if first is fire else b)
                samples["protocol floor"].append(b if first is fire else a)
            counts.append(await acalls_per_event(fire))

    counts: list[float] = []
    asyncio.run(run())
    return {**{label: median_us(values) for label, values in samples.items()},
            "Engine.fire, calls per event": counts[0]}


def probe_coldfire(tmp: Path, n: int) -> dict[str, float]:
    """`mcp-hooks fire` as a new process, one matching `exit 0` hook, against `python -c pass`."""
    make_hook(tmp / "cli", "only", extra="matcher:\n  tool: Shell\n")
    (tmp / "cli-project").mkdir()
    fire = [str(Path(sys.executable).parent / "mcp-hooks"), "fire", "before_tool", "--tool",
            "Shell", "--input", '{"command": "ls"}', "--user-dir", str(tmp / "cli"),
            "--project-dir", str(tmp / "cli-project"), "--no-log"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    samples: dict[str, list[float]] = {"mcp-hooks fire (ms)": [], "python -c pass (ms)": []}
    for i in range(n + 3):
        for label, argv in (("mcp-hooks fire (ms)", fire),
                            ("python -c pass (ms)", [sys.executable, "-c", "pass"])):
            t0 = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, env=env, check=False)
            if i >= 3:
                samples[label].append(time.perf_counter() - t0)
            assert done.returncode == 0, done.stderr
    return {label: median_us(values) / 1e3 for label, values in samples.items()}


# figure -> (probe, repetitions per run, what the figure is)
PROBES: dict[str, tuple[Callable[[Path, int], dict[str, float]], int, str]] = {
    "oneshot": (probe_oneshot, 150, "one-shot hook vs posix_spawn floor (µs)"),
    "nomatch": (probe_nomatch, 300, "no-match event at 10,000 hooks (µs)"),
    "mcp": (probe_mcp, 100, "MCP overhead: `fire_hook_event` over stdio (µs)"),
    "proxy": (probe_proxy, 60, "proxy overhead: tools/call over stdio (µs)"),
    "callable": (probe_callable, 2000, "callable hook: `Hooks.fire` (µs per event)"),
    "persistent": (probe_persistent, 1500, "persistent hook: `Engine.fire` (µs)"),
    "coldfire": (probe_coldfire, 15, "cold `mcp-hooks fire` as a new process"),
}


def run_probe(name: str, n: int, shared: Path) -> None:
    """The child: one probe, its result as one JSON line on stdout."""
    layout = _alias_old_layout()
    probe = PROBES[name][0]
    with tempfile.TemporaryDirectory(prefix=f"cmp-{name}-", dir=shared) as tmp:
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        os.environ.setdefault("MCP_HOOKS_TRUST_PROJECT_HOOKS", "1")
        with contextlib.redirect_stdout(sys.stderr):  # the benchmarks' own prints
            found = probe(Path(tmp), n)
    print(json.dumps({"layout": layout, **found}), flush=True)


# -- the driver -------------------------------------------------------------------------------


def make_shared(shared: Path) -> None:
    """What the no-match probe reads and does not change: 10,000 hooks and a project."""
    root = shared / "many"
    for i in range(10_000):
        trigger = ("before_tool", "after_tool", "before_stop", "session_start")[i % 4]
        matcher = f"matcher:\n  tool: Tool{i}\n" if trigger in ("before_tool", "after_tool") else ""
        make_hook(root, f"hook-{i:05d}", trigger=trigger, extra=f"{matcher}priority: {i % 1000}\n")
    project = shared / "trusted-project" / ".agents" / "hooks"
    for i in range(20):
        make_hook(project, f"proj-{i:02d}", trigger="session_end")
    make_hook(project, "stranger")


def child(python: str, name: str, n: int, shared: Path) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_HOOKS_", "VIRTUAL_ENV"))}
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run([python, str(Path(__file__).resolve()), "--probe", name, "--n", str(n),
                           "--shared", str(shared)], capture_output=True, text=True, env=env,
                          cwd=shared, check=False, timeout=900)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"probe {name} with {python} failed ({done.returncode}):\n"
                         f"{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def compare(old: str, new: str, rounds: int, names: list[str],
            scale: float = 1.0) -> dict[str, Any]:
    found: dict[str, dict[str, list[dict[str, float]]]] = {
        name: {"old": [], "new": []} for name in names}
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        shared = Path(tmp)
        if "nomatch" in names:
            make_shared(shared)
        for r in range(rounds):
            sides = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
            for name in names:
                for side, python in sides:
                    result = child(python, name, max(1, round(PROBES[name][1] * scale)),
                                   shared)
                    layout = result.pop("layout")
                    if layout != side:
                        raise SystemExit(f"{python} has the {layout} layout installed, not the "
                                         f"{side}: give --{side} the Python of a venv with the "
                                         f"{side} layout (see bench/compare.py's docstring)")
                    found[name][side].append(result)
                say(f"round {r + 1}/{rounds} {name}: " + "; ".join(
                    f"{k} {found[name]['old'][-1][k]:.1f} -> {found[name]['new'][-1][k]:.1f}"
                    for k in found[name]["new"][-1]))
    return found


def table(found: dict[str, Any], rounds: int) -> str:
    lines = ["| figure | measure | old | new | new / old | spread of the rounds' ratios |",
             "|---|---|---|---|---|---|"]
    for name, sides in found.items():
        title = PROBES[name][2]
        for measure in sides["new"][0]:
            old = statistics.median(run[measure] for run in sides["old"])
            new = statistics.median(run[measure] for run in sides["new"])
            pairs = zip(sides["old"], sides["new"], strict=True)
            ratios = [n[measure] / o[measure] for o, n in pairs]
            digits = 2 if max(old, new) < 10 else 0 if max(old, new) > 100 else 1
            lines.append(f"| {title} | {measure} | {old:.{digits}f} | {new:.{digits}f} | "
                         f"{new / old:.3f} | {spread(ratios)} |")
            title = ""
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", help="the Python of the old layout's venv")
    parser.add_argument("--new", default=sys.executable,
                        help="the Python of the new layout's venv (default: this one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="repetitions per probe run, times each probe's default")
    parser.add_argument("--only", help="probes to run, comma-separated: " + ", ".join(PROBES))
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--shared", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        run_probe(args.probe, args.n, Path(args.shared))
        return
    if not args.old:
        parser.error("--old is required: the Python of a venv with the old layout installed")
    names = args.only.split(",") if args.only else list(PROBES)
    unknown = [name for name in names if name not in PROBES]
    if unknown:
        parser.error(f"unknown probe(s) {', '.join(unknown)}; there are {', '.join(PROBES)}")
    state = machine()
    started = time.time()
    found = compare(args.old, args.new, args.rounds, names, args.scale)
    minutes = (time.time() - started) / 60
    text = table(found, args.rounds)
    say(text)
    say(state)
    if args.only:
        return
    write_section("old vs new layout", f"""\
{args.rounds} rounds in one run ({minutes:.0f} min), each running every figure's probe once
against the old layout (`{args.old}`) and once against the new (`{args.new}`), the side that
goes first swapped every round (`bench/compare.py`). Old and new are medians over the rounds
of each run's median; "spread" is the lowest and highest new / old ratio of the rounds.

{text}
""")


if __name__ == "__main__":
    main()
