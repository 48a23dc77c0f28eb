"""The ending session's event log, handed to ``session_end`` hooks in their payload.

With a shared store (``--state redis://...|postgresql://...``) a session's events are spread
over every replica, and no file on this machine holds them all; the store URL may hold a
password, so a hook never gets it (``runner/hookenv.py`` keeps it out of the environment).
Instead the engine reads the session's records from its own store and passes them in the
``session_end`` payload as ``session_log``::

    {"records": [{"ts", "event", "tool_name", "decision", "blocked_by", "reason",
                  "replica", "hooks": [{"name", "status", "exit_code", "message"}]}, ...],
     "omitted": 0}

oldest first, each record cut to those fields (a reason or message to ``TEXT_CAP``
characters; no tool input or hook output travels), the newest ``MAX_RECORDS`` at most
(``omitted`` says how many older ones were left out). The same on every store, the embedded
files included, so a hook reads one shape everywhere. Reading never fails the event: a store
that cannot be read gives no records and ``error`` saying so (never the store's URL).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from mcp_hooks.errors import MCPHooksError
from mcp_hooks.spec.outcome import Event
from mcp_hooks.state.store import StateStore

MAX_RECORDS = 2000  # the newest records a session_end hook is handed
TEXT_CAP = 500  # characters of a reason or hook message kept
_FIELDS = ("ts", "kind", "event", "tool_name", "decision", "blocked_by", "reason", "replica")
_HOOK_FIELDS = ("name", "status", "exit_code", "duration_ms", "message")


def _cut(value: Any) -> Any:
    return value[:TEXT_CAP] if isinstance(value, str) else value


def _slim(record: dict[str, Any]) -> dict[str, Any]:
    slim = {k: _cut(record[k]) for k in _FIELDS if k in record}
    hooks = record.get("hooks")
    if isinstance(hooks, list):
        slim["hooks"] = [{k: _cut(h[k]) for k in _HOOK_FIELDS if k in h}
                         for h in hooks if isinstance(h, dict)]
    elif isinstance(record.get("hook"), dict):  # an async hook's result
        slim["hooks"] = [{k: _cut(record["hook"][k]) for k in _HOOK_FIELDS
                          if k in record["hook"]}]
    return slim


def session_log(store: StateStore, event: Event) -> dict[str, Any]:
    """The event's session's records from ``store`` as ``session_end`` hooks get them (none
    for an event without a session); never raises for a store that cannot be read (``error``
    says so)."""
    kept: deque[dict[str, Any]] = deque(maxlen=MAX_RECORDS)
    seen = 0
    if not event.session_id:
        return {"records": [], "omitted": 0}
    try:
        for record in store.read("events", event.session_id):
            seen += 1
            kept.append(record)
    except MCPHooksError:  # ConfigError, StateUnavailable: the event goes on without it
        return {"records": [], "omitted": 0,
                "error": "the event log could not be read"}
    return {"records": [_slim(r) for r in kept], "omitted": seen - len(kept)}


__all__ = ["MAX_RECORDS", "TEXT_CAP", "session_log"]
