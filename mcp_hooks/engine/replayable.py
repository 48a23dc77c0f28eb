"""What an event record keeps so ``mcp-hooks replay`` can fire the event again.

``replay_entry(event, secrets)`` is the ``event_fields`` of an event record: the ``Event`` as
the door handed it to the engine (every field ``Event.create`` takes, ``work_dir`` as given),
so a replay fires the very event the chain saw; each hook's rewrite is in its record's
``stdout`` (``modified_input``), and its decision in its ``status`` and ``would``.

It is left out, and the record says why in ``event_dropped`` (``replay`` counts and names
such events, never skips them silently), when:

- its JSON is over ``REPLAY_CAP`` bytes (``size``: a huge tool input or output);
- it holds a secret the process knows (``secret``: the server's token, a trust key, a store
  URL, an upstream header secret: ``Settings.secrets``), which the log must never keep;
- it cannot be written as JSON (``unencodable``: nested too deep, not JSON values).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from mcp_hooks.spec.outcome import Event

REPLAY_CAP = 64 * 1024  # bytes of an event's fields the log keeps for replay
_FIELDS = ("event_type", "session_id", "work_dir", "tool_name", "tool_input", "tool_use_id",
           "tool_output", "error", "payload", "context")


def unloggable(value: Any, secrets: Collection[str]) -> str | None:
    """Why the log must not keep ``value`` (``unencodable``, ``size``, ``secret``), or None."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # nested past what JSON can write
        return "unencodable"
    if len(text.encode("utf-8", "surrogatepass")) > REPLAY_CAP:
        return "size"
    if any(secret and secret in text for secret in secrets):
        return "secret"
    return None


def replay_entry(event: Event, secrets: Collection[str]) -> dict[str, Any]:
    """``{"event_fields": {...}}``, or ``{"event_dropped": why}`` (see the module doc)."""
    fields = {name: value for name in _FIELDS
              if (value := getattr(event, name)) is not None and value != {}}
    why = unloggable(fields, secrets)
    return {"event_fields": fields} if why is None else {"event_dropped": why}


def rewrite_entry(after: dict[str, Any] | None, secrets: Collection[str]) -> dict[str, Any]:
    """``{"input_after": {...}}``: the tool input as the chain's rewrites left it (the
    Sessions page's before/after), under the same rules (``input_after_dropped``: why not);
    ``{}`` when nothing rewrote it."""
    if after is None:
        return {}
    why = unloggable(after, secrets)
    return {"input_after": after} if why is None else {"input_after_dropped": why}
