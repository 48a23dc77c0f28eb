"""The event-loop driver: ``run_hook``, the hand-written fast path for a server's engine.

The rules are ``core.Run``'s; this module only waits, without a task per stream: pipes are
pumped by loop callbacks, and the child's exit is watched through a pidfd that joins an epoll
set the loop's running hooks share (``ExitWatcher``), so a run costs little more than the
spawn itself. With a pidfd to tell of the exit, the child's output waits in its pipes (64 KiB
each) and is read once, at exit: no wake-up per pipe for a quick hook. A hook still running
after ``READ_DELAY`` gets readers (and its deadline timer), so one that writes more than a
pipe holds is drained, never stuck. Without a pidfd (strategy ``no-pidfd``, or a kernel
before 5.3) the readers start at once and a loop timer asks ``waitid`` every ``EXIT_POLL``
seconds whether the child exited.

What is left over a raw spawn is mostly asyncio's own two loop passes per awaited exit
(``bench/RESULTS.md``, ``raw_async_spawn``); ``MCP_HOOKS_RUNNER=library`` switches to asyncio's
subprocess support instead (``mcp_hooks.runner.library``), for comparison.

This driver needs a running asyncio event loop (anyio's asyncio backend included; not trio),
yet imports asyncio only when a run starts: the one-shot processes import this module too.
"""

from __future__ import annotations

import collections
import os
import select
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mcp_hooks.runner import spawn
from mcp_hooks.runner.core import EXIT_POLL, KILL_GRACE, OUTPUT_CAP, Run, RunResult, Stream
from mcp_hooks.runner.spawn import has_exited, open_pidfd
from mcp_hooks.spec.limits import Limits

if TYPE_CHECKING:  # imported where a run starts: one-shot processes never import asyncio
    import asyncio

READ_DELAY = 0.005  # seconds a run with a pidfd waits before it registers readers


class ExitWatcher:
    """What the running hooks of one event loop share: an epoll set for their pidfds, and
    one timer for starting their readers.

    The loop watches the set's one descriptor; a hook's pidfd joins and leaves the set with
    a C call each, where ``loop.add_reader`` would cost a handle, a selector key and an
    ``epoll_ctl`` through Python per run. Every hook starts its readers ``READ_DELAY``
    after its spawn, so those moments come in order: one queue and one loop timer serve
    them all, where a timer per run would cost a handle and a cancel each. (The watcher
    keeps no reference to the loop, so the loop can be collected; see ``_watchers``.)
    """

    __slots__ = ("armed", "epoll", "pumps", "runs", "soon")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.epoll = select.epoll()
        self.pumps: dict[int, Pump] = {}
        # (when, pidfd, run number) of the runs whose readers are due then: the pidfd alone
        # may have been closed and reused by a later run since
        self.soon: collections.deque[tuple[float, int, int]] = collections.deque()
        self.runs = 0
        self.armed = False
        loop.add_reader(self.epoll.fileno(), self._on_exit)

    def watch(self, loop: asyncio.AbstractEventLoop, pidfd: int, pump: Pump) -> None:
        self.epoll.register(pidfd, select.EPOLLIN)
        self.pumps[pidfd] = pump
        self.runs += 1
        pump.ticket = self.runs
        when = loop.time() + READ_DELAY
        self.soon.append((when, pidfd, self.runs))
        if not self.armed:
            loop.call_at(when, self._on_due, loop)
            self.armed = True

    def forget(self, pidfd: int) -> None:
        if self.pumps.pop(pidfd, None) is not None:
            self.epoll.unregister(pidfd)

    def _on_exit(self) -> None:
        for pidfd, _ in self.epoll.poll(0):
            pump = self.pumps.pop(pidfd, None)
            if pump is not None:
                self.epoll.unregister(pidfd)
                pump.on_exit()

    def _on_due(self, loop: asyncio.AbstractEventLoop) -> None:
        soon = self.soon
        now = loop.time() + 0.001  # the loop runs a timer up to its clock resolution early
        try:
            while soon and soon[0][0] <= now:
                _, pidfd, run = soon.popleft()
                pump = self.pumps.get(pidfd)
                if pump is not None and pump.ticket == run:
                    pump.start_reading()
        finally:  # whatever happened, the runs still queued keep their timer
            if soon:
                loop.call_at(soon[0][0], self._on_due, loop)
            else:
                self.armed = False


# One watcher per loop, dropped with its loop.
_watchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ExitWatcher] = (
    weakref.WeakKeyDictionary())


def exit_watcher(loop: asyncio.AbstractEventLoop) -> ExitWatcher:
    watcher = _watchers.get(loop)
    if watcher is None:
        watcher = _watchers[loop] = ExitWatcher(loop)
    return watcher


class Pump:
    """Feeds stdin and drains stdout/stderr from loop callbacks until the child exits.

    ``done`` resolves when the child has exited (not yet reaped), or when the timeout fires
    first (``timed_out`` set).
    """

    __slots__ = ("child", "deadline", "done", "exited", "hook", "loop", "pidfd", "poll_timer",
                 "reading", "ticket", "timed_out", "timer", "watcher", "writing")

    def __init__(self, loop: asyncio.AbstractEventLoop, hook: Run, payload: bytes,
                 timeout: float) -> None:
        assert hook.child is not None
        self.loop = loop
        self.hook = hook
        self.child = hook.child
        self.done: asyncio.Future[None] = loop.create_future()
        self.exited = False
        self.timed_out = False
        self.deadline = loop.time() + timeout
        self.timer: asyncio.TimerHandle | None = None  # armed when the readers start
        self.poll_timer: asyncio.TimerHandle | None = None  # the exit check without a pidfd
        self.reading = False  # readers registered on the two pipes
        self.writing = -1  # the stdin fd a writer is registered on
        self.ticket = 0  # its number at the watcher
        self.watcher: ExitWatcher | None = None
        if not hook.begin_stdin(payload):
            assert hook.in_fd is not None
            self.writing = hook.in_fd
            loop.add_writer(self.writing, self._feed)
        self.pidfd = open_pidfd(self.child.pid)
        if self.pidfd >= 0:
            self.watcher = exit_watcher(loop)
            self.watcher.watch(loop, self.pidfd, self)  # it starts the readers after a delay
        else:
            self.poll_timer = loop.call_later(EXIT_POLL, self._poll_exit)
        if self.pidfd < 0 or timeout <= READ_DELAY:
            self.start_reading()  # at once: nothing else tells us of the exit, or of time up

    def start_reading(self) -> None:
        """Register readers on both pipes, and arm the timeout."""
        if self.timer is not None or self.done.done():
            return
        self.timer = self.loop.call_at(self.deadline, self._on_timeout)
        if not self.exited:
            for stream in (self.hook.out, self.hook.err):
                self.loop.add_reader(stream.fd, self._on_readable, stream)
            self.reading = True

    def _feed(self) -> None:
        if self.hook.feed():
            self._stop_writing()
            self.hook.close_stdin()

    def _stop_writing(self) -> None:
        if self.writing >= 0:
            self.loop.remove_writer(self.writing)
            self.writing = -1

    def _on_readable(self, stream: Stream) -> None:
        if stream.read_once():
            self.loop.remove_reader(stream.fd)
            stream.eof = True

    def _poll_exit(self) -> None:
        if has_exited(self.child.pid, -1):
            self.poll_timer = None
            self.exited = True
            self._exit()
        else:
            self.poll_timer = self.loop.call_later(EXIT_POLL, self._poll_exit)

    def on_exit(self) -> None:
        """The child exited (its pidfd is readable, and the watcher let it go)."""
        os.close(self.pidfd)
        self.pidfd = -2  # watched, and done with (-1: never watched)
        self.exited = True
        self._exit()

    def _exit(self) -> None:
        self._stop_reading()
        # What the child wrote before exiting is in the pipes now; take it and stop
        # listening, so a grandchild holding the pipes open cannot hang the event.
        self.hook.drain()
        self._finish()

    def _on_timeout(self) -> None:
        self.timed_out = True
        self._finish()

    def _finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    async def wait_exit(self, limit: float) -> None:
        """Wait up to ``limit`` seconds for the child to exit (without reaping it)."""
        deadline = self.loop.time() + limit
        while not self.exited and self.loop.time() < deadline:
            if has_exited(self.child.pid, self.pidfd):
                return
            # lazy: 54 ms of cold `fire` (asyncio), which waits without a loop
            import asyncio

            await asyncio.sleep(0.01)

    def _stop_reading(self) -> None:
        if self.reading:
            for stream in (self.hook.out, self.hook.err):
                if not stream.eof:
                    self.loop.remove_reader(stream.fd)
            self.reading = False

    def close(self) -> None:
        for timer in (self.timer, self.poll_timer):
            if timer is not None:
                timer.cancel()
        self._stop_writing()
        self._stop_reading()
        self.hook.close()
        if self.pidfd >= 0:
            if self.watcher is not None:
                self.watcher.forget(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = -1


async def run_hook(
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
    """Run one hook to completion or timeout.

    Args:
        argv: the command, an absolute path first (never run through a shell).
        payload: bytes for stdin; a child that never reads them is fine.
        cwd: the working directory.
        env: the whole environment of the child (copied, with ``AGENT_HOOKS_RUN_ID`` added).
        timeout: seconds before the process group is terminated.
        output_cap: bytes kept of each of stdout and stderr.
        kill_grace: seconds between SIGTERM and SIGKILL on timeout.
        limits: the hook's resource limits; None for ``DEFAULT_LIMITS``.

    Returns:
        The result; never raises for anything the hook does. Whatever the hook started is
        killed and reaped before it returns (``mcp_hooks.runner.tree``). Cancelled from
        outside, it kills the process group and reaps the child before the cancellation goes
        on; a later run's sweep reaps what was still dying.
    """
    if spawn.current.library:
        # lazy: 1.2 ms of cold `fire` and `bridge`; only the library runner needs it
        from mcp_hooks.runner.library import run_hook_library

        return await run_hook_library(argv, payload, cwd=cwd, env=env, timeout=timeout,
                                      output_cap=output_cap, kill_grace=kill_grace,
                                      limits=limits)
    hook = Run.start(argv, cwd, env, limits, output_cap)
    if isinstance(hook, RunResult):
        return hook
    child = hook.child
    assert child is not None
    # lazy: 54 ms of cold `fire` (asyncio), which waits without a loop
    import asyncio

    pump = Pump(asyncio.get_running_loop(), hook, payload, timeout)
    try:
        await pump.done
        if pump.timed_out and not pump.exited:
            hook.terminate()
            await pump.wait_exit(kill_grace)
        else:
            pump.timed_out = False
        hook.end(pump.timed_out)
    finally:
        if child.returncode is None:  # cancelled from outside
            hook.abandon()
        pump.close()
    await hook.reaper.sweep_async()
    return hook.result(pump.timed_out)
