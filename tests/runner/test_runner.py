"""The runner on its own: spawn failures, stdin, caps, timeouts, over every way to run.

A *way* is a driver (``blocking``: poll; ``eventloop``: the hand-written loop callbacks;
``library``: asyncio's subprocess) under a spawn strategy (``posix_spawn`` or ``Popen``;
exit told by a pidfd or by ``waitid`` polls), selected with ``runner.using`` exactly as
``MCP_HOOKS_RUNNER`` would select it. Every behaviour test takes the ``drive`` fixture and
so runs once per way this machine can honour; ``tests/runner/test_process_tree.py`` does the same
for the process-tree and limits guarantees.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import runner
from mcp_hooks.runner import RunResult, Strategy, run_hook, using
from tests.helpers.ways import ASYNC_WAYS, WAYS, Way


@pytest.fixture(params=WAYS, ids=[way.id for way in WAYS])
def drive(request: pytest.FixtureRequest) -> Way:
    way: Way = request.param
    return way


@pytest.fixture(params=ASYNC_WAYS, ids=[way.id for way in ASYNC_WAYS])
def async_way(request: pytest.FixtureRequest) -> Way:
    way: Way = request.param
    return way


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


pytestmark = pytest.mark.anyio


# -- the strategy: parsed from MCP_HOOKS_RUNNER, and really followed ------------------------


def test_strategy_words() -> None:
    assert Strategy.parse("") == Strategy()
    chosen = Strategy.parse(" library , no-pidfd,no-posix-spawn ")
    assert chosen.library and not chosen.pidfd and not chosen.posix_spawn
    assert Strategy.parse("library").name == "library"
    with pytest.raises(ValueError, match=r"unknown word.*fast.*use any of: library"):
        Strategy.parse("library,fast")


@pytest.mark.parametrize(("value", "name"), [
    ("", "default"), ("library", "library"), ("no-such-word", "default"),
])
def test_strategy_is_the_doors_settings(value: str, name: str, tmp_path: Path) -> None:
    """``MCP_HOOKS_RUNNER`` reaches the runner through the door's ``Settings`` (the engine
    adopts ``settings.runner``), not by a read of the runner's own; a ``using`` block wins."""
    code = (
        "from mcp_hooks.engine.engine import Engine\n"
        "from mcp_hooks.registry.discovery import Registry\n"
        "from mcp_hooks.runner import Strategy, spawn, using\n"
        "from mcp_hooks.settings import Settings\n"
        "before = spawn.current.name\n"
        f"registry = Registry({str(tmp_path)!r})\n"
        "Engine(registry, Settings.from_env())\n"
        "with using(Strategy(pidfd=False)) as held:\n"
        "    Engine(registry, Settings.from_env())\n"
        "    kept = spawn.current == held\n"
        "print(before, spawn.current.name, kept)\n"
    )
    env = {**os.environ, runner.STRATEGY_VAR: value}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True)
    assert done.stdout.split() == ["default", name, "True"]


def _refuse(*args: object, **kwargs: object) -> Any:
    raise AssertionError("the strategy switched this off")


async def test_switched_off_paths_are_not_taken(monkeypatch: pytest.MonkeyPatch,
                                                drive: Way) -> None:
    """Each way really avoids what its strategy switches off."""
    if not drive.strategy.posix_spawn or drive.driver == "library":
        monkeypatch.setattr(os, "posix_spawn", _refuse)
    if not drive.strategy.pidfd or drive.driver == "library":
        monkeypatch.setattr(os, "pidfd_open", _refuse)
    result = await drive(["/bin/sh", "-c", "cat; echo done >&2"], b"in", cwd="/",
                         env={}, timeout=10)
    assert (result.exit_code, result.stdout, result.stderr) == (0, b"in", b"done\n")


# -- behaviour, over every way -------------------------------------------------------------


@pytest.mark.parametrize(("argv", "words"), [
    (["/no/such/script"], "not found"),
    ([__file__], "permission denied"),
])
async def test_spawn_errors_are_results(drive: Way, argv: list[str], words: str) -> None:
    result = await drive(argv, b"", cwd="/", env={}, timeout=5)
    assert result.exit_code is None and words in (result.spawn_error or "")


async def test_not_an_executable_format(drive: Way, tmp_path: Path) -> None:
    script = tmp_path / "noshebang"
    script.write_bytes(b"\x00\x01\x02garbage")
    script.chmod(0o755)
    result = await drive([str(script)], b"", cwd="/", env={}, timeout=5)
    assert result.exit_code is None and result.spawn_error is not None


async def test_stdin_round_trip_and_separate_streams(drive: Way) -> None:
    code = "import sys; d=sys.stdin.read(); print(d.upper()); print('err', file=sys.stderr)"
    result = await drive([sys.executable, "-c", code], b"hello", cwd="/",
                         env=dict(os.environ), timeout=10)
    assert (result.exit_code, result.stdout, result.stderr) == (0, b"HELLO\n", b"err\n")
    assert not result.timed_out and result.spawn_error is None


async def test_working_folder(drive: Way, tmp_path: Path) -> None:
    """In this process's folder (posix_spawn in place) and another (switched around the
    spawn, or Popen's cwd)."""
    ours = os.getcwd()
    for folder in (ours, str(tmp_path)):
        result = await drive(["/bin/sh", "-c", "pwd -P"], b"", cwd=folder, env={}, timeout=10)
        assert result.stdout.decode().strip() == os.path.realpath(folder)
        assert os.getcwd() == ours  # switched back, if it was switched


async def test_output_cap_counts_what_was_dropped(drive: Way) -> None:
    code = "import sys; sys.stdout.write('x' * 100000); sys.stderr.write('y' * 5000)"
    result = await drive([sys.executable, "-c", code], b"", cwd="/", env=dict(os.environ),
                         timeout=10, output_cap=1000)
    assert (len(result.stdout), result.stdout_size) == (1000, 100000)
    assert (result.stderr, result.stderr_size) == (b"y" * 1000, 5000)


async def test_exit_codes(drive: Way) -> None:
    assert (await drive(["/bin/sh", "-c", "exit 0"], cwd="/", env={}, timeout=5)).exit_code == 0
    assert (await drive(["/bin/sh", "-c", "exit 7"], cwd="/", env={}, timeout=5)).exit_code == 7


async def test_signal_exit_is_negative(drive: Way) -> None:
    result = await drive(["/bin/sh", "-c", "kill -9 $$"], b"", cwd="/", env={}, timeout=5)
    assert result.exit_code == -9 and not result.timed_out


async def test_a_child_that_never_reads_stdin(drive: Way) -> None:
    for size in (10, 3_000_000):  # one write, and a payload fed as the pipe has room
        result = await drive(["/bin/sh", "-c", "echo early"], b"x" * size, cwd="/", env={},
                             timeout=10)
        assert (result.exit_code, result.stdout) == (0, b"early\n"), size


async def test_timeout_kills_the_group(drive: Way, tmp_path: Path) -> None:
    """SIGTERM is ignored, so the grace ends in SIGKILL, for the hook and its child."""
    pids = tmp_path / "pids"
    script = f"trap '' TERM; sleep 60 & echo $! >> {pids}; echo $$ >> {pids}; wait"
    started = time.monotonic()
    result = await drive(["/bin/sh", "-c", script], b"", cwd="/", env={}, timeout=0.5,
                         kill_grace=0.1)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 20
    deadline = time.monotonic() + 5  # SIGKILL is delivered asynchronously: allow a moment
    for pid in map(int, pids.read_text().split()):
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(pid), f"process {pid} survived the timeout"


async def test_term_is_enough_for_a_hook_that_honours_it(drive: Way, tmp_path: Path) -> None:
    marker = tmp_path / "termed"
    script = f"trap 'echo term > {marker}; exit 0' TERM; while :; do sleep 0.05; done"
    result = await drive(["/bin/sh", "-c", script], b"", cwd="/", env={}, timeout=0.5,
                         kill_grace=5)
    assert result.timed_out and result.exit_code is None
    assert marker.read_text() == "term\n"
    # it did not wait out the grace (5 s; the hook ends within half a second of its TERM).
    # A longer grace would make this a plain hang bound, but leaves the library path's
    # asyncio subprocess transport unclosed after the run (a ResourceWarning in a later test)
    assert result.duration_ms < 5000


async def test_timeout_shorter_than_the_reader_delay(drive: Way) -> None:
    result = await drive(["/bin/sh", "-c", "sleep 5"], cwd="/", env={}, timeout=0.003,
                         kill_grace=0.05)
    assert result.timed_out and result.exit_code is None


async def test_grandchild_holding_stdout(drive: Way, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"sleep 30 & echo $! > {pid_file}; echo bye >&2; exit 2"
    result = await drive(["/bin/sh", "-c", script], b"", cwd="/", env={}, timeout=20)
    assert result.exit_code == 2 and result.stderr == b"bye\n"
    assert not result.timed_out  # the grandchild holding stdout did not keep the run going
    pid = int(pid_file.read_text())
    # and it ended with the run (tests/runner/test_process_tree.py)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid)


async def test_flood_and_large_payload(drive: Way) -> None:
    flood = "head -c 3000000 /dev/zero | tr '\\0' a; head -c 2000000 /dev/zero >&2"
    result = await drive(["/bin/sh", "-c", flood], b"x" * 3_000_000, cwd="/", env={},
                         timeout=30, output_cap=1000)
    assert result.exit_code == 0
    assert (result.stdout, result.stdout_size) == (b"a" * 1000, 3_000_000)
    assert result.stderr_size == 2_000_000


async def test_large_payload_is_read_whole(drive: Way) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB: fed as the child reads it
    result = await drive(["/bin/sh", "-c", "wc -c"], data, cwd="/", env={}, timeout=30)
    assert result.stdout.strip() == str(len(data)).encode()


async def test_the_callers_env_is_copied(drive: Way) -> None:
    env: Mapping[str, str] = {"ONLY": "this"}
    result = await drive(["/bin/sh", "-c", "echo $ONLY"], cwd="/", env=env, timeout=5)
    assert result.stdout == b"this\n" and env == {"ONLY": "this"}


# -- the async drivers: many runs on one loop ----------------------------------------------


async def test_concurrent_slow_floods_are_all_drained(async_way: Way) -> None:
    """Readers start through the shared timer; a run that never got them would fill its
    pipe, block, and end only at its timeout."""
    import anyio

    results: dict[int, RunResult] = {}

    async def one(i: int) -> None:
        # the quick ones exit first, so later runs reuse their pidfd numbers
        script = "exit 0" if i % 2 else f"sleep 0.0{i % 5 + 1}; head -c {200_000 + i} /dev/zero"
        results[i] = await run_hook(["/bin/sh", "-c", script], b"", cwd="/", env={}, timeout=60)

    with using(async_way.strategy), anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for i in range(24):
                tg.start_soon(one, i)
    for i, result in results.items():
        assert result.exit_code == 0 and not result.timed_out, i
        expected = 0 if i % 2 else 200_000 + i
        assert result.stdout_size == expected, i  # (one never drained would hit fail_after)


@pytest.mark.parametrize("way", ASYNC_WAYS, ids=[way.id for way in ASYNC_WAYS])
def test_a_second_event_loop_gets_its_own_watcher(way: Way) -> None:
    import asyncio

    for _ in range(2):  # the first loop is closed (and its watcher with it) before the second
        result = asyncio.run(way(["/bin/sh", "-c", "sleep 0.02; echo ok"], cwd="/", env={},
                                 timeout=10))
        assert result.stdout == b"ok\n"


async def test_cancelled_run_leaves_nothing(async_way: Way, tmp_path: Path) -> None:
    import anyio

    pid_file = tmp_path / "pid"
    script = f"sleep 60 & echo $! > {pid_file}; wait"
    with anyio.move_on_after(1.0) as scope:
        await async_way(["/bin/sh", "-c", script], b"", cwd="/", env={}, timeout=60)
    assert scope.cancelled_caught
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid)
