"""The engine's records: the ``Event`` an adapter hands in, the ``Outcome`` it gets back.

Every door (the command line, the MCP server, the proxy, the host bridges) speaks these and
nothing else to the engine. They are frozen stdlib dataclasses, not pydantic models: one is
built per event and per hook run, and importing pydantic would cost a short-lived bridge
process about 70 ms (``docs/design-notes.md``).

Every outcome also carries its ``signals`` (``signals.py``): one per intervention, strongest
first, at the control protocol's intensities (a deny is always a block signal). They add to the
decision and never change it: ``decision``, ``reason``, ``modified_input`` ... mean exactly
what they meant before signals existed.

``fault_outcome`` is the one answer for an event mcp-hooks itself cannot decide: every door
that fails before or inside the engine builds it, so a fault of ours never opens the gate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar

from mcp_hooks.errors import ConfigError, InvalidEventError
from mcp_hooks.settings import OnFault as OnFault  # re-exported: the outcome's policy
from mcp_hooks.spec.asking import AskRequest
from mcp_hooks.spec.events import can_block, issue_problem
from mcp_hooks.spec.signals import Signal

Status = Literal["allow", "deny", "error", "timeout", "scheduled"]
AGENT_TEXT_CAP = 4000  # characters of a reason or context handed to the agent
FAULT_SOURCE = "mcp-hooks"  # ``blocked_by`` of a deny that is our own fault

# Event fields and what each must be, declared once: (name, JSON kind, may be null).
EVENT_FIELDS: dict[str, tuple[str, bool]] = {
    "event_type": ("string", False),
    "session_id": ("string", True),
    "work_dir": ("string", True),
    "tool_name": ("string", True),
    "tool_input": ("object", True),
    "tool_use_id": ("string", True),
    "tool_output": ("any", True),
    "error": ("any", True),
    "payload": ("object", True),
    "context": ("object", True),
}
_KINDS: dict[str, tuple[type, str]] = {
    "string": (str, "a string"), "object": (dict, "a JSON object"),
}
_CHECKED = tuple((name, *_KINDS[kind], nullable) for name, (kind, nullable)
                 in EVENT_FIELDS.items() if kind != "any")
_FIELD_NAMES = EVENT_FIELDS.keys()
_UNSET = dict.fromkeys(EVENT_FIELDS)  # ``Event.of``: a field not given is None ({} below)


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


def _check_fields(data: Any, names: set[str]) -> None:
    """Raise ``ConfigError`` naming the first field of ``data`` that no outcome has, or
    that has the wrong type (``Outcome.from_dict``)."""
    if not isinstance(data, dict):
        raise ConfigError("an outcome must be a JSON object")
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"outcome.{unknown[0]}: unknown field")
    if not isinstance(data.get("event_type"), str):
        raise ConfigError("outcome.event_type: must be a string")
    if data.get("decision", "allow") not in ("allow", "deny"):
        raise ConfigError("outcome.decision: must be allow or deny")
    for name in ("additional_context", "hooks", "warnings", "signals"):
        if not isinstance(data.get(name, []), list):
            raise ConfigError(f"outcome.{name}: must be a list")
    count = data.get("stop_block_count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
        raise ConfigError("outcome.stop_block_count: must be an integer")


@dataclass(frozen=True)
class Event:
    """One lifecycle event, as an adapter hands it to the engine.

    Attributes:
        event_type: canonical name or any alias.
        work_dir: the project the hooks run in (their cwd); default the registry's project.
        payload: further fields for the hooks (``stop_reason``, ``subagent_name``, ...).
        context: free-form object passed to hooks as ``context``.

    Raises:
        InvalidEventError: a field has the wrong type; the message names it.
    """

    event_type: str
    session_id: str | None = None
    work_dir: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    tool_output: Any = None
    error: Any = None
    payload: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        values = self.__dict__  # frozen: read (and the two defaults set) in place
        for name, want, words, nullable in _CHECKED:
            value = values[name]
            if not isinstance(value, want) and not (value is None and nullable):
                raise InvalidEventError(name, f"must be {words}, got {_type_name(value)}")
        if values["payload"] is None:
            values["payload"] = {}
        if values["context"] is None:
            values["context"] = {}
        if "issue" in values["payload"]:
            problem = issue_problem(values["payload"]["issue"])
            if problem:
                raise InvalidEventError("payload.issue", problem)

    @classmethod
    def of(cls, event_type: str, fields: dict[str, Any]) -> Event:
        """``fire``'s event: ``event_type`` and its keywords, any keyword that is not a field
        going into the payload; checked as ``Event(...)`` checks, once, and built at once
        (one update of its ``__dict__``, not one ``setattr`` per field: this is per event).

        Raises:
            InvalidEventError: a field has the wrong type; the message names it.
        """
        if fields.keys() <= _FIELD_NAMES:
            known = fields
        else:
            known = {k: v for k, v in fields.items() if k in EVENT_FIELDS}
            extra = {k: v for k, v in fields.items() if k not in EVENT_FIELDS}
            known["payload"] = {**(known.get("payload") or {}), **extra}
        event = object.__new__(cls)
        event.__dict__.update(_UNSET, **known, event_type=event_type)
        event.__post_init__()
        return event

    @classmethod
    def create(cls, **fields: Any) -> Event:
        """Build an event from keyword fields, naming any unknown or malformed one.

        Raises:
            InvalidEventError: an unknown field, or a field of the wrong type.
        """
        unknown = sorted(set(fields) - set(EVENT_FIELDS))
        if unknown:
            raise InvalidEventError(unknown[0], f"unknown field; use {', '.join(EVENT_FIELDS)}")
        if "event_type" not in fields:
            raise InvalidEventError("event_type", "is required")
        return cls(**fields)


@dataclass(frozen=True)
class HookRun:
    """What one hook did in one event."""

    name: str
    scope: str
    priority: int
    mode: Literal["sync", "async"]
    status: Status
    exit_code: int | None = None
    duration_ms: float = 0.0
    message: str | None = None
    # audit mode (engine/audit.py): what it would have done; in the log and the trace only,
    # never in ``as_dict`` (what a door hands the agent)
    would: dict[str, Any] | None = None

    @classmethod
    def whole(cls, **values: Any) -> HookRun:
        """``HookRun(**values)`` given every field, built at once (the engine's, per link).

        Raises:
            TypeError: a field missing or unknown.
        """
        return _at_once(cls, _RUN_FIELDS, values)

    def as_dict(self) -> dict[str, Any]:
        # by hand: dataclasses.asdict deep-copies, which costs more than the rest of an event
        return {"name": self.name, "scope": self.scope, "priority": self.priority,
                "mode": self.mode, "status": self.status, "exit_code": self.exit_code,
                "duration_ms": self.duration_ms, "message": self.message}


@dataclass(frozen=True)
class Outcome:
    """The one decision an agent must follow after an event.

    Attributes:
        decision: ``allow`` or ``deny``.
        reason: why it was denied (the first blocking hook's reason), for the agent.
        blocked_by: the hook that denied.
        modified_input: the tool input to use instead, when a hook rewrote it; else null.
        modified_output: the tool output to use instead (``after_tool``), when a hook rewrote it.
        additional_context: text the hooks ask the agent to read.
        continue_working: ``before_stop`` was denied: keep working, with ``reason`` as feedback.
        hooks: one entry per hook woken, in the order they ran (async ones ``scheduled``).
        warnings: hooks that failed open, ignored fields, the loop guard overriding a block.
        signals: the interventions behind this outcome (``signals.Signal``), strongest first;
            each is in the signal log, and ``respond_to_signal`` answers it by id.
        ask: the ask still waiting for a person when a hook asked and no answer came in
            time (``spec/asking.py``): the decision is the fallback (``on_ask_unavailable``);
            a door that can show a native ask shows this one, and a retry of the same call
            after ``mcp-hooks approve ID`` passes. None otherwise.
        stop_block_count: ``before_stop`` only, set by the loop guard
            (``engine.stopguard``): the session's blocked stops in a row, this one included;
            0 when this stop goes through. None (and left out of ``as_dict``) otherwise.
    """

    event_type: str
    decision: Literal["allow", "deny"] = "allow"
    reason: str | None = None
    blocked_by: str | None = None
    modified_input: dict[str, Any] | None = None
    modified_output: Any = None
    additional_context: list[str] = field(default_factory=list)
    continue_working: bool = False
    hooks: list[HookRun] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    ask: AskRequest | None = None
    stop_block_count: int | None = None

    @classmethod
    def whole(cls, **values: Any) -> Outcome:
        """``Outcome(**values)`` given every field, built at once (its ``__dict__`` set, not
        one ``setattr`` per field: the engine makes one per event).

        Raises:
            TypeError: a field missing or unknown.
        """
        return _at_once(cls, _OUTCOME_FIELDS, values)

    @property
    def denied(self) -> bool:
        return self.decision == "deny"

    def as_dict(self) -> dict[str, Any]:
        """The outcome as JSON-ready data (the shape of DESIGN.md "The result")."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["hooks"] = [run.as_dict() for run in self.hooks]
        data["additional_context"] = list(self.additional_context)
        data["warnings"] = list(self.warnings)
        data["signals"] = [signal.as_dict() for signal in self.signals]
        data["ask"] = None if self.ask is None else self.ask.as_dict()
        if self.stop_block_count is None:
            del data["stop_block_count"]
        return data

    def to_json(self, *, indent: int | None = None) -> str:
        return json.dumps(self.as_dict(), indent=indent, ensure_ascii=False, default=str)

    @classmethod
    def from_dict(cls, data: Any) -> Outcome:
        """Read ``as_dict``'s shape back (what ``mcp-hooks fire --json`` prints and a server's
        ``/hooks/fire`` answers).

        Raises:
            ConfigError: not that shape; the message names the field.
        """
        _check_fields(data, {f.name for f in fields(cls)})
        try:
            runs = [HookRun(**run) for run in data.get("hooks", [])]
        except TypeError as exc:
            raise ConfigError(f"outcome.hooks: not hook runs ({exc})") from None
        signals = [Signal.from_dict(signal) for signal in data.get("signals", [])]
        try:
            ask = None if data.get("ask") is None else AskRequest.from_dict(data["ask"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"outcome.ask: not an ask ({exc})") from None
        return cls(**{**data, "hooks": runs, "signals": signals, "ask": ask})

    @classmethod
    def from_json(cls, text: str | bytes) -> Outcome:
        """``from_dict`` of JSON text. Raises ConfigError (not JSON, or not an outcome)."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ConfigError(f"an outcome must be JSON ({exc})") from None
        return cls.from_dict(data)


_RUN_FIELDS = frozenset(f.name for f in fields(HookRun))
_OUTCOME_FIELDS = frozenset(f.name for f in fields(Outcome))
_Made = TypeVar("_Made")


def _at_once(cls: type[_Made], names: frozenset[str], values: dict[str, Any]) -> _Made:
    """An instance of the frozen dataclass ``cls`` (no ``__post_init__``, no slots) given
    every field: its ``__dict__`` set at once."""
    if values.keys() != names:
        raise TypeError(f"{cls.__name__}.whole takes every field: {', '.join(sorted(names))}")
    made = object.__new__(cls)
    object.__setattr__(made, "__dict__", values)
    return made


def cap_text(text: str, limit: int = AGENT_TEXT_CAP) -> str:
    """Shorten text meant for an agent, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters cut; see the event log]"


def fault_outcome(event: str, what: str, *, on_fault: str = "block",
                  warnings: list[str] | None = None) -> Outcome:
    """The answer when mcp-hooks itself cannot decide an event (not a hook's own failure).

    For an event that can block, under ``on_fault="block"`` (the default): a deny whose reason
    says what broke, ``blocked_by="mcp-hooks"``. Otherwise an allow carrying the warning.

    Args:
        event: the canonical event (an unknown name is treated as one that can block).
        what: what broke and how to fix it, for the person reading the reason.
    """
    blocks = can_block(event)
    if on_fault != "warn" and blocks:
        reason = cap_text(f"mcp-hooks could not decide this event, so it is blocked: {what}"
                          " (to let such events through instead: MCP_HOOKS_ON_FAULT=warn)")
        return Outcome(
            event_type=event, decision="deny", blocked_by=FAULT_SOURCE, reason=reason,
            continue_working=event == "before_stop",
            warnings=[*(warnings or []), f"fault: {what}; blocked (on-fault: block)"],
            signals=[Signal.block(reason, source=FAULT_SOURCE, hook=event, type="fault",
                                  resolution_path=[cap_text(what, 500)])])
    how = "on-fault: warn" if blocks else f"{event} cannot block"
    return Outcome(event_type=event,
                   warnings=[*(warnings or []), f"fault: {what}; allowed ({how})"])
