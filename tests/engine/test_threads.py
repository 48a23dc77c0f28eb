"""Many threads and event loops at once: ``Hooks.fire`` from a thread pool, ``afire`` from
several loops, one change watcher asked from many threads, ``serve`` answering concurrent
events. Each call gets its own exact decision and nothing raises."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_hooks import Hooks, Outcome
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.registry.watch import ChangeWatcher
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.control_helpers import make_repo, write

THREADS, CALLS = 16, 30
# harmless, denied by the HOOK.md hook, by the callable, by the hooks.yaml oracle
COMMANDS = ("ls -la", "rm -rf /", "git push --force", "drop table users")
EXPECTED = {"ls -la": None, "rm -rf /": "no rm -rf", "git push --force": "no force push",
            "drop table users": "no dropping tables"}

ORACLE = """
from mcp_hooks.spec.signals import Signal

class NoDrop:
    def __init__(self, config):
        pass

    def evaluate(self, context):
        if "drop table" in context.tool_input.get("command", ""):
            return Signal.block("no dropping tables")
        return None
"""


@pytest.fixture
def repo(tmp_path: Path, user_dir: Path) -> Path:
    """A project with a user HOOK.md hook and a hooks.yaml oracle, each denying one thing."""
    repo = make_repo(tmp_path / "repo")
    write_hook(user_dir, "no-rm", script='grep -q "rm -rf" && { echo "no rm -rf" >&2; exit 2; }'
                                         '\nexit 0\n')
    write(repo, ".ahp/oracles.py", ORACLE)
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n    - {oracle: 'oracles.py:NoDrop'}\n")
    return repo


def _no_force_push(tool_input: dict[str, Any]) -> None:
    if "push --force" in tool_input.get("command", ""):
        raise PermissionError("no force push")


def _in_threads(count: int, work: Callable[[int], None]) -> list[BaseException]:
    """Run ``work(i)`` in ``count`` threads started together; what any of them raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def run(i: int) -> None:
        try:
            start.wait()
            work(i)
        except BaseException as exc:  # collected: the assertion names it
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)  # only to stop a hang
    assert not any(t.is_alive() for t in threads), "a thread hangs"
    return errors


def _check(outcome: Outcome, command: str, wrong: list[str]) -> None:
    want = EXPECTED[command]
    if (outcome.reason if outcome.denied else None) != want:
        wrong.append(f"{command!r}: {outcome.decision} {outcome.reason!r}, want {want!r}")


@pytest.mark.parametrize("chain", ["callable only", "hook, callable, hooks.yaml"])
def test_fire_from_sixteen_threads(repo: Path, user_dir: Path, tmp_path: Path,
                                   chain: str) -> None:
    full = chain != "callable only"
    project = repo if full else tmp_path / "bare"
    project.mkdir(exist_ok=True)
    wrong: list[str] = []
    with Hooks(project, user_dir=user_dir if full else tmp_path / "none") as hooks:
        hooks.before_tool(_no_force_push, tool="Shell")
        commands = COMMANDS if full else COMMANDS[::2]  # ls and the force push only

        def calls(i: int) -> None:
            for j in range(CALLS):
                command = commands[(i + j) % len(commands)]
                _check(hooks.fire("before_tool", tool_name="Shell",
                                  tool_input={"command": command}, work_dir=str(project)),
                       command, wrong)

        errors = _in_threads(THREADS, calls)
    assert errors == []
    assert wrong == []


def test_afire_from_four_loops_in_four_threads(repo: Path, user_dir: Path) -> None:
    wrong: list[str] = []
    hooks = Hooks(repo, user_dir=user_dir)
    hooks.before_tool(_no_force_push, tool="Shell")

    async def calls(i: int) -> None:
        async def one(j: int) -> None:
            command = COMMANDS[(i + j) % len(COMMANDS)]
            _check(await hooks.afire("before_tool", tool_name="Shell",
                                     tool_input={"command": command}, work_dir=str(repo)),
                   command, wrong)

        for batch in range(0, CALLS, 6):  # several events of one loop at once, too
            await asyncio.gather(*(one(j) for j in range(batch, batch + 6)))

    try:
        errors = _in_threads(4, lambda i: asyncio.run(calls(i)))
    finally:
        hooks.close()
    assert errors == []
    assert wrong == []


def test_one_watcher_asked_from_many_threads(tmp_path: Path) -> None:
    """``select.poll`` refuses a second concurrent ``poll()``: the watcher's lock makes each
    ask whole, and a change is still seen."""
    watcher = ChangeWatcher()
    watched = tmp_path / "watched"
    watched.mkdir()
    watcher.watch([watched])
    seen: list[bool] = []

    def ask(i: int) -> None:
        for j in range(200):
            if i == 0 and j % 50 == 0:
                (watched / f"f{j}").write_text("x")
            seen.append(watcher.changed())

    try:
        assert _in_threads(THREADS, ask) == []
    finally:
        watcher.close()
    assert any(seen)


def test_a_registry_refreshed_from_many_threads_sees_a_new_hook(user_dir: Path) -> None:
    registry = Registry(user_dir, None)
    write_hook(user_dir, "first")
    counts: list[int] = []

    def refresh(i: int) -> None:
        for _ in range(100):
            registry.refresh()
            counts.append(len(registry.hooks()))

    try:
        assert _in_threads(THREADS, refresh) == []
        assert [h.name for h in registry.hooks()] == ["first"]
        assert counts[-1] == 1
    finally:
        registry.close()


@pytest.mark.anyio
async def test_serve_answers_concurrent_events_with_a_hooks_yaml(repo: Path,
                                                                 user_dir: Path) -> None:
    """The control layer's oracles run in threads beside each other; they share its
    watcher. Every concurrent event gets its own decision, none a fault."""
    args = [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--project-dir",
            str(repo), "--user-dir", str(user_dir), "--no-log"]
    commands = [c for c in COMMANDS if c != "git push --force"]  # no callables in a server
    with background(args, env=dict(os.environ), capture_stdout=True) as server:
        async with Client(server.url) as client:
            async def one(command: str) -> tuple[str, Any]:
                result = await client.call_tool("fire_hook_event", {
                    "event_type": "before_tool", "tool_name": "Shell",
                    "tool_input": {"command": command}, "work_dir": str(repo)})
                assert result.structured_content is not None
                return command, result.structured_content

            for _ in range(3):
                answers = await asyncio.gather(*(one(commands[i % len(commands)])
                                                 for i in range(THREADS)))
                for command, outcome in answers:
                    want = EXPECTED[command]
                    got = outcome["reason"] if outcome["decision"] == "deny" else None
                    assert got == want, (command, outcome["reason"])
