"""The event as hooks get it: one payload per event, and its bytes on a script hook's stdin.

``event_payload`` builds the payload every link of the chain reads (the base fields, the tool
call, the caller's extra fields, ``context``); the engine changes it in place as the chain
goes (a rewritten ``tool_input``, ``tool_output``, ``messages``). ``stdin_for`` encodes it for
one hook, with ``event_type`` as that hook's trigger spells it; ``Stdin`` keeps the last
encoding and encodes again only when the spelling asked for or the payload changed.

Encoding never fails on valid JSON: a lone surrogate (``"\\udcff"``, which JavaScript hosts
emit) cannot be UTF-8, so such a payload is written as escaped ASCII, which round-trips.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.spec.outcome import Event
from mcp_hooks.state.eventlog import now

_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
_TOOL_EVENTS = ("before_tool", "after_tool", "after_tool_failure")


def encode(payload: dict[str, Any]) -> bytes:
    try:
        return _ENCODER.encode(payload).encode()
    except UnicodeEncodeError:  # a lone surrogate (JSON allows "\udcff"; UTF-8 does not)
        return json.dumps(payload, default=str).encode()  # ASCII, escaped: it round-trips


def event_payload(name: str, event: Event, work_dir: str) -> dict[str, Any]:
    """The payload of canonical event ``name`` run in ``work_dir``."""
    payload: dict[str, Any] = {"event_type": name, "timestamp": now(),
                               "session_id": event.session_id, "work_dir": work_dir}
    if event.tool_name is not None or name in _TOOL_EVENTS:
        payload["tool_name"] = event.tool_name
        payload["tool_input"] = event.tool_input
        payload["tool_use_id"] = event.tool_use_id
    if name == "after_tool" or event.tool_output is not None:
        payload["tool_output"] = event.tool_output
    if name == "after_tool_failure" or event.error is not None:
        payload["error"] = event.error
    for key, value in event.payload.items():
        payload.setdefault(key, value)
    payload["context"] = event.context
    return payload


def stdin_for(hook: HookSpec, payload: dict[str, Any]) -> bytes:
    """``payload`` as ``hook``'s stdin: ``event_type`` as its own trigger spells it."""
    payload["event_type"] = hook.trigger
    return encode(payload)


class Stdin:
    """The event's payload as a script hook's stdin, encoded again only when the trigger
    spelling asked for (``stdin_for``) or the payload changed."""

    __slots__ = ("_bytes", "_for", "_payload")

    def __init__(self, payload: dict[str, Any]) -> None:
        self._payload, self._bytes, self._for = payload, b"", ""

    def bytes_for(self, hook: HookSpec) -> bytes:
        if self._for != hook.trigger:
            self._bytes, self._for = stdin_for(hook, self._payload), hook.trigger
        return self._bytes

    def changed(self) -> None:
        self._for = ""
