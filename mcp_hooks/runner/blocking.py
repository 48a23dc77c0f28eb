"""The blocking driver: ``run_hook_blocking``, for one-shot processes without an event loop.

``mcp-hooks fire`` and the host bridges run hooks here: the same rules (``core.Run``), waiting
in ``poll`` on the child's pipes and its pidfd (or, with no pidfd, waking every
``EXIT_POLL`` seconds to ask ``waitid`` whether it exited). Importing asyncio alone costs
such a process 15-45 ms here, so nothing in this module imports it.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Mapping, Sequence

from mcp_hooks.runner.core import EXIT_POLL, KILL_GRACE, OUTPUT_CAP, Run, RunResult, Stream
from mcp_hooks.runner.spawn import has_exited, open_pidfd
from mcp_hooks.spec.limits import Limits


def run_hook_blocking(
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
    """``run_hook`` without an event loop: the same spawn, caps, timeout, limits and process
    cleanup, waiting in ``poll``. Arguments and result as ``mcp_hooks.runner.run_hook``."""
    run = Run.start(argv, cwd, env, limits, output_cap)
    if isinstance(run, RunResult):
        return run
    child = run.child
    assert child is not None
    pidfd = -1
    timed_out = False
    try:
        poller = select.poll()
        if not run.begin_stdin(payload):
            assert run.in_fd is not None
            poller.register(run.in_fd, select.POLLOUT)
        streams = {run.out.fd: run.out, run.err.fd: run.err}
        for fd in streams:
            poller.register(fd, select.POLLIN)
        pidfd = open_pidfd(child.pid)
        if pidfd >= 0:
            poller.register(pidfd, select.POLLIN)
        timed_out = not _wait(run, poller, streams, pidfd, time.monotonic() + timeout)
        if timed_out:
            run.terminate()
            _wait_exit_unreaped(child.pid, pidfd, kill_grace)
        run.end(timed_out)
    finally:
        if child.returncode is None:  # interrupted
            run.abandon()
        run.close()
        if pidfd >= 0:
            os.close(pidfd)
    run.reaper.sweep()
    return run.result(timed_out)


def _wait(run: Run, poller: select.poll, streams: dict[int, Stream], pidfd: int,
          deadline: float) -> bool:
    """Feed stdin and read the streams until the child exits (True) or the deadline passes."""
    assert run.child is not None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        wait = left if pidfd >= 0 else min(left, EXIT_POLL)
        exited = False
        for fd, _ in poller.poll(wait * 1000):
            if fd == pidfd:
                exited = True
            elif fd == run.in_fd:
                if run.feed():
                    poller.unregister(fd)
                    run.close_stdin()
            elif fd in streams and streams[fd].read_once():
                poller.unregister(fd)
                del streams[fd]
        if exited or (pidfd < 0 and has_exited(run.child.pid, -1)):
            run.drain()  # what the child wrote is here; a grandchild cannot hang us
            return True


def _wait_exit_unreaped(pid: int, pidfd: int, limit: float) -> None:
    """Wait up to ``limit`` seconds for a child to exit, leaving it to be reaped later."""
    if pidfd >= 0:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll(limit * 1000)
        return
    end = time.monotonic() + limit
    while time.monotonic() < end and not has_exited(pid, -1):
        time.sleep(0.01)
