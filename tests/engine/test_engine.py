"""The engine against real hook folders and real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_hooks import Engine, Event, EventLog, Registry
from mcp_hooks.engine.launch import AsyncJob
from mcp_hooks.engine.stopguard import STOP_STATE_TTL, StopGuard
from mcp_hooks.errors import ConfigError, InvalidEventError, UnknownEventError
from mcp_hooks.runner import RunResult
from mcp_hooks.settings import Settings
from mcp_hooks.spec.outcome import AGENT_TEXT_CAP, HookRun, Outcome, fault_outcome
from mcp_hooks.state.files import FileStore
from tests.conftest import write_hook
from tests.helpers.ways import GONE_WITHIN, proc_state


async def fire(registry: Registry, log: EventLog | None = None, cap: int = 8,
               **fields: Any) -> Outcome:
    async with Engine(registry, settings=Settings(stop_block_cap=cap), log=log) as engine:
        return await engine.fire(Event.create(**fields))


def shell(tool_input: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    return {"event_type": "before_tool", "tool_name": "Shell",
            "tool_input": tool_input or {"command": "ls"}, **more}


# -- exit codes and stdout shapes ---------------------------------------------------------


@pytest.mark.anyio
async def test_no_hooks_allows(user_dir: Path, project: Path) -> None:
    outcome = await fire(Registry(user_dir, project), **shell())
    assert outcome.decision == "allow"
    assert outcome.hooks == [] and outcome.reason is None and outcome.modified_input is None


@pytest.mark.anyio
async def test_exit_2_denies_with_stderr_as_reason(user_dir: Path, project: Path) -> None:
    write_hook(user_dir, "no-rm", script="cat >/dev/null\necho 'rm is not allowed' >&2\nexit 2\n")
    outcome = await fire(Registry(user_dir, project), **shell({"command": "rm -rf x"}))
    assert outcome.decision == "deny"
    assert outcome.reason == "rm is not allowed"
    assert outcome.blocked_by == "no-rm"
    assert outcome.continue_working is False
    assert outcome.hooks[0].status == "deny" and outcome.hooks[0].exit_code == 2


@pytest.mark.anyio
async def test_exit_2_without_stderr_still_denies_with_a_reason(user_dir: Path) -> None:
    write_hook(user_dir, "silent", script="exit 2\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.denied
    assert "silent" in (outcome.reason or "") and "no reason" in (outcome.reason or "")


@pytest.mark.parametrize("stdout", [
    '{"decision": "deny", "reason": "json says no"}',
    '{"decision": "block", "reason": "json says no"}',
])
@pytest.mark.anyio
async def test_stdout_json_deny_and_block(user_dir: Path, stdout: str) -> None:
    write_hook(user_dir, "j", script=f"echo '{stdout}'\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.denied and outcome.reason == "json says no" and outcome.blocked_by == "j"


@pytest.mark.anyio
async def test_stdout_allow_with_log_and_context(user_dir: Path) -> None:
    write_hook(user_dir, "ctx", script=(
        """echo '{"decision": "allow", "log": "checked", """
        """"additional_context": "prod is frozen"}'\n"""))
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.decision == "allow"
    assert outcome.additional_context == ["prod is frozen"]
    assert outcome.hooks[0].message == "checked"


@pytest.mark.parametrize(("code", "label"), [(1, "exit 1"), (3, "exit 3"), (127, "exit 127")])
@pytest.mark.anyio
async def test_other_exit_codes_fail_open_with_a_warning(user_dir: Path, code: int,
                                                         label: str) -> None:
    write_hook(user_dir, "crashy", script=f"echo 'boom' >&2\nexit {code}\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.decision == "allow"
    assert outcome.hooks[0].status == "error" and outcome.hooks[0].exit_code == code
    assert any(label in w and "boom" in w and "fail open" in w for w in outcome.warnings)


@pytest.mark.parametrize("stdout", [
    "not json at all",
    "[1, 2, 3]",
    '"a string"',
    "{broken",
])
@pytest.mark.anyio
async def test_unparsable_or_non_object_stdout_fails_open(user_dir: Path, stdout: str) -> None:
    write_hook(user_dir, "garbage", script=f"printf '%s' '{stdout}'\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.decision == "allow"
    assert outcome.hooks[0].status == "error"
    assert outcome.warnings and "garbage" in outcome.warnings[0]


@pytest.mark.anyio
async def test_binary_garbage_on_stdout_fails_open(user_dir: Path) -> None:
    write_hook(user_dir, "binary", script="head -c 4096 /dev/urandom\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.decision == "allow"
    assert outcome.hooks[0].status == "error"
    json.loads(outcome.to_json())  # the outcome stays serialisable


@pytest.mark.anyio
async def test_on_error_block_fails_closed(user_dir: Path) -> None:
    write_hook(user_dir, "strict", script="exit 1\n", extra="metadata:\n  on_error: block\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.denied and outcome.blocked_by == "strict"
    assert "fails closed" in (outcome.reason or "")


@pytest.mark.anyio
async def test_a_hook_that_cannot_start_is_our_fault_and_denies(user_dir: Path) -> None:
    """Not the hook's own failure (which fails open): it never ran, so nothing decided."""
    write_hook(user_dir, "noint", script="#!/no/such/interpreter\nexit 0\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.decision == "deny" and outcome.blocked_by == "mcp-hooks"
    assert "noint could not start" in (outcome.reason or "")
    assert outcome.hooks[0].status == "error"
    assert "could not start" in (outcome.hooks[0].message or "")
    async with Engine(Registry(user_dir), settings=Settings(on_fault="warn")) as engine:
        warned = await engine.fire(Event.create(**shell()))
    assert warned.decision == "allow" and "could not start" in warned.warnings[0]


@pytest.mark.anyio
async def test_script_removed_after_indexing_is_an_error_result(user_dir: Path) -> None:
    hook = write_hook(user_dir, "gone")
    registry = Registry(user_dir)
    (hook / "scripts" / "run").unlink()
    async with Engine(registry) as engine:
        # the registry notices: the hook is broken now, which is a fault (never a raise)
        outcome = await engine.fire(Event.create(**shell()))
    assert outcome.decision == "deny" and outcome.blocked_by == "mcp-hooks"
    assert "gone" in (outcome.reason or "") and "entry script" in (outcome.reason or "")


# -- ordering, chaining, first block ------------------------------------------------------


@pytest.mark.anyio
async def test_order_priority_then_user_before_project_then_name(
    user_dir: Path, project: Path, project_hooks: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace"
    script = f'echo "$AGENT_HOOKS_HOOK_NAME" >> {trace}\n'
    write_hook(user_dir, "b-user", script=script, extra="priority: 100\n")
    write_hook(project_hooks, "a-project", script=script, extra="priority: 100\n")
    write_hook(user_dir, "z-user", script=script, extra="priority: 100\n")
    write_hook(project_hooks, "high", script=script, extra="priority: 500\n")
    write_hook(user_dir, "low", script=script, extra="priority: 0\n")
    write_hook(user_dir, "a-user", script=script, extra="priority: 100\n")
    outcome = await fire(Registry(user_dir, project), **shell())
    expected = ["high", "a-user", "b-user", "z-user", "a-project", "low"]
    assert [h.name for h in outcome.hooks] == expected
    assert trace.read_text().split() == expected


@pytest.mark.anyio
async def test_project_hook_replaces_user_hook_of_same_name(
    user_dir: Path, project: Path, project_hooks: Path
) -> None:
    write_hook(user_dir, "same", script="echo user >&2\nexit 2\n")
    write_hook(project_hooks, "same", script="exit 0\n")
    outcome = await fire(Registry(user_dir, project), **shell())
    assert outcome.decision == "allow"
    assert [(h.name, h.scope) for h in outcome.hooks] == [("same", "project")]


@pytest.mark.anyio
async def test_first_block_ends_the_chain(user_dir: Path, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    write_hook(user_dir, "first", script="echo stop >&2\nexit 2\n", extra="priority: 900\n")
    write_hook(user_dir, "second", script=f"touch {ran}\n", extra="priority: 10\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.blocked_by == "first"
    assert [h.name for h in outcome.hooks] == ["first"]
    assert not ran.exists()


@pytest.mark.anyio
async def test_modified_input_chains_to_later_hooks(user_dir: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    write_hook(user_dir, "rewrite", extra="priority: 900\n",
               script="""echo '{"modified_input": {"command": "ls -la"}}'\n""")
    write_hook(user_dir, "observer", extra="priority: 10\n", script=f"cat > {seen}\n")
    outcome = await fire(Registry(user_dir), **shell({"command": "ls"}))
    assert outcome.modified_input == {"command": "ls -la"}
    assert json.loads(seen.read_text())["tool_input"] == {"command": "ls -la"}


@pytest.mark.anyio
async def test_modified_input_is_null_when_denied_later(user_dir: Path) -> None:
    write_hook(user_dir, "rewrite", extra="priority: 900\n",
               script="""echo '{"modified_input": {"command": "ls -la"}}'\n""")
    write_hook(user_dir, "deny", extra="priority: 10\n", script="exit 2\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.denied and outcome.modified_input is None


@pytest.mark.anyio
async def test_modified_input_outside_before_tool_is_ignored_with_warning(
    user_dir: Path,
) -> None:
    write_hook(user_dir, "late", trigger="after_tool",
               script="""echo '{"modified_input": {"command": "x"}}'\n""")
    outcome = await fire(Registry(user_dir), event_type="after_tool", tool_name="Shell",
                         tool_input={"command": "ls"}, tool_output="ok")
    assert outcome.modified_input is None
    assert any("only applies to before_tool" in w for w in outcome.warnings)


@pytest.mark.anyio
async def test_modified_output_chains_after_tool(user_dir: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    write_hook(user_dir, "redact", trigger="after_tool", extra="priority: 900\n",
               script="""echo '{"modified_output": "[redacted]"}'\n""")
    write_hook(user_dir, "observer", trigger="after_tool", script=f"cat > {seen}\n")
    outcome = await fire(Registry(user_dir), event_type="after_tool", tool_name="ReadFile",
                         tool_input={"path": "a"}, tool_output="secret=1")
    assert outcome.modified_output == "[redacted]"
    assert json.loads(seen.read_text())["tool_output"] == "[redacted]"


@pytest.mark.anyio
async def test_additional_context_collected_in_order(user_dir: Path) -> None:
    for name, prio in (("one", 300), ("two", 200)):
        write_hook(user_dir, name, extra=f"priority: {prio}\n",
                   script=f"""echo '{{"additional_context": "from {name}"}}'\n""")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.additional_context == ["from one", "from two"]


@pytest.mark.anyio
async def test_reason_handed_to_agent_is_capped(user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "loud", script="head -c 50000 /dev/zero | tr '\\0' x >&2\nexit 2\n")
    log = EventLog(tmp_path / "log.jsonl")
    outcome = await fire(Registry(user_dir), log=log, **shell())
    assert outcome.denied
    assert len(outcome.reason or "") < AGENT_TEXT_CAP + 200
    assert "more characters cut" in (outcome.reason or "")
    record = next(r for r in log.read() if r["kind"] == "event")
    assert len(record["hooks"][0]["stderr"]) == 50000  # the full output stays in the log


# -- payload and environment -------------------------------------------------------------


@pytest.mark.anyio
async def test_payload_and_environment(user_dir: Path, project: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_hook(user_dir, "spy", trigger="pre-tool-call",
               script=f'cat > {out}.json\nenv | grep ^AGENT_HOOKS_ | sort > {out}.env\n'
                      f'pwd > {out}.cwd\n')
    await fire(Registry(user_dir, project), session_id="s-1", work_dir=str(project),
               **shell({"command": "ls"}, tool_use_id="t-9"), context={"k": 1},
               payload={"extra": True})
    payload = json.loads(Path(f"{out}.json").read_text())
    assert payload["event_type"] == "pre-tool-call"  # as its own trigger spells it
    assert payload["session_id"] == "s-1" and payload["work_dir"] == str(project)
    assert payload["tool_name"] == "Shell" and payload["tool_input"] == {"command": "ls"}
    assert payload["tool_use_id"] == "t-9" and payload["context"] == {"k": 1}
    assert payload["extra"] is True
    assert payload["timestamp"].endswith("Z")
    env = dict(line.split("=", 1) for line in Path(f"{out}.env").read_text().splitlines())
    assert env.pop("AGENT_HOOKS_RUN_ID")  # marks the run's processes (runner)
    assert env == {
        "AGENT_HOOKS_EVENT": "pre-tool-call",
        "AGENT_HOOKS_HOOK_DIR": str(user_dir / "spy"),
        "AGENT_HOOKS_HOOK_NAME": "spy",
        "AGENT_HOOKS_SESSION_ID": "s-1",
        "AGENT_HOOKS_WORK_DIR": str(project),
    }
    assert Path(f"{out}.cwd").read_text().strip() == str(project)


@pytest.mark.parametrize(("trigger", "fired"), [
    ("pre-tool-use", "before_tool"), ("pre_acting", "before_tool"),
    ("post-tool-call", "after_tool"), ("post_reply", "after_agent"),
    ("pre-agent-turn-stop", "before_stop"), ("post-context-compact", "post_compact"),
])
@pytest.mark.anyio
async def test_aliases_wake_hooks_of_any_spelling(user_dir: Path, tmp_path: Path,
                                                  trigger: str, fired: str) -> None:
    out = tmp_path / "payload.json"
    write_hook(user_dir, "alias", trigger=trigger, script=f"cat > {out}\n")
    outcome = await fire(Registry(user_dir), event_type=fired, tool_name="Shell",
                         tool_input={"command": "ls"})
    assert [h.name for h in outcome.hooks] == ["alias"]
    assert json.loads(out.read_text())["event_type"] == trigger
    # and firing by an alias works the same way
    outcome = await fire(Registry(user_dir), event_type=trigger, tool_name="Shell",
                         tool_input={"command": "ls"})
    assert outcome.event_type == fired and [h.name for h in outcome.hooks] == ["alias"]


# -- matchers ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_tool_matcher_is_a_full_match(user_dir: Path) -> None:
    write_hook(user_dir, "shell-only", script="exit 2\n", extra="matcher:\n  tool: Shell\n")
    assert (await fire(Registry(user_dir), **shell())).denied
    power = await fire(Registry(user_dir), event_type="before_tool", tool_name="PowerShell",
                       tool_input={"command": "ls"})
    assert power.decision == "allow" and power.hooks == []


@pytest.mark.anyio
async def test_pattern_searches_every_string_value_recursively(user_dir: Path) -> None:
    write_hook(user_dir, "py", script="exit 2\n",
               extra='matcher:\n  tool: "WriteFile|EditFile"\n  pattern: "\\\\.py$"\n')
    registry = Registry(user_dir)
    hit = await fire(registry, event_type="before_tool", tool_name="EditFile",
                     tool_input={"edits": [{"file": {"path": "src/app.py"}}]})
    assert hit.denied
    miss = await fire(registry, event_type="before_tool", tool_name="EditFile",
                      tool_input={"path": "README.md"})
    assert miss.hooks == []
    other_tool = await fire(registry, event_type="before_tool", tool_name="ReadFile",
                            tool_input={"path": "a.py"})
    assert other_tool.hooks == []


@pytest.mark.anyio
async def test_regex_tool_matcher_and_no_matcher(user_dir: Path) -> None:
    write_hook(user_dir, "mcp", script="exit 2\n", extra='matcher:\n  tool: "mcp__.*"\n')
    write_hook(user_dir, "all", script="exit 0\n", extra="priority: 999\n")
    outcome = await fire(Registry(user_dir), event_type="before_tool",
                         tool_name="mcp__github__create_issue", tool_input={})
    assert [h.name for h in outcome.hooks] == ["all", "mcp"] and outcome.denied


# -- timeouts, floods, grandchildren -----------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.anyio
async def test_timeout_kills_the_whole_group(user_dir: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    write_hook(user_dir, "slow", extra="timeout: 300\n", script=(
        "trap '' TERM\n"  # ignore SIGTERM: the group must still die by SIGKILL
        f"sleep 60 & echo $! >> {pids}\n"
        f"echo $$ >> {pids}\n"
        "wait\n"
    ))
    with anyio.fail_after(30):  # a hang, not slowness: waiting for `sleep 60` would pass it
        outcome = await fire(Registry(user_dir), **shell())
    assert outcome.decision == "allow"
    assert outcome.hooks[0].status == "timeout"
    assert any("timed out after 300 ms" in w for w in outcome.warnings)
    deadline = time.monotonic() + 5  # SIGKILL is delivered asynchronously: allow a moment
    for pid in map(int, pids.read_text().split()):
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(pid), f"process {pid} survived the timeout"


@pytest.mark.anyio
async def test_timeout_fails_closed_when_asked(user_dir: Path) -> None:
    write_hook(user_dir, "slow", script="sleep 10\n",
               extra="timeout: 200\nmetadata:\n  on_error: block\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.denied and outcome.hooks[0].status == "timeout"


@pytest.mark.anyio
async def test_grandchild_holding_stdout_does_not_hang_the_event(
    user_dir: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "grandchild"
    write_hook(user_dir, "daemon", extra="timeout: 20000\n", script=(
        f"sleep 30 & echo $! > {pid_file}\n"  # inherits stdout and keeps it open
        "echo 'bye' >&2\nexit 2\n"
    ))
    with anyio.fail_after(20):  # the event returns (sleep 30 holding stdout must not hang it)
        outcome = await fire(Registry(user_dir), **shell())
    assert outcome.denied and outcome.reason == "bye"
    # and the background child ended with the hook (that it is also reaped at once, on every
    # driver and spawn path, is tests/runner/test_process_tree.py's to check)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + GONE_WITHIN
    while ((state := proc_state(pid)) is not None and state[0] != "Z"
           and time.monotonic() < deadline):
        time.sleep(0.02)
    assert state is None or state[0] == "Z", f"the background child {pid} still runs: {state}"


@pytest.mark.anyio
async def test_output_flood_is_capped_and_drained(user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "flood", script=(
        "head -c 5000000 /dev/zero | tr '\\0' a\n"
        "head -c 3000000 /dev/zero | tr '\\0' b >&2\n"
        "exit 1\n"
    ))
    log = EventLog(tmp_path / "log.jsonl")
    outcome = await fire(Registry(user_dir), log=log, **shell())
    assert outcome.decision == "allow" and outcome.hooks[0].status == "error"
    assert any("bytes beyond the 1 MiB kept were dropped" in w for w in outcome.warnings)
    record = next(r for r in log.read() if r["kind"] == "event")
    assert len(record["hooks"][0]["stdout"]) == 1 << 20
    assert len(record["hooks"][0]["stderr"]) == 1 << 20


@pytest.mark.anyio
async def test_hook_that_never_reads_a_large_payload(user_dir: Path) -> None:
    write_hook(user_dir, "deaf", script="exit 0\n")
    big = {"command": "x" * 3_000_000}
    outcome = await fire(Registry(user_dir), **shell(big))
    assert outcome.decision == "allow" and outcome.hooks[0].status == "allow"


@pytest.mark.anyio
async def test_hook_that_reads_a_large_payload(user_dir: Path) -> None:
    write_hook(user_dir, "reader", script="n=$(wc -c); [ \"$n\" -gt 3000000 ] || exit 1\n")
    outcome = await fire(Registry(user_dir), **shell({"command": "y" * 3_000_000}))
    assert outcome.hooks[0].status == "allow", outcome.warnings


# -- async hooks -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_hooks_do_not_delay_or_block(user_dir: Path, tmp_path: Path) -> None:
    done = tmp_path / "done"
    seen = tmp_path / "seen.json"
    gate = tmp_path / "gate"  # the async hook finishes only once the event has returned
    write_hook(user_dir, "bg", extra="async: true\n",
               script=f"cat > {seen}\nwhile [ ! -e {gate} ]; do sleep 0.01; done\n"
                      f"echo finished\ntouch {done}\nexit 2\n")
    write_hook(user_dir, "rewrite", extra="priority: 999\n",
               script="""echo '{"modified_input": {"command": "changed"}}'\n""")
    log = EventLog(tmp_path / "log.jsonl")
    async with Engine(Registry(user_dir), log=log) as engine:
        with anyio.fail_after(30):  # had the event waited for the async hook, it would hang
            outcome = await engine.fire(Event.create(**shell({"command": "orig"})))
        assert outcome.decision == "allow"
        assert {h.name: h.status for h in outcome.hooks} == {"bg": "scheduled",
                                                              "rewrite": "allow"}
        assert not done.exists()
        gate.touch()
    assert done.exists()  # leaving the engine waited for it
    assert json.loads(seen.read_text())["tool_input"] == {"command": "orig"}
    records = list(log.read())
    result = next(r for r in records if r["kind"] == "async_result")
    assert result["hook"]["name"] == "bg" and result["hook"]["stdout"] == "finished\n"


@pytest.mark.anyio
async def test_async_hook_timeout_is_logged_and_killed(user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "bg", extra="async: true\ntimeout: 200\n", script="sleep 30\n")
    log = EventLog(tmp_path / "log.jsonl")
    with anyio.fail_after(25):  # a hang, not slowness: waiting for `sleep 30` would pass it
        async with Engine(Registry(user_dir), log=log) as engine:
            await engine.fire(Event.create(**shell()))
    result = next(r for r in log.read() if r["kind"] == "async_result")
    assert result["hook"]["status"] == "timeout"


@pytest.mark.anyio
async def test_detached_async_hooks_outlive_the_engine(user_dir: Path, tmp_path: Path) -> None:
    done = tmp_path / "done"
    write_hook(user_dir, "bg", extra="async: true\n", script=f"sleep 0.3\ntouch {done}\n")
    log = EventLog(tmp_path / "log.jsonl")
    async with Engine(Registry(user_dir), log=log, detach_async=True) as engine:
        await engine.fire(Event.create(**shell()))
    assert not done.exists()
    with anyio.fail_after(15):
        while not any(r["kind"] == "async_result" for r in log.read()):
            await anyio.sleep(0.05)
    assert done.exists()


# -- before_stop and the loop guard -------------------------------------------------------


@pytest.mark.anyio
async def test_before_stop_block_means_continue_working(user_dir: Path) -> None:
    write_hook(user_dir, "gate", trigger="before_stop", script="echo 'tests fail' >&2\nexit 2\n")
    outcome = await fire(Registry(user_dir), event_type="before_stop", session_id="s")
    assert outcome.denied and outcome.continue_working and outcome.reason == "tests fail"


@pytest.mark.anyio
async def test_loop_guard_counts_and_overrides_at_the_cap(user_dir: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    write_hook(user_dir, "gate", trigger="before_stop",
               script=f"cat >> {seen}; echo >> {seen}\necho 'not yet' >&2\nexit 2\n")
    log = EventLog(tmp_path / "log.jsonl")
    async with Engine(Registry(user_dir), settings=Settings(stop_block_cap=3), log=log) as engine:
        outcomes = [await engine.fire(Event.create(event_type="before_stop", session_id="s1"))
                    for _ in range(4)]
        other = await engine.fire(Event.create(event_type="before_stop", session_id="s2"))
        again = await engine.fire(Event.create(event_type="before_stop", session_id="s1"))
    assert [o.continue_working for o in outcomes] == [True, True, True, False]
    assert outcomes[3].decision == "allow"
    # the answer says where the count stands (a door that loops reads it, keeping none)
    assert [o.stop_block_count for o in outcomes] == [1, 2, 3, 0]
    assert [o.as_dict()["stop_block_count"] for o in outcomes] == [1, 2, 3, 0]
    assert Outcome.from_json(outcomes[1].to_json()).stop_block_count == 2
    assert any("loop guard" in w and "not yet" in w for w in outcomes[3].warnings)
    payloads = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert [(p["stop_hook_active"], p["stop_block_count"]) for p in payloads[:4]] == [
        (False, 0), (True, 1), (True, 2), (True, 3)]
    assert other.continue_working and other.stop_block_count == 1  # sessions apart
    assert again.continue_working  # the count starts over after the forced stop
    assert json.loads(seen.read_text().splitlines()[-1])["stop_block_count"] == 0
    logged = [r for r in log.read() if r["kind"] == "event"]
    assert any("loop guard" in w for w in logged[3]["warnings"])


@pytest.mark.anyio
async def test_loop_guard_counts_a_fault_of_ours_too(user_dir: Path) -> None:
    """A before_stop hook in scope that cannot load denies every stop (on_fault block); the
    one loop guard counts those denials as it counts hook blocks, and lets the stop through
    at its cap, so no door needs a stop counter of its own."""
    (user_dir / "broken").mkdir()
    (user_dir / "broken" / "HOOK.md").write_text("---\nname: broken\ntrigger: before_stop\n")
    async with Engine(Registry(user_dir), settings=Settings(stop_block_cap=2)) as engine:
        stops = [await engine.fire(Event.create(event_type="before_stop", session_id="s"))
                 for _ in range(4)]
    assert [o.continue_working for o in stops] == [True, True, False, True]
    assert stops[0].blocked_by == "mcp-hooks" and "failed to load" in (stops[0].reason or "")
    assert any("loop guard" in w and "failed to load" in w for w in stops[2].warnings)
    assert [s.intensity for s in stops[2].signals] == ["prompt"]  # the block, demoted


def test_a_door_settles_its_own_stop_faults_with_the_same_guard() -> None:
    """A fault a door answers itself (``Hooks``, the adapters) goes through ``settle``: the
    same count as the engine's, per session; other events pass as they are."""
    guard = StopGuard(2)
    fault = fault_outcome("before_stop", "the adapter could not fire before_stop")
    first, second, third = (guard.settle("s", fault) for _ in range(3))
    assert first.continue_working and second.continue_working
    assert not third.continue_working and third.decision == "allow"
    assert any("loop guard" in w for w in third.warnings)
    assert guard.settle("s", fault).continue_working  # the count started over
    assert guard.settle(None, fault).continue_working  # no session: never counted
    tool = fault_outcome("before_tool", "x")
    assert guard.settle("s", tool) is tool
    assert "stop_block_count" not in tool.as_dict()  # other events: no count, no key
    assert [first.stop_block_count, second.stop_block_count, third.stop_block_count] == [
        1, 2, 0]
    with pytest.raises(ConfigError, match=r"outcome\.stop_block_count: must be an integer"):
        Outcome.from_dict({**first.as_dict(), "stop_block_count": "1"})


@pytest.mark.anyio
async def test_loop_guard_resets_when_a_stop_is_allowed(user_dir: Path, tmp_path: Path) -> None:
    flag = tmp_path / "pass"
    write_hook(user_dir, "gate", trigger="before_stop",
               script=f"[ -e {flag} ] && exit 0\necho no >&2\nexit 2\n")
    async with Engine(Registry(user_dir), settings=Settings(stop_block_cap=2)) as engine:
        first = await engine.fire(Event.create(event_type="before_stop", session_id="s"))
        flag.touch()
        allowed = await engine.fire(Event.create(event_type="before_stop", session_id="s"))
        flag.unlink()
        after = [await engine.fire(Event.create(event_type="before_stop", session_id="s"))
                 for _ in range(2)]
    assert first.continue_working and not allowed.continue_working
    assert [o.continue_working for o in after] == [True, True]


@pytest.mark.anyio
async def test_loop_guard_honours_the_callers_flag(user_dir: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    write_hook(user_dir, "gate", trigger="before_stop", script=f"cat > {seen}\n")
    await fire(Registry(user_dir), event_type="before_stop",
               payload={"stop_hook_active": True, "stop_reason": "no_tool_calls"})
    payload = json.loads(seen.read_text())
    assert payload["stop_hook_active"] is True and payload["stop_reason"] == "no_tool_calls"


@pytest.mark.anyio
async def test_cap_zero_turns_the_guard_off(user_dir: Path) -> None:
    write_hook(user_dir, "gate", trigger="before_stop", script="exit 2\n")
    async with Engine(Registry(user_dir), settings=Settings(stop_block_cap=0)) as engine:
        outcomes = [await engine.fire(Event.create(event_type="before_stop", session_id="s"))
                    for _ in range(10)]
    assert all(o.continue_working for o in outcomes)


@pytest.mark.parametrize("counter", ["memory", "file"])
def test_one_guard_counts_in_memory_or_in_files(counter: str, user_dir: Path,
                                                tmp_path: Path) -> None:
    write_hook(user_dir, "gate", trigger="before_stop", script="echo 'not yet' >&2\nexit 2\n")

    def guard() -> StopGuard:  # a fresh guard per event, as a bridge (one process per event)
        if counter == "file":
            return StopGuard(2, FileStore(tmp_path / "state"), "claude-code")
        return kept

    kept = StopGuard(2)
    stops = []
    for _ in range(4):
        engine = Engine(Registry(user_dir, watch=False), one_shot=True, stop_guard=guard())
        stops.append(engine.fire_blocking(Event.create(event_type="before_stop", session_id="s")))
    assert [o.continue_working for o in stops] == [True, True, False, True]
    assert "loop guard" in stops[2].warnings[-1] and "not yet" in stops[2].warnings[-1]


def test_file_counts_keep_hosts_and_sessions_apart_and_forget(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state")
    codex, cursor = StopGuard(8, store, "codex"), StopGuard(8, store, "cursor")
    for _ in range(3):
        codex.store.increment("codex", "s", ttl=STOP_STATE_TTL)
    assert [store.count(ns, s, ttl=STOP_STATE_TTL)
            for ns, s in [("codex", "s"), ("codex", "t"), ("cursor", "s")]] == [3, 0, 0]
    path = store.counter_path("codex", "s")
    old = time.time() - STOP_STATE_TTL - 5
    os.utime(path, (old, old))
    assert store.count("codex", "s", ttl=STOP_STATE_TTL) == 0  # an interrupted loop's count
    path.write_text("garbage")
    assert store.count("codex", "s", ttl=STOP_STATE_TTL) == 0
    blocked = cursor.after(cursor.before(Event(event_type="before_stop", session_id="s"), {}),
                           Outcome(event_type="before_stop", decision="deny",
                                   continue_working=True))
    assert blocked.continue_working and store.count("cursor", "s", ttl=STOP_STATE_TTL) == 1
    cursor.after(cursor.before(Event(event_type="before_stop", session_id="s"), {}),
                 Outcome(event_type="before_stop"))
    assert not store.counter_path("cursor", "s").exists()  # an allowed stop resets
    (tmp_path / "file").write_text("")
    lost = FileStore(tmp_path / "file")  # a folder that cannot be made
    assert lost.increment("x", "s", ttl=STOP_STATE_TTL) == 1  # lost, never raised
    assert lost.count("x", "s", ttl=STOP_STATE_TTL) == 0
    lost.reset("x", "s")


@pytest.mark.parametrize(("resets", "flag", "told"), [
    (False, False, (True, 2)),  # the server: a flag from the model cannot reset the count
    (True, False, (False, 0)),  # a bridge: the host says a new turn, the count starts over
    (True, None, (True, 2)),
    (True, True, (True, 2)),
])
def test_new_turn_resets_only_where_asked(resets: bool, flag: bool | None,
                                          told: tuple[bool, int]) -> None:
    guard = StopGuard(8, new_turn_resets=resets)
    for _ in range(2):
        guard.store.increment("engine", "s", ttl=STOP_STATE_TTL)
    payload: dict[str, Any] = {}
    extra = {} if flag is None else {"stop_hook_active": flag}
    ticket = guard.before(Event(event_type="before_stop", session_id="s", payload=extra), payload)
    assert (payload["stop_hook_active"], payload["stop_block_count"]) == told
    assert ticket.count == told[1]


@pytest.mark.anyio
async def test_runner_and_launcher_are_injected(user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "sync-one")
    write_hook(user_dir, "bg", extra="async: true\n")
    ran: list[tuple[str, ...]] = []
    launched: list[tuple[str, list[str]]] = []

    async def runner(argv: tuple[str, ...], stdin: bytes, **options: Any) -> RunResult:
        ran.append(argv)
        assert json.loads(stdin)["event_type"] == "before_tool"
        return RunResult(exit_code=2, stdout=b"", stderr=b"from the fake runner",
                         duration_ms=1.0)

    class Launcher:
        async def open(self) -> None:
            launched.append(("open", []))

        async def close(self, exc: BaseException | None) -> None:
            launched.append(("close", []))

        def launch(self, event: str, session_id: str | None, jobs: list[AsyncJob]) -> None:
            launched.append((event, [job.hook.name for job in jobs]))

    async with Engine(Registry(user_dir), runner=runner, launcher=Launcher()) as engine:
        outcome = await engine.fire(Event.create(**shell()))
    assert outcome.denied and outcome.reason == "from the fake runner"
    assert [r.status for r in outcome.hooks] == ["scheduled", "deny"]
    assert len(ran) == 1 and any("sync-one" in part for part in ran[0])  # the async one: not
    assert launched == [("open", []), ("before_tool", ["bg"]), ("close", [])]


def test_the_detached_runner_does_not_import_the_engine() -> None:
    code = ("import sys, mcp_hooks.engine.launch, mcp_hooks.engine.stopguard; "
            "print('mcp_hooks.engine.engine' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# -- progress callback, bad events, the log ----------------------------------------------


@pytest.mark.anyio
async def test_on_hook_done_reports_each_sync_hook(user_dir: Path) -> None:
    write_hook(user_dir, "a", extra="priority: 2\n")
    write_hook(user_dir, "b", extra="priority: 1\n", script="exit 1\n")
    seen: list[HookRun] = []

    async def progress(run: HookRun) -> None:
        seen.append(run)

    async with Engine(Registry(user_dir)) as engine:
        await engine.fire(Event.create(**shell()), on_hook_done=progress)
    assert [(r.name, r.status) for r in seen] == [("a", "allow"), ("b", "error")]


@pytest.mark.anyio
async def test_unknown_event_type_raises(user_dir: Path) -> None:
    with pytest.raises(UnknownEventError, match="unknown event type 'before_everything'"):
        await fire(Registry(user_dir), event_type="before_everything")


@pytest.mark.parametrize(("fields", "field"), [
    ({"tool_input": ["not", "an", "object"]}, "tool_input"),
    ({"payload": "nope"}, "payload"),
    ({"context": 5}, "context"),
    ({"session_id": 12}, "session_id"),
])
def test_malformed_event_fields_name_the_field(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidEventError, match=f"^{field}: must be"):
        Event.create(event_type="before_tool", **fields)


@pytest.mark.anyio
async def test_work_dir_may_be_missing_when_no_hook_runs(user_dir: Path, tmp_path: Path) -> None:
    outcome = await fire(Registry(user_dir), event_type="before_tool",
                         work_dir=str(tmp_path / "missing"))
    assert outcome.decision == "allow"


@pytest.mark.parametrize("extra", ["", "async: true\n"])
@pytest.mark.anyio
async def test_work_dir_must_exist_with_hooks_too(user_dir: Path, tmp_path: Path,
                                                  extra: str) -> None:
    """No hook can run in a missing folder: a fault, denied before any hook has run, on
    both engines, and logged."""
    write_hook(user_dir, "h", extra=extra, script=f"touch {tmp_path}/ran\n")
    log = EventLog(tmp_path / "events.jsonl")
    outcome = await fire(Registry(user_dir), log=log, **shell(work_dir=str(tmp_path / "missing")))
    assert outcome.denied and "missing' is not an existing folder" in (outcome.reason or "")
    engine = Engine(Registry(user_dir, watch=False), log=log, one_shot=True)
    blocked = engine.fire_blocking(Event.create(**shell(work_dir=str(tmp_path / "missing"))))
    assert blocked.denied and blocked.blocked_by == "mcp-hooks"
    await anyio.sleep(0.2)
    assert not (tmp_path / "ran").exists()
    assert [r["decision"] for r in log.read()] == ["deny", "deny"]


@pytest.mark.anyio
async def test_every_event_is_logged_as_one_line(user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "deny", script="echo nope >&2\nexit 2\n")
    log = EventLog(tmp_path / "state" / "events.jsonl")
    await fire(Registry(user_dir), log=log, session_id="s", **shell())
    await fire(Registry(user_dir), log=log, event_type="session_start", session_id="s")
    records = list(log.read())
    assert [r["event"] for r in records] == ["before_tool", "session_start"]
    first = records[0]
    assert first["decision"] == "deny" and first["reason"] == "nope"
    assert first["hooks"][0]["name"] == "deny" and first["hooks"][0]["duration_ms"] > 0
    assert first["session_id"] == "s" and first["tool_name"] == "Shell"


@pytest.mark.anyio
async def test_a_failing_log_never_fails_the_event(
    user_dir: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    log = EventLog(blocker / "cannot" / "events.jsonl")
    write_hook(user_dir, "deny", script="exit 2\n")
    outcome = await fire(Registry(user_dir), log=log, **shell())
    assert outcome.denied
    err = capfd.readouterr().err
    assert "mcp-hooks: not logging: the event log" in err and str(blocker) in err, err


@pytest.mark.anyio
async def test_concurrent_events_share_one_engine(user_dir: Path, tmp_path: Path) -> None:
    arrived = tmp_path / "arrived"
    arrived.mkdir()
    # Each run waits until all 20 have started: only runs made in parallel ever get there
    # (one after another, the first would wait until its timeout and fail).
    write_hook(user_dir, "sleepy", extra="timeout: 20000\n", script=(
        f"mktemp -p {arrived} > /dev/null\n"
        f"while [ $(ls {arrived} | wc -l) -lt 20 ]; do sleep 0.02; done\n"))
    log = EventLog(tmp_path / "log.jsonl")
    results: list[Outcome] = []
    async with Engine(Registry(user_dir), log=log) as engine:

        async def one(i: int) -> None:
            results.append(await engine.fire(Event.create(**shell(), session_id=f"s{i}")))

        with anyio.fail_after(60):  # a hang, not slowness
            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(one, i)
    assert len(results) == 20 and all(r.hooks[0].status == "allow" for r in results)
    assert len(list(log.read())) == 20


# -- one-shot engines (mcp-hooks fire, host bridges): no event loop at all -----------------


def test_fire_blocking_runs_the_chain_without_a_loop(user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "rewrite", extra="priority: 900\nmatcher:\n  pattern: ^ls$\n",
               script="""echo '{"modified_input": {"command": "ls -la"}}'\n""")
    write_hook(user_dir, "deny", extra="priority: 10\nmatcher:\n  pattern: rm\n",
               script="echo 'no rm' >&2\nexit 2\n")
    done = tmp_path / "done"
    write_hook(user_dir, "bg", extra="async: true\n", script=f"sleep 0.2\ntouch {done}\n")
    log = EventLog(tmp_path / "log.jsonl")
    engine = Engine(Registry(user_dir, watch=False), log=log, one_shot=True)
    allowed = engine.fire_blocking(Event.create(**shell({"command": "ls"})))
    assert allowed.decision == "allow" and allowed.modified_input == {"command": "ls -la"}
    denied = engine.fire_blocking(Event.create(**shell({"command": "rm x"})))
    assert denied.denied and denied.reason == "no rm"
    deadline = time.monotonic() + 15
    while not done.exists() and time.monotonic() < deadline:  # the detached async hook
        time.sleep(0.05)
    assert done.exists()


def test_fire_blocking_needs_a_one_shot_engine(user_dir: Path) -> None:
    with pytest.raises(RuntimeError, match="one_shot"):
        Engine(Registry(user_dir)).fire_blocking(Event.create(**shell()))


@pytest.mark.parametrize("one_shot", [False, True])
@pytest.mark.anyio
async def test_later_hooks_are_chosen_by_the_rewritten_input(user_dir: Path,
                                                             one_shot: bool) -> None:
    """A rewrite cannot slip past a later guard: the hooks after it are selected against
    what the tool will receive, not what the agent first asked for."""
    write_hook(user_dir, "smuggle", extra="priority: 900\nmatcher:\n  pattern: ^ls$\n",
               script="""echo '{"modified_input": {"command": "rm -rf /"}}'\n""")
    write_hook(user_dir, "clean", extra="priority: 800\nmatcher:\n  pattern: ^git push$\n",
               script="""echo '{"modified_input": {"command": "git status"}}'\n""")
    write_hook(user_dir, "no-rm", extra="priority: 10\nmatcher:\n  pattern: rm -rf\n",
               script="echo 'no rm -rf' >&2\nexit 2\n")
    write_hook(user_dir, "no-push", extra="priority: 5\nmatcher:\n  pattern: push\n",
               script="echo 'no push' >&2\nexit 2\n")
    registry = Registry(user_dir, watch=not one_shot)
    engine = Engine(registry, one_shot=one_shot)
    async with engine:
        smuggled = await engine.fire(Event.create(**shell({"command": "ls"})))
        cleaned = await engine.fire(Event.create(**shell({"command": "git push"})))
    assert smuggled.denied and smuggled.blocked_by == "no-rm"
    assert [r.name for r in smuggled.hooks] == ["smuggle", "no-rm"]
    assert cleaned.decision == "allow" and cleaned.modified_input == {"command": "git status"}
    assert [r.name for r in cleaned.hooks] == ["clean"]


@pytest.mark.parametrize(("stdout", "on_error", "decision"), [
    ('{"decision": "DENY", "reason": "r"}', "allow", "deny"),
    ('{"decision": "Block", "reason": "r"}', "allow", "deny"),
    ('{"decision": " Allow "}', "block", "allow"),
    ('{"decision": "APPROVE"}', "block", "allow"),
    ('{"decision": "nope"}', "block", "deny"),
    ('{"decision": true}', "block", "deny"),
    ('{"decision": "nope"}', "allow", "allow"),
    ('{"decision": null}', "block", "allow"),
])
@pytest.mark.anyio
async def test_decision_words_any_case_and_fail_closed_hooks_deny_the_unknown(
        user_dir: Path, stdout: str, on_error: str, decision: str) -> None:
    write_hook(user_dir, "h", extra=f"metadata:\n  on_error: {on_error}\n",
               script=f"echo '{stdout}'\n")
    outcome = await fire(Registry(user_dir), **shell())
    assert outcome.decision == decision, outcome


@pytest.mark.anyio
async def test_a_broken_hook_that_could_handle_the_event_blocks_it(user_dir: Path,
                                                                   tmp_path: Path) -> None:
    """One YAML typo must not make a fail-closed guard vanish: the event is denied, saying
    which file and field; with on_fault warn the valid hooks run and the warning stays."""
    write_hook(user_dir, "guard", extra="metadata:\n  on_error: block\npriority: [\n",
               script="exit 2\n")
    write_hook(user_dir, "fine", script=f"touch {tmp_path}/fine-ran\n")
    write_hook(user_dir, "other", trigger="session_end", extra="timeout: 5\n")  # out of range
    registry = Registry(user_dir)
    assert {i.name: i.event for i in registry.invalid} == {"guard": "before_tool",
                                                           "other": "session_end"}
    outcome = await fire(registry, **shell())
    assert outcome.denied and outcome.blocked_by == "mcp-hooks"
    assert "guard" in (outcome.reason or "") and "HOOK.md" in (outcome.reason or "")
    assert not (tmp_path / "fine-ran").exists()
    async with Engine(registry, settings=Settings(on_fault="warn")) as engine:
        warned = await engine.fire(Event.create(**shell()))
        ended = await engine.fire(Event.create(event_type="session_end"))
    assert warned.decision == "allow" and (tmp_path / "fine-ran").exists()
    assert any("guard" in w for w in warned.warnings)
    # session_end cannot block: its broken hook is a warning even under on_fault block
    blocked_engine = Engine(registry)
    async with blocked_engine:
        end = await blocked_engine.fire(Event.create(event_type="session_end"))
    assert end.decision == "allow" and any("other" in w for w in end.warnings)
    assert ended.decision == "allow"


@pytest.mark.anyio
async def test_an_unreadable_trigger_counts_for_every_event(user_dir: Path) -> None:
    hook = write_hook(user_dir, "mangled")
    (hook / "HOOK.md").write_text("---\nname: [mangled\n---\n")
    registry = Registry(user_dir)
    assert registry.invalid[0].event is None
    for event in ("before_tool", "before_stop", "session_start"):
        outcome = await fire(registry, event_type=event)
        assert outcome.denied and "mangled" in (outcome.reason or ""), event
    assert (await fire(registry, event_type="after_stop")).decision == "allow"


@pytest.mark.parametrize("one_shot", [False, True])
@pytest.mark.anyio
async def test_odd_json_never_raises_and_never_opens_the_gate(user_dir: Path, tmp_path: Path,
                                                              one_shot: bool) -> None:
    """Lone surrogates reach the hook (escaped) and the log; nesting past the limit is a
    fault; a huge session id reaches the hook on stdin, never making the spawn fail."""
    seen = tmp_path / "seen.json"
    write_hook(user_dir, "guard", extra="metadata:\n  on_error: block\n",
               script=f"cat > {seen}\nexit 0\n")
    log = EventLog(tmp_path / "log.jsonl")
    engine = Engine(Registry(user_dir, watch=not one_shot), log=log, one_shot=one_shot)
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    async with engine:
        odd = await engine.fire(Event.create(**shell({"command": "echo \udcff \ud800"})))
        assert odd.decision == "allow", odd
        assert json.loads(seen.read_text())["tool_input"]["command"] == "echo \udcff \ud800"
        nested = await engine.fire(Event.create(**shell({"command": "ls", "x": deep})))
        assert nested.denied and "levels deep" in (nested.reason or "")
        long_id = "s" * 300_000
        big = await engine.fire(Event.create(**shell(session_id=long_id)))
        assert big.decision == "allow" and big.hooks[0].status == "allow", big
        assert json.loads(seen.read_text())["session_id"] == long_id
    assert len(list(log.read())) == 3


@pytest.mark.anyio
async def test_backtracking_patterns_cannot_stall_an_event(user_dir: Path) -> None:
    """Matchers run in linear time: a classic catastrophic pattern over 100,000 characters
    answers at once (Python's re would take longer than the universe has)."""
    write_hook(user_dir, "evil", extra="matcher:\n  pattern: (a+)+b\n", script="exit 2\n")
    outcome = await fire(Registry(user_dir), **shell({"command": "a" * 100_000 + "!"}))
    assert outcome.decision == "allow" and outcome.hooks == []
    matched = await fire(Registry(user_dir), **shell({"command": "a" * 100_000 + "b"}))
    assert matched.denied


def test_hooks_never_see_the_servers_token(user_dir: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "env.txt"
    write_hook(user_dir, "spy", script=f"env > {out}\n")
    monkeypatch.setenv("MCP_HOOKS_TOKEN", "tok-123")
    monkeypatch.setenv("UPSTREAM_KEY", "hdr-secret")
    monkeypatch.setenv("AGENT_HOOKS_EVENT", "forged")
    monkeypatch.setenv("ORDINARY", "kept")
    engine = Engine(Registry(user_dir, watch=False), Settings(secrets=("hdr-secret",)),
                    one_shot=True)
    engine.fire_blocking(Event.create(**shell()))
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert "MCP_HOOKS_TOKEN" not in env and "UPSTREAM_KEY" not in env
    assert "tok-123" not in out.read_text() and "hdr-secret" not in out.read_text()
    assert env["ORDINARY"] == "kept" and env["AGENT_HOOKS_EVENT"] == "before_tool"
