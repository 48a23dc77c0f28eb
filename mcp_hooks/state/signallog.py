"""The signal log: one JSON line per signal sent and one per response to it.

Each line has the seed's shape (``002``, section 8)::

    {"timestamp": ..., "hook": ..., "intensity": ..., "source": ..., "consumed": ..., "action": ...}

plus ``kind`` (``signal`` or ``response``), ``signal_id`` and ``session_id``. A signal's line
is written when the engine sends it (``consumed: false``, ``action: null``) and also carries
``type``, ``issue_id``, ``correlation_id`` and the whole signal (``signal``: its ``as_dict``);
a response's line is written by ``respond`` (``consumed: true``, the action, and ``details``
when given). ``hook`` is the canonical event the signal came from (``before_issue_submit``).

Contracts:

- Lines are whole: appended on an ``O_APPEND`` descriptor under an exclusive ``flock``, with
  the event log's writer (``eventlog.py``: short writes retried, a write that still fails
  taken back by truncating the log to where it began), so concurrent writers in threads or
  processes never tear or interleave a line, and a full disk leaves no torn record.
- Reading is bounded and never hangs: the log must be a regular file (a folder, FIFO or
  device is a ``ConfigError`` naming it), and only its last ``READ_LIMIT`` bytes are read,
  so a signal older than that cannot be answered (``respond`` says so).
- ``record`` never raises (a log that cannot be written is reported once on stderr, like the
  event log); ``respond`` raises, because its caller asked for something:
  ``ConfigError`` for an unknown action, an unknown signal id, an action of another intensity
  (``signals.check_action``), or a signal already answered. ``resolve`` turns an unambiguous
  prefix of a signal id into the id (for people typing it). A log that cannot be written
  (a full disk) is a ``RunError``, and the log is left as it was. The answer is the state
  store's answer-once (``respond`` over any ``store.StateStore``; ``files.FileStore`` looks
  up and writes under one lock), so two racing responses to one signal cannot both be
  recorded.
- The log lives beside the event log: ``$XDG_STATE_HOME/mcp-hooks/signals.jsonl`` by default
  (``SignalLog.beside``), so every engine that logs events logs its signals too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mcp_hooks.errors import ConfigError
from mcp_hooks.spec.signals import ACTION_INTENSITY, ACTIONS, Signal, check_action, timestamp
from mcp_hooks.state.eventlog import READ_LIMIT, EventLog, _open_to_read, _parse, _tail
from mcp_hooks.state.files import FileStore
from mcp_hooks.state.store import StateStore

SIGNAL_LOG_NAME = "signals.jsonl"


def signal_record(signal: Signal, session_id: str | None = None) -> dict[str, Any]:
    """The log line of a signal just sent (``consumed: false``)."""
    return {
        "timestamp": signal.header.timestamp, "hook": signal.context.hook,
        "intensity": signal.intensity, "source": signal.source,
        "consumed": False, "action": None,
        "kind": "signal", "signal_id": signal.id, "session_id": session_id,
        "type": signal.header.type, "issue_id": signal.context.issue_id,
        "correlation_id": signal.header.correlation_id, "signal": signal.as_dict(),
    }


class SignalLog(EventLog):
    """Appends signals and responses to a JSONL file; reads and follows it (``EventLog``'s
    ``read``/``follow``, filtered by ``session_id``)."""

    what = "signal log"

    @classmethod
    def beside(cls, event_log: EventLog | Path) -> SignalLog:
        """The signal log in the event log's folder."""
        path = event_log.path if isinstance(event_log, EventLog) else Path(event_log)
        return cls(path.with_name(SIGNAL_LOG_NAME))

    def record(self, signals: list[Signal], session_id: str | None = None, *,
               replica: str | None = None) -> None:
        """Append one line per signal (stamped ``replica`` when given); never raises."""
        for signal in signals:
            record = signal_record(signal, session_id)
            if replica is not None:
                record["replica"] = replica
            self.append(record)

    def find(self, signal_id: str) -> dict[str, Any] | None:
        """The line of the signal sent with this id, or None."""
        for record in self.read():
            if record.get("kind") == "signal" and record.get("signal_id") == signal_id:
                return record
        return None

    def resolve(self, prefix: str) -> str:
        """The id of the one signal sent whose id starts with ``prefix``.

        Raises:
            ConfigError: no signal's id starts with it (how to list them is said), or
                several do (they are listed).
        """
        if not prefix:
            raise ConfigError("the signal id is empty; `mcp-hooks signals` lists them")
        found: list[str] = []
        try:
            fd = _open_to_read(self.path, self.what)
        except FileNotFoundError:
            raise self._missing(prefix) from None
        try:
            for line in _tail(fd, READ_LIMIT):
                if f'"signal_id": "{prefix}' not in line:  # most lines: no JSON parse
                    continue
                record = _parse(line)
                signal_id = str((record or {}).get("signal_id", ""))
                if (record or {}).get("kind") == "signal" and signal_id.startswith(prefix) \
                        and signal_id not in found:
                    found.append(signal_id)
        finally:
            os.close(fd)
        if len(found) == 1:
            return found[0]
        if not found:
            raise self._missing(prefix)
        shown = ", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")
        raise ConfigError(f"signal id {prefix!r} is ambiguous: {len(found)} signals start with "
                          f"it ({shown}); give more of the id")

    def _missing(self, signal_id: str) -> ConfigError:
        try:
            window = (f" (in its last {READ_LIMIT >> 20} MiB, all that is read)"
                      if self.path.stat().st_size > READ_LIMIT else "")
        except OSError:
            window = ""
        return ConfigError(f"no signal {signal_id!r} in the signal log {self.path}{window}; "
                           "`mcp-hooks signals` lists the signals sent and their ids")

    def responses(self, signal_id: str) -> list[dict[str, Any]]:
        """The responses recorded for a signal, oldest first."""
        return [r for r in self.read()
                if r.get("kind") == "response" and r.get("signal_id") == signal_id]

    def respond(self, signal_id: str, action: str, details: dict[str, Any] | None = None,
                *, session_id: str | None = None) -> dict[str, Any]:
        """Record the agent's response to a signal in this log (``respond``)."""
        store = FileStore(self.path.parent, log=None, signals=self.path)
        return respond(store, signal_id, action, details, session_id=session_id)


def respond(store: StateStore, signal_id: str, action: str,
            details: dict[str, Any] | None = None, *,
            session_id: str | None = None) -> dict[str, Any]:
    """Record the agent's response to a signal sent through ``store``; returns the answer.

    Args:
        signal_id: the id in the signal's header.
        action: one of ``ACTIONS[intensity]`` for the signal's intensity.
        details: free-form object kept with the response (what was fixed, why).
        session_id: who answers; default the session the signal was sent to.

    Raises:
        ConfigError: an unknown action, no such signal in the store, an action that does
            not fit the signal's intensity, a signal already answered (also with the same
            action: the store's retry is the caller's to make), or a log that is not a
            regular file.
        RunError: the store cannot be read or written (a full disk); nothing is recorded.
    """
    if action not in ACTION_INTENSITY:
        every = "; ".join(f"{i}: {', '.join(a)}" for i, a in ACTIONS.items())
        raise ConfigError(f"unknown action {action!r}; the actions are {every}")
    if details is not None and not isinstance(details, dict):
        raise ConfigError("details must be a JSON object")
    built: list[dict[str, Any]] = []

    def build(sent: dict[str, Any]) -> dict[str, Any]:
        check_action(str(sent.get("intensity")), action)
        record: dict[str, Any] = {
            "timestamp": timestamp(), "hook": sent.get("hook"),
            "intensity": sent.get("intensity"), "source": sent.get("source"),
            "consumed": True, "action": action,
            "kind": "response", "signal_id": signal_id,
            "session_id": session_id if session_id is not None else sent.get("session_id"),
        }
        if details is not None:
            record["details"] = details
        built.append(record)
        return record

    stored = store.answer_once(signal_id, action, build)
    if not built:
        raise ConfigError(f"signal {signal_id} was already answered: "
                          f"{stored.get('action')} at {stored.get('timestamp')}")
    return stored
