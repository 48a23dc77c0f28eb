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
sibling ``.lock`` file (waiting at most ``LOCK_TIMEOUT`` seconds, then ``TimeoutError``),
re-reads, changes and atomically replaces the file (a temporary file renamed over it), so
concurrent processes (the bridges run one per tool call) and threads lose no step.

Whatever the file holds, it never denies for good: it is read without following a symlink,
never blocking on a FIFO, at most ``MAX_BYTES`` (``runtime.read_regular``), and anything
that is not what an update writes (unreadable, not JSON, nested too deep, a list where an
object belongs, a count that is not a whole number from 1 to ``MAX_COUNT``, a bad ``at``)
counts as empty, that part or the whole: the ladder counts from zero and the next update
replaces the file with a valid one. Sessions not touched for ``MAX_AGE`` seconds are
dropped on write.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mcp_hooks.control import runtime
from mcp_hooks.spec.signals import Intensity, Signal

DEFAULT_STEPS: tuple[Intensity, ...] = ("prompt", "control", "block")
MAX_AGE = 30 * 24 * 3600
MAX_BYTES = 8 << 20  # a bigger ladder.json counts as empty (and is replaced)
MAX_COUNT = 1 << 20  # a count above it is not one an update wrote
LOCK_TIMEOUT = 10.0  # seconds an update waits for the lock
NO_SESSION = "-"


def _empty() -> dict[str, Any]:
    return {"version": 1, "sessions": {}}


def clean(data: Any) -> dict[str, Any]:
    """The parts of ``data`` an update could have written; the rest dropped (see the module
    docstring)."""
    out = _empty()
    sessions = data.get("sessions") if isinstance(data, dict) else None
    if not isinstance(sessions, dict):
        return out
    for name, session in sessions.items():
        if not isinstance(name, str) or not isinstance(session, dict):
            continue
        counts = session.get("counts")
        good = {key: value for key, value in counts.items()
                if isinstance(key, str) and type(value) is int and 0 < value <= MAX_COUNT
                } if isinstance(counts, dict) else {}
        at = session.get("at")
        if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
            at = 0.0  # unknown age: dropped on the next write
        out["sessions"][name] = {"counts": good, "at": float(at)}
    return out


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
            data = json.loads(runtime.read_regular(self.path, MAX_BYTES, what="ladder state"))
        except (OSError, ValueError, RecursionError, runtime.FileRefused):  # deep nesting
            return _empty()  # is a RecursionError; a UnicodeDecodeError a ValueError
        return clean(data)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        import fcntl

        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
                     | os.O_NONBLOCK, 0o600)
        try:
            deadline = time.monotonic() + LOCK_TIMEOUT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{lock} stayed locked for {LOCK_TIMEOUT:g} s; "
                                           "is another mcp-hooks process stuck?") from None
                    time.sleep(0.005)
            data = self._read()
            yield data
            now = time.time()
            data["sessions"] = {s: v for s, v in data["sessions"].items()
                                if now - v["at"] < MAX_AGE}
            tmp = self.path.with_name(
                f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
                          | os.O_NOFOLLOW, 0o600)
            try:
                view = memoryview(json.dumps(data, sort_keys=True).encode())
                while view:
                    view = view[os.write(out, view):]
            finally:
                os.close(out)
            os.replace(tmp, self.path)
        finally:
            os.close(fd)  # closing releases the lock

    def count(self, session_id: str | None, trigger: str, entry: str) -> int:
        """Consecutive violations recorded so far."""
        session = self._read()["sessions"].get(session_id or NO_SESSION) or {}
        value = session.get("counts", {}).get(self._key(trigger, entry), 0)
        return value if isinstance(value, int) else 0

    def record(self, session_id: str | None, trigger: str, entry: str,
               violated: bool) -> int:
        """Count one more violation (or reset on a pass); returns the new count."""
        key = self._key(trigger, entry)
        with self._locked() as data:
            session = data["sessions"].setdefault(session_id or NO_SESSION,
                                                  {"counts": {}, "at": 0.0})
            counts = session["counts"]
            count = min(int(counts.get(key, 0)), MAX_COUNT - 1) + 1
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
