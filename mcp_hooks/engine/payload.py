"""The event as hooks get it: one payload per event, and its bytes on a script hook's stdin.

``event_payload`` builds the payload every link of the chain reads (the base fields, the tool
call, the caller's extra fields, ``context``); the event's ``Chain`` owns it from then on and
carries each link's rewrite into it (``tool_input``, ``tool_output``, ``response``,
``messages``: ``rewritten``), in one place (``Chain.apply``). ``stdin_for`` encodes it for one
hook, with ``event_type`` as that hook's trigger spells it, leaving the payload's own
``event_type`` (the canonical name) as it is; ``Chain.stdin`` keeps the last encoding and
encodes again only when the spelling asked for or the payload changed.

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
_OUTPUTS = {"after_tool": "tool_output", "after_model": "response"}  # what a rewrite replaces


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
    return encode({**payload, "event_type": hook.trigger})


def rewritten(name: str, payload: dict[str, Any], modified_input: dict[str, Any] | None,
              tool_input: dict[str, Any] | None, tool_output: Any) -> bool:
    """Carry a link's rewrite into the payload of canonical event ``name`` (``tool_input`` as
    the chain now holds it, a model call's ``messages``, a tool's output or a model's
    response as ``tool_output``); whether the payload changed."""
    changed = False
    if modified_input is not None:
        if "tool_input" in payload:
            payload["tool_input"], changed = tool_input, True
        elif name == "before_model":
            payload["messages"], changed = modified_input["messages"], True  # the new model input
    if tool_output is not None and name in _OUTPUTS:
        payload[_OUTPUTS[name]], changed = tool_output, True
    return changed
