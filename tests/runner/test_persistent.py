"""Persistent hooks (``metadata.persistent: true``): one process per hook and project, one
event per line, through the engine, the pool and the MCP server, with real processes.

The hook scripts here speak the protocol by hand (no hookkit): in persistent mode
(``MCP_HOOKS_PERSISTENT=1``) a loop over stdin lines, else today's one-shot contract. What a
script does for an event is chosen by ``tool_input.do``.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_hooks.engine.engine import Engine
from mcp_hooks.errors import HookFileError
from mcp_hooks.registry.digest import hook_digest
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.runner.persistent import PersistentPool
from mcp_hooks.server import build_server
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from mcp_hooks.spec.hookfile import load_hook
from mcp_hooks.spec.outcome import Event, Outcome
from mcp_hooks.state.eventlog import EventLog
from tests.conftest import write_hook

pytestmark = pytest.mark.anyio

HOOK_PY = textwrap.dedent('''\
    import json, os, subprocess, sys, time

    def answer(ev):
        do = (ev.get("tool_input") or {}).get("do", "allow")
        pid = os.getpid()
        if do == "crash":
            sys.stderr.write("crashing now\\n"); sys.stderr.flush(); os._exit(3)
        if do == "exit2":
            os._exit(2)
        if do == "hang":
            time.sleep(600)
        if do == "garbage":
            return "this is not json"
        if do == "list":
            return "[1, 2]"
        if do == "huge":
            return json.dumps({"additional_context": "x" * (2 << 20)})
        if do == "deny":
            sys.stderr.write(f"denied by {pid}\\n"); sys.stderr.flush()
            return json.dumps({"exit_code": 2})
        if do == "reason":
            return json.dumps({"exit_code": 2, "reason": "said in the answer"})
        if do == "odd":
            return json.dumps({"exit_code": "two"})
        if do == "lone":  # a lone surrogate in the rewrite: escaped by json.dumps
            return json.dumps({"modified_input": {"command": "rm -f ./\\udc80"}})
        if do == "rewrite":
            return json.dumps({"modified_input": {"do": "allow", "note": "rewritten"},
                               "additional_context": f"pid={pid}"})
        sys.stderr.write(f"event {ev['tool_name']} in {pid}\\n"); sys.stderr.flush()
        return json.dumps({"additional_context": f"pid={pid}{KIDS}"})

    KIDS = ""
    if os.environ.get("MCP_HOOKS_PERSISTENT") == "1":
        marker = os.environ.get("PERSIST_MARKER")
        if marker:
            with open(marker, "a") as f:
                f.write(f"{os.getpid()}\\n")
        if os.environ.get("PERSIST_KIDS"):
            kids = [subprocess.Popen(["sleep", "600"]),
                    subprocess.Popen(["sleep", "600"], start_new_session=True)]
            KIDS = " kids=" + ",".join(str(k.pid) for k in kids)
        for line in sys.stdin:
            ev = json.loads(line)
            event_id = ev.pop("_mcp_hooks_event_id")
            out = answer(ev)
            try:
                data = json.loads(out)
            except ValueError:
                data = None
            if isinstance(data, dict):  # an answer echoes its event's id
                data["_mcp_hooks_event_id"] = event_id
                out = json.dumps(data)
            sys.stdout.write(out + "\\n")
            sys.stdout.flush()
        sys.exit(0)
    out = answer(json.load(sys.stdin))
    data = json.loads(out)
    code = data.pop("exit_code", 0)
    if code == 2 and data.get("reason"):
        sys.stderr.write(data["reason"])
    if data:
        print(json.dumps(data))
    sys.exit(code)
''')


def persistent_hook(root: Path, name: str = "resident", *, extra: str = "",
                    script: str = HOOK_PY) -> Path:
    return write_hook(root, name, script=script, entry="scripts/run.py",
                      extra="metadata:\n  persistent: true\n" + extra)


def pid_of(outcome: Outcome) -> int:
    found = re.search(r"pid=(\d+)", " ".join(outcome.additional_context))
    assert found, outcome
    return int(found.group(1))


def alive(pid: int) -> bool:
    """Whether ``pid`` still exists (a zombie counts: it was not reaped)."""
    return os.path.exists(f"/proc/{pid}")


async def gone(pid: int) -> bool:
    for _ in range(500):  # a hang bound, not a timing: it is normally gone at once
        if not alive(pid):
            return True
        await anyio.sleep(0.02)
    return False


def event(project: Path, do: str = "allow", tool: str = "Shell", **extra: Any) -> Event:
    return Event.create(event_type="before_tool", tool_name=tool, tool_input={"do": do, **extra},
                        work_dir=str(project))


@pytest.fixture
async def engine(user_dir: Path, project: Path, tmp_path: Path) -> AsyncIterator[Engine]:
    registry = Registry(user_dir, project)
    async with Engine(registry, log=EventLog(tmp_path / "events.jsonl")) as eng:
        yield eng
    registry.close()


# -- HOOK.md ---------------------------------------------------------------------------------


def test_metadata_persistent_is_read_and_checked(user_dir: Path) -> None:
    spec, _ = load_hook(persistent_hook(user_dir), "user")
    assert spec.persistent is True
    plain, _ = load_hook(write_hook(user_dir, "plain"), "user")
    assert plain.persistent is False
    bad = write_hook(user_dir, "bad", extra="metadata:\n  persistent: 'yes'\n")
    with pytest.raises(HookFileError) as info:
        load_hook(bad, "user")
    assert info.value.field == "metadata.persistent" and "true" in str(info.value)
    both = write_hook(user_dir, "both", extra="async: true\nmetadata:\n  persistent: true\n")
    spec, warnings = load_hook(both, "user")
    assert spec.persistent is False and "metadata.persistent" in warnings[0]


# -- one process, many events ----------------------------------------------------------------


async def test_one_process_serves_many_events(engine: Engine, user_dir: Path,
                                              project: Path) -> None:
    persistent_hook(user_dir)
    pids = {pid_of(await engine.fire(event(project))) for _ in range(5)}
    assert len(pids) == 1
    pid = pids.pop()
    assert pid != os.getpid() and alive(pid)
    assert engine._pool is not None and list(engine._pool.pids().values()) == [pid]


async def test_deny_rewrite_and_a_one_shot_hook_after_it(engine: Engine, user_dir: Path,
                                                         project: Path) -> None:
    persistent_hook(user_dir, extra="priority: 500\n")
    # a one-shot sh hook after it sees the input as rewritten
    write_hook(user_dir, "after", script='cat > "$PWD/seen.json"\n'
               'echo \'{"additional_context": "one-shot ran"}\'\n')
    out = await engine.fire(event(project, "rewrite"))
    assert out.decision == "allow" and out.modified_input == {"do": "allow", "note": "rewritten"}
    assert "one-shot ran" in out.additional_context
    seen = json.loads((project / "seen.json").read_text())
    assert seen["tool_input"] == {"do": "allow", "note": "rewritten"}
    (project / "seen.json").unlink()
    denied = await engine.fire(event(project, "deny"))
    assert denied.decision == "deny" and denied.blocked_by == "resident"
    pid = int(re.findall(r"denied by (\d+)", denied.reason or "")[0])
    assert not (project / "seen.json").exists()  # the first deny ends the chain
    said = await engine.fire(event(project, "reason"))
    assert said.decision == "deny" and said.reason == "said in the answer"
    again = await engine.fire(event(project))
    assert pid_of(again) == pid  # a deny is an answer, not a failure: same process


async def test_stderr_is_each_runs_own(user_dir: Path, project: Path) -> None:
    spec, _ = load_hook(persistent_hook(user_dir), "user")
    pool = PersistentPool()
    try:
        results = []
        for tool in ("First", "Second"):
            stdin = json.dumps({"tool_name": tool, "tool_input": {}}).encode()
            results.append(await pool.run(spec, stdin, cwd=str(project), env=dict(os.environ),
                                          timeout=30))
    finally:
        await pool.aclose()
    assert [r.exit_code for r in results] == [0, 0]
    assert results[0].stderr.startswith(b"event First in ")
    assert results[1].stderr.startswith(b"event Second in ") and b"First" not in results[1].stderr
    assert json.loads(results[0].stdout)["additional_context"].startswith("pid=")


# -- failures ----------------------------------------------------------------------------------


async def test_timeout_kills_and_the_next_event_restarts(engine: Engine, user_dir: Path,
                                                         project: Path) -> None:
    persistent_hook(user_dir, extra="timeout: 300\n")
    first = pid_of(await engine.fire(event(project)))
    out = await engine.fire(event(project, "hang"))
    assert out.decision == "allow" and out.hooks[0].status == "timeout"
    assert "timed out" in " ".join(out.warnings)
    assert await gone(first)
    second = pid_of(await engine.fire(event(project)))
    assert second != first


@pytest.mark.parametrize("on_error", ["allow", "block"])
async def test_crash_is_a_failure_judged_by_on_error(user_dir: Path, project: Path,
                                                     on_error: str) -> None:
    persistent_hook(user_dir, extra=f"  on_error: {on_error}\n")
    async with Engine(Registry(user_dir, project)) as engine:
        first = pid_of(await engine.fire(event(project)))
        for do in ("crash", "exit2"):  # a crash with status 2 is still no deny of its own
            out = await engine.fire(event(project, do))
            assert out.hooks[0].status == "error", out
            if on_error == "block":
                assert out.decision == "deny" and "fails closed" in (out.reason or "")
            else:
                assert out.decision == "allow"
                assert "exited" in " ".join(out.warnings)
        assert await gone(first)
        crash = await engine.fire(event(project, "crash"))
        assert "crashing now" in " ".join(crash.warnings) + (crash.reason or "")
        # restarted (backoff or not, the event is decided): a new process, or one-shot
        later = await engine.fire(event(project))
        assert later.decision == "allow" and pid_of(later) != first


@pytest.mark.parametrize("do", ["garbage", "list"])
async def test_an_answer_that_is_not_a_json_object_line_is_no_answer(
        engine: Engine, user_dir: Path, project: Path, do: str) -> None:
    persistent_hook(user_dir, extra="timeout: 300\n")
    first = pid_of(await engine.fire(event(project)))
    out = await engine.fire(event(project, do))  # no id echoed: it never answered
    assert out.decision == "allow" and out.hooks[0].status == "timeout", out
    assert "timed out" in " ".join(out.warnings)
    assert pid_of(await engine.fire(event(project))) != first and await gone(first)


async def test_an_odd_exit_code_is_a_failure_of_that_event(engine: Engine, user_dir: Path,
                                                           project: Path) -> None:
    persistent_hook(user_dir)
    first = pid_of(await engine.fire(event(project)))
    out = await engine.fire(event(project, "odd"))
    assert out.decision == "allow" and out.hooks[0].status == "error", out
    assert "exit_code must be 0 or 2" in " ".join(out.warnings)
    assert pid_of(await engine.fire(event(project))) == first  # an answer, in step: kept


async def test_a_huge_answer_is_a_failure_and_restarts(engine: Engine, user_dir: Path,
                                                       project: Path) -> None:
    persistent_hook(user_dir, extra="  on_error: block\n")
    first = pid_of(await engine.fire(event(project)))
    out = await engine.fire(event(project, "huge"))
    assert out.decision == "deny" and "over 1 MiB" in (out.reason or "")
    assert await gone(first)
    assert pid_of(await engine.fire(event(project))) != first


async def test_backoff_runs_the_hook_one_shot(user_dir: Path, project: Path) -> None:
    spec, _ = load_hook(persistent_hook(user_dir), "user")
    pool = PersistentPool(backoff=(0.0, 600.0))
    env = dict(os.environ)

    async def run(do: str) -> Any:
        stdin = json.dumps({"tool_name": "Shell", "tool_input": {"do": do}}).encode()
        return await pool.run(spec, stdin, cwd=str(project), env=env, timeout=30)

    try:
        assert (await run("crash")).exit_code == 3  # the first restart is at once
        crashed = await run("crash")
        assert crashed.exit_code == 3 and b"backoff 600 s" in crashed.stderr
        assert pool.pids() == {}
        one_shot = await run("allow")  # in the backoff: one-shot, never denied or skipped
        assert one_shot.exit_code == 0 and b"(backoff)" in one_shot.stderr
        assert b"ran one-shot" in one_shot.stderr
        denied = await run("deny")
        assert denied.exit_code == 2 and denied.stderr.startswith(b"denied by")
        assert pool.pids() == {}
    finally:
        await pool.aclose()


# -- changes and trust -----------------------------------------------------------------------


async def test_a_changed_hook_gets_a_new_process(engine: Engine, user_dir: Path,
                                                 project: Path) -> None:
    hook = persistent_hook(user_dir)
    first = pid_of(await engine.fire(event(project)))
    text = (hook / "HOOK.md").read_text().replace("test hook resident", "changed")
    (hook / "HOOK.md").write_text(text)
    engine.registry.rescan()
    second = pid_of(await engine.fire(event(project)))
    assert second != first and await gone(first)
    script = hook / "scripts" / "run.py"
    with open(script, "a") as f:  # an in-place edit of the script alone
        f.write("# edited\n")
    third = pid_of(await engine.fire(event(project)))
    assert third != second and await gone(second)


async def test_untrusted_project_hook_never_starts(untrusted: None, user_dir: Path,
                                                   project: Path, project_hooks: Path,
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "started"
    monkeypatch.setenv("PERSIST_MARKER", str(marker))
    hook = persistent_hook(project_hooks)
    store = TrustStore(tmp_path / "trust.json")
    registry = Registry(user_dir, project, trust_project_hooks=False, trust_store=store)
    async with Engine(registry) as engine:
        out = await engine.fire(event(project))
        assert out.hooks == [] and "not trusted" in out.warnings[0]
        assert not marker.exists()
        store.trust(project, {"resident": hook_digest(hook)})
        registry.rescan()
        first = pid_of(await engine.fire(event(project)))
        with open(hook / "scripts" / "run.py", "a") as f:
            f.write("# edited after it was trusted\n")
        registry.rescan()
        held = await engine.fire(event(project))
        assert held.hooks == []  # edited after it was trusted: held back, no event reaches it
        assert marker.read_text().split() == [str(first)]
        store.trust(project, {"resident": hook_digest(hook)})
        registry.rescan()
        # trusted again: a new process runs the new script; the old one was stopped
        assert pid_of(await engine.fire(event(project))) != first
        assert await gone(first)
        assert len(marker.read_text().split()) == 2


# -- lifetime ----------------------------------------------------------------------------------


async def test_closing_the_engine_leaves_no_process(user_dir: Path, project: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSIST_KIDS", "1")
    persistent_hook(user_dir)
    registry = Registry(user_dir, project)
    async with Engine(registry) as engine:
        out = await engine.fire(event(project))
        pid = pid_of(out)
        kids = [int(k) for k in re.findall(r"kids=([\d,]+)", out.additional_context[0])[0]
                .split(",")]
        assert all(alive(p) for p in [pid, *kids])
    registry.close()
    for p in (pid, *kids):
        assert await gone(p), f"process {p} survived the engine"


async def test_one_shot_engine_runs_it_one_shot_with_the_same_decisions(
        user_dir: Path, project: Path) -> None:
    persistent_hook(user_dir)
    one_shot = Engine(Registry(user_dir, project, watch=False), one_shot=True)
    async with Engine(Registry(user_dir, project)) as resident:
        for do in ("allow", "deny", "reason", "rewrite", "lone"):
            a = one_shot.fire_blocking(event(project, do))
            b = await resident.fire(event(project, do))
            assert (a.decision, a.modified_input) == (b.decision, b.modified_input), do
            if do == "reason":
                assert a.reason == b.reason == "said in the answer"
            if do == "lone":  # kept, never a "?" (a shell glob) in the rewritten command
                assert b.modified_input == {"command": "rm -f ./\udc80"}
        pids = {pid_of(one_shot.fire_blocking(event(project))) for _ in range(2)}
        assert len(pids) == 2  # a process per event
        assert one_shot._pool is None


async def test_through_the_mcp_server_in_memory(user_dir: Path, project: Path,
                                                project_hooks: Path, tmp_path: Path) -> None:
    persistent_hook(project_hooks)
    async with HookService(Settings.from_env(project_dir=project, user_dir=user_dir,
                                    log=tmp_path / "e.jsonl"),
                           watch_interval=0.05) as service, Client(build_server(service)) as client:
        pids = []
        for _ in range(2):
            result = await client.call_tool("fire_hook_event", {
                "event_type": "before_tool", "tool_name": "Shell",
                "tool_input": {"do": "allow"}})
            assert not result.is_error and result.structured_content is not None
            context = " ".join(result.structured_content["additional_context"])
            pids.append(int(re.findall(r"pid=(\d+)", context)[0]))
        assert pids[0] == pids[1]
    assert await gone(pids[0])


async def test_busy_process_runs_a_concurrent_event_one_shot(user_dir: Path,
                                                             project: Path) -> None:
    spec, _ = load_hook(persistent_hook(user_dir), "user")
    pool = PersistentPool()
    env = dict(os.environ)
    results: dict[str, Any] = {}

    async def run(key: str, do: str, timeout: float) -> None:
        stdin = json.dumps({"tool_name": "Shell", "tool_input": {"do": do}}).encode()
        results[key] = await pool.run(spec, stdin, cwd=str(project), env=env, timeout=timeout)

    try:
        await run("warm", "allow", 30)
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "slow", "hang", 1.0)
            while not any(proc.busy for proc in pool.processes()):
                await anyio.sleep(0.001)  # the slow event is in flight: the next one starts
            tg.start_soon(run, "quick", "allow", 30)
    finally:
        await pool.aclose()
    assert results["slow"].timed_out
    assert results["quick"].exit_code == 0 and b"busy" in results["quick"].stderr


# -- pruning: processes of hooks gone since ------------------------------------------------------


async def test_a_removed_hooks_process_stops_at_the_next_event(engine: Engine, user_dir: Path,
                                                                project: Path) -> None:
    import shutil

    hook = persistent_hook(user_dir)
    kept = persistent_hook(user_dir, "kept", extra="matcher:\n  tool: Kept\n")
    pid = pid_of(await engine.fire(event(project)))
    other = pid_of(await engine.fire(event(project, tool="Kept")))
    assert alive(pid) and alive(other) and pid != other
    shutil.rmtree(hook)
    out = await engine.fire(event(project, tool="Elsewhere"))  # an event no hook takes
    assert out.hooks == []
    assert not alive(pid)  # stopped and reaped within that event, the engine still open
    assert engine._pool is not None and not engine._pool.closed
    assert list(engine._pool.pids().values()) == [other]  # a hook still there keeps its own
    assert pid_of(await engine.fire(event(project, tool="Kept"))) == other
    shutil.rmtree(kept)
    await engine.fire(event(project, tool="Elsewhere"))
    assert not alive(other) and engine._pool.pids() == {}


async def test_a_hook_held_back_by_trust_has_its_process_stopped(
        untrusted: None, user_dir: Path, project: Path, project_hooks: Path,
        tmp_path: Path) -> None:
    hook = persistent_hook(project_hooks)
    store = TrustStore(tmp_path / "trust.json")
    store.trust(project, {"resident": hook_digest(hook)})
    registry = Registry(user_dir, project, trust_project_hooks=False, trust_store=store)
    async with Engine(registry) as engine:
        pid = pid_of(await engine.fire(event(project)))
        (hook / "scripts" / "helper.py").write_text("# added after it was trusted\n")
        held = await engine.fire(Event.create(event_type="session_start",
                                              work_dir=str(project)))
        assert "not trusted" in " ".join(held.warnings) or held.hooks == []
        assert not alive(pid)
    registry.close()


async def test_the_server_stops_a_removed_hooks_process_without_an_event(
        user_dir: Path, project: Path, project_hooks: Path, tmp_path: Path) -> None:
    import shutil

    hook = persistent_hook(project_hooks)
    async with HookService(Settings.from_env(project_dir=project, user_dir=user_dir,
                                    log=tmp_path / "e.jsonl", trust_project_hooks=True),
                           watch_interval=0.05) as service:
        pid = pid_of(await service.fire(event(project)))
        assert alive(pid)
        shutil.rmtree(hook)
        assert await gone(pid)  # the watcher saw the reload: no event, the service still open
        assert service._tg is not None
