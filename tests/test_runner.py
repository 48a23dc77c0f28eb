"""The runner on its own: spawn failures, stdin, caps."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mcp_hooks.runner import run_hook

pytestmark = pytest.mark.anyio


async def run(argv: list[str], payload: bytes = b"{}", timeout: float = 10,
              **kwargs: int) -> object:
    return await run_hook(argv, payload, cwd="/", env=dict(os.environ), timeout=timeout, **kwargs)


@pytest.mark.parametrize(("argv", "words"), [
    (["/no/such/script"], "not found"),
    ([__file__], "permission denied"),
])
async def test_spawn_errors_are_results(argv: list[str], words: str) -> None:
    result = await run_hook(argv, b"", cwd="/", env={}, timeout=5)
    assert result.exit_code is None and words in (result.spawn_error or "")


async def test_not_an_executable_format(tmp_path: Path) -> None:
    script = tmp_path / "noshebang"
    script.write_bytes(b"\x00\x01\x02garbage")
    script.chmod(0o755)
    result = await run_hook([str(script)], b"", cwd="/", env={}, timeout=5)
    assert result.spawn_error is not None


async def test_stdin_round_trip_and_separate_streams() -> None:
    code = "import sys; d=sys.stdin.read(); print(d.upper()); print('err', file=sys.stderr)"
    result = await run_hook([sys.executable, "-c", code], b"hello", cwd="/",
                            env=dict(os.environ), timeout=10)
    assert result.exit_code == 0
    assert result.stdout == b"HELLO\n" and result.stderr == b"err\n"


async def test_output_cap_counts_what_was_dropped() -> None:
    code = "import sys; sys.stdout.write('x' * 100000)"
    result = await run_hook([sys.executable, "-c", code], b"", cwd="/", env=dict(os.environ),
                            timeout=10, output_cap=1000)
    assert len(result.stdout) == 1000 and result.stdout_size == 100000


async def test_signal_exit_is_negative() -> None:
    result = await run_hook(["/bin/sh", "-c", "kill -9 $$"], b"", cwd="/", env={}, timeout=5)
    assert result.exit_code == -9
