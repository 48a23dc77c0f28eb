"""Benchmark of persistent hooks (issue 13, item 1): one resident process against a process
per event, measured side by side in one run, interleaved.

- (a) one matching Python hook (``metadata.persistent: true``, a hand-written loop over stdin
  lines) through ``Engine.fire`` with the event log on, against the same hook spawned per
  event (the same folder with ``persistent: false``), and the floor of the protocol: the same
  script driven by a bare asyncio loop (one line written, the answer awaited through a
  reader). Target: persistent median <= 150 µs.
- (b) the bundled library's ``before_tool`` guards (every sync ``pre-tool-call`` hook of
  ``hooks/``, as shipped, ``metadata.persistent`` as their HOOK.md says) on a
  ``before_tool`` event for ``Shell``, through ``Engine.fire``, against the same guards with
  ``persistent: false``. Target: at least 50x faster.
- (c) a host hook call with a running server: the ``install --via server`` forward command
  (a new process per call, Claude Code's PreToolUse payload) to ``mcp-hooks serve`` whose
  user hooks are those guards, persistent, against a second server whose guards are spawned.
  Target: persistent median <= 20 ms per host hook call.

Run: ``.venv/bin/python bench/bench_persistent.py [--events N] [--runs N]``. Prints the
figures and replaces the ``## persistent`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from results import machine, median_us, say, verdict, write_section  # noqa: E402

Case = Callable[[], Awaitable[float]]
LIBRARY = HERE.parent / "hooks"

LOOP_HOOK = """\
import json, os, sys
def answer(event):
    return {}
if os.environ.get("MCP_HOOKS_PERSISTENT") == "1":
    for line in sys.stdin:
        event = json.loads(line)
        event_id = event.pop("_mcp_hooks_event_id", None)  # echoed: it answers this event
        sys.stdout.write(json.dumps({**answer(event), "_mcp_hooks_event_id": event_id}) + "\\n")
        sys.stdout.flush()
else:
    answer(json.load(sys.stdin))
"""


def hook_folder(root: Path, persistent: bool) -> None:
    hook = root / "py-guard"
    (hook / "scripts").mkdir(parents=True)
    (hook / "HOOK.md").write_text(
        "---\nname: py-guard\ndescription: a Python hook that allows\ntrigger: before_tool\n"
        f"matcher:\n  tool: Shell\nmetadata:\n  persistent: {str(persistent).lower()}\n---\n")
    (hook / "scripts" / "run.py").write_text(LOOP_HOOK)


def guards(root: Path, persistent: bool | None) -> list[str]:
    """Copy the library's sync before_tool hooks; ``persistent`` None keeps their HOOK.md."""
    from mcp_hooks.spec.hookfile import load_hook

    names = []
    for folder in sorted(LIBRARY.iterdir()):
        if not (folder / "HOOK.md").is_file():
            continue
        spec, _ = load_hook(folder, "user")
        if spec.event != "before_tool" or spec.is_async:
            continue
        target = root / folder.name
        shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__"))
        if persistent is False:
            text = (target / "HOOK.md").read_text()
            (target / "HOOK.md").write_text(re.sub(r"persistent: true", "persistent: false", text))
        names.append(folder.name + (" (persistent)" if persistent is None and spec.persistent
                                    else ""))
    return names


async def engine_case(stack: contextlib.AsyncExitStack, user: Path, project: Path,
                      log: Path | None, tool_input: dict[str, object], warm: int = 3) -> Case:
    from mcp_hooks.engine.engine import Engine
    from mcp_hooks.registry.discovery import Registry
    from mcp_hooks.spec.outcome import Event
    from mcp_hooks.state.eventlog import EventLog

    registry = Registry(user, project)
    stack.callback(registry.close)
    engine = await stack.enter_async_context(
        Engine(registry, log=None if log is None else EventLog(log)))
    event = Event.create(event_type="before_tool", tool_name="Shell", tool_input=tool_input,
                         work_dir=str(project), session_id="bench")

    async def once() -> float:
        t0 = time.perf_counter()
        outcome = await engine.fire(event)
        elapsed = time.perf_counter() - t0
        assert outcome.decision == "allow" and outcome.hooks, outcome
        bad = [h for h in outcome.hooks if h.status != "allow"]
        assert not bad, bad
        return elapsed

    for _ in range(warm):
        await once()
    return once




async def pool_case(stack: contextlib.AsyncExitStack, user: Path, project: Path,
                    tool_input: dict[str, object], warm: int = 3) -> Case:
    """The runner alone: the same hook's event through ``PersistentPool.run`` (no engine:
    no selection, judging, chain or log), the payload encoded once."""
    from mcp_hooks.registry.discovery import Registry
    from mcp_hooks.runner.hookenv import hook_environment
    from mcp_hooks.runner.persistent import PersistentPool

    registry = Registry(user, project)
    stack.callback(registry.close)
    hook = registry.select("before_tool", "Shell", tool_input)[0]
    pool = PersistentPool()
    stack.push_async_callback(pool.aclose)
    stdin = json.dumps({"event_type": "before_tool", "timestamp": "2026-01-01T00:00:00.000Z",
                        "session_id": "bench", "work_dir": str(project), "tool_name": "Shell",
                        "tool_input": tool_input, "tool_use_id": None,
                        "context": {}}).encode()
    env = hook_environment(os.environ)

    async def once() -> float:
        t0 = time.perf_counter()
        result = await pool.run(hook, stdin, cwd=str(project), env=env,
                                timeout=hook.timeout / 1000, limits=hook.limits,
                                generation=registry.generation, root=project)
        elapsed = time.perf_counter() - t0
        assert result.exit_code == 0 and not result.stdout, result
        return elapsed

    for _ in range(warm):
        await once()
    return once


async def floor_case(stack: contextlib.AsyncExitStack, script: Path) -> Case:
    """The protocol's floor: the same script, one line in, the answer awaited on a reader."""
    env = {**os.environ, "MCP_HOOKS_PERSISTENT": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    w, r = proc.stdin.fileno(), proc.stdout.fileno()
    os.set_blocking(r, False)
    loop = asyncio.get_running_loop()
    box: dict[str, asyncio.Future[bytes]] = {}

    def readable() -> None:
        data = os.read(r, 65536)
        fut = box.pop("f", None)
        if fut is not None:
            fut.set_result(data)

    loop.add_reader(r, readable)
    line = json.dumps({"event_type": "before_tool", "tool_name": "Shell",
                       "tool_input": {"command": "ls"}}).encode() + b"\n"

    async def once() -> float:
        t0 = time.perf_counter()
        fut = box["f"] = loop.create_future()
        os.write(w, line)
        await fut
        return time.perf_counter() - t0

    def close() -> None:
        loop.remove_reader(r)
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(5)

    stack.callback(close)
    return once


async def in_process(tmp: Path, events: int) -> dict[str, list[float]]:
    project = tmp / "project"
    project.mkdir()
    cases: dict[str, Case] = {}
    async with contextlib.AsyncExitStack() as stack:
        for label, persistent in (("a persistent", True), ("a spawned", False)):
            user = tmp / label.replace(" ", "-")
            hook_folder(user, persistent)
            cases[label] = await engine_case(stack, user, project, tmp / "events.jsonl",
                                             {"command": "ls -la"})
        persistent_user = tmp / "a-persistent"
        cases["a log off"] = await engine_case(stack, persistent_user, project, None,
                                               {"command": "ls -la"})
        cases["a pool"] = await pool_case(stack, persistent_user, project, {"command": "ls -la"})
        cases["a floor"] = await floor_case(
            stack, tmp / "a-persistent" / "py-guard" / "scripts" / "run.py")
        for label, persistent in (("b persistent", None), ("b spawned", False)):
            user = tmp / label.replace(" ", "-")
            user.mkdir()
            guards(user, persistent)
            cases[label] = await engine_case(stack, user, project, tmp / "events.jsonl",
                                             {"command": "ls -la"})
        samples: dict[str, list[float]] = {label: [] for label in cases}
        spawned_every = 10  # a spawned run costs ~100x: sample it every tenth round
        labels = list(cases)
        for i in range(events):  # interleaved, the order rotated
            for label in labels[i % len(labels):] + labels[:i % len(labels)]:
                once = cases[label]
                if "spawned" in label and i % spawned_every:
                    continue
                samples[label].append(await once())
    return samples


def http_call(base: str, token: str, data: bytes) -> float:
    """One call as a host's own HTTP hook makes it (Claude Code's ``http`` hook, ``install
    claude-code --via http``): a new connection, a POST, the answer read."""
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(base)
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    conn.request("POST", "/hooks/bridge/claude-code?event=PreToolUse", body=data,
                 headers={"Authorization": f"Bearer {token}",
                          "Content-Type": "application/json"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    elapsed = time.perf_counter() - t0
    assert response.status == 200 and not body.strip(), (response.status, body)
    return elapsed


def host_calls(tmp: Path, runs: int) -> tuple[dict[str, list[float]], str]:
    from bench_bridge import PAYLOAD, TOKEN, forward_command, start_server, timed

    env = dict(os.environ)
    env.update(XDG_CONFIG_HOME=str(tmp / "config"), XDG_STATE_HOME=str(tmp / "state"),
               HOME=str(tmp / "home"))
    env.pop("MCP_HOOKS_TOKEN", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    (tmp / "home").mkdir()
    project = tmp / "host-project"
    (project / ".agents" / "hooks").mkdir(parents=True)
    data = json.dumps({**PAYLOAD, "cwd": str(project)}).encode()
    servers, commands, bases = [], {}, {}
    try:
        for label, persistent in (("c persistent", None), ("c spawned", False)):
            user = tmp / label.replace(" ", "-")
            user.mkdir()
            guards(user, persistent)
            sub = tmp / label.replace(" ", "_")
            sub.mkdir()
            proc, base, which = start_server(project, user, env, sub)
            servers.append(proc)
            commands[label] = forward_command(sub, env, base, project)
            bases[label.replace("c ", "d ")] = base
        for _ in range(3):
            for command in commands.values():
                _, out = timed(["sh", "-c", command], data, env, tmp)
                assert out.strip() == b"", out
        samples: dict[str, list[float]] = {label: [] for label in [*commands, *bases]}
        for _ in range(runs):
            for label, command in commands.items():
                samples[label].append(timed(["sh", "-c", command], data, env, tmp)[0])
            for label, base in bases.items():
                samples[label].append(http_call(base, TOKEN, data))
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(10)
    return samples, which


def report(samples: dict[str, list[float]], guard_names: list[str], which: str,
           events: int, runs: int) -> None:
    med = {label: median_us(values) for label, values in samples.items()}
    a_ok = med["a persistent"] <= 150
    b_ratio = med["b spawned"] / med["b persistent"]
    c_ms = med["c persistent"] / 1000
    rows = [
        (f"(a) 1 matching Python hook, `Engine.fire` ({events} / {events // 10} events)",
         f"{med['a persistent']:.0f} µs", f"{med['a spawned']:.0f} µs",
         f"{med['a spawned'] / med['a persistent']:.0f}x",
         f"{med['a floor']:.0f} µs (the protocol alone)", f"≤ 150 µs: {verdict(a_ok)}"),
        ("(b) the bundled guards on `before_tool` (Shell), `Engine.fire`",
         f"{med['b persistent']:.0f} µs", f"{med['b spawned']:.0f} µs", f"{b_ratio:.0f}x", "",
         f"≥ 50x: {verdict(b_ratio >= 50)}"),
        (f"(c) a host hook call through a running server, those guards ({runs} calls)",
         f"{c_ms:.1f} ms", f"{med['c spawned'] / 1000:.1f} ms",
         f"{med['c spawned'] / med['c persistent']:.1f}x", "", f"≤ 20 ms: {verdict(c_ms <= 20)}"),
    ]
    d_ms = med["d persistent"] / 1000
    rows.append(("(d) the same call as the host's own HTTP hook makes it (`--via http`: no "
                 "process per call)", f"{d_ms:.1f} ms", f"{med['d spawned'] / 1000:.1f} ms",
                 f"{med['d spawned'] / med['d persistent']:.1f}x", "",
                 f"≤ 20 ms: {verdict(d_ms <= 20)}"))
    table = "\n".join("| " + " | ".join(row) + " |" for row in rows)
    body = f"""\
One resident process per hook and project (`metadata.persistent: true`) against a process per
event, interleaved in one run; the event log on; `Engine.fire` on an asyncio loop.

| case | persistent | spawned | ratio | floor | target |
|---|---|---|---|---|---|
{table}

- The guards (every sync `pre-tool-call` hook of `hooks/`, as shipped):
  {', '.join(guard_names)}; "spawned" is the same copies with `persistent: false`.
- (a) what the engine adds over the protocol's floor: {med['a persistent'] - med['a floor']:.0f} µs.
  Where it goes, the same hook's events in the same run: the runner alone
  (`PersistentPool.run`, payload encoded once) {med['a pool']:.0f} µs
  (+{med['a pool'] - med['a floor']:.0f} µs over the floor: the id, the timer, the answer's
  result); `Engine.fire` with the event log off {med['a log off']:.0f} µs
  (+{med['a log off'] - med['a pool']:.0f} µs: selection, payload, the fault and aid checks,
  judging, the chain); the event log's append +{med['a persistent'] - med['a log off']:.0f} µs.
- (c) most of a host call is the forward script's own start (a new Python per call, see
  `## bridge`): persistent hooks take the hooks' share, not the script's. A host that
  calls the server itself (d) pays only the server's answer. The server: {which}.
"""
    say(f"(a) persistent {med['a persistent']:.0f} µs, spawned {med['a spawned']:.0f} µs, "
        f"floor {med['a floor']:.0f} µs (target 150: {verdict(a_ok)})")
    say(f"(b) guards persistent {med['b persistent']:.0f} µs, spawned {med['b spawned']:.0f} µs:"
        f" {b_ratio:.0f}x (target 50x: {verdict(b_ratio >= 50)})")
    say(f"(c) host call persistent {c_ms:.1f} ms, spawned {med['c spawned'] / 1000:.1f} ms "
        f"(target 20 ms: {verdict(c_ms <= 20)})")
    say(f"(d) http hook persistent {d_ms:.1f} ms, spawned {med['d spawned'] / 1000:.1f} ms")
    say(machine())
    write_section("persistent", body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-persistent-") as name:
        tmp = Path(name)
        samples = asyncio.run(in_process(tmp, args.events))
        host, which = host_calls(tmp, args.runs)
        samples.update(host)
        guard_names = guards(tmp / "names", None)
    report(samples, guard_names, which, args.events, args.runs)


if __name__ == "__main__":
    main()
