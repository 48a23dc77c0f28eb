"""Async hooks for short-lived callers: run them in a detached process, log their results.

``mcp-hooks fire`` and the host bridges exit as soon as the decision is printed; an async
hook (a formatter, a notifier) must not hold them up, nor die with them. Their engine's
``DetachedLauncher`` hands such hooks to ``spawn``, which starts ``python -m
mcp_hooks.engine.detached`` in a session of its own with the jobs as JSON on stdin and returns at
once. That process runs the hooks exactly as the engine would (same runner, timeouts,
process-group kills) and appends their results to the event log.

This module knows the engine only through ``asynchooks.AsyncJob``: it never imports
``engine`` (which imports it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_hooks.engine.asynchooks import AsyncJob
    from mcp_hooks.state.eventlog import EventLog


def spawn(job: dict[str, Any], module: str = "mcp_hooks.engine.detached") -> None:
    """Start ``python -m module`` detached with ``job`` as JSON on stdin (default: this
    module's runner of async hooks); never waits for it, never raises."""
    try:
        read_fd, write_fd = os.pipe()
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            os.posix_spawn(
                sys.executable,
                [sys.executable, "-m", module],
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read_fd, 0),
                    (os.POSIX_SPAWN_DUP2, devnull, 1),
                    (os.POSIX_SPAWN_DUP2, devnull, 2),
                    (os.POSIX_SPAWN_CLOSE, write_fd),
                ],
                setsid=True,
            )
        finally:
            os.close(read_fd)
            os.close(devnull)
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(json.dumps(job).encode())
    except OSError as exc:
        print(f"mcp-hooks: could not start async hooks: {exc}", file=sys.stderr)


class DetachedLauncher:
    """The ``AsyncLauncher`` of a one-shot engine: one detached process per event.

    Only the ``AGENT_HOOKS_*`` variables travel in the job: the detached process starts from
    its own environment (the caller's, inherited), less the secrets, as the engine does.

    Args:
        log: the event log the detached process appends to; None for no log.
    """

    def __init__(self, log: EventLog | None) -> None:
        self.log = log

    async def open(self) -> None:
        return None

    async def close(self, exc: BaseException | None) -> None:
        return None

    def launch(self, event: str, session_id: str | None, jobs: list[AsyncJob]) -> None:
        spawn({
            "event": event,
            "session_id": session_id,
            "log": str(self.log.path) if self.log is not None else None,
            "jobs": [{
                "hook": {"name": job.hook.name, "scope": job.hook.scope,
                         "priority": job.hook.priority},
                "argv": list(job.hook.entry),
                "stdin": job.stdin.decode(),
                "cwd": job.cwd,
                "env": {k: v for k, v in job.env.items() if k.startswith("AGENT_HOOKS_")},
                "timeout": job.hook.timeout / 1000,
                "limits": dataclasses.asdict(job.hook.limits),
            } for job in jobs],
        })


async def _run(job: dict[str, Any]) -> None:
    import anyio

    from mcp_hooks.engine.asynchooks import async_record
    from mcp_hooks.runner import run_hook
    from mcp_hooks.runner.hookenv import hook_environment
    from mcp_hooks.spec.limits import Limits
    from mcp_hooks.state.eventlog import EventLog
    from mcp_hooks.state.inbox import deliver_async

    log = EventLog(job["log"]) if job.get("log") else None
    base_env = hook_environment(os.environ)  # the secrets stay out here too

    async def one(spec: dict[str, Any]) -> None:
        result = await run_hook(
            spec["argv"], spec["stdin"].encode(), cwd=spec["cwd"],
            env={**base_env, **spec["env"]}, timeout=spec["timeout"],
            limits=Limits(**spec.get("limits", {})),
        )
        if log is not None:
            log.append(async_record(job["event"], job.get("session_id"), spec["hook"], result))
        deliver_async(job["event"], job.get("session_id"), spec["hook"]["name"], result.stdout,
                      result.exit_code, log.path if log is not None else None)

    async with anyio.create_task_group() as tg:
        for spec in job["jobs"]:
            tg.start_soon(one, spec)


def main() -> None:
    import anyio

    job = json.loads(sys.stdin.buffer.read())
    anyio.run(_run, job)


if __name__ == "__main__":
    main()
