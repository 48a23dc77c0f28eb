"""Python callables as hooks (``mcp_hooks/engine/callables.py``) in one chain with HOOK.md hooks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Hooks
from mcp_hooks.engine.callables import CallableHookError
from mcp_hooks.errors import UnknownEventError
from tests.conftest import write_hook


@pytest.fixture
def hooks(user_dir: Path, project: Path) -> Any:
    with Hooks(project, user_dir=user_dir, trust_project_hooks=True) as made:
        yield made


def _recorder(seen: list[str], tag: str, result: Any = None) -> Any:
    def hook(value: Any) -> Any:
        seen.append(tag)
        return result
    hook.__qualname__ = tag
    return hook


def test_raising_denies_with_the_message(hooks: Hooks) -> None:
    @hooks.before_tool(tool="Shell")
    def no_rm(tool_input: dict[str, Any]) -> None:
        if "rm -rf" in tool_input["command"]:
            raise PermissionError("rm -rf is not allowed here")

    denied = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "rm -rf /"})
    assert denied.denied and denied.reason == "rm -rf is not allowed here"
    assert denied.blocked_by == "test_raising_denies_with_the_message.<locals>.no_rm"
    assert [(h.mode, h.status, h.exit_code) for h in denied.hooks] == [("sync", "deny", 2)]
    allowed = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"})
    assert allowed.decision == "allow" and allowed.modified_input is None
    # the matcher is a HOOK.md matcher: another tool does not wake it
    other = hooks.fire("before_tool", tool_name="ReadFile", tool_input={"command": "rm -rf"})
    assert other.decision == "allow" and other.hooks == []


def test_an_exception_without_a_message_still_says_what(hooks: Hooks) -> None:
    def fails(value: Any) -> None:
        raise RuntimeError

    hooks.on("before_stop", fails)
    outcome = hooks.fire("before_stop", session_id="s1")
    assert outcome.denied and outcome.continue_working
    assert outcome.reason is not None and "RuntimeError" in outcome.reason


def test_a_rewrite_chains_into_the_next_hook_md_hook(hooks: Hooks, user_dir: Path,
                                                     tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    write_hook(user_dir, "after-callable", extra="priority: 10\n", script=f"cat > {seen}\n")

    @hooks.before_tool(priority=500)  # higher runs first: before the HOOK.md hook at 10
    def add_flag(tool_input: dict[str, Any]) -> dict[str, Any]:
        tool_input["command"] += " --dry-run"  # a copy: changing it alone does nothing
        return tool_input

    outcome = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "deploy"},
                         work_dir=str(tmp_path))
    assert [h.name for h in outcome.hooks] == [
        "test_a_rewrite_chains_into_the_next_hook_md_hook.<locals>.add_flag", "after-callable"]
    assert json.loads(seen.read_text())["tool_input"] == {"command": "deploy --dry-run"}
    assert outcome.modified_input == {"command": "deploy --dry-run"}


def test_a_hook_md_rewrite_reaches_the_callable(hooks: Hooks, user_dir: Path,
                                                tmp_path: Path) -> None:
    write_hook(user_dir, "rewriter", extra="priority: 900\n",
               script='echo \'{"modified_input": {"command": "ls -l"}}\'\n')
    got: list[Any] = []
    hooks.before_tool(lambda tool_input: got.append(tool_input))
    outcome = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"},
                         work_dir=str(tmp_path))
    assert got == [{"command": "ls -l"}] and outcome.modified_input == {"command": "ls -l"}


def test_the_input_is_a_copy(hooks: Hooks) -> None:
    original = {"command": "ls", "env": {"A": "1"}}

    @hooks.before_tool
    def meddle(tool_input: dict[str, Any]) -> None:
        tool_input["env"]["A"] = "2"

    outcome = hooks.fire("before_tool", tool_name="Shell", tool_input=original)
    assert original == {"command": "ls", "env": {"A": "1"}} and outcome.modified_input is None


def test_after_hooks_replace_the_output_in_turn(hooks: Hooks) -> None:
    hooks.after_tool(lambda output: output.upper())
    hooks.after_tool(lambda output, payload: f"{output} ({payload['tool_name']})")
    outcome = hooks.fire("after_tool", tool_name="Shell", tool_input={}, tool_output="done")
    assert outcome.modified_output == "DONE (Shell)"


def test_order_priority_then_hook_md_then_instance_then_class(user_dir: Path,
                                                              tmp_path: Path) -> None:
    class AgentHooks(Hooks):
        pass

    class Special(AgentHooks):
        pass

    seen: list[str] = []
    log = tmp_path / "order"
    write_hook(user_dir, "md-100", script=f"echo md-100 >> {log}\n")
    write_hook(user_dir, "md-300", extra="priority: 300\n", script=f"echo md-300 >> {log}\n")
    AgentHooks.class_hook("before_tool", _recorder(seen, "class-a"))
    try:
        with Special(user_dir=user_dir) as hooks, AgentHooks(user_dir=user_dir) as plain:
            Special.class_hook("before_tool", _recorder(seen, "class-special"))
            hooks.on("before_tool", _recorder(seen, "instance-1"))
            hooks.on("before_tool", _recorder(seen, "instance-2"))
            hooks.on("before_tool", _recorder(seen, "instance-top"), priority=200)
            AgentHooks.class_hook("before_tool", _recorder(seen, "class-b"))
            outcome = hooks.fire("before_tool", tool_name="Shell", tool_input={},
                                 work_dir=str(tmp_path))
            assert [h.name for h in outcome.hooks] == [
                "md-300", "instance-top", "md-100", "instance-1", "instance-2",
                "class-a", "class-special", "class-b"]
            assert [h.scope for h in outcome.hooks] == [
                "user", "instance", "user", "instance", "instance", "class", "class", "class"]
            assert seen == ["instance-top", "instance-1", "instance-2", "class-a",
                            "class-special", "class-b"]
            # a class hook of the subclass does not reach the base class's instances
            seen.clear()
            plain.fire("before_tool", tool_name="Shell", tool_input={}, work_dir=str(tmp_path))
            assert seen == ["class-a", "class-b"]
    finally:
        AgentHooks.clear_class_hooks()
        Special.clear_class_hooks()
    assert log.read_text().split() == ["md-300", "md-100", "md-300", "md-100"]


def test_remove_and_a_deny_stops_the_chain(hooks: Hooks) -> None:
    seen: list[str] = []
    first = hooks.add(_recorder(seen, "first"), "before_tool", priority=300)

    def deny(value: Any) -> None:
        raise ValueError("stop here")

    hooks.on("before_tool", deny, priority=200)
    hooks.on("before_tool", _recorder(seen, "never"), priority=100)
    assert hooks.fire("before_tool", tool_name="Shell", tool_input={}).reason == "stop here"
    assert seen == ["first"]
    hooks.remove(first)
    hooks.remove(deny)
    assert hooks.fire("before_tool", tool_name="Shell", tool_input={}).decision == "allow"
    assert seen == ["first", "never"]
    with pytest.raises(ValueError, match="not registered"):
        hooks.remove(deny)


def test_a_return_value_where_nothing_can_change_is_a_warning(hooks: Hooks) -> None:
    hooks.on("session_start", lambda payload: {"anything": 1})
    hooks.before_tool(lambda tool_input: "not a dict")
    start = hooks.fire("session_start")
    assert start.decision == "allow" and "not session_start; ignored" in start.warnings[0]
    tool = hooks.fire("before_tool", tool_name="Shell", tool_input={})
    assert tool.modified_input is None and "must return the new tool_input" in tool.warnings[0]


def test_registration_errors_name_the_argument(hooks: Hooks) -> None:
    with pytest.raises(CallableHookError, match=r"^tool/pattern: 'before_stop' has no tool"):
        hooks.on("before_stop", lambda v: None, tool="Shell")
    with pytest.raises(CallableHookError, match=r"^priority: must be an integer from 0 to 1000"):
        hooks.on("before_tool", lambda v: None, priority=5000)
    with pytest.raises(CallableHookError, match=r"^fn: 'x' is not callable"):
        hooks.on("before_tool", "x")  # type: ignore[arg-type]
    with pytest.raises(UnknownEventError, match="PreToolUse"):
        hooks.on("PreToolUse", lambda v: None)


@pytest.mark.anyio
async def test_async_callables_are_awaited_in_the_chain(hooks: Hooks) -> None:
    async def slow_guard(tool_input: dict[str, Any]) -> dict[str, Any]:
        import asyncio

        await asyncio.sleep(0)
        return {**tool_input, "checked": True}

    hooks.before_tool(slow_guard)
    outcome = await hooks.afire("before_tool", tool_name="Shell", tool_input={"a": 1})
    assert outcome.modified_input == {"a": 1, "checked": True}
    # fire (sync) runs an async callable on its worker loop
    assert hooks.fire("before_tool", tool_name="Shell", tool_input={"a": 2}).modified_input == {
        "a": 2, "checked": True}
