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

The counts live in one JSON file (``paths.ladder_path()``), keyed by session,
trigger and entry, so a restarted server carries on where it was. Each update locks a
sibling ``.lock`` file, re-reads, changes and atomically replaces the file, so concurrent
processes (the bridges run one per tool call) lose no step. An unreadable or corrupt file
counts as empty and is replaced on the next update. Sessions not touched for
``MAX_AGE`` seconds are dropped on write.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mcp_hooks.signals import Intensity, Signal

DEFAULT_STEPS: tuple[Intensity, ...] = ("prompt", "control", "block")
MAX_AGE = 30 * 24 * 3600
NO_SESSION = "-"


def default_path() -> Path:
    """``paths.ladder_path()``: ``$XDG_STATE_HOME/mcp-hooks/ladder.json``."""
    from mcp_hooks.paths import ladder_path

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
    """Escalation counts per (session, trigger, entry), kept in a file.

    Args:
        path: the state file; None for ``paths.ladder_path()``.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()

    @staticmethod
    def _key(trigger: str, entry: str) -> str:
        return f"{trigger}/{entry}"

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"version": 1, "sessions": {}}
        if not isinstance(data, dict) or not isinstance(data.get("sessions"), dict):
            return {"version": 1, "sessions": {}}
        return data

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        import fcntl

        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = self._read()
            yield data
            now = time.time()
            data["sessions"] = {s: v for s, v in data["sessions"].items()
                                if isinstance(v, dict) and now - v.get("at", now) < MAX_AGE}
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)
        finally:
            os.close(fd)  # closing releases the lock

    def count(self, session_id: str | None, trigger: str, entry: str) -> int:
        """Consecutive violations recorded so far."""
        session = self._read()["sessions"].get(session_id or NO_SESSION) or {}
        value = (session.get("counts") or {}).get(self._key(trigger, entry), 0)
        return value if isinstance(value, int) else 0

    def record(self, session_id: str | None, trigger: str, entry: str,
               violated: bool) -> int:
        """Count one more violation (or reset on a pass); returns the new count."""
        key = self._key(trigger, entry)
        with self._locked() as data:
            session = data["sessions"].setdefault(session_id or NO_SESSION, {})
            counts = session.setdefault("counts", {})
            count = (counts.get(key, 0) if isinstance(counts.get(key), int) else 0) + 1
            if violated:
                counts[key] = count
            else:
                counts.pop(key, None)
                count = 0
            session["at"] = time.time()
        return count

    def reset(self, session_id: str | None = None) -> None:
        """Forget one session's counts (None: every session's)."""
        with self._locked() as data:
            if session_id is None:
                data["sessions"] = {}
            else:
                data["sessions"].pop(session_id, None)

    def apply(self, session_id: str | None, trigger: str, entry: str,
              signal: Signal | None, steps: Sequence[str] = DEFAULT_STEPS) -> Signal | None:
        """The signal to send for this evaluation, counting it on the ladder."""
        if signal is not None and signal.intensity == "aid":
            return signal
        count = self.record(session_id, trigger, entry, violated=signal is not None)
        if signal is None:
            return None
        index = min(count, len(steps)) - 1
        while steps[index] == "control" and not signal.payload.get("modifications") \
                and index + 1 < len(steps):
            index += 1
        step = steps[index]
        if step == "control" and not signal.payload.get("modifications"):
            return signal  # nothing to adjust and no step above: as the oracle said
        return convert(signal, step)  # type: ignore[arg-type]
