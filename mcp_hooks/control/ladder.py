"""Progressive intervention: the same violation, repeated, is signalled more strongly.

An entry with ``escalation`` (``[prompt, control, block]`` by default) does not signal at the
intensity its oracle chose: its n-th consecutive violation in a session takes the n-th step
of the ladder (the last step once past the end). A pass (the oracle returns nothing) resets
the count: the seed's "fixed, carry on". Aid signals are advice, never violations.

A step needs something to say at its intensity: a control signal carries
``modifications``, so when the oracle offered none (a checklist cannot be adjusted), that
step is passed over for the next one up. A signal moved to another intensity keeps its
finding: ``reason`` and ``message`` stand for each other, as do ``resolution_path`` and
``suggestions``; it gets a new id and keeps the oracle's ``type`` and context.

The counts live in the engine's state store (``state.store.StateStore``), namespace
``ladder``, keyed by session and ``<trigger>/<entry>``, so a restarted server carries on where
it was and concurrent processes (the bridges run one per tool call) and threads lose no
step (an increment is atomic). The file store keeps them in ``paths.ladder_path()``
(``state/files.py`` says how that file is locked, replaced and read: whatever it holds, it
never denies for good, it counts as empty). Counts not touched for ``MAX_AGE`` seconds are
forgotten. A store that cannot be written loses the step: the oracle's finding is still
sent, at the step the count reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp_hooks.paths import ladder_path
from mcp_hooks.spec.signals import Intensity, Signal
from mcp_hooks.state.files import FileStore
from mcp_hooks.state.store import StateStore

DEFAULT_STEPS: tuple[Intensity, ...] = ("prompt", "control", "block")
MAX_AGE = 30 * 24 * 3600.0
NAMESPACE = "ladder"
NO_SESSION = "-"


def default_path() -> Path:
    """``paths.ladder_path()``: ``$XDG_STATE_HOME/mcp-hooks/ladder.json``."""
    return ladder_path()


def convert(signal: Signal, intensity: Intensity) -> Signal:
    """The same finding at ``intensity`` (see the module docstring)."""
    if signal.intensity == intensity:
        return signal
    p = signal.payload
    text = str(p.get("reason") or p.get("message") or p.get("context_info") or signal.text())
    steps = list(p.get("resolution_path") or p.get("suggestions") or p.get("follow_ups") or [])
    payload: dict[str, Any]
    if intensity == "block":
        payload = {"reason": text, "resolvable": True, "resolution_path": steps}
    elif intensity == "prompt":
        payload = {"message": text, "suggestions": steps, "severity": "high",
                   "continue_allowed": True}
    elif intensity == "control":
        payload = {"modifications": list(p.get("modifications") or []),
                   "reversible": bool(p.get("reversible", True))}
    else:
        payload = {"context_info": text, "follow_ups": steps}
    return signal.with_intensity(intensity, payload)


class Ladder:
    """Escalation counts per (session, trigger, entry), kept in a state store.

    Args:
        path: the file of a file store of its own; None for ``paths.ladder_path()``.
        store: the engine's state store (then ``path`` is not used).
    """

    def __init__(self, path: Path | None = None, store: StateStore | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.store: StateStore = store if store is not None else FileStore(
            self.path.parent, log=None, ladder=self.path)

    @staticmethod
    def _key(trigger: str, entry: str) -> str:
        return f"{trigger}/{entry}"

    def count(self, session_id: str | None, trigger: str, entry: str) -> int:
        """Consecutive violations recorded so far."""
        return self.store.count(NAMESPACE, session_id or NO_SESSION, self._key(trigger, entry),
                                ttl=MAX_AGE)

    def record(self, session_id: str | None, trigger: str, entry: str,
               violated: bool) -> int:
        """Count one more violation (or reset on a pass); returns the new count."""
        session, key = session_id or NO_SESSION, self._key(trigger, entry)
        if violated:
            return self.store.increment(NAMESPACE, session, key, ttl=MAX_AGE)
        self.store.reset(NAMESPACE, session, key)
        return 0

    def reset(self, session_id: str | None = None) -> None:
        """Forget one session's counts (None: every session's)."""
        self.store.reset(NAMESPACE, session_id)

    def apply(self, session_id: str | None, trigger: str, entry: str,
              signal: Signal | None, steps: Sequence[str] = DEFAULT_STEPS) -> Signal | None:
        """The signal to send for this evaluation, counting it on the ladder."""
        if signal is not None and signal.intensity == "aid":
            return signal
        count = self.record(session_id, trigger, entry, violated=signal is not None)
        if signal is None:
            return None
        index = min(max(count, 1), len(steps)) - 1
        while steps[index] == "control" and not signal.payload.get("modifications") \
                and index + 1 < len(steps):
            index += 1
        step = steps[index]
        if step == "control" and not signal.payload.get("modifications"):
            return signal  # nothing to adjust and no step above: as the oracle said
        return convert(signal, step)  # type: ignore[arg-type]
