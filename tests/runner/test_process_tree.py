"""A hook's processes end with its run, and its resource limits apply (issue 9, item 5).

Real hooks (sh scripts in tmp_path) start background children, ``setsid`` children and
double forks; after the run returns, every one of them is gone, for every driver under
every spawn strategy (``posix_spawn`` or ``Popen``, a pidfd or ``waitid``) and on the library
path (``tests/runner/test_runner.py``'s ways), on a normal exit and on a timeout. Nothing here
asserts a speed: a process is given up to ``GONE_WITHIN`` seconds to vanish, and a CPU-bound
hook up to its timeout to hit its limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import anyio
import pytest

from mcp_hooks.errors import HookFileError
from mcp_hooks.runner import RUN_ID_VAR, RunResult, run_hook, using
from mcp_hooks.spec.limits import DEFAULT_LIMITS, Limits, parse_limits
from tests.helpers.ways import ASYNC_WAYS, GONE_WITHIN, WAYS, Way, proc_state

LINUX = sys.platform.startswith("linux")
pytestmark = pytest.mark.skipif(not LINUX, reason="process cleanup and limits are Linux's")


def _lingers(pid: int) -> bool:
    """Alive, or a zombie left to us (nobody reaped it)."""
    state = proc_state(pid)
    return state is not None and (state[0] != "Z" or state[1] == os.getpid())


def assert_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + GONE_WITHIN
    for pid in pids:
        while _lingers(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _lingers(pid), f"process {pid} outlived its run: {proc_state(pid)}"


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


Runner = Callable[..., Awaitable[RunResult]]

# every driver under every strategy this machine honours (tests/runner/test_runner.py)
DRIVERS = pytest.mark.parametrize("drive", WAYS, ids=[way.id for way in WAYS])
ASYNC_DRIVERS = pytest.mark.parametrize("way", ASYNC_WAYS, ids=[way.id for way in ASYNC_WAYS])


def hook(tmp_path: Path, body: str, name: str = "run") -> str:
    script = tmp_path / name
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


# Each starts one process (``leaf``) that writes its own pid to $PIDS and sleeps; the hook
# waits until the pids are written, so the test knows every pid it must see gone.
STARTERS = {
    "background": '"$DIR/leaf" &\n',
    "setsid": 'setsid "$DIR/leaf" &\n',
    "double-fork": 'sh -c \'"$DIR/leaf" & exit 0\' &\n',
    "daemon": '"$DIR/daemon" &\n',  # fork, setsid, fork, and both parents exit
}
WAIT_FOR_PIDS = ('while [ "$(wc -l < "$PIDS" 2>/dev/null || echo 0)" -lt "$WANT" ]; do '
                 "sleep 0.01; done\n")


def hook_env(tmp_path: Path, want: int) -> dict[str, str]:
    # the leaf lets go of the hook's pipes: without a pidfd, their end stands for the exit
    hook(tmp_path, 'echo $$ >> "$PIDS"\nexec sleep 100 </dev/null >/dev/null 2>&1\n', "leaf")
    hook(tmp_path, 'setsid sh -c \'"$DIR/leaf" & exit 0\' &\nexit 0\n', "daemon")
    return {"PATH": os.environ["PATH"], "DIR": str(tmp_path), "PIDS": str(tmp_path / "pids"),
            "WANT": str(want)}


@DRIVERS
@pytest.mark.parametrize("ending", ["exit", "timeout"])
@pytest.mark.parametrize("kind", list(STARTERS))
@pytest.mark.anyio
async def test_nothing_outlives_the_run(tmp_path: Path, drive: Runner, ending: str,
                                        kind: str) -> None:
    pids = tmp_path / "pids"
    body = STARTERS[kind] + STARTERS[kind] + WAIT_FOR_PIDS
    body += "trap '' TERM\nsleep 100\n" if ending == "timeout" else "exit 3\n"
    env = hook_env(tmp_path, 2)
    timeout = 2.0 if ending == "timeout" else 60.0
    result = await drive([hook(tmp_path, body)], cwd="/", env=env, timeout=timeout,
                         kill_grace=0.05)
    started = [int(line) for line in pids.read_text().split()]
    try:
        assert len(started) == 2, result
        if ending == "timeout":
            assert result.timed_out and result.exit_code is None
        else:
            assert result.exit_code == 3 and not result.timed_out
        assert_gone(started)
    finally:
        for pid in started:
            _kill(pid)


@DRIVERS
@pytest.mark.anyio
async def test_unmarked_children_are_left_alone(tmp_path: Path, drive: Runner) -> None:
    """A child of ours the engine did not start (the proxy's upstream servers), and an orphan
    re-parented to us from such a child, survive a run's sweep."""
    own = subprocess.Popen(["sleep", "100"])
    orphan_out = subprocess.run(["sh", "-c", "sleep 100 >/dev/null 2>&1 & echo $!"],
                                capture_output=True, check=True, text=True)
    orphan = int(orphan_out.stdout)
    try:
        result = await drive([hook(tmp_path, "sleep 100 &\nexit 0\n")], cwd="/",
                             env={"PATH": os.environ["PATH"]}, timeout=30)
        assert result.exit_code == 0
        assert own.poll() is None and proc_state(own.pid) is not None
        assert proc_state(orphan) is not None and proc_state(orphan)[0] != "Z"  # type: ignore[index]
    finally:
        own.kill()
        own.wait()
        _kill(orphan)


@ASYNC_DRIVERS
@pytest.mark.anyio
async def test_an_active_runs_orphans_wait_for_their_run(tmp_path: Path, way: Way) -> None:
    """A run that ends kills the leftovers of ended runs only: another run's orphan (already
    re-parented to us) lives until its own run ends."""
    pids, go = tmp_path / "pids", tmp_path / "go"
    env = hook_env(tmp_path, 1)
    slow = hook(tmp_path, STARTERS["double-fork"] + WAIT_FOR_PIDS
                + f"while [ ! -e {go} ]; do sleep 0.01; done\n", "slow")
    quick = hook(tmp_path, "sleep 100 &\nexit 0\n", "quick")
    results: list[RunResult] = []

    async def slow_run() -> None:
        results.append(await run_hook([slow], b"", cwd="/", env=env, timeout=60))

    with using(way.strategy):
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_run)
            with anyio.fail_after(60):
                while not pids.exists() or not pids.read_text().strip():
                    await anyio.sleep(0.01)
            orphan = int(pids.read_text())
            try:
                assert (await run_hook([quick], b"", cwd="/", env=env, timeout=30)).exit_code == 0
                state = proc_state(orphan)
                assert state is not None and state[0] != "Z", "the active run's orphan was killed"
                go.touch()
            finally:
                go.touch()
    assert results[0].exit_code == 0
    assert_gone([orphan])


@DRIVERS
@pytest.mark.anyio
async def test_another_thread_and_another_folder(tmp_path: Path, drive: Runner) -> None:
    """Another thread is running, so a folder other than ours cannot be switched around
    posix_spawn (Popen is used): the same cleanup."""
    pids = tmp_path / "pids"
    body = STARTERS["setsid"] + STARTERS["daemon"] + WAIT_FOR_PIDS + "exit 0\n"
    env = hook_env(tmp_path, 2)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()  # two threads: a cwd other than ours goes through Popen
    try:
        result = await drive([hook(tmp_path, body)], cwd=str(tmp_path), env=env, timeout=60)
        assert result.exit_code == 0, result
        started = [int(line) for line in pids.read_text().split()]
        assert len(started) == 2
        assert_gone(started)
    finally:
        stop.set()
        other.join()


@DRIVERS
@pytest.mark.anyio
async def test_the_run_id_marks_a_copy_of_the_env(tmp_path: Path, drive: Runner) -> None:
    env = {"PATH": os.environ["PATH"], RUN_ID_VAR: "1.2"}
    result = await drive([hook(tmp_path, f'echo "${RUN_ID_VAR}"\n')], cwd="/", env=env,
                         timeout=30)
    outer, mine = result.stdout.decode().strip().split("/")
    assert outer == "1.2" and mine.startswith(f"{os.getpid()}.")
    assert env == {"PATH": os.environ["PATH"], RUN_ID_VAR: "1.2"}  # the caller's, untouched


@DRIVERS
@pytest.mark.anyio
async def test_spawn_failures_are_results(drive: Runner) -> None:
    """An environment too big for exec (E2BIG), or one exec cannot carry (a NUL byte)."""
    huge: Mapping[str, str] = {"BIG": "x" * 300_000}
    result = await drive(["/bin/true"], cwd="/", env=huge, timeout=5)
    assert result.exit_code is None and "E2BIG" in (result.spawn_error or "")
    result = await drive(["/bin/true"], cwd="/", env={"BAD": "a\0b"}, timeout=5)
    assert result.exit_code is None and result.spawn_error
    assert (await drive(["/bin/true"], cwd="/", env={}, timeout=5)).exit_code == 0  # still fine


# -- limits --------------------------------------------------------------------------------


def test_parse_limits_defaults_and_values(tmp_path: Path) -> None:
    hook_file = tmp_path / "HOOK.md"
    assert parse_limits(None, hook_file) == DEFAULT_LIMITS
    assert parse_limits({"cpu_seconds": 5, "open_files": "unlimited"}, hook_file) == Limits(
        cpu_seconds=5, open_files=None)
    assert parse_limits({"address_space_mb": 512, "processes": None}, hook_file) == Limits(
        address_space_mb=512, processes=None, open_files=DEFAULT_LIMITS.open_files)


@pytest.mark.parametrize(("value", "field", "words"), [
    ({"cpu": 5}, "metadata.limits.cpu", "use one of: address_space_mb, cpu_seconds"),
    ({"cpu_seconds": 0}, "metadata.limits.cpu_seconds", "integer from 1"),
    ({"cpu_seconds": True}, "metadata.limits.cpu_seconds", "integer"),
    ({"open_files": "many"}, "metadata.limits.open_files", "or `unlimited`"),
    ({"address_space_mb": 1.5}, "metadata.limits.address_space_mb", "integer"),
    ({"processes": -1}, "metadata.limits.processes", "integer"),
    (["cpu_seconds"], "metadata.limits", "mapping"),
])
def test_parse_limits_errors_name_the_key(tmp_path: Path, value: object, field: str,
                                          words: str) -> None:
    with pytest.raises(HookFileError) as caught:
        parse_limits(value, tmp_path / "HOOK.md")
    assert caught.value.field == field and words in caught.value.reason
    assert field in str(caught.value)


@DRIVERS
@pytest.mark.anyio
async def test_cpu_seconds_ends_a_busy_hook(tmp_path: Path, drive: Runner) -> None:
    result = await drive([hook(tmp_path, "while :; do :; done\n")], cwd="/", env={},
                         timeout=300, limits=Limits(cpu_seconds=1))
    assert not result.timed_out
    assert result.exit_code in (-signal.SIGXCPU, -signal.SIGKILL)
    assert result.limit == "hit metadata.limits.cpu_seconds (1 s)"


@DRIVERS
@pytest.mark.anyio
async def test_address_space_blocks_a_big_allocation(tmp_path: Path, drive: Runner) -> None:
    # 1 GiB, under a 256 MiB address space; read stdin first: address_space_mb is set just
    # after the spawn and before stdin is written (runner docstring), so only a hook that
    # reads its stdin first is sure to run under it (one that allocates at once may not)
    code = "import sys; sys.stdin.read(); bytearray(1 << 30)"
    result = await drive([sys.executable, "-c", code], cwd="/", env=dict(os.environ),
                         timeout=60, limits=Limits(address_space_mb=256))
    assert result.exit_code == 1 and b"MemoryError" in result.stderr
    assert (result.limit or "").startswith("probably hit metadata.limits.address_space_mb (256")
    fine = await drive([sys.executable, "-c", code], cwd="/", env=dict(os.environ),
                       timeout=60, limits=Limits(address_space_mb=4096))
    assert fine.exit_code == 0 and fine.limit is None


@DRIVERS
@pytest.mark.anyio
async def test_open_files_and_processes_are_visible_to_the_hook(tmp_path: Path,
                                                                drive: Runner) -> None:
    """``processes`` is set (the hook's /proc/<pid>/limits shows it) though the kernel does not
    enforce RLIMIT_NPROC for root. The limits set just after the spawn are in place before
    the payload is written, so a hook that reads its stdin first always sees them."""
    script = hook(tmp_path, "cat >/dev/null; ulimit -n; ulimit -Hn; "
                            "awk '/^Max processes/ {print $3}' /proc/$$/limits\n")
    result = await drive([script], cwd="/", env={}, timeout=30,
                         limits=Limits(open_files=64, processes=100))
    assert result.stdout.split() == [b"64", b"64", b"100"]
    default = await drive([script], cwd="/", env={}, timeout=30)
    # the default sets the soft limit only (before exec: no prlimit on the common path)
    assert default.stdout.split()[0] == str(DEFAULT_LIMITS.open_files).encode()


@DRIVERS
@pytest.mark.anyio
async def test_open_files_hit_is_named_from_stderr(tmp_path: Path, drive: Runner) -> None:
    code = "import os\nfds = [os.open('/dev/null', os.O_RDONLY) for _ in range(100)]"
    result = await drive([sys.executable, "-c", code], cwd="/", env=dict(os.environ),
                         timeout=60, limits=Limits(open_files=32))
    assert result.exit_code == 1 and b"Too many open files" in result.stderr
    assert (result.limit or "").startswith("probably hit metadata.limits.open_files (32)")


@DRIVERS
@pytest.mark.anyio
async def test_limits_reach_the_hooks_children(tmp_path: Path, drive: Runner) -> None:
    script = hook(tmp_path, "sh -c 'ulimit -n' &\nwait\n")
    result = await drive([script], cwd="/", env={}, timeout=30, limits=Limits(open_files=48))
    assert result.stdout == b"48\n"


@DRIVERS
@pytest.mark.anyio
async def test_a_limit_below_the_engines_open_fds_still_spawns(tmp_path: Path,
                                                               drive: Runner) -> None:
    """With more fds open than the hook may have (a busy server), the pipes' fds are past the
    limit: glibc's posix_spawn would refuse them (EBADF), so the limit is applied after."""
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(40)]
    try:
        script = hook(tmp_path, "cat >/dev/null; ulimit -n\n")
        result = await drive([script], cwd="/", env={}, timeout=30, limits=Limits(open_files=16))
    finally:
        for fd in held:
            os.close(fd)
    assert result.spawn_error is None and result.stdout.split() == [b"16"], result


@DRIVERS
@pytest.mark.anyio
async def test_a_limit_below_the_engines_open_fds_binds_from_the_first_instruction(
        tmp_path: Path, drive: Runner) -> None:
    """The same busy engine, and a hook that opens files at once: the limit binds it (set
    before its exec now; a prlimit after the spawn raced the hook under load)."""
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(40)]
    code = "import os\nfds = [os.open('/dev/null', os.O_RDONLY) for _ in range(100)]"
    try:
        result = await drive([sys.executable, "-c", code], cwd="/", env=dict(os.environ),
                             timeout=60, limits=Limits(open_files=32))
    finally:
        for fd in held:
            os.close(fd)
    assert result.exit_code == 1 and b"Too many open files" in result.stderr, result


@DRIVERS
@pytest.mark.anyio
async def test_a_lowered_limit_that_popen_cannot_spawn_under_still_limits_the_hook(
        tmp_path: Path, drive: Runner) -> None:
    """The run's pipes fill the only free fds below the hook's open-files limit (a busy
    process: everything above them is taken), so Popen's own exec-error pipe cannot be opened
    under the lowered limit (EMFILE): the hook is started through a shell that sets the
    limit and execs it, so it still starts with the limit, and hits it."""
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(64)]
    freed = held[:6]
    # the pipes land in the freed fds, below the limit; everything above them up to
    # held[-1] (past the limit) is taken (a worker that ran many tests has more fds open)
    limit = max(32, freed[-1] + 10)
    assert held[-1] > limit + 2, (held[-1], limit)
    for fd in freed:
        os.close(fd)
    try:
        code = "import os\nfds = [os.open('/dev/null', os.O_RDONLY) for _ in range(200)]"
        result = await drive([sys.executable, "-c", code], cwd="/", env=dict(os.environ),
                             timeout=60, limits=Limits(open_files=limit))
    finally:
        for fd in held[6:]:
            os.close(fd)
    assert result.spawn_error is None, result.spawn_error
    assert result.exit_code == 1 and b"Too many open files" in result.stderr, result


EMPTY_ENVIRON = """
import json, subprocess, sys
from mcp_hooks.runner.tree import EMPTY_LOOKS, reaper
r = reaper()
child = subprocess.Popen(["sleep", "60"], env={}, start_new_session=True)
try:
    while open(f"/proc/{child.pid}/cmdline", "rb").read().split(b"\\0")[0] != b"sleep":
        pass  # until its exec is done: its environ is then empty for good
    passes = [r.sweep_pass(set()) for _ in range(EMPTY_LOOKS + 2)]
    print(json.dumps({"passes": passes, "alive": child.poll() is None, "looks": EMPTY_LOOKS}))
finally:
    child.kill()
    child.wait()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sweep reads /proc")
def test_a_living_child_whose_environ_reads_empty_is_looked_at_again_a_few_times() -> None:
    """A child in its own session whose environ reads empty may be inside ``execve`` (a
    hook's ``setsid`` daemon exec-ing its program: the mark is back a moment later), so the
    sweep looks again on the next passes, ``EMPTY_LOOKS`` times at most, then lets it be:
    a process it cannot tell is a hook's (here one started with an empty environment by
    the program itself) costs a few passes once and is never touched."""
    done = subprocess.run([sys.executable, "-c", EMPTY_ENVIRON], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["passes"] == [True] * seen["looks"] + [False, False]
    assert seen["alive"]
