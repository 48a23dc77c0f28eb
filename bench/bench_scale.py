"""Benchmark of scale-out (issue 21, "Figures"): what a shared store adds to an event, what one
``serve`` replica answers per second, what a second replica on the same cores adds, and the
CPU an event costs a replica.

- (a) Added latency per event of ``redis://`` and ``postgresql://`` over ``file:`` through
  ``Engine.fire``: three engines on one asyncio loop, each with the same persistent Python
  hook on ``before_tool`` (``metadata.persistent: true``) and its store, events interleaved
  engine by engine; p50 and p99 of each, the shared store's minus file's. Targets: p50 <=
  0.3 ms, p99 <= 3 ms.
- (b) Events per second of one ``serve --transport http --stateless --state redis://``
  replica with that persistent hook: ``--drivers`` client processes (the MCP SDK's streamable
  HTTP client, one keep-alive connection pool each) with ``--concurrency`` calls in flight
  each, for ``--seconds``. Target: >= 1,000 events/s.
  The same load against a replica on ``file:`` first, for the ratio.
- (c) The same load against two replicas (each driver on one of them), on the same 2 cores:
  the ratio of (c) to (b).
- (d) CPU seconds per event of a replica: the replica's process and its hook processes
  (``/proc/<pid>/stat`` utime + stime, children still running included), over the events it
  answered in (b); from it, the replicas (of 2 cores, at 60 % busy) for 1,000 and 10,000
  agents at an assumed event rate per agent.

The clients, Redis and the replicas share the machine's cores: the figures are of the whole
loop on one box, and the load average is printed. Run:
``.venv/bin/python bench/bench_scale.py [--n N] [--seconds S] [--drivers D] [--concurrency C]``
(``--no-write`` leaves bench/RESULTS.md alone). Prints the figures and replaces the
``## Scale-out`` section of bench/RESULTS.md. Needs redis-server and PostgreSQL installed
(``apt-get install -y redis-server postgresql``) and the dev extras (redis, psycopg).
``bench_scale.py --drive URL`` is one driver process (spawned by (b) and (c)).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench_persistent import hook_folder as persistent_hook  # noqa: E402
from results import machine, percentile, say, verdict, write_section  # noqa: E402

MCP_HOOKS = str(Path(sys.executable).parent / "mcp-hooks")
TICKS = os.sysconf("SC_CLK_TCK")
EVENTS_PER_AGENT_S = 0.5  # an agent's hook events per second (a tool call every ~4 s: 2 each)
BUSY = 0.6  # the share of a replica's cores a deployment plans to use

DOORS = ("tool", "forward")  # a driver's door: ``fire_hook_event`` (MCP), ``POST /hooks/fire``
# ``start_replica(code=DIR)``: a replica run from another source tree (``git archive``), this
# tree's editable install notwithstanding (bench_doors.py's baseline)
BOOT = ("import sys; sys.path.insert(0, sys.argv.pop(1)); from mcp_hooks.cli import main; "
        "sys.exit(main())")

ARGS = {"event_type": "before_tool", "tool_name": "Shell", "tool_input": {"command": "ls"}}


def hook_folder(root: Path) -> Path:
    """``root`` holding bench_persistent's persistent Python hook (it allows)."""
    persistent_hook(root, persistent=True)
    return root


# -- (a) Engine.fire on each store -------------------------------------------------------------


async def latency(tmp: Path, urls: dict[str, str], n: int) -> dict[str, list[float]]:
    from mcp_hooks.engine.engine import Engine
    from mcp_hooks.registry.discovery import Registry
    from mcp_hooks.settings import Settings
    from mcp_hooks.spec.outcome import Event
    from mcp_hooks.state.eventlog import EventLog

    user = hook_folder(tmp / "user")
    project = tmp / "project"
    project.mkdir()
    event = Event.create(work_dir=str(project), session_id="bench", **ARGS)
    async with contextlib.AsyncExitStack() as stack:
        engines: dict[str, Engine] = {}
        for name, url in urls.items():
            registry = Registry(user, project)
            stack.callback(registry.close)
            log = EventLog(tmp / f"events-{name}.jsonl") if name == "file" else None
            engines[name] = await stack.enter_async_context(
                Engine(registry, Settings(state=url), log=log))
        samples: dict[str, list[float]] = {name: [] for name in engines}
        names = list(engines)
        for i in range(n + 50):  # the first 50 warm up: connections, the hook's process
            for name in names[i % len(names):] + names[:i % len(names)]:
                t0 = time.perf_counter()
                outcome = await engines[name].fire(event)
                elapsed = time.perf_counter() - t0
                assert outcome.decision == "allow" and outcome.hooks, outcome
                if i >= 50:
                    samples[name].append(elapsed)
        return samples


# -- (b), (c), (d): serve replicas under load --------------------------------------------------


def start_replica(tmp: Path, n: int, url: str, user: Path, project: Path,
                  token: str | None = None, code: str | None = None) -> tuple[
        subprocess.Popen[str], str]:
    """A replica (``token``: its forward endpoint mounted; ``code``: run from that source
    tree, e.g. another commit's ``git archive``, instead of this one)."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp / f"state-{n}"),
           "XDG_CONFIG_HOME": str(tmp / "config")}
    env.pop("MCP_HOOKS_TOKEN", None)
    if token is not None:
        env["MCP_HOOKS_TOKEN"] = token
    program = [MCP_HOOKS] if code is None else [sys.executable, "-c", BOOT, code]
    proc = subprocess.Popen(
        [*program, "serve", "--transport", "http", "--port", "0", "--stateless",
         "--project-dir", str(project), "--user-dir", str(user), "--no-log", "--state", url],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"serving http at (\S+)", line)
        if found:
            return proc, found.group(1)
    raise RuntimeError(f"replica {n} did not start (exit {proc.wait()})")


def cpu_seconds(pid: int, alone: bool = False) -> float:
    """utime + stime of ``pid`` and every process below it (hooks still running); of ``pid``
    only when ``alone``."""
    total = 0.0
    for task in [pid, *([] if alone else descendants(pid))]:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{task}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        with contextlib.suppress(OSError):
            for child in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
                found.append(int(child))
                todo.append(int(child))
    return found


# what the profile of (b) names: a frame's share of the replica's samples (inclusive)
PROFILED = {
    "Engine.fire": "`Engine.fire` (hooks, store, log)",
    "RedisStore.": "the Redis store's calls (on its asyncio client since issue 34)",
    "bridge.py": "the store's calls through state/bridge.py (greenlet, redis.asyncio)",
    "run_sync_in_worker_thread": "worker-thread hops (anyio.to_thread: nonce claims...)",
    "server/forward.py": "the forward endpoint (/hooks/fire): MAC, nonce claim, body",
    "_posix_spawn": "spawning a hook process (every resident process of the hook busy)",
    "PersistentPool.": "the persistent hook's pool",
    "StreamableHTTPASGIApp.__call__": "the SDK's streamable HTTP transport (ASGI)",
    "EpollSelector.select": "the event loop waiting (idle)",
}


def profile(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes] | None:
    """py-spy (``pip install py-spy``) recording ``pid`` for ``seconds``; None without it."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        return None
    return subprocess.Popen([str(spy), "record", "-p", str(pid), "-d", str(int(seconds)),
                             "-r", "100", "-f", "raw", "-o", str(out), "--nonblocking"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def shares(raw: Path) -> dict[str, float]:
    """Each PROFILED frame's inclusive share of the samples in py-spy's raw output."""
    total, hits = 0, dict.fromkeys(PROFILED, 0)
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        total += int(count)
        for frame in PROFILED:
            if frame in stack:
                hits[frame] += int(count)
    return {frame: hit / max(1, total) for frame, hit in hits.items()}


def load(targets: list[str], drivers: int, concurrency: int, seconds: float,
         pids: list[int], spy: Path | None = None, door: list[str] | None = None
         ) -> dict[str, Any]:
    """``drivers`` driver processes, driver i against ``targets[i % len(targets)]``
    (``door``: the driver's ``--door`` options, default the MCP tool)."""
    procs = [subprocess.Popen(
        [sys.executable, __file__, "--drive", targets[i % len(targets)], "--seconds",
         str(seconds), "--concurrency", str(concurrency), *(door or [])],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True) for i in range(drivers)]
    cpu_before = [cpu_seconds(pid) for pid in pids]
    own_before = [cpu_seconds(pid, alone=True) for pid in pids]
    spying = profile(pids[0], max(1.0, seconds - 2), spy) if spy else None
    outs = [proc.communicate(timeout=seconds + 300)[0] for proc in procs]
    if spying is not None:
        spying.wait(60)
    cpu_after = [cpu_seconds(pid) for pid in pids]
    own_after = [cpu_seconds(pid, alone=True) for pid in pids]
    results = [json.loads(out.strip().splitlines()[-1]) for out in outs]
    calls = sum(r["calls"] for r in results)
    return {
        "profile": shares(spy) if spy is not None and spy.exists() else {},
        "events_s": sum(r["calls"] / r["seconds"] for r in results),
        "calls": calls, "errors": sum(r["errors"] for r in results),
        "all_calls": sum(r["all_calls"] for r in results),
        "driver_cpu_s": sum(r["cpu_s"] for r in results),
        "cpu_s": sum(cpu_after) - sum(cpu_before),
        "own_cpu_s": sum(own_after) - sum(own_before),  # the replicas alone, no hook
    }


async def drive(url: str, seconds: float, concurrency: int,
                door: argparse.Namespace) -> dict[str, Any]:
    """One driver: ``concurrency`` calls in flight on one client for ``seconds``: the MCP
    tool ``fire_hook_event``, or (``door.door == "forward"``) signed ``POST /hooks/fire``
    requests as ``mcp-hooks fire --server`` sends them (a nonce each)."""
    import anyio
    import httpx2

    limits = httpx2.Limits(max_connections=concurrency + 4,
                           max_keepalive_connections=concurrency + 4)
    counts = {"calls": 0, "errors": 0, "all": 0}
    auth = {"Authorization": f"Bearer {door.token}"} if door.token else {}
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(
            limits=limits, timeout=httpx2.Timeout(60.0), headers=auth))
        call = (forward_call(http, url, door) if door.door == "forward"
                else await tool_call(stack, http, url))
        for _ in range(20):  # warm up
            await call()
            counts["all"] += 1
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            while time.perf_counter() < deadline:
                allowed = await call()
                counts["all"] += 1
                counts["calls" if allowed else "errors"] += 1

        t0, cpu0 = time.perf_counter(), time.process_time()
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
        wall = time.perf_counter() - t0
    return {"calls": counts["calls"], "errors": counts["errors"], "all_calls": counts["all"],
            "seconds": wall, "cpu_s": time.process_time() - cpu0}


async def tool_call(stack: contextlib.AsyncExitStack, http: Any, url: str) -> Any:
    """One ``fire_hook_event`` call on an MCP client of ``url``: True when it allowed."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    client = await stack.enter_async_context(Client(streamable_http_client(url,
                                                                           http_client=http)))
    args = {**ARGS, "session_id": f"drive-{os.getpid()}"}

    async def call() -> bool:
        result = await client.call_tool("fire_hook_event", args)
        return not result.is_error and (result.structured_content or {}).get(
            "decision") == "allow"
    return call


def forward_call(http: Any, url: str, door: argparse.Namespace) -> Any:
    """One signed ``POST /hooks/fire`` (``fire_client.forward_fire``'s request, on a
    keep-alive client): True when it allowed."""
    from urllib.parse import quote

    from mcp_hooks.hosts.forward_auth import sign_request

    base = url.rsplit("/mcp", 1)[0]
    target = "/hooks/fire?ask=now"
    body = json.dumps({**ARGS, "work_dir": door.project,
                       "session_id": f"drive-{os.getpid()}"}).encode()

    async def call() -> bool:
        signed = sign_request(door.token, target, body, user_dir=quote(door.user),
                              project_dir=quote(door.project))
        answer = await http.post(base + target, content=body, headers={
            "Content-Type": "application/json", **signed.headers})
        return bool(answer.status_code == 200 and answer.json().get("decision") == "allow")
    return call


def replicas_run(tmp: Path, redis_url: str, args: argparse.Namespace) -> dict[str, Any]:
    user = hook_folder(tmp / "serve-user")
    project = tmp / "serve-project"
    project.mkdir()
    with contextlib.ExitStack() as stack:
        started = []
        for n, url in enumerate((redis_url, redis_url, "file:")):
            proc, url = start_replica(tmp, n, url, user, project)
            stack.callback(_stop, proc)
            started.append((proc, url))
        (one, url_one), (two, url_two), (files, url_files) = started
        pids = [one.pid, two.pid]
        on_files = load([url_files], args.drivers, args.concurrency, args.seconds, [files.pid])
        single = load([url_one], args.drivers, args.concurrency, args.seconds, pids,
                      tmp / "profile.txt")
        double = load([url_one, url_two], args.drivers, args.concurrency, args.seconds, pids)
        return {"one": single, "two": double, "file": on_files,
                "hook_processes": len(descendants(one.pid))}


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- report -------------------------------------------------------------------------------------


def report(args: argparse.Namespace, samples: dict[str, list[float]],
           runs: dict[str, Any]) -> list[str]:
    ms = 1000.0
    rows = ["| store | `Engine.fire` p50 | p99 | added over `file:` p50 | p99 |",
            "|---|---|---|---|---|"]
    checks = []
    for name, label in (("file", "`file:`"), ("redis", "Redis"), ("postgres", "PostgreSQL")):
        p50, p99 = percentile(samples[name], 50) * ms, percentile(samples[name], 99) * ms
        if name == "file":
            rows.append(f"| {label} | {p50:.3f} ms | {p99:.2f} ms | | |")
            continue
        d50 = p50 - percentile(samples["file"], 50) * ms
        d99 = p99 - percentile(samples["file"], 99) * ms
        rows.append(f"| {label} | {p50:.3f} ms | {p99:.2f} ms | {d50:+.3f} ms "
                    f"(<= 0.3: {verdict(d50 <= 0.3)}) | {d99:+.2f} ms "
                    f"(<= 3: {verdict(d99 <= 3.0)}) |")
        checks.append(d50 <= 0.3 and d99 <= 3.0)
    one, two, files = runs["one"], runs["two"], runs["file"]
    per_event = one["cpu_s"] / max(1, one["all_calls"])
    per_call = one["driver_cpu_s"] / max(1, one["calls"] + one["errors"])  # timed calls
    lines = [
        f"(a) `Engine.fire` of `before_tool` with one persistent Python hook, {args.n} events "
        "per store, the three engines interleaved on one loop:", "", *rows, "",
        f"(b) one replica (`serve --transport http --stateless --state redis://`, the same "
        f"hook), {args.drivers} driver processes x {args.concurrency} calls in flight, "
        f"{args.seconds:.0f} s: **{one['events_s']:.0f} events/s** (target >= 1,000: "
        f"{verdict(one['events_s'] >= 1000)}); {one['errors']} errors. The same replica on "
        f"`file:`, just before: {files['events_s']:.0f} events/s (Redis / file: "
        f"{one['events_s'] / files['events_s']:.2f}). The drivers' own CPU per call: "
        f"{per_call * 1000:.2f} ms.",
        f"(c) two replicas on the same 2 cores, the drivers split between them: "
        f"{two['events_s']:.0f} events/s, ratio **{two['events_s'] / one['events_s']:.2f}** "
        f"(CPU-bound: the drivers, Redis and the replicas share the cores).",
        f"(d) CPU per event of a replica (its process and the {runs['hook_processes']} "
        f"processes below it at the end, the hook's resident ones): "
        f"**{per_event * 1000:.2f} ms** ({one['cpu_s']:.1f} s over "
        f"{one['all_calls']} events in (b)). At {EVENTS_PER_AGENT_S} events/s per agent and "
        f"replicas of 2 cores {BUSY:.0%} busy: 1,000 agents "
        f"{replicas_for(1000, per_event)} replica(s), 10,000 agents "
        f"{replicas_for(10000, per_event)} (plus one to lose).",
    ]
    cores = os.cpu_count() or 2
    lines += [
        "",
        f"Reading: the events/s of (b) and (c) are this run's share of a machine shared with "
        f"other work (see the load average above: over {cores} means processes waited for a "
        f"core), so the CPU per event is the figure that carries over. From it, on {cores} "
        f"cores of its own, a replica can answer at most {cores / per_event:.0f} events/s "
        f"({per_event * 1000:.2f} ms each); with the MCP SDK clients on the same cores "
        f"({per_call * 1000:.2f} ms a call), {cores / (per_event + per_call):.0f} events/s. "
        "Both are under 1,000: what a replica spends is in the profile below (the store's "
        "calls on redis.asyncio, issue 34; concurrent events beyond the hook's resident "
        "processes spawn one each; by door: bench_doors.py). A second replica on "
        "the same cores cannot add CPU: its ratio in (c) is about 1 at best on a quiet "
        "machine, below 1 when the cores are already taken.",
    ]
    if one["profile"]:
        lines += ["", "What bounds (b): py-spy on the replica during (b), the share of its "
                  "samples in each (inclusive, so they overlap):", ""]
        lines += [f"- {PROFILED[frame]}: {share:.0%}" for frame, share in sorted(
            one["profile"].items(), key=lambda item: -item[1])]
    else:
        lines += ["", "(no profile: `pip install py-spy` for what bounds (b))"]
    return lines


def replicas_for(agents: int, cpu_per_event: float) -> int:
    need = agents * EVENTS_PER_AGENT_S * cpu_per_event / (2 * BUSY)
    return max(1, -int(-need // 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="events per store in (a)")
    parser.add_argument("--seconds", type=float, default=15.0, help="each load run of (b), (c)")
    parser.add_argument("--drivers", type=int, default=2, help="client processes")
    parser.add_argument("--concurrency", type=int, default=16, help="calls in flight each")
    parser.add_argument("--no-write", action="store_true", help="leave RESULTS.md alone")
    parser.add_argument("--drive", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--door", default="tool", choices=DOORS, help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    parser.add_argument("--user", default="", help=argparse.SUPPRESS)
    parser.add_argument("--project", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import anyio

    if args.drive:
        found = anyio.run(drive, args.drive, args.seconds, args.concurrency, args)
        print(json.dumps(found), flush=True)
        return 0
    from tests.helpers import servers

    os.environ.setdefault("MCP_HOOKS_TRUST_PROJECT_HOOKS", "1")
    say(f"machine: {machine()}")
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-scale-")))
        redis = stack.enter_context(servers.redis_server())
        pg = stack.enter_context(servers.postgres_server())
        urls = {"file": "file:", "redis": redis.url, "postgres": pg.url}
        samples = anyio.run(latency, tmp, urls, args.n)
        runs = replicas_run(tmp, f"{redis.url}?prefix=serve:", args)
    lines = report(args, samples, runs)
    for line in lines:
        say(line)
    if not args.no_write:
        write_section("Scale-out", "\n".join([
            f"`bench/bench_scale.py --n {args.n} --seconds {args.seconds:.0f} --drivers "
            f"{args.drivers} --concurrency {args.concurrency}`: `redis-server` and PostgreSQL "
            "started for the run on loopback (fsync off, as in the tests); everything, the "
            "client drivers included, on this machine's cores.", "", *lines]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
