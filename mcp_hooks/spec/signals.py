"""Signals: every intervention of a hook or oracle, at one of four intensities.

The control protocol of the seed (``002``) calls what a hook or oracle answers a *signal*:

=========  ========  =====================================================================
intensity  forced?   what the agent does
=========  ========  =====================================================================
block      yes       stops and fixes what ``resolution_path`` says (the outcome is a deny)
control    auto      goes on with the adjusted parameters (``modifications``)
prompt     optional  reads the warning, then accepts a suggestion or goes on
aid        no        takes the advice asynchronously; the current flow is unaffected
=========  ========  =====================================================================

A ``Signal`` has the seed's structure: a ``SignalHeader`` (id, type, timestamp, source,
intensity, correlation_id), a ``SignalContext`` (hook, issue_id, files) and a payload whose
keys depend on the intensity (``PAYLOAD_KEYS``). ``as_dict`` gives that JSON shape and
``Signal.from_dict`` reads it back.

Contracts a caller may rely on:

- ``INTENSITIES``, ``ACTIONS`` (the response actions each intensity accepts),
  ``ACTION_INTENSITY`` and ``PAYLOAD_KEYS`` are the whole vocabulary; their names are stable.
- A ``Signal`` is frozen. The constructors ``Signal.block/control/prompt/aid`` take the
  payload; the oracle framework fills who and where later with ``with_context``.
  ``Signal.accept()`` is ``None``: an oracle that has nothing to say returns no signal.
- ``from_hook_run`` maps one hook run of the Agent Hooks protocol onto signals: exit 2 or
  ``decision: deny`` -> block; ``modified_input``/``modified_output`` -> control;
  ``additional_context`` or a non-blocking warning (``decision: warn``) -> prompt; the
  result of an async hook -> aid (``from_async_result``). A hook may also print a signal
  itself: a JSON object with ``intensity`` and that intensity's payload keys
  (``printed_signal`` reads it).
- Nothing here does I/O: the signal log is ``signallog.py``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from mcp_hooks.errors import ConfigError

Intensity = Literal["block", "control", "prompt", "aid"]
INTENSITIES: tuple[Intensity, ...] = ("block", "control", "prompt", "aid")

# the seed's ConsumptionAction, per intensity
ACTIONS: dict[str, tuple[str, ...]] = {
    "block": ("retry_after_fix", "proceed_with_risk", "abort"),
    "control": ("accept_modification", "reject_modification"),
    "prompt": ("acknowledge", "apply_suggestion", "dismiss"),
    "aid": ("suggestion_applied", "suggestion_deferred"),
}
ACTION_INTENSITY: dict[str, str] = {a: i for i, acts in ACTIONS.items() for a in acts}

# the seed's payload keys, per intensity
PAYLOAD_KEYS: dict[str, tuple[str, ...]] = {
    "block": ("reason", "resolvable", "resolution_path"),
    "control": ("modifications", "reversible"),
    "prompt": ("severity", "message", "suggestions", "continue_allowed"),
    "aid": ("context_info", "best_practices", "follow_ups"),
}
SEVERITIES: tuple[str, ...] = ("low", "medium", "high")
_LIST_KEYS = frozenset({"resolution_path", "modifications", "suggestions", "best_practices",
                        "follow_ups"})
_BOOL_KEYS = frozenset({"resolvable", "reversible", "continue_allowed"})
_TEXT_KEYS = frozenset({"reason", "message", "context_info", "severity"})


def timestamp() -> str:
    """ISO 8601 UTC with milliseconds (the event log's ``now()``, kept here so signals need
    no import of the log)."""
    stamp = time.time()
    second = int(stamp)
    return (f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(second))}."
            f"{int((stamp - second) * 1000):03d}Z")


def new_id() -> str:
    """A fresh signal id: a random UUID (version 4), as the seed asks, made without importing
    ``uuid`` (12 ms of a bridge's cold start)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@dataclass(frozen=True)
class SignalHeader:
    """Who sent a signal, when, and how strongly.

    Attributes:
        id: a UUID, the handle ``respond_to_signal`` takes.
        type: what kind of finding (``checklist_incomplete``, ``hook_deny``, ...).
        timestamp: ISO 8601 UTC.
        source: the oracle or hook name.
        intensity: block, control, prompt or aid.
        correlation_id: links the signals of one chain (by default the event they came from).
    """

    id: str
    type: str
    timestamp: str
    source: str
    intensity: Intensity
    correlation_id: str | None = None


@dataclass(frozen=True)
class SignalContext:
    """Where a signal applies: the trigger (``hook``), the issue and the files concerned."""

    hook: str = ""
    issue_id: str | None = None
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Signal:
    """One intervention: header, context, and the payload of its intensity (``PAYLOAD_KEYS``).

    Raises:
        ConfigError: an unknown intensity, a payload key of another intensity, or a payload
            value of the wrong kind; the message names the key.
    """

    header: SignalHeader
    context: SignalContext = field(default_factory=SignalContext)
    payload: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        intensity = self.header.intensity
        if intensity not in PAYLOAD_KEYS:
            raise ConfigError(f"signal intensity {intensity!r} is not one of "
                              f"{', '.join(INTENSITIES)}")
        _check_payload(intensity, self.payload)

    # -- the seed's constructors ---------------------------------------------------------

    @staticmethod
    def accept() -> None:
        """Nothing to signal (the seed's ``Signal.accept()``): an oracle returns ``None``."""
        return None

    @classmethod
    def make(cls, intensity: Intensity, payload: dict[str, Any], *, source: str = "",
             type: str | None = None, hook: str = "", issue_id: str | None = None,
             files: tuple[str, ...] | list[str] = (), correlation_id: str | None = None,
             id: str | None = None) -> Signal:
        """A signal with a fresh id and timestamp; payload entries that are None are dropped."""
        header = SignalHeader(id=id or new_id(), type=type or intensity, timestamp=timestamp(),
                              source=source, intensity=intensity,
                              correlation_id=correlation_id)
        clean = {k: v for k, v in payload.items() if v is not None}
        return cls(header, SignalContext(hook, issue_id, tuple(files)), clean)

    @classmethod
    def block(cls, reason: str, *, resolution_path: list[str] | tuple[str, ...] = (),
              resolvable: bool = True, **where: Any) -> Signal:
        """Must be fixed: the outcome is a deny; ``resolution_path`` says how to fix it."""
        return cls.make("block", {"reason": reason, "resolvable": resolvable,
                                  "resolution_path": list(resolution_path)}, **where)

    @classmethod
    def control(cls, modifications: list[dict[str, Any]], *, reversible: bool = True,
                **where: Any) -> Signal:
        """The parameters were adjusted (``modifications``: one object per change, e.g.
        ``{"field": "tool_input", "from": ..., "to": ..., "description": ...}``)."""
        return cls.make("control", {"modifications": list(modifications),
                                    "reversible": reversible}, **where)

    @classmethod
    def prompt(cls, message: str, *, suggestions: list[str] | tuple[str, ...] = (),
               severity: str = "medium", continue_allowed: bool = True,
               **where: Any) -> Signal:
        """A warning the agent may accept or dismiss."""
        return cls.make("prompt", {"severity": severity, "message": message,
                                   "suggestions": list(suggestions),
                                   "continue_allowed": continue_allowed}, **where)

    @classmethod
    def aid(cls, context_info: str, *, best_practices: list[str] | tuple[str, ...] = (),
            follow_ups: list[str] | tuple[str, ...] = (), **where: Any) -> Signal:
        """Advice, delivered asynchronously; it changes nothing now."""
        return cls.make("aid", {"context_info": context_info,
                                "best_practices": list(best_practices),
                                "follow_ups": list(follow_ups)}, **where)

    # -- reading -------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def intensity(self) -> Intensity:
        return self.header.intensity

    @property
    def source(self) -> str:
        return self.header.source

    @property
    def blocks(self) -> bool:
        return self.header.intensity == "block"

    def text(self) -> str:
        """The payload in one line for an agent: the reason, message or advice."""
        p = self.payload
        main = str(p.get("reason") or p.get("message") or p.get("context_info") or "")
        extra = [*p.get("resolution_path", ()), *p.get("suggestions", ()),
                 *p.get("best_practices", ()), *p.get("follow_ups", ())]
        if self.intensity == "control" and not main:
            main = "; ".join(str(m.get("description") or m) if isinstance(m, dict) else str(m)
                             for m in p.get("modifications", ()))
        return main + (f" ({'; '.join(str(e) for e in extra)})" if extra else "")

    def with_context(self, *, source: str | None = None, hook: str | None = None,
                     issue_id: str | None = None, files: tuple[str, ...] | list[str] | None = None,
                     correlation_id: str | None = None, type: str | None = None) -> Signal:
        """A copy with who and where filled in; arguments left None keep what is there."""
        header = replace(
            self.header,
            source=self.header.source if source is None else source,
            type=self.header.type if type is None else type,
            correlation_id=(self.header.correlation_id if correlation_id is None
                            else correlation_id))
        context = SignalContext(
            hook=self.context.hook if hook is None else hook,
            issue_id=self.context.issue_id if issue_id is None else issue_id,
            files=self.context.files if files is None else tuple(files))
        return Signal(header, context, dict(self.payload))

    def with_intensity(self, intensity: Intensity, payload: dict[str, Any]) -> Signal:
        """The same finding at another intensity (the escalation ladder, the loop guard letting a
    blocked stop through), with a new id and timestamp."""
        header = replace(self.header, id=new_id(), timestamp=timestamp(), intensity=intensity)
        return Signal(header, self.context, {k: v for k, v in payload.items() if v is not None})

    def as_dict(self) -> dict[str, Any]:
        """The seed's JSON shape: ``{"header": ..., "context": ..., "payload": ...}``."""
        h, c = self.header, self.context
        return {
            "header": {"id": h.id, "type": h.type, "timestamp": h.timestamp, "source": h.source,
                       "intensity": h.intensity, "correlation_id": h.correlation_id},
            "context": {"hook": c.hook, "issue_id": c.issue_id, "files": list(c.files)},
            "payload": dict(self.payload),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Signal:
        """Read ``as_dict``'s shape back.

        Raises:
            ConfigError: not that shape; the message names the part.
        """
        if not isinstance(data, dict):
            raise ConfigError("a signal must be a JSON object with header, context, payload")
        header, context = data.get("header"), data.get("context") or {}
        payload = data.get("payload") or {}
        if not isinstance(header, dict) or not isinstance(context, dict):
            raise ConfigError("a signal's header and context must be JSON objects")
        if not isinstance(payload, dict):
            raise ConfigError("a signal's payload must be a JSON object")
        try:
            head = SignalHeader(
                id=str(header["id"]), type=str(header.get("type") or header["intensity"]),
                timestamp=str(header.get("timestamp") or timestamp()),
                source=str(header.get("source") or ""), intensity=header["intensity"],
                correlation_id=header.get("correlation_id"))
        except KeyError as missing:
            raise ConfigError(f"a signal's header needs {missing.args[0]}") from None
        files = context.get("files") or ()
        if not isinstance(files, list | tuple):
            raise ConfigError("a signal's context.files must be a list of paths")
        where = SignalContext(str(context.get("hook") or ""), context.get("issue_id"),
                              tuple(str(f) for f in files))
        return cls(head, where, payload)


def _check_payload(intensity: str, payload: dict[str, Any]) -> None:
    allowed = PAYLOAD_KEYS[intensity]
    for key, value in payload.items():
        if key not in allowed:
            raise ConfigError(f"a {intensity} signal's payload takes {', '.join(allowed)}; "
                              f"not {key!r}")
        if key in _LIST_KEYS and not isinstance(value, list | tuple):
            raise ConfigError(f"signal payload {key} must be a list, got {type(value).__name__}")
        if key in _BOOL_KEYS and not isinstance(value, bool):
            raise ConfigError(f"signal payload {key} must be true or false")
        if key in _TEXT_KEYS and not isinstance(value, str):
            raise ConfigError(f"signal payload {key} must be a string")
    if payload.get("severity") is not None and payload["severity"] not in SEVERITIES:
        raise ConfigError(f"signal payload severity must be one of {', '.join(SEVERITIES)}")


def check_action(intensity: str, action: str) -> None:
    """Whether ``action`` answers a signal of ``intensity``.

    Raises:
        ConfigError: an unknown action, or one that belongs to another intensity; the
            message lists the actions that fit.
    """
    fits = ACTIONS.get(intensity, ())
    if action in fits:
        return
    if action in ACTION_INTENSITY:
        raise ConfigError(f"action {action!r} answers a {ACTION_INTENSITY[action]} signal, "
                          f"not a {intensity} one; use one of {', '.join(fits)}")
    raise ConfigError(f"unknown action {action!r}; a {intensity} signal takes one of "
                      f"{', '.join(fits)}")


# -- hook runs -> signals ----------------------------------------------------------------

def printed_signal(data: dict[str, Any], *, source: str, hook: str,
                   issue_id: str | None = None, files: tuple[str, ...] = (),
                   correlation_id: str | None = None) -> Signal:
    """The signal a hook printed itself: ``{"intensity": ..., <that intensity's payload>}``,
    with optional ``type``, ``files`` and ``issue_id``. Keys of the Agent Hooks protocol
    (``decision``, ``reason`` outside a block, ``additional_context``, ...) are left to it.

    Raises:
        ConfigError: an unknown intensity or a payload value of the wrong kind.
    """
    intensity = data.get("intensity")
    if intensity not in PAYLOAD_KEYS:
        raise ConfigError(f"intensity {intensity!r} is not one of {', '.join(INTENSITIES)}")
    payload = {k: data[k] for k in PAYLOAD_KEYS[intensity] if data.get(k) is not None}
    printed_files = data.get("files")
    if isinstance(printed_files, list):
        files = tuple(str(f) for f in printed_files)
    kind = data.get("type")
    return Signal.make(intensity, payload, source=source, hook=hook,
                       type=kind if isinstance(kind, str) and kind else None,
                       issue_id=str(data.get("issue_id") or issue_id or "") or None,
                       files=files, correlation_id=correlation_id)


def from_hook_run(*, source: str, hook: str, deny: bool = False, reason: str | None = None,
                  modified_input: dict[str, Any] | None = None,
                  original_input: dict[str, Any] | None = None,
                  modified_output: Any = None, context: str | None = None,
                  warning: str | None = None, issue_id: str | None = None,
                  files: tuple[str, ...] = (), correlation_id: str | None = None,
                  ) -> list[Signal]:
    """The signals one sync hook run stands for, strongest first.

    Args:
        source: the hook's name.
        hook: the trigger (the canonical event).
        deny: the hook denied (exit 2, ``decision: deny``/``block``) -> a block signal.
        modified_input: its rewrite of the tool input -> a control signal.
        modified_output: its rewrite of the tool output -> a control signal.
        context: its ``additional_context`` -> a prompt signal (severity low).
        warning: a non-blocking warning the hook gave (``decision: warn``) -> a prompt signal.
    """
    where: dict[str, Any] = {"source": source, "hook": hook, "issue_id": issue_id,
                             "files": files, "correlation_id": correlation_id}
    out: list[Signal] = []
    if deny:
        out.append(Signal.block(reason or f"blocked by hook {source}", type="hook_deny",
                                resolution_path=[f"fix what {source} reports, then retry"],
                                **where))
        return out
    changes: list[dict[str, Any]] = []
    if modified_input is not None:
        changes.append({"field": "tool_input", "from": original_input, "to": modified_input,
                        "description": f"{source} rewrote the tool input"})
    if modified_output is not None:
        changes.append({"field": "tool_output", "to": modified_output,
                        "description": f"{source} rewrote the tool output"})
    if changes:
        out.append(Signal.control(changes, type="hook_rewrite", **where))
    if warning:
        out.append(Signal.prompt(warning, severity="medium", type="hook_warning", **where))
    if context:
        out.append(Signal.prompt(context, severity="low", type="hook_context", **where))
    return out


def from_async_result(*, source: str, hook: str, text: str,
                      correlation_id: str | None = None) -> Signal:
    """An async hook's finished result (its context, log or stdout) as an aid signal."""
    return Signal.aid(text, source=source, hook=hook, type="async_result",
                      correlation_id=correlation_id)
