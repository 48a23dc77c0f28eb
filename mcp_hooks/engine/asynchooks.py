"""Where an event's async hooks run: the engine hands them to one ``AsyncLauncher``.

An async hook starts with the event's original payload, cannot block or modify, and its
result goes to the event log (``eventlog.async_record``) when it finishes, after the reply.
The engine chooses its launcher once, at construction:

- ``TaskGroupLauncher`` (a long-lived engine on an event loop: the MCP server, the proxy):
  the hooks run in the engine's own task group; leaving ``async with engine`` waits for them,
  each bounded by its own timeout.
- ``detached.DetachedLauncher`` (a process that fires one event and exits: ``mcp-hooks
  fire``, the host bridges): the hooks go to a detached process of their own, so the caller
  exits at once and the hooks neither hold it up nor die with it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mcp_hooks.runner import RunResult
from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.state.eventlog import EventLog, now

if TYPE_CHECKING:
    from anyio.abc import TaskGroup


@dataclass(frozen=True, slots=True)
class AsyncJob:
    """One async hook to start: the hook, its stdin, its cwd and its whole environment."""

    hook: HookSpec
    stdin: bytes
    cwd: str
    env: dict[str, str]


class AsyncLauncher(Protocol):
    """Starts an event's async hooks; never waits for them."""

    async def open(self) -> None:
        """Called when the engine is entered."""

    async def close(self, exc: BaseException | None) -> None:
        """Called when the engine is left (``exc``: the caller's error, if any)."""

    def launch(self, event: str, session_id: str | None, jobs: list[AsyncJob]) -> None:
        """Start ``jobs`` (the async hooks ``event`` woke, in run order)."""


class TaskGroupLauncher:
    """Runs async hooks in a task group the engine opens (``async with engine``).

    Args:
        log: where each finished hook's record goes; None for no log.
    """

    def __init__(self, log: EventLog | None) -> None:
        self.log = log
        self._tg: TaskGroup | None = None

    async def open(self) -> None:
        import anyio

        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()

    async def close(self, exc: BaseException | None) -> None:
        tg, self._tg = self._tg, None
        if tg is None:
            return
        if exc is None:
            await tg.__aexit__(None, None, None)
            return
        # The caller's own error wins: stop the async hooks (their groups are killed) and
        # let it propagate as it was, not wrapped in an exception group.
        tg.cancel_scope.cancel()
        with contextlib.suppress(BaseException):
            await tg.__aexit__(None, None, None)

    def launch(self, event: str, session_id: str | None, jobs: list[AsyncJob]) -> None:
        if self._tg is None:
            raise RuntimeError("an Engine must be entered (async with engine:) to run async hooks")
        for job in jobs:
            self._tg.start_soon(self._run, event, session_id, job)

    async def _run(self, event: str, session_id: str | None, job: AsyncJob) -> None:
        from mcp_hooks.runner import run_hook

        hook = job.hook
        result = await run_hook(hook.entry, job.stdin, cwd=job.cwd, env=job.env,
                                timeout=hook.timeout / 1000, limits=hook.limits)
        if self.log is not None:
            self.log.append(async_record(
                event, session_id,
                {"name": hook.name, "scope": hook.scope, "priority": hook.priority}, result))
        from mcp_hooks.state.inbox import deliver_async

        deliver_async(event, session_id, hook.name, result.stdout, result.exit_code,
                      self.log.path if self.log is not None else None)


def async_record(
    event: str, session_id: str | None, hook: dict[str, Any], result: RunResult
) -> dict[str, Any]:
    """The log record of one finished async hook.

    Args:
        event: the canonical event that started it.
        session_id: the event's session.
        hook: ``name``, ``scope`` and ``priority`` of the hook.
        result: what the runner saw.
    """
    if result.timed_out:
        status = "timeout"
    elif result.exit_code == 0:
        status = "allow"
    else:
        status = "error"
    record: dict[str, Any] = {
        **hook, "mode": "async", "status": status, "exit_code": result.exit_code,
        "duration_ms": round(result.duration_ms, 3), "message": result.spawn_error,
    }
    if result.stdout:
        record["stdout"] = result.stdout.decode("utf-8", errors="replace")
    if result.stderr:
        record["stderr"] = result.stderr.decode("utf-8", errors="replace")
    return {"ts": now(), "kind": "async_result", "event": event, "session_id": session_id,
            "hook": record}
