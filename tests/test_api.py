"""``mcp_hooks`` as a library (``mcp_hooks/api.py``): Hooks, fire, afire."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import mcp_hooks
from mcp_hooks import Event, Hooks, Outcome
from mcp_hooks.errors import InvalidEventError, UnknownEventError
from tests.conftest import write_hook
from tests.helpers.servers import redis_service, redis_url  # noqa: F401 - fixtures


def _comparable(outcome: Outcome) -> dict[str, Any]:
    data = outcome.as_dict()
    for run in data["hooks"]:
        run.pop("duration_ms")
    for signal in data.pop("signals"):
        assert signal["header"]["source"]
    return data


def test_nothing_to_wake_is_one_shared_allow(user_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    with Hooks(tmp_path, user_dir=user_dir, log=log) as hooks:
        first = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"})
        again = hooks.fire("pre-tool-call", tool_name="Shell")
        assert first is again and first.decision == "allow" and first.hooks == []
        assert not log.exists()  # the fast path does not log
        write_hook(user_dir, "new-hook")  # picked up by the next event
        woken = hooks.fire("before_tool", tool_name="Shell", tool_input={},
                           work_dir=str(tmp_path))
        assert [h.name for h in woken.hooks] == ["new-hook"]
        assert json.loads(log.read_text().splitlines()[-1])["hooks"][0]["name"] == "new-hook"


def test_a_callable_event_looks_at_the_disk_once(user_dir: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34 item 5: the door's ``wakes`` and the engine share one look per event at each
    change watcher (the hook folders', hooks.yaml's), and a change is still seen at once."""
    from mcp_hooks.registry.watch import ChangeWatcher

    asked: list[int] = []
    changed = ChangeWatcher.changed

    def counted(watcher: ChangeWatcher) -> bool:
        asked.append(id(watcher))
        return changed(watcher)

    monkeypatch.setattr(ChangeWatcher, "changed", counted)
    call = {"tool_name": "Shell", "tool_input": {"command": "ls"}, "work_dir": str(tmp_path)}
    with Hooks(tmp_path, user_dir=user_dir) as hooks:
        hooks.before_tool(lambda tool_input: None, tool="Shell", name="guard")
        hooks.fire("before_tool", **call)  # the watchers are made
        asked.clear()
        for _ in range(5):
            assert [h.status for h in hooks.fire("before_tool", **call).hooks] == ["allow"]
        assert len(asked) == 10 and len(set(asked)) == 2
        write_hook(user_dir, "new-hook")
        assert [h.name for h in hooks.fire("before_tool", **call).hooks] == [
            "new-hook", "guard"]


def test_sync_and_async_give_the_same_outcome(user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "deny-rm", extra="priority: 300\n",
               script='grep -q "rm -rf" && { echo "no rm -rf" >&2; exit 2; }\nexit 0\n')
    write_hook(user_dir, "context", script='echo \'{"additional_context": "be careful"}\'\n')
    with Hooks(tmp_path, user_dir=user_dir) as hooks:
        hooks.before_tool(lambda tool_input: {**tool_input, "seen": True}, priority=200)
        for command in ("ls", "rm -rf /"):
            fields: dict[str, Any] = {"tool_name": "Shell", "tool_input": {"command": command},
                                      "work_dir": str(tmp_path), "session_id": "s"}
            sync = hooks.fire("before_tool", **fields)

            async def both(fields: dict[str, Any] = fields) -> Outcome:
                outcome = await hooks.afire("before_tool", **fields)
                await hooks.aclose()
                return outcome

            assert _comparable(asyncio.run(both())) == _comparable(sync)
        assert sync.denied and sync.reason == "no rm -rf"


def test_fire_inside_a_running_loop_waits_on_the_worker(user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "deny", script="echo nope >&2\nexit 2\n")

    async def agent() -> Outcome:
        # a sync framework callback called from a coroutine: fire still works (blocking)
        return hooks.fire("before_tool", tool_name="Shell", tool_input={},
                          work_dir=str(tmp_path))

    with Hooks(tmp_path, user_dir=user_dir) as hooks:
        assert asyncio.run(agent()).reason == "nope"


def test_fire_from_a_hook_on_the_worker_thread_is_refused(user_dir: Path,
                                                          tmp_path: Path) -> None:
    write_hook(user_dir, "script")  # makes the chain need the worker loop
    with Hooks(tmp_path, user_dir=user_dir) as hooks:
        errors: list[str] = []

        async def nested(tool_input: dict[str, Any]) -> None:
            try:
                hooks.fire("before_tool", tool_name="Shell", tool_input={})
            except RuntimeError as exc:
                errors.append(str(exc))

        hooks.before_tool(nested)
        outcome = hooks.fire("before_tool", tool_name="Shell", tool_input={},
                             work_dir=str(tmp_path))
        assert outcome.decision == "allow"
        assert errors and "would deadlock; use `await hooks.afire(...)`" in errors[0]


def test_fields_an_event_object_and_errors(user_dir: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    write_hook(user_dir, "reader", trigger="before_stop", script=f"cat > {seen}\n")
    with Hooks(tmp_path, user_dir=user_dir) as hooks:
        hooks.fire("before_stop", stop_reason="done", payload={"step_count": 3},
                   work_dir=str(tmp_path))
        payload = json.loads(seen.read_text())
        assert payload["stop_reason"] == "done" and payload["step_count"] == 3
        event = Event.create(event_type="before_stop", work_dir=str(tmp_path),
                             payload={"stop_reason": "again"})
        hooks.fire(event)
        assert json.loads(seen.read_text())["stop_reason"] == "again"
        with pytest.raises(UnknownEventError):
            hooks.fire("PreToolUse")
        with pytest.raises(InvalidEventError, match="tool_input"):
            hooks.fire("before_stop", tool_input="not an object")


def test_module_level_fire_uses_the_project_of_the_current_folder(
        monkeypatch: pytest.MonkeyPatch, project: Path, project_hooks: Path) -> None:
    from mcp_hooks import api

    write_hook(project_hooks, "gate", trigger="before_stop", script="echo keep going >&2\nexit 2\n")
    monkeypatch.chdir(project)
    monkeypatch.setenv("MCP_HOOKS_TRUST_PROJECT_HOOKS", "1")
    monkeypatch.setattr(api, "_DEFAULT", [])
    try:
        outcome = mcp_hooks.fire("before_stop", work_dir=str(project))
        assert outcome.continue_working and outcome.reason == "keep going"
        assert asyncio.run(mcp_hooks.afire("before_stop", work_dir=str(project))).denied
    finally:
        api._DEFAULT[0].close()


# -- persistent hook processes over the Hooks' life ---------------------------------------------

RESIDENT = """\
import json, os, sys
if os.environ.get("MCP_HOOKS_PERSISTENT") == "1":
    for line in sys.stdin:
        print(json.dumps({"additional_context": f"pid={os.getpid()}",
                          "_mcp_hooks_event_id": json.loads(line)["_mcp_hooks_event_id"]}),
              flush=True)
    sys.exit(0)
json.load(sys.stdin)
print(json.dumps({"additional_context": f"pid={os.getpid()}"}))
"""


def _resident(root: Path) -> Path:
    return write_hook(root, "resident", script=RESIDENT, entry="scripts/run.py",
                      extra="metadata:\n  persistent: true\n")


def _pid(outcome: Outcome) -> int:
    [context] = outcome.additional_context
    assert context.startswith("pid="), outcome
    return int(context[4:])


def _alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")  # a zombie counts: it was not reaped


def _gone(pid: int) -> bool:
    for _ in range(500):  # a hang bound, not a timing: a kill from another thread
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_the_engine_of_a_closed_loop_has_its_processes_killed(user_dir: Path,
                                                              tmp_path: Path) -> None:
    _resident(user_dir)
    hooks = Hooks(tmp_path, user_dir=user_dir)
    fields: dict[str, Any] = {"tool_name": "Shell", "tool_input": {}, "work_dir": str(tmp_path)}
    try:
        first = _pid(asyncio.run(hooks.afire("before_tool", **fields)))
        assert _alive(first)  # its loop closed; the lane is dropped when the next one is made
        second = _pid(asyncio.run(hooks.afire("before_tool", **fields)))
        assert second != first and not _alive(first)
        assert _alive(second)
    finally:
        hooks.close()
    assert not _alive(second)  # close() kills the processes of a lane whose loop closed


def test_close_stops_every_lanes_processes(user_dir: Path, tmp_path: Path) -> None:
    _resident(user_dir)
    fields: dict[str, Any] = {"tool_name": "Shell", "tool_input": {}, "work_dir": str(tmp_path)}
    hooks = Hooks(tmp_path, user_dir=user_dir)
    loop = asyncio.new_event_loop()
    try:
        on_loop = _pid(loop.run_until_complete(hooks.afire("before_tool", **fields)))
        on_worker = _pid(hooks.fire("before_tool", **fields))
        assert on_loop != on_worker and _alive(on_loop) and _alive(on_worker)
        hooks.close()  # the idle loop's engine closed on it, the worker's on its thread
        assert not _alive(on_loop) and not _alive(on_worker)
    finally:
        loop.close()


def test_a_removed_hooks_process_stops_on_the_fast_path(user_dir: Path, tmp_path: Path) -> None:
    import shutil

    hook = _resident(user_dir)
    fields: dict[str, Any] = {"tool_name": "Shell", "tool_input": {}, "work_dir": str(tmp_path)}

    async def removed_then_fired(hooks: Hooks) -> tuple[int, Outcome]:
        pid = _pid(await hooks.afire("before_tool", **fields))
        assert _alive(pid)
        shutil.rmtree(hook)
        return pid, await hooks.afire("before_tool", **fields)

    with Hooks(tmp_path, user_dir=user_dir) as hooks:
        on_worker = _pid(hooks.fire("before_tool", **fields))
        loop = asyncio.new_event_loop()
        try:
            pid, after = loop.run_until_complete(removed_then_fired(hooks))
            assert after.hooks == [] and after is hooks.fire("before_tool", **fields)  # fast
            assert not _alive(pid)  # stopped by that event, its engine still open
            assert _gone(on_worker)  # the worker's too (asked from afire, not waited for)
            assert len(hooks._lanes) == 1 and hooks._worker is not None
            loop.run_until_complete(hooks.aclose())
        finally:
            loop.close()


def test_the_sync_fast_path_stops_the_workers_process(user_dir: Path, tmp_path: Path) -> None:
    import shutil

    hook = _resident(user_dir)
    fields: dict[str, Any] = {"tool_name": "Shell", "tool_input": {}, "work_dir": str(tmp_path)}
    with Hooks(tmp_path, user_dir=user_dir) as hooks:
        pid = _pid(hooks.fire("before_tool", **fields))
        shutil.rmtree(hook)
        assert hooks.fire("before_tool", **fields).hooks == []
        assert not _alive(pid)  # waited for: gone when fire returns
        assert hooks._worker is not None  # the worker goes on


# -- one vocabulary -----------------------------------------------------------------------


def test_callables_read_a_hosts_call_in_the_canonical_vocabulary(tmp_path: Path) -> None:
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
    with Hooks(tmp_path, user_dir=tmp_path / "none") as hooks:
        @hooks.before_tool(tool="Bash")  # a host's name matches its canonical one too
        def to_sub(tool_input: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
            seen.append((tool_input, payload))
            return {**tool_input, "cwd": "sub"}

        gemini = hooks.fire("before_tool", tool_name="run_shell_command",
                            tool_input={"command": "make", "directory": "."})
        assert seen[-1][0] == {"command": "make", "cwd": "."}  # Shell's keys
        assert seen[-1][1]["tool_name"] == "Shell"
        assert seen[-1][1]["host"] == {"tool_name": "run_shell_command",
                                       "tool_input": {"command": "make", "directory": "."}}
        assert gemini.modified_input == {"command": "make", "directory": "sub"}  # Gemini's key
        event = hooks.fire(Event(event_type="before_tool", tool_name="shell",
                                 tool_input={"cmd": "make"}))  # an Event is read the same
        assert seen[-1][0] == {"command": "make"}  # Codex's cmd is Shell's command
        assert event.modified_input == {"cmd": "make", "cwd": "sub"}  # Codex's cmd again
        assert hooks.fire("before_tool", tool_name="PowerShell",
                          tool_input={"command": "x"}).modified_input is None  # not Shell


def test_a_rewrite_the_callers_tool_cannot_take_is_refused(tmp_path: Path) -> None:
    with Hooks(tmp_path, user_dir=tmp_path / "none") as hooks:
        hooks.before_tool(lambda tool_input: {**tool_input, "edits": [
            {"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}]},
            tool="EditFile")
        edit = {"file_path": "x.py", "old_string": "a", "new_string": "b"}
        outcome = hooks.fire("before_tool", tool_name="Edit", tool_input=edit)
    # Claude Code's Edit takes one edit: running the original would run what a hook replaced
    assert outcome.denied and "takes exactly one edit" in (outcome.reason or "")


def test_two_hooks_objects_on_one_shared_store_act_as_one(user_dir: Path, tmp_path: Path,
                                                          redis_url: str) -> None:  # noqa: F811
    """Two Hooks (two replicas of an app) with Settings(state=redis://...): the loop guard's
    cap counts across both, and both log their events into the store."""
    from mcp_hooks import Settings
    from mcp_hooks.state.url import open_store

    write_hook(user_dir, "gate", trigger="before_stop", script="echo 'not yet' >&2\nexit 2\n")
    settings = Settings(user_dir=user_dir, state=redis_url, stop_block_cap=2)
    with Hooks(settings=settings) as one, Hooks(settings=settings) as two:
        stops = [(one, two)[n % 2].fire("before_stop", session_id="app-s", work_dir=str(tmp_path))
                 for n in range(4)]
    assert [o.continue_working for o in stops] == [True, True, False, True]
    reader = open_store(redis_url)
    try:
        events = [r for r in reader.read("events", "app-s") if r.get("kind") == "event"]
    finally:
        reader.close()  # type: ignore[attr-defined]
    assert len(events) == 4 and len({r["replica"] for r in events}) == 1, events  # one process
    assert [bool(r.get("blocked_by")) for r in events] == [True, True, False, True], events


def test_a_guard_skipped_for_want_of_trust_is_logged_once_per_session(
        project: Path, project_hooks: Path, untrusted: None,
        caplog: pytest.LogCaptureFixture) -> None:
    write_hook(project_hooks, "no-push", script="echo 'no push' >&2\nexit 2\n")
    caplog.set_level("WARNING", logger="mcp_hooks")
    with Hooks(project) as hooks:
        first = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"},
                           session_id="s1")
        hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"},
                   session_id="s1")

        async def other_session() -> Outcome:
            return await hooks.afire("before_tool", tool_name="Shell",
                                     tool_input={"command": "ls"}, session_id="s2")

        asyncio.run(other_session())
    assert not first.denied and any("no-push" in w for w in first.warnings)
    told = [r for r in caplog.records if r.name == "mcp_hooks" and "no-push" in r.getMessage()]
    assert len(told) == 2, [r.getMessage() for r in caplog.records]  # s1 once, s2 once
    assert all(r.levelname == "WARNING" and "mcp-hooks trust" in r.getMessage() for r in told)
