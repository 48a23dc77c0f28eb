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

The outcome says where the count stands (``Outcome.stop_block_count``: this block's place in
the row, 0 when the stop goes through), so a door that loops itself (the Java adapter) reads
the count from the answer and keeps none of its own.

Every ``before_stop`` outcome counts, whoever decided it: the engine's chain and its own
faults (``Engine.fire``), and a fault a door answers itself (``settle``: ``Hooks``, the
framework adapters). So the guard is the one stop counter: a fault that repeats under
``on_fault: block`` is let through at the cap too, never an endless "keep working".

The count lives in the engine's state store (``state.store.StateStore``): namespace the
door (``engine`` for an engine's own events, the host's name for a host bridge), key ``""``,
expiring ``STOP_STATE_TTL`` after its last block, so a count left by an interrupted loop is
forgotten. Without a store the guard counts in this process's memory (``MemoryStore``). The
host bridges, where every event is a new process, count in the file store and set
``new_turn_resets``: a host that says a stop is not a continuation (``stop_hook_active:
false``, which the host itself sets) starts the count over. The server keeps counting
through such a flag: there the flag may come from the model, which must not be able to turn
the guard off. A file store that cannot be read counts 0 and one that cannot be written
loses the block (``store.py``): the hooks still decide every stop. A shared store that is
lost counts in the process's memory meanwhile, so the cap still lets a stop through.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mcp_hooks.settings import DEFAULT_STOP_BLOCK_CAP as DEFAULT_STOP_BLOCK_CAP  # re-exported
from mcp_hooks.spec.events import can_block
from mcp_hooks.spec.outcome import Event, Outcome
from mcp_hooks.spec.signals import Signal
from mcp_hooks.state.memory import MemoryStore
from mcp_hooks.state.spool import store_fault
from mcp_hooks.state.store import StateStore

STOP_STATE_TTL = 3600.0  # seconds; the count of an interrupted loop is forgotten


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
        store: where counts are kept; default this process's memory (``MemoryStore``).
        namespace: keeps the sessions of different doors apart (the host's name).
        new_turn_resets: a caller's ``stop_hook_active: false`` starts the count over (for
            callers whose flag comes from the host, not the model).
    """

    def __init__(self, cap: int = DEFAULT_STOP_BLOCK_CAP, store: StateStore | None = None,
                 namespace: str = "engine", *, new_turn_resets: bool = False) -> None:
        if store is None:
            store = MemoryStore()
        self.cap = cap
        self.store: StateStore = store
        self.namespace = namespace
        self.new_turn_resets = new_turn_resets

    def before(self, event: Event, payload: dict[str, Any]) -> StopTicket:
        """Read the session's count and tell it to the hooks (in ``payload``)."""
        session = event.session_id or None
        flag = event.payload.get("stop_hook_active")
        fresh = self.new_turn_resets and flag is False
        count = (self.store.count(self.namespace, session, ttl=STOP_STATE_TTL)
                 if session is not None and not fresh else 0)
        given = event.payload.get("stop_block_count")
        if isinstance(given, int) and not isinstance(given, bool):
            count = max(count, given)
        payload["stop_block_count"] = count
        payload["stop_hook_active"] = count > 0 or bool(flag)
        return StopTicket(session, count)

    def after(self, ticket: StopTicket | None, outcome: Outcome) -> Outcome:
        """Count this stop's outcome; at the cap, the blocked stop becomes an allow (and its
        block signals prompts, ``demote_blocks``). No ticket (not a stop): ``outcome``."""
        if ticket is None:
            return outcome
        session, count = ticket.session, ticket.count
        if outcome.continue_working and not (self.cap and count >= self.cap):
            if session is not None:
                value = self.store.increment(self.namespace, session, ttl=STOP_STATE_TTL)
                for _ in range(min(count + 1, 64) - value):  # a count the caller raised
                    self.store.increment(self.namespace, session, ttl=STOP_STATE_TTL)
            return replace(outcome, stop_block_count=count + 1)
        if session is not None:
            self.store.reset(self.namespace, session, "")
        outcome = replace(outcome, stop_block_count=0)
        if outcome.continue_working:
            note = (f"loop guard: the stop was allowed after {count} consecutive blocks "
                    f"(cap {self.cap}); {outcome.blocked_by} still says: {outcome.reason}")
            outcome = replace(outcome, decision="allow", continue_working=False, reason=None,
                              blocked_by=None, warnings=[*outcome.warnings, note])
        return demote_blocks(outcome) if any(s.blocks for s in outcome.signals) else outcome

    def settle(self, session_id: str | None, outcome: Outcome) -> Outcome:
        """Count a ``before_stop`` outcome a door made without the engine (a fault of its
        own): the same count and cap as the hooks' blocks, so a fault that repeats cannot
        keep an agent working past the cap either. Any other event's outcome as it is."""
        if outcome.event_type != "before_stop":
            return outcome
        session = session_id or None
        count = (self.store.count(self.namespace, session, ttl=STOP_STATE_TTL)
                 if session is not None else 0)
        return self.after(StopTicket(session, count), outcome)


def before_event(guard: StopGuard, store: StateStore, name: str, event: Event,
                 payload: dict[str, Any]) -> tuple[StopTicket | None, str | None]:
    """What the engine asks the store before an event (off the event loop, ``Engine._fire``):
    a ``before_stop``'s ticket (its count told to the hooks in ``payload``), and what broke
    when the event can block and a shared store is known lost (``spool.store_fault``)."""
    ticket = guard.before(event, payload) if name == "before_stop" else None
    return ticket, store_fault(store) if can_block(name) else None


def demote_blocks(outcome: Outcome) -> Outcome:
    """The loop guard let a blocked stop through: its block signals become prompts."""

    def demote(signal: Signal) -> Signal:
        if not signal.blocks:
            return signal
        note = ("the stop loop guard let the agent stop after repeated blocks: "
                f"{signal.payload.get('reason', '')}")
        return signal.with_intensity("prompt", {"severity": "high", "message": note,
                                                "suggestions": list(
                                                    signal.payload.get("resolution_path", [])),
                                                "continue_allowed": True})
    return replace(outcome, signals=[demote(s) for s in outcome.signals])
