"""The runner on its own: spawn failures, stdin, caps."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from mcp_hooks.runner import RunResult, run_hook, run_hook_blocking


async def run(argv: list[str], payload: bytes = b"{}", timeout: float = 10,
              **kwargs: float) -> RunResult:
    return await run_hook(argv, payload, cwd="/", env=dict(os.environ), timeout=timeout, **kwargs)


@pytest.mark.parametrize(("argv", "words"), [
    (["/no/such/script"], "not found"),
    ([__file__], "permission denied"),
])
@pytest.mark.anyio
async def test_spawn_errors_are_results(argv: list[str], words: str) -> None:
    result = await run_hook(argv, b"", cwd="/", env={}, timeout=5)
    assert result.exit_code is None and words in (result.spawn_error or "")


@pytest.mark.anyio
async def test_not_an_executable_format(tmp_path: Path) -> None:
    script = tmp_path / "noshebang"
    script.write_bytes(b"\x00\x01\x02garbage")
    script.chmod(0o755)
    result = await run_hook([str(script)], b"", cwd="/", env={}, timeout=5)
    assert result.spawn_error is not None


@pytest.mark.anyio
async def test_stdin_round_trip_and_separate_streams() -> None:
    code = "import sys; d=sys.stdin.read(); print(d.upper()); print('err', file=sys.stderr)"
    result = await run_hook([sys.executable, "-c", code], b"hello", cwd="/",
                            env=dict(os.environ), timeout=10)
    assert result.exit_code == 0
    assert result.stdout == b"HELLO\n" and result.stderr == b"err\n"


@pytest.mark.anyio
async def test_output_cap_counts_what_was_dropped() -> None:
    code = "import sys; sys.stdout.write('x' * 100000)"
    result = await run_hook([sys.executable, "-c", code], b"", cwd="/", env=dict(os.environ),
                            timeout=10, output_cap=1000)
    assert len(result.stdout) == 1000 and result.stdout_size == 100000


@pytest.mark.anyio
async def test_signal_exit_is_negative() -> None:
    result = await run_hook(["/bin/sh", "-c", "kill -9 $$"], b"", cwd="/", env={}, timeout=5)
    assert result.exit_code == -9


# -- the blocking runner of one-shot processes: the same promises without an event loop ---


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_blocking_runner_round_trip() -> None:
    code = "import sys; d=sys.stdin.read(); print(d.upper()); print('err', file=sys.stderr)"
    result = run_hook_blocking([sys.executable, "-c", code], b"hello", cwd="/",
                               env=dict(os.environ), timeout=10)
    assert (result.exit_code, result.stdout, result.stderr) == (0, b"HELLO\n", b"err\n")


def test_blocking_runner_spawn_error() -> None:
    result = run_hook_blocking(["/no/such/script"], b"", cwd="/", env={}, timeout=5)
    assert result.exit_code is None and "not found" in (result.spawn_error or "")


def test_blocking_runner_timeout_kills_the_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"trap '' TERM; sleep 60 & echo $! >> {pids}; echo $$ >> {pids}; wait"
    result = run_hook_blocking(["/bin/sh", "-c", script], b"", cwd="/", env={}, timeout=0.3)
    assert result.timed_out and result.exit_code is None
    deadline = time.monotonic() + 5  # SIGKILL is delivered asynchronously: allow a moment
    for pid in map(int, pids.read_text().split()):
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(pid), f"process {pid} survived the timeout"


def test_blocking_runner_grandchild_holding_stdout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"sleep 30 & echo $! > {pid_file}; echo bye >&2; exit 2"
    result = run_hook_blocking(["/bin/sh", "-c", script], b"", cwd="/", env={}, timeout=20)
    assert result.exit_code == 2 and result.stderr == b"bye\n"
    assert not result.timed_out  # the grandchild holding stdout did not keep the run going
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10  # and it ended with the run (tests/test_process_tree.py)
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid)


def test_blocking_runner_flood_and_large_payload() -> None:
    flood = "head -c 3000000 /dev/zero | tr '\\0' a; head -c 2000000 /dev/zero >&2"
    result = run_hook_blocking(["/bin/sh", "-c", flood], b"x" * 3_000_000, cwd="/", env={},
                               timeout=30, output_cap=1000)
    assert result.exit_code == 0
    assert (len(result.stdout), result.stdout_size) == (1000, 3_000_000)
    assert result.stderr_size == 2_000_000


# -- the async runner's shared watcher: one epoll set and one timer for all runs ---------


@pytest.mark.anyio
async def test_concurrent_slow_floods_are_all_drained() -> None:
    """Readers start through the shared timer; a run that never got them would fill its
    pipe, block, and end only at its timeout."""
    import anyio

    results: dict[int, RunResult] = {}

    async def one(i: int) -> None:
        # the quick ones exit first, so later runs reuse their pidfd numbers
        script = "exit 0" if i % 2 else f"sleep 0.0{i % 5 + 1}; head -c {200_000 + i} /dev/zero"
        results[i] = await run_hook(["/bin/sh", "-c", script], b"", cwd="/", env={}, timeout=60)

    with anyio.fail_after(15):  # without readers, a flood would block until its timeout
        async with anyio.create_task_group() as tg:
            for i in range(24):
                tg.start_soon(one, i)
    for i, result in results.items():
        assert result.exit_code == 0 and not result.timed_out, i
        expected = 0 if i % 2 else 200_000 + i
        assert result.stdout_size == expected, i
        assert result.duration_ms < 5000, i


@pytest.mark.anyio
async def test_timeout_shorter_than_the_reader_delay() -> None:
    result = await run(["/bin/sh", "-c", "sleep 5"], timeout=0.003, kill_grace=0.05)
    assert result.timed_out and result.exit_code is None


def test_a_second_event_loop_gets_its_own_watcher() -> None:
    import asyncio

    for _ in range(2):  # the first loop is closed (and its watcher with it) before the second
        result = asyncio.run(run(["/bin/sh", "-c", "sleep 0.02; echo ok"]))
        assert result.stdout == b"ok\n"
