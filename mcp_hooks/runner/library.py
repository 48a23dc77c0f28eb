"""The library path: ``run_hook`` on asyncio's subprocess support (``MCP_HOOKS_RUNNER=library``).

The switch back from the hand-written event-loop driver (``eventloop``), kept so the bench
can show, row against row, what ``posix_spawn`` and the shared pidfd epoll still save
(``bench/bench_engine.py``, "library path"). Here asyncio spawns the child
(``asyncio.create_subprocess_exec``: ``subprocess.Popen``'s fork and exec), watches its exit
and reaps it (its child watcher, ``Process.wait``). The pipes are still the run's own
(``core.Run``), handed to asyncio as file descriptors, so the caps, the drain at exit (a
grandchild holding stdout cannot hang the event), the run id, the timeout's TERM -> grace ->
KILL and the sweep are the same rules as on every other path. The limits are set in the
child before its exec, by ``preexec_fn`` (the standard library's own way).

One difference it cannot avoid: asyncio reaps the leader as soon as it exits, so the group is
killed after the leader is reaped, not before. Linux keeps a process group's id from being
reused while any member lives, so this only matters when the group is already empty, which
the kill then cannot hurt except in the unlikely case that the id was reused in between.
``RunResult.limit`` also cannot tell a SIGKILL after ``cpu_seconds`` (asyncio does not report
the leader's CPU time); a SIGXCPU it still names.
"""

from __future__ import annotations

import os
import resource
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from mcp_hooks.runner.core import (
    KILL_GRACE,
    OUTPUT_CAP,
    Run,
    RunResult,
    Stream,
    killpg,
    spawn_error,
)
from mcp_hooks.runner.spawn import Child
from mcp_hooks.spec.limits import Limits

if TYPE_CHECKING:
    import asyncio


async def run_hook_library(
    argv: Sequence[str],
    payload: bytes,
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    output_cap: int = OUTPUT_CAP,
    kill_grace: float = KILL_GRACE,
    limits: Limits | None = None,
) -> RunResult:
    """``mcp_hooks.runner.run_hook`` through asyncio's subprocess support (same arguments,
    same result, same promises but the two noted in the module docstring)."""
    # lazy: 54 ms of cold `fire` (asyncio); only the library runner needs it
    import asyncio

    hook = Run(argv, env, limits, output_cap)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=in_r, stdout=out_w, stderr=err_w, cwd=cwd, env=hook.env,
            start_new_session=True, preexec_fn=_limiter(hook.plan) if hook.plan else None)
    except (OSError, ValueError) as exc:
        for fd in (in_w, out_r, err_r):
            os.close(fd)
        return hook.not_started(spawn_error(argv, exc))
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    child = Child(proc.pid, in_w, out_r, err_r)
    child.limits_set = True  # by _limiter, in the child before its exec
    started = hook.adopt(child)
    if isinstance(started, RunResult):
        return started
    loop = asyncio.get_running_loop()
    waiter = loop.create_task(proc.wait())
    pipes = _LoopPipes(loop, hook)
    timed_out = False
    try:
        pipes.start(payload)
        done, _ = await asyncio.wait({waiter}, timeout=timeout)
        if not done:
            timed_out = True
            hook.terminate()
            done, _ = await asyncio.wait({waiter}, timeout=kill_grace)
            if not done:
                killpg(child.pid, signal.SIGKILL)
        returncode = await waiter
        pipes.stop_reading()
        hook.drain()  # what the child wrote is here; a grandchild cannot hang us
        child.set_returncode(returncode)
        hook.retire()
        # asyncio has reaped the leader already: its marked orphans are killed and reaped by
        # the sweep while they are alive (a process killed first loses its environ while it
        # dies, and the sweep could no longer tell it is ours), then the rest of its group
        await hook.reaper.sweep_async()
        killpg(child.pid, signal.SIGKILL)
    finally:
        if child.returncode is None:  # cancelled from outside: asyncio reaps the leader
            waiter.cancel()
            killpg(child.pid, signal.SIGKILL)
            hook.retire()
            hook.reaper.sweep_pass(set())
        pipes.stop_writing()
        pipes.stop_reading()
        hook.close()
    await hook.reaper.sweep_async()
    return hook.result(timed_out)


class _LoopPipes:
    """The run's pipes on the event loop: the payload written to stdin as the pipe takes it,
    stdout and stderr read as they fill, each taken off the loop at its end or when stopped."""

    def __init__(self, loop: asyncio.AbstractEventLoop, hook: Run) -> None:
        self.loop = loop
        self.hook = hook
        self.writing = -1  # the stdin fd a writer is registered on
        self.reading = False

    def start(self, payload: bytes) -> None:
        """Write what ``payload`` stdin does not take at once as it can, read both outputs."""
        hook = self.hook
        if not hook.begin_stdin(payload):
            assert hook.in_fd is not None
            self.writing = hook.in_fd
            self.loop.add_writer(self.writing, self._on_writable)
        for stream in (hook.out, hook.err):
            self.loop.add_reader(stream.fd, self._on_readable, stream)
        self.reading = True

    def _on_readable(self, stream: Stream) -> None:
        if stream.read_once():
            self.loop.remove_reader(stream.fd)
            stream.eof = True

    def _on_writable(self) -> None:
        if self.hook.feed():
            self.stop_writing()
            self.hook.close_stdin()

    def stop_writing(self) -> None:
        if self.writing >= 0:
            self.loop.remove_writer(self.writing)
            self.writing = -1

    def stop_reading(self) -> None:
        """Take the output pipes not at their end yet off the event loop (once)."""
        if not self.reading:
            return
        self.reading = False
        for stream in (self.hook.out, self.hook.err):
            if not stream.eof:
                self.loop.remove_reader(stream.fd)


def _limiter(plan: tuple[tuple[int, int, int], ...]) -> Callable[[], None]:
    """The library's way to limit a child: ``setrlimit`` in it between fork and exec
    (``preexec_fn``; it makes ``subprocess`` fork instead of vfork)."""
    steps = sorted(plan, key=lambda step: step[0] == resource.RLIMIT_AS)  # AS last

    def limit() -> None:
        for res, soft, hard in steps:
            resource.setrlimit(res, (soft, hard))

    return limit
