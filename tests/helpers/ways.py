"""Every way the runner can run a hook (driver x spawn x wait strategy: ``WAYS``,
``ASYNC_WAYS``), and ``proc_state``: a process's state letter and parent from /proc, for
tests that a killed process tree is gone (within ``GONE_WITHIN`` on a loaded machine)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_hooks.runner import RunResult, Strategy, run_hook, run_hook_blocking, using
from mcp_hooks.runner.spawn import HAS_PIDFD, HAS_POSIX_SPAWN


@dataclass(frozen=True)
class Way:
    """One driver under one strategy; calling it runs a hook that way."""

    driver: str  # "blocking", "eventloop" or "library"
    strategy: Strategy

    @property
    def id(self) -> str:
        if self.driver == "library":
            return "library"
        spawn = "posix_spawn" if self.strategy.posix_spawn else "popen"
        watch = "pidfd" if self.strategy.pidfd else "waitid"
        return f"{self.driver}-{spawn}-{watch}"

    @property
    def is_async(self) -> bool:
        return self.driver != "blocking"

    async def __call__(self, argv: list[str], payload: bytes = b"{}", **kwargs: Any) -> RunResult:
        with using(self.strategy):
            if self.driver == "blocking":
                return run_hook_blocking(argv, payload, **kwargs)
            return await run_hook(argv, payload, **kwargs)


def _ways() -> list[Way]:
    ways = [Way(driver, Strategy(posix_spawn=spawn, pidfd=pidfd))
            for driver in ("blocking", "eventloop")
            for spawn in sorted({HAS_POSIX_SPAWN, False}, reverse=True)
            for pidfd in sorted({HAS_PIDFD, False}, reverse=True)]
    return [*ways, Way("library", Strategy(library=True))]


WAYS = _ways()


ASYNC_WAYS = [way for way in WAYS if way.is_async]


GONE_WITHIN = 10.0  # seconds a killed process may take to vanish on a loaded machine


def proc_state(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of a process, or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return fields[0].decode(), int(fields[1])
