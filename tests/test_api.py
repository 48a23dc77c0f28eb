"""``mcp_hooks`` as a library (``mcp_hooks/api.py``): Hooks, fire, afire."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import mcp_hooks
from mcp_hooks import Event, Hooks, Outcome
from mcp_hooks.errors import InvalidEventError, UnknownEventError
from tests.conftest import write_hook


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
