"""``metadata.processes``: up to N resident processes of one persistent hook, each one event at
a time, with real hook processes, real threads and a real Ctrl-C.

The hook here records ``start``/``end`` lines with its pid and how it runs (``resident`` or
``oneshot``) in a file the event names, so a test sees which process served which event and
whether any two events ever overlapped in one process. An event can wait at a gate: until a
file exists (``until``), or until ``quorum`` events have started (the log has that many
``start`` lines), which makes "N processes at once" a fact instead of a timing.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_hooks import Hooks
from mcp_hooks.engine.engine import Engine
from mcp_hooks.errors import HookFileError
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.runner.core import RunResult
from mcp_hooks.runner.persistent import PersistentPool, default_processes
from mcp_hooks.settings import Settings
from mcp_hooks.spec.hookfields import MAX_PROCESSES
from mcp_hooks.spec.hookfile import load_hook
from mcp_hooks.spec.outcome import Event, Outcome
from tests.conftest import write_hook
from tests.helpers.servers import redis_service, redis_url

__all__ = ["redis_service", "redis_url"]  # fixtures, used by name
pytestmark = pytest.mark.anyio

GATE_BOUND = 60  # seconds a gate waits at most: a hang bound, never reached when all is well

POOL_HOOK = textwrap.dedent(f'''\
    import json, os, sys, time

    MODE = "resident" if os.environ.get("MCP_HOOKS_PERSISTENT") == "1" else "oneshot"

    def record(what, ti):
        with open(ti["log"], "a") as f:
            f.write(f"{{what}} {{os.getpid()}} {{ti['n']}} {{MODE}}\\n")

    def starts(log):
        with open(log) as f:
            return sum(1 for line in f if line.startswith("start "))

    def answer(ev):
        ti = ev.get("tool_input") or {{}}
        record("start", ti)
        bound = time.monotonic() + {GATE_BOUND}
        while time.monotonic() < bound and (
                ("until" in ti and not os.path.exists(ti["until"]))
                or starts(ti["log"]) < ti.get("quorum", 0)):
            time.sleep(0.005)
        if ti.get("stray"):
            sys.stdout.write(json.dumps({{"additional_context": "n=-1 stray"}}) + "\\n")
        record("end", ti)
        return {{"additional_context": f"n={{ti['n']}} pid={{os.getpid()}} {{MODE}}"}}

    if MODE == "resident":
        for line in sys.stdin:
            ev = json.loads(line)
            out = answer(ev)
            out["_mcp_hooks_event_id"] = ev["_mcp_hooks_event_id"]
            sys.stdout.write(json.dumps(out) + "\\n")
            sys.stdout.flush()
        sys.exit(0)
    print(json.dumps(answer(json.load(sys.stdin))))
''')


def pool_hook(root: Path, processes: int | None, name: str = "pooled") -> Path:
    extra = "timeout: 120000\nmetadata:\n  persistent: true\n"
    if processes is not None:
        extra += f"  processes: {processes}\n"
    return write_hook(root, name, script=POOL_HOOK, entry="scripts/run.py", extra=extra)


def lines(log: Path) -> list[tuple[str, int, int, str]]:
    """The hook's records: (start|end, pid, event number, resident|oneshot)."""
    found = []
    for line in log.read_text().splitlines():
        what, pid, n, mode = line.split()
        found.append((what, int(pid), int(n), mode))
    return found


def one_at_a_time(log: Path) -> None:
    """Each process's records alternate start n / end n: it never held two events at once."""
    open_event: dict[int, int] = {}
    for what, pid, n, _ in lines(log):
        if what == "start":
            assert pid not in open_event, f"pid {pid} got event {n} during {open_event.get(pid)}"
            open_event[pid] = n
        else:
            assert open_event.pop(pid, None) == n, f"pid {pid} ended {n} it had not started"
    assert not open_event, open_event


def context_of(outcome: Outcome) -> dict[str, str]:
    """``n``, ``pid`` and the mode of the answer the hook gave."""
    text = " ".join(outcome.additional_context).split()
    return {"n": text[0][2:], "pid": text[1][4:], "mode": text[2]}


def fire_args(project: Path, log: Path, n: int, **gate: Any) -> dict[str, Any]:
    return {"tool_name": "Shell", "work_dir": str(project),
            "tool_input": {"n": n, "log": str(log), **gate}}


def event(project: Path, log: Path, n: int, **gate: Any) -> Event:
    return Event.create(event_type="before_tool", **fire_args(project, log, n, **gate))


@pytest.fixture
async def engine(user_dir: Path, project: Path) -> AsyncIterator[Engine]:
    registry = Registry(user_dir, project)
    async with Engine(registry) as eng:
        yield eng
    registry.close()


# -- HOOK.md ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "33", "-1", "'3'", "true", "2.5", "[2]"])
def test_a_bad_processes_value_names_the_file_the_field_and_the_range(
        user_dir: Path, value: str) -> None:
    hook = write_hook(user_dir, "bad", entry="scripts/run.py", script=POOL_HOOK,
                      extra=f"metadata:\n  persistent: true\n  processes: {value}\n")
    with pytest.raises(HookFileError) as info:
        load_hook(hook, "user")
    assert info.value.field == "metadata.processes"
    assert f"1 to {MAX_PROCESSES}" in str(info.value) and str(hook) in str(info.value)


def test_processes_is_read_and_ignored_with_a_warning_on_a_one_shot_hook(
        user_dir: Path) -> None:
    spec, warnings = load_hook(pool_hook(user_dir, 3), "user")
    assert spec.processes == 3 and warnings == []
    spec, _ = load_hook(pool_hook(user_dir, None, name="plain"), "user")
    assert spec.processes is None
    one_shot = write_hook(user_dir, "oneshot", extra="metadata:\n  processes: 2\n")
    spec, warnings = load_hook(one_shot, "user")
    assert spec.processes is None and "metadata.processes: ignored" in warnings[0]


async def test_a_bad_processes_value_is_a_fault_of_its_events_the_engine_answers_on(
        user_dir: Path, project: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "bad", entry="scripts/run.py", script=POOL_HOOK,
               extra="metadata:\n  persistent: true\n  processes: 99\n")
    registry = Registry(user_dir, project)
    try:
        async with Engine(registry) as eng:
            out = await eng.fire(event(project, tmp_path / "log", 1))
            again = await eng.fire(event(project, tmp_path / "log", 2))
    finally:
        registry.close()
    assert out.decision == "deny" and again.decision == "deny"
    assert out.reason is not None and "metadata.processes" in out.reason
    assert "1 to 32" in out.reason and "HOOK.md" in out.reason
    assert not (tmp_path / "log").exists()  # the hook never ran


def test_the_default_is_one_or_up_to_four_for_a_shared_store() -> None:
    assert default_processes(False) == 1
    assert default_processes(True) == min(4, os.cpu_count() or 1)


# -- under load ------------------------------------------------------------------------------


def test_eight_threads_share_three_processes_one_event_each(user_dir: Path, project: Path,
                                                            tmp_path: Path) -> None:
    pool_hook(user_dir, 3)
    log = tmp_path / "events.log"
    log.touch()
    outcomes: dict[int, Outcome] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def caller(t: int) -> None:
        try:
            start.wait()
            for k in range(4):
                n = t * 10 + k
                # the first round waits for 3 events at once: all three processes serve
                gate = {"quorum": 3} if k == 0 else {}
                outcomes[n] = hooks.fire("before_tool", **fire_args(project, log, n, **gate))
        except BaseException as exc:
            errors.append(exc)

    with Hooks(project, user_dir=user_dir) as hooks:
        threads = [threading.Thread(target=caller, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    records = lines(log)
    assert {mode for *_, mode in records} == {"resident"}, "an event was spawned one-shot"
    pids = {pid for _, pid, _, _ in records}
    assert len(pids) == 3, pids
    one_at_a_time(log)
    assert len(outcomes) == 32
    served = {n: pid for what, pid, n, _ in records if what == "start"}
    for n, outcome in outcomes.items():
        got = context_of(outcome)
        assert got == {"n": str(n), "pid": str(served[n]), "mode": "resident"}, (n, outcome)


async def test_processes_one_keeps_a_busy_process_and_runs_the_others_one_shot(
        engine: Engine, user_dir: Path, project: Path, tmp_path: Path) -> None:
    pool_hook(user_dir, 1)
    log, release = tmp_path / "events.log", tmp_path / "release"
    log.touch()
    results: dict[int, Outcome] = {}

    async def fire(n: int, **gate: Any) -> None:
        results[n] = await engine.fire(event(project, log, n, **gate))

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: fire(0, until=str(release)))
        with anyio.fail_after(GATE_BOUND):
            while not lines(log):  # event 0 holds the one process
                await anyio.sleep(0.005)
        await fire(1)
        await fire(2)
        release.touch()
    modes = {n: context_of(out)["mode"] for n, out in results.items()}
    assert modes == {0: "resident", 1: "oneshot", 2: "oneshot"}
    assert engine._pool is not None and len(engine._pool.processes()) == 1


async def test_a_killed_process_is_replaced_by_a_resident_one(
        engine: Engine, user_dir: Path, project: Path, tmp_path: Path) -> None:
    pool_hook(user_dir, 2)
    log = tmp_path / "events.log"
    log.touch()
    first = context_of(await engine.fire(event(project, log, 1)))
    os.kill(int(first["pid"]), signal.SIGKILL)
    assert engine._pool is not None
    with anyio.fail_after(GATE_BOUND):
        while any(not p.dead for p in engine._pool.processes()):
            await anyio.sleep(0.005)
    second = context_of(await engine.fire(event(project, log, 2)))
    assert second["mode"] == "resident" and second["pid"] != first["pid"]
    # two at once: both resident (the dead one no longer counts against the cap)
    outs: list[Outcome] = []

    async def fire(n: int) -> None:
        outs.append(await engine.fire(event(project, log, n, quorum=4)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(fire, 3)
        tg.start_soon(fire, 4)
    assert sorted(context_of(o)["mode"] for o in outs) == ["resident", "resident"]
    assert len({context_of(o)["pid"] for o in outs}) == 2
    assert first["pid"] not in {context_of(o)["pid"] for o in outs}


async def test_a_stray_line_of_one_process_answers_no_event_of_another(
        engine: Engine, user_dir: Path, project: Path, tmp_path: Path) -> None:
    pool_hook(user_dir, 2)
    log = tmp_path / "events.log"
    log.touch()
    results: dict[int, Outcome] = {}

    async def fire(n: int) -> None:
        results[n] = await engine.fire(event(project, log, n, quorum=2 if n < 2 else 0,
                                             stray=True))

    async with anyio.create_task_group() as tg:
        for n in range(6):
            tg.start_soon(fire, n)
    for n, outcome in results.items():
        assert context_of(outcome)["n"] == str(n), outcome
        assert "n=-1 stray" not in " ".join(outcome.additional_context)
    one_at_a_time(log)


async def test_with_a_shared_store_a_hook_gets_more_than_one_process_by_default(
        user_dir: Path, project: Path, tmp_path: Path, redis_url: str) -> None:
    pool_hook(user_dir, None)
    log = tmp_path / "events.log"
    log.touch()
    want = default_processes(True)
    registry = Registry(user_dir, project)
    outs: list[Outcome] = []
    try:
        async with Engine(registry, Settings(state=redis_url)) as eng:

            async def fire(n: int) -> None:
                outs.append(await eng.fire(event(project, log, n, quorum=want)))

            async with anyio.create_task_group() as tg:
                for n in range(want):
                    tg.start_soon(fire, n)
    finally:
        registry.close()
    assert {context_of(o)["mode"] for o in outs} == {"resident"}
    assert len({context_of(o)["pid"] for o in outs}) == want


# -- a caller's Ctrl-C among 16 threads ---------------------------------------------------------

DRIVER = textwrap.dedent('''\
    import json, signal, sys, threading, time
    from mcp_hooks import Hooks

    project, user_dir, log, release = sys.argv[1:5]
    hooks = Hooks(project, user_dir=user_dir)
    results = {}

    def args(n, **gate):
        return {"tool_name": "Shell", "work_dir": project,
                "tool_input": {"n": n, "log": log, **gate}}

    def fire(n):
        results[n] = hooks.fire("before_tool", **args(n, until=release))

    def waiting():
        worker = hooks._worker
        if worker is None:
            return 0
        return sum(len(s.waiters) for s in list(worker.lane.pool._slots.values()))

    def interrupt():
        bound = time.monotonic() + 60
        while waiting() < 13 and time.monotonic() < bound:  # 12 others and ours, in line
            time.sleep(0.002)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    threads = [threading.Thread(target=fire, args=(n,)) for n in range(15)]
    for t in threads:
        t.start()
    while waiting() < 12:  # 3 events hold the 3 processes, 12 wait in line
        time.sleep(0.002)
    threading.Thread(target=interrupt).start()
    try:
        hooks.fire("before_tool", **args(99, until=release))
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    open(release, "w").close()
    for t in threads:
        t.join()
    pool = hooks._worker.lane.pool
    after = {"busy": sum(p.busy for p in pool.processes()), "procs": len(pool.processes()),
             "waiting": waiting()}
    # three more at once, each waiting for the others: only possible with 3 free processes
    more = {}
    def again(n):
        more[n] = hooks.fire("before_tool", **args(n, quorum=18))
    extra = [threading.Thread(target=again, args=(n,)) for n in (100, 101, 102)]
    for t in extra:
        t.start()
    for t in extra:
        t.join()
    hooks.close()
    print(json.dumps({"interrupted": interrupted, "after": after,
                      "answers": {n: o.additional_context for n, o in
                                  {**results, **more}.items()}}))
''')


def test_a_ctrl_c_in_one_of_16_callers_leaks_no_busy_process(user_dir: Path, project: Path,
                                                              tmp_path: Path) -> None:
    pool_hook(user_dir, 3)
    log, release = tmp_path / "events.log", tmp_path / "release"
    log.touch()
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(project), str(user_dir), str(log), str(release)],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["interrupted"] is True
    assert report["after"] == {"busy": 0, "procs": 3, "waiting": 0}
    assert sorted(int(n) for n in report["answers"]) == [*range(15), 100, 101, 102]
    for n, context in report["answers"].items():
        assert context and context[0].startswith(f"n={n} ") and context[0].endswith(
            "resident"), (n, context)
    records = lines(log)
    assert 99 not in {n for _, _, n, _ in records}, "the interrupted event still ran"
    assert len({pid for _, pid, _, _ in records}) == 3
    one_at_a_time(log)


async def test_an_event_waiting_past_its_timeout_times_out_and_kills_no_process(
        user_dir: Path, project: Path, tmp_path: Path) -> None:
    spec, _ = load_hook(pool_hook(user_dir, 2), "user")
    log, release = tmp_path / "events.log", tmp_path / "release"
    log.touch()
    pool = PersistentPool()
    results: dict[int, RunResult] = {}

    async def run(n: int, timeout: float, **gate: Any) -> None:
        stdin = json.dumps({"tool_name": "Shell", "tool_input": {
            "n": n, "log": str(log), **gate}}).encode()
        results[n] = await pool.run(spec, stdin, cwd=str(project), env=dict(os.environ),
                                    timeout=timeout, processes=2)

    try:
        async with anyio.create_task_group() as tg:
            for n in (0, 1):
                tg.start_soon(lambda n=n: run(n, GATE_BOUND, until=str(release)))
            with anyio.fail_after(GATE_BOUND):
                while len(lines(log)) < 2:  # both processes hold an event
                    await anyio.sleep(0.005)
            held = {p.pid for p in pool.processes()}
            await run(2, 0.3)
            release.touch()
        assert {p.pid for p in pool.processes() if not p.dead} == held
    finally:
        await pool.aclose()
    assert results[2].timed_out and b"stayed busy" in results[2].stderr
    assert 2 not in {n for _, _, n, _ in lines(log)}  # it never reached the hook
    for n in (0, 1):
        assert results[n].exit_code == 0 and f"n={n} ".encode() in results[n].stdout


async def test_a_caller_cancelled_as_a_process_is_handed_to_it_hands_it_on(
        user_dir: Path, project: Path, tmp_path: Path) -> None:
    """The process freed by event 0 is handed to the first in line (event 2), whose caller
    is cancelled before it runs again: the process goes on to the next in line (event 3)
    while event 1 still holds the other one."""
    spec, _ = load_hook(pool_hook(user_dir, 2), "user")
    log = tmp_path / "events.log"
    log.touch()
    release = [tmp_path / "release0", tmp_path / "release1"]
    pool = PersistentPool()
    results: dict[int, RunResult] = {}
    tasks: dict[int, asyncio.Task[None]] = {}

    async def run(n: int, timeout: float, **gate: Any) -> None:
        stdin = json.dumps({"tool_name": "Shell", "tool_input": {
            "n": n, "log": str(log), **gate}}).encode()
        results[n] = await pool.run(spec, stdin, cwd=str(project), env=dict(os.environ),
                                    timeout=timeout, processes=2)
        if n == 0:  # right after the hand-over, before event 2's caller runs again
            tasks[2].cancel()

    def waiting() -> int:
        return sum(len(slot.waiters) for slot in pool._slots.values())

    try:
        with anyio.fail_after(GATE_BOUND):
            for n in (0, 1):
                tasks[n] = asyncio.create_task(run(n, GATE_BOUND, until=str(release[n])))
            while len(lines(log)) < 2:
                await anyio.sleep(0.005)
            tasks[2] = asyncio.create_task(run(2, GATE_BOUND))
            while waiting() < 1:
                await anyio.sleep(0.005)
            tasks[3] = asyncio.create_task(run(3, 5))
            while waiting() < 2:
                await anyio.sleep(0.005)
            release[0].touch()
            await tasks[3]  # served while event 1 still holds the other process
            assert not release[1].exists()
            release[1].touch()
            await tasks[1]
            outcome = await asyncio.gather(tasks[2], return_exceptions=True)
            assert isinstance(outcome[0], asyncio.CancelledError)
        assert not any(p.busy for p in pool.processes()) and waiting() == 0
    finally:
        await pool.aclose()
    assert not results[3].timed_out and b"n=3 " in results[3].stdout, results[3]
    assert 2 not in results and 2 not in {n for _, _, n, _ in lines(log)}
    one_at_a_time(log)
