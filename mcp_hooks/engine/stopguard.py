"""The stop loop guard: how many times in a row a session's stop was blocked, and the cap.

A ``before_stop`` hook that always says "keep working" would keep an agent working forever.
The guard counts consecutive blocked stops per session (``session_id``):

- before the hooks run, the count is told to them as ``stop_block_count``, and
  ``stop_hook_active`` is true once the count is above zero (or the caller said so);
- a caller's own ``stop_block_count`` (what a host reports) raises the count, never lowers it;
- a blocked stop under the cap adds one; at the cap the stop is allowed, the outcome's
  warning says what the gate still objected to, and the count starts over;
- an allowed stop resets the count. Events without a session are not counted (no state can
  leak between unrelated callers).

Where the count lives is a ``Counter``: ``MemoryCounter`` (the default) for an engine that
lives as long as its sessions (the MCP server, the proxy), ``FileCounter`` for the host
bridges, where every event is a new process. With a file the count can outlive an
interrupted loop, so it is forgotten after ``STOP_STATE_TTL``, and the bridges set
``new_turn_resets``: a host that says a stop is not a continuation (``stop_hook_active:
false``, which the host itself sets) starts the count over. The server keeps counting
through such a flag: there the flag may come from the model, which must not be able to turn
the guard off.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from mcp_hooks.settings import DEFAULT_STOP_BLOCK_CAP as DEFAULT_STOP_BLOCK_CAP  # re-exported
from mcp_hooks.spec.outcome import Event, Outcome

STOP_STATE_TTL = 3600.0  # seconds; a file-kept count of an interrupted loop is forgotten


class Counter(Protocol):
    """Where the consecutive-block count of each session is kept."""

    def get(self, session: str) -> int: ...

    def set(self, session: str, count: int) -> None: ...

    def reset(self, session: str) -> None: ...


class MemoryCounter:
    """Counts in this process's memory (a long-lived engine)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def get(self, session: str) -> int:
        return self._counts.get(session, 0)

    def set(self, session: str, count: int) -> None:
        self._counts[session] = count

    def reset(self, session: str) -> None:
        self._counts.pop(session, None)


class FileCounter:
    """Counts in one small file per session under ``folder`` (one process per event).

    Args:
        folder: where the files go (``paths.state_dir() / "stop"`` for the bridges).
        namespace: keeps the sessions of different hosts apart (the host's name).
        ttl: seconds after which a count left behind is forgotten.

    Never raises: a count that cannot be read is 0, one that cannot be written is lost.
    """

    def __init__(self, folder: Path, namespace: str = "host", ttl: float = STOP_STATE_TTL) -> None:
        self.folder = Path(folder)
        self.namespace = namespace
        self.ttl = ttl

    def path(self, session: str) -> Path:
        digest = hashlib.sha256(f"{self.namespace}\0{session}".encode()).hexdigest()[:32]
        return self.folder / f"{self.namespace}-{digest}"

    def get(self, session: str) -> int:
        path = self.path(session)
        try:
            if time.time() - path.stat().st_mtime > self.ttl:
                return 0
            return max(0, int(path.read_text().strip() or 0))
        except (OSError, ValueError):
            return 0

    def set(self, session: str, count: int) -> None:
        path = self.path(session)
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(str(count))

    def reset(self, session: str) -> None:
        with contextlib.suppress(OSError):
            self.path(session).unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class StopTicket:
    """One ``before_stop``'s place in its session's count, from ``before`` to ``after``."""

    session: str | None
    count: int


class StopGuard:
    """The loop guard of ``before_stop`` (see the module docstring).

    Args:
        cap: consecutive blocks allowed per session before a stop is let through; 0 turns
            the guard off (blocks are still counted and told to the hooks).
        counter: where counts are kept; default in memory.
        new_turn_resets: a caller's ``stop_hook_active: false`` starts the count over (for
            callers whose flag comes from the host, not the model).
    """

    def __init__(self, cap: int = DEFAULT_STOP_BLOCK_CAP, counter: Counter | None = None, *,
                 new_turn_resets: bool = False) -> None:
        self.cap = cap
        self.counter: Counter = counter if counter is not None else MemoryCounter()
        self.new_turn_resets = new_turn_resets

    def before(self, event: Event, payload: dict[str, Any]) -> StopTicket:
        """Read the session's count and tell it to the hooks (in ``payload``)."""
        session = event.session_id or None
        flag = event.payload.get("stop_hook_active")
        fresh = self.new_turn_resets and flag is False
        count = self.counter.get(session) if session is not None and not fresh else 0
        given = event.payload.get("stop_block_count")
        if isinstance(given, int) and not isinstance(given, bool):
            count = max(count, given)
        payload["stop_block_count"] = count
        payload["stop_hook_active"] = count > 0 or bool(flag)
        return StopTicket(session, count)

    def after(self, ticket: StopTicket, outcome: Outcome) -> Outcome:
        """Count this stop's outcome; at the cap, the blocked stop becomes an allow."""
        session, count = ticket.session, ticket.count
        if not outcome.continue_working:
            if session is not None:
                self.counter.reset(session)
            return outcome
        if self.cap and count >= self.cap:
            if session is not None:
                self.counter.reset(session)
            note = (f"loop guard: the stop was allowed after {count} consecutive blocks "
                    f"(cap {self.cap}); {outcome.blocked_by} still says: {outcome.reason}")
            return replace(outcome, decision="allow", continue_working=False, reason=None,
                           blocked_by=None, warnings=[*outcome.warnings, note])
        if session is not None:
            self.counter.set(session, count + 1)
        return outcome
