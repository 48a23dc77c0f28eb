"""A host's hook call answered by a given engine, and the forward path's wire contract.

A bridge run costs a Python start per hook call; a server that is already running answers the
same call in milliseconds, with its engine and registry warm. The server's routes and tool
(``server/forward.py``) hand each call to ``answer_payload`` here, which answers it exactly as
the bridge would (``Host.translate``, the engine, ``Host.reply``), so what a host reads is the
same whichever way it came:

- ``FORWARD_PATH``/``BRIDGE_PATH`` (``POST /hooks/bridge/{host}?event=<HostEvent>``: the
  host's payload in, its stdout JSON out) and ``FIRE_PATH`` (``POST /hooks/fire``: an
  ``Event``'s fields in, ``Outcome.to_json()`` out): the paths ``install`` writes into host
  configs and the forward script, and ``doctor`` checks;
- ``TOOL_NAME``: the MCP tool for Claude Code's ``mcp_tool`` hooks (``install claude-code
  --via mcp``); Claude Code substitutes ``${field}`` from its hook input into the tool's
  string arguments and ``mcp_tool_payload`` rebuilds the hook input from them.

``engine_for(work_dir)`` (``EngineFor``) is the server's engine for a project folder (an
entered ``Engine``, or an awaitable of one). No Starlette and no MCP SDK here.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcp_hooks.engine.asking import call_host_asks, nobody_waits
from mcp_hooks.guard import passes_through
from mcp_hooks.hosts import UnknownHostError, get_host
from mcp_hooks.hosts.answering import answer_outcome, shows_aid, unreadable
from mcp_hooks.hosts.asking import asks_natively
from mcp_hooks.hosts.base import Host, Reply, fail_open
from mcp_hooks.spec.outcome import Event

if TYPE_CHECKING:
    from mcp_hooks.engine.engine import Engine
    from mcp_hooks.spec.outcome import OnFault, Outcome

EngineFor = Callable[[str | None], "Engine | Awaitable[Engine]"]

# The wire contract, shared with `install` (which writes it into host configs and the forward
# script) and `doctor` (which checks it):
FORWARD_PATH = "/hooks/bridge/"  # + <host>?event=<HostEvent>
BRIDGE_PATH = FORWARD_PATH + "{host}"
FIRE_PATH = "/hooks/fire"  # body: Event fields as JSON; answer: Outcome.to_json()
# the folder, nonce and signature headers: forward_auth (re-exported here)
TOOL_NAME = "bridge_hook"
TOOL_DESCRIPTION = (
    "Answer an agent host's native hook call (Claude Code mcp_tool hooks): pass the hook's "
    "input fields; the result text is the host's hook JSON (empty for a plain allow)."
)


async def answer_payload(host: Host, payload: dict[str, Any], event: str | None,
                         engine_for: EngineFor, on_fault: OnFault = "block") -> Reply:
    """The host's answer to one payload, fired at the server's engine; never raises.

    What mcp-hooks cannot decide is answered as the bridge answers it (a deny in the host's
    form; with ``on_fault="warn"``, the server's ``--on-fault warn``, let through with the
    warning); only a work dir this server does not serve fails over (exit 1), so that the
    forward script runs the local bridge instead.
    """
    try:
        host_event = host.event_of(payload, event)
        call = host.translate(host_event, payload)
    except Exception as exc:
        return host.fault_reply(unreadable(host, exc), host.known_event(event, payload),
                                on_fault, payload)
    try:
        engine = engine_for(call.fields.get("work_dir"))
        if inspect.isawaitable(engine):
            engine = await engine
    except Exception as exc:
        return fail_open(f"this server does not answer for that folder: {exc}")
    outcome: Outcome | BaseException
    try:  # the endpoint's one guard: the engine under it raises (``guard.py``)
        outcome = await engine.fire(  # an ask: the host's own, else the fallback now
            Event.create(event_type=call.event, **call.fields),
            hold_aid=not shows_aid(host, call),
            approve=call_host_asks if asks_natively(host, call) else nobody_waits)
    except BaseException as exc:  # an oracle's SystemExit too; a cancellation goes on
        if passes_through(exc):
            raise
        outcome = exc
    return answer_outcome(host, call, outcome, on_fault, payload)


# -- the MCP tool for Claude Code mcp_tool hooks ------------------------------------------

_LEAF_PREFIX = "input_"


def _unstring(value: Any) -> Any:
    """A substituted value back to JSON where it was JSON text (objects, booleans)."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") or stripped in ("true", "false", "null"):
            try:
                return json.loads(stripped)
            except ValueError:
                return value
    return value


def mcp_tool_payload(arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(host, hook input)`` from the ``bridge_hook`` tool's arguments.

    Claude Code puts each hook input field in its own string argument (``${session_id}``,
    ``${tool_input}``, ...). Objects and booleans that arrive as JSON text are parsed back;
    when ``tool_input`` is not an object (say ``"[object Object]"``), it is rebuilt from the
    ``input_<key>`` leaves (``${tool_input.command}``, ...). ``payload`` may carry the whole
    hook input at once instead.
    """
    args = {k: v for k, v in arguments.items() if v is not None}
    host = str(args.pop("host", None) or "claude-code")
    payload: dict[str, Any] = {}
    whole = _unstring(args.pop("payload", None))
    if isinstance(whole, dict):
        payload.update(whole)
    leaves = {k[len(_LEAF_PREFIX):]: v for k, v in args.items() if k.startswith(_LEAF_PREFIX)}
    for key, value in args.items():
        if key.startswith(_LEAF_PREFIX) or (value == "" and key not in payload):
            continue  # a leaf, or a field the hook input did not have (substituted to "")
        payload[key] = _unstring(value)
    if "tool_name" in payload and not isinstance(payload.get("tool_input"), dict):
        payload["tool_input"] = _input_from_leaves(leaves)
    return host, payload


def _input_from_leaves(leaves: dict[str, Any]) -> dict[str, Any]:
    """``tool_input`` rebuilt from its ``input_<key>`` leaves, those the host filled in."""
    return {k: _unstring(v) for k, v in leaves.items() if v not in ("", None, "undefined")}


async def bridge_hook(engine_for: EngineFor, arguments: dict[str, Any],
                      on_fault: OnFault = "block") -> tuple[str, bool]:
    """Run the ``bridge_hook`` tool: ``(text, is_error)``.

    The text is the host's hook JSON, which Claude Code reads like a command hook's stdout
    (empty text: a plain allow). ``is_error`` is set when the call could not be answered;
    Claude Code then carries on (a non-blocking error), as it does for a failed command hook.
    """
    host_label, payload = mcp_tool_payload(arguments)
    try:
        host = get_host(host_label)
    except UnknownHostError as exc:
        return str(exc), True
    reply = await answer_payload(host, payload, None, engine_for, on_fault)
    if reply.exit_code != 0:
        return reply.stderr.strip(), True
    return reply.stdout, False


__all__ = ["BRIDGE_PATH", "FIRE_PATH", "FORWARD_PATH", "TOOL_DESCRIPTION", "TOOL_NAME",
           "EngineFor", "answer_payload", "bridge_hook", "mcp_tool_payload"]
