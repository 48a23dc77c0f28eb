"""Every exception, not only ``Exception``: what a callable, an oracle or a signal raises
(``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``, ``CancelledError``, a
``BaseException`` subclass) is each door's fail-closed answer, and the door keeps working.
A real cancellation of the caller still cancels; closing from inside a hook is refused."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_hooks import Hooks, Outcome
from mcp_hooks.adapters._firing import Firing
from mcp_hooks.hosts import HOSTS, get_host
from mcp_hooks.server import build_server
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.control_helpers import make_repo, write


class Mine(BaseException):
    """A BaseException of the user's own."""


KINDS: dict[str, Callable[[], BaseException]] = {
    "SystemExit": lambda: SystemExit(3),
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
    "CancelledError": asyncio.CancelledError,
    "Mine": lambda: Mine("my own"),
}


def _raising(kind: str, *, awaits: bool) -> Callable[..., Any]:
    def no(tool_input: dict[str, Any]) -> None:
        raise KINDS[kind]()

    async def no_later(tool_input: dict[str, Any]) -> None:
        await asyncio.sleep(0)  # suspended once: raised from inside the awaited coroutine
        raise KINDS[kind]()

    return no_later if awaits else no


def _assert_names(outcome: Outcome, kind: str) -> None:
    assert outcome.denied, outcome
    assert kind in (outcome.reason or ""), outcome.reason
    assert outcome.blocked_by == "raiser"


def _fire(hooks: Hooks, how: str, **fields: Any) -> Outcome:
    fields = {"tool_name": "Shell", "tool_input": {"command": "ls"}, **fields}
    if how == "fire":
        return hooks.fire("before_tool", **fields)
    return asyncio.run(hooks.afire("before_tool", **fields))


@pytest.mark.parametrize("how", ["fire", "afire"])
@pytest.mark.parametrize("chain", ["callable alone", "after a HOOK.md hook"])
@pytest.mark.parametrize("awaits", [False, True], ids=["def", "async def"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_callable_raising_any_exception_is_its_deny(
        kind: str, awaits: bool, chain: str, how: str, user_dir: Path, tmp_path: Path) -> None:
    if chain != "callable alone":  # the chain runs on the worker loop (fire) or a lane
        write_hook(user_dir, "script")
    with Hooks(tmp_path, user_dir=user_dir) as hooks:
        handle = hooks.add(_raising(kind, awaits=awaits), "before_tool", name="raiser")
        _assert_names(_fire(hooks, how, work_dir=str(tmp_path)), kind)
        _assert_names(_fire(hooks, how, work_dir=str(tmp_path)), kind)  # and again
        hooks.remove(handle)
        after = _fire(hooks, how, work_dir=str(tmp_path))  # the worker loop lives on
        assert after.decision == "allow", after


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_adapters_core_answers_any_exception(kind: str, user_dir: Path,
                                                 tmp_path: Path) -> None:
    write_hook(user_dir, "script")
    firing = Firing(tmp_path, user_dir=user_dir, framework="langchain")
    try:
        firing.hooks.add(_raising(kind, awaits=False), "before_tool", name="raiser")
        for outcome in (firing.fire_sync("before_tool", tool_name="Shell", tool_input={}),
                        asyncio.run(firing.fire("before_tool", tool_name="Shell",
                                                tool_input={}))):
            _assert_names(outcome, kind)
    finally:
        firing.close()


def test_a_real_cancellation_of_afire_still_cancels(user_dir: Path, tmp_path: Path) -> None:
    started = threading.Event()
    hooks = Hooks(tmp_path, user_dir=user_dir)

    @hooks.before_tool
    async def slow(tool_input: dict[str, Any]) -> None:
        started.set()
        await asyncio.sleep(600)

    async def agent() -> list[str]:
        seen = []
        task = asyncio.create_task(hooks.afire("before_tool", tool_name="Shell", tool_input={}))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            seen.append("cancelled")
        try:  # a timeout is a cancellation too
            await asyncio.wait_for(hooks.afire("before_tool", tool_name="Shell",
                                               tool_input={}), 0.2)
        except asyncio.TimeoutError:
            seen.append("timed out")
        started.clear()
        adapter = Firing(tmp_path, hooks=hooks)  # its guard lets the cancellation through
        task = asyncio.create_task(adapter.fire("before_tool", tool_name="Shell",
                                                tool_input={}))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            seen.append("cancelled through the adapter")
        await hooks.aclose()
        return seen

    try:
        assert asyncio.run(agent()) == ["cancelled", "timed out",
                                        "cancelled through the adapter"]
    finally:
        hooks.close()


# -- closing from inside a hook ----------------------------------------------------------------


def _in_time(work: Callable[[], Outcome]) -> Outcome:
    """``work()`` in a thread, so that a deadlock fails the test instead of hanging it."""
    done: list[Outcome] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    thread.join(120)  # only to stop a hang
    assert not thread.is_alive(), "deadlocked"
    return done[0]


@pytest.mark.parametrize("how", ["fire", "afire"])
@pytest.mark.parametrize("chain", ["callable alone", "after a HOOK.md hook"])
def test_close_from_inside_a_hook_is_refused(how: str, chain: str, user_dir: Path,
                                             tmp_path: Path) -> None:
    if chain != "callable alone":
        write_hook(user_dir, "script")
    hooks = Hooks(tmp_path, user_dir=user_dir)
    hooks.before_tool(lambda tool_input: hooks.close())
    try:
        outcome = _in_time(lambda: _fire(hooks, how, work_dir=str(tmp_path)))
        assert outcome.denied
        assert (outcome.reason or "").startswith("close() called from inside a hook; ")
        assert hooks.fire("session_start").decision == "allow"  # not closed
    finally:
        hooks.close()


def test_the_adapters_close_from_inside_a_hook_is_refused(user_dir: Path,
                                                          tmp_path: Path) -> None:
    write_hook(user_dir, "script")
    firing = Firing(tmp_path, user_dir=user_dir)

    async def closes(tool_input: dict[str, Any]) -> None:
        await firing.aclose()

    firing.hooks.before_tool(lambda tool_input: firing.close())
    firing.hooks.after_tool(closes)
    try:
        before = _in_time(lambda: firing.fire_sync("before_tool", tool_name="Shell",
                                                   tool_input={}))
        after = _in_time(lambda: asyncio.run(firing.fire("after_tool", tool_name="Shell",
                                                         tool_input={}, tool_output="x")))
        assert (before.reason or "").startswith("close() called from inside a hook")
        assert "aclose() called from inside a hook" in (after.reason or "")
    finally:
        firing.close()


# -- oracles, in the server and the bridge ---------------------------------------------------

ORACLES = """
import sys
from mcp_hooks.spec.signals import Signal

class Leaves:
    def __init__(self, config):
        pass

    def evaluate(self, context):
        command = context.tool_input.get("command", "")
        if command == "exit":
            sys.exit(0)
        if command == "interrupt":
            raise KeyboardInterrupt
        return None
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, ".ahp/oracles.py", ORACLES)
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n    - {oracle: 'oracles.py:Leaves'}\n")
    return repo


@pytest.mark.anyio
async def test_an_oracle_leaving_is_a_deny_and_the_server_serves_on(repo: Path,
                                                                    user_dir: Path) -> None:
    async with HookService(Settings.from_env(
            project_dir=repo, user_dir=user_dir, no_log=True)) as service, \
            Client(build_server(service)) as client:
        for command, kind in (("exit", "SystemExit"), ("interrupt", "KeyboardInterrupt")):
            result = await client.call_tool("fire_hook_event", {
                "event_type": "before_tool", "tool_name": "Shell",
                "tool_input": {"command": command}, "work_dir": str(repo)})
            outcome = result.structured_content
            assert not result.is_error and outcome is not None
            assert outcome["decision"] == "deny" and kind in outcome["reason"], outcome
        fine = await client.call_tool("fire_hook_event", {
            "event_type": "before_tool", "tool_name": "Shell", "tool_input": {"command": "ls"},
            "work_dir": str(repo)})
        assert fine.structured_content is not None
        assert fine.structured_content["decision"] == "allow"


@pytest.mark.parametrize("command", ["exit", "interrupt"])
def test_an_oracle_leaving_under_the_bridge_is_the_hosts_deny(repo: Path, user_dir: Path,
                                                              command: str) -> None:
    host = get_host("claude-code")
    done = subprocess.run(
        [MCP_HOOKS, "bridge", "claude-code", "--user-dir", str(user_dir)],
        input=json.dumps(host.shell_call(command, "s-1", repo)), capture_output=True,
        text=True, cwd=repo, env=dict(os.environ), timeout=120)
    reason = host.deny_reason(done.stdout, done.stderr, done.returncode)
    assert reason is not None and ("SystemExit" in reason or "KeyboardInterrupt" in reason), (
        done.returncode, done.stdout, done.stderr)


# -- SIGINT to the one-shot doors --------------------------------------------------------------


def _sleeping_hook(user_dir: Path, tmp_path: Path) -> Path:
    started = tmp_path / "started"
    write_hook(user_dir, "slow", script=f"echo $$ > '{started}'\nexec sleep 600\n")
    return started


def _interrupted(argv: list[str], stdin: str, started: Path,
                 cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``argv``, send it SIGINT once its hook runs, and collect what it answered."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd, env=dict(os.environ))
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    proc.stdin = None  # closed: communicate() must not flush it
    deadline = time.monotonic() + 120  # only to stop a hang
    while not started.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the hook never started"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@pytest.mark.parametrize("host_name", list(HOSTS))
def test_sigint_to_a_bridge_while_a_hook_runs_answers_a_deny(host_name: str, user_dir: Path,
                                                             tmp_path: Path) -> None:
    host = get_host(host_name)
    started = _sleeping_hook(user_dir, tmp_path)
    done = _interrupted(
        [MCP_HOOKS, "bridge", host_name, "--event", host.gate_event, "--user-dir",
         str(user_dir)], json.dumps(host.shell_call("ls", "s-1", tmp_path)), started, tmp_path)
    assert done.returncode != 130
    reason = host.deny_reason(done.stdout, done.stderr, done.returncode)
    assert reason is not None and "KeyboardInterrupt" in reason, (
        done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize("json_output", [True, False], ids=["--json", "text"])
def test_sigint_to_fire_while_a_hook_runs_answers_a_deny(json_output: bool, user_dir: Path,
                                                         tmp_path: Path) -> None:
    started = _sleeping_hook(user_dir, tmp_path)
    done = _interrupted(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input", "-", "--user-dir",
         str(user_dir), *(["--json"] if json_output else [])], '{"command": "ls"}', started,
        tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    if json_output:
        outcome = json.loads(done.stdout)
        assert outcome["decision"] == "deny" and "KeyboardInterrupt" in outcome["reason"]
    else:
        assert "KeyboardInterrupt" in done.stdout


@pytest.mark.parametrize("door", ["hooks.fire", "Firing(hooks=hooks).fire_sync"])
def test_ctrl_c_while_fire_waits_for_its_worker_interrupts_the_caller(
        door: str, user_dir: Path, tmp_path: Path) -> None:
    """The caller's own Ctrl-C is not the hooks' exception: it goes on (the chain and its
    hook process are stopped), so a loop over ``fire`` can still be interrupted."""
    started = _sleeping_hook(user_dir, tmp_path)
    code = (
        "import sys\n"
        "from mcp_hooks import Hooks\n"
        "from mcp_hooks.adapters._firing import Firing\n"
        f"hooks = Hooks({str(tmp_path)!r}, user_dir={str(user_dir)!r})\n"
        "try:\n"
        f"    {door}('before_tool', tool_name='Shell', tool_input={{}})\n"
        "    print('returned')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
        "hooks.close()\n"
    )
    done = _interrupted([sys.executable, "-c", code], "", started, tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "interrupted"), done.stderr
    assert not _running(int(started.read_text())), "the hook's sleep outlived its chain"


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_a_hook_script_raising_keyboardinterrupt_is_its_own_failure(user_dir: Path,
                                                                   tmp_path: Path) -> None:
    """A Python hook that dies of KeyboardInterrupt failed on its own: it fails open (or
    closed with ``on_error: block``), as any crashing hook does."""
    script = "raise KeyboardInterrupt\n"
    write_hook(user_dir, "open", script=script, entry="scripts/run.py")
    argv = [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input", "{}",
            "--user-dir", str(user_dir), "--json"]
    opened = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert opened.returncode == 0, opened.stderr
    assert json.loads(opened.stdout)["hooks"][0]["status"] == "error"
    write_hook(user_dir, "closed", script=script, entry="scripts/run.py",
               extra="metadata:\n  on_error: block\n")
    closed = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert closed.returncode == 2, closed.stderr
    assert json.loads(closed.stdout)["blocked_by"] == "closed"


def test_a_bug_escaping_a_gate_is_still_its_deny(user_dir: Path, tmp_path: Path) -> None:
    """What escapes ``fire`` outside the engine (here a ``SystemExit`` from its own code path,
    patched in) is answered with ``fire``'s deny after the traceback, not exit 0/1."""
    code = (
        "import sys\n"
        "from mcp_hooks import cli\n"
        "from mcp_hooks.cli import fire\n"
        "def leave(*args, **kwargs):\n"
        "    sys.exit(0)\n"
        "fire.Engine = leave\n"
        f"sys.exit(cli.main(['fire', 'before_tool', '--tool', 'Shell', '--json', "
        f"'--user-dir', {str(user_dir)!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["decision"] == "deny" and "SystemExit" in outcome["reason"]
    assert "Traceback" in done.stderr
