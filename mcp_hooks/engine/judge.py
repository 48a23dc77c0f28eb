"""One sync hook's run -> its ``Verdict``: the effect it has on the event's chain.

The rules of the decision protocol, in one place:

- a hook that cannot start is a fault of ours, not its own (``fault_outcome`` under the
  engine's ``on_fault``): it never got to decide;
- exit 0 allows; its stdout, if any, must be a JSON object (``decision``, ``reason``,
  ``modified_input``, ``modified_output``, ``additional_context``, ``log``); stdout over
  1 MiB cannot be a decision;
- exit 2 denies with stderr as the reason, unless stdout is a JSON answer whose ``decision``
  is deny: then that answer is read as on exit 0 (its reason; stderr is the hook's log);
- any other exit, a timeout or unreadable stdout fails open with a warning, unless the hook
  sets ``metadata.on_error: block``; so does a hook the event's chain deadline cut short or
  left no time to run (``out_of_time``);
- a ``decision`` other than allow/deny/block allows with a warning (``approve`` silently),
  and denies for a hook that fails closed;
- ``decision: ask`` asks a person (``asking.py``): the verdict allows with ``ask`` set to the
  reason, and the engine stops the chain until the answer; on an event that cannot block it
  allows with a warning;
- ``decision: warn`` (or ``warning``) allows with a non-blocking warning (``notice``: a
  prompt signal, and its text reaches the agent as context), even for a fail-closed hook;
- stdout may carry a signal the hook made itself (``intensity`` and that intensity's payload,
  ``signals.printed_signal``): a block signal denies with its ``reason``; a prompt or aid
  signal's text reaches the agent as context when the hook gave none, and so does a control
  signal's that comes with no rewrite (a batch split: what was adjusted); a malformed one is a
  failure of the hook (fail open unless fail-closed);
- ``modified_input`` outside ``before_tool`` and ``before_model`` (where it must be
  ``{"messages": [...]}``, the new model input), and ``modified_output`` outside
  ``after_tool`` and ``after_model`` (the new ``response``), are ignored with a warning.

A verdict is never changed once judged, so the common "exit 0, nothing printed" answer is
one shared instance.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from mcp_hooks.errors import ConfigError
from mcp_hooks.runner import RunResult
from mcp_hooks.spec.events import can_block
from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.spec.outcome import FAULT_SOURCE, OnFault, Status, cap_text, fault_outcome
from mcp_hooks.spec.signals import Signal, printed_signal

_DENY_WORDS = frozenset({"deny", "block"})
_ALLOW_WORDS = frozenset({"allow", "approve"})
_WARN_WORDS = frozenset({"warn", "warning"})
_WORDS = {**dict.fromkeys(_DENY_WORDS, "deny"), **dict.fromkeys(_ALLOW_WORDS, "allow"),
          **dict.fromkeys(_WARN_WORDS, "warn"), "ask": "ask"}  # a decision word -> what it does
_INPUT_EVENTS = frozenset({"before_tool", "before_model"})  # where modified_input applies
_OUTPUT_EVENTS = frozenset({"after_tool", "after_model"})  # where modified_output applies


class Verdict:
    """One sync hook's effect on the chain."""

    __slots__ = ("ask", "blocked_by", "context", "deny", "message", "modified_input",
                 "modified_output", "notice", "reason", "signal", "status", "warning", "would")

    def __init__(self, status: Status) -> None:
        self.status: Status = status
        self.deny = False
        self.blocked_by: str | None = None  # who denied, when not the hook itself
        self.reason: str | None = None
        self.message: str | None = None
        self.modified_input: dict[str, Any] | None = None
        self.modified_output: Any = None
        self.context: str | None = None
        self.warning: str | None = None
        self.notice: str | None = None  # a non-blocking warning for the agent (a prompt)
        self.signal: Signal | None = None  # the signal the hook printed itself
        self.ask: str | None = None  # the hook asks a person: what they are shown
        self.would: dict[str, Any] | None = None  # audit mode: what it would have done


_ALLOW = Verdict("allow")  # shared: a verdict is never changed once judged


def decode(data: bytes) -> str:
    """A hook's output as text (invalid UTF-8 replaced, never an error)."""
    return data.decode("utf-8", errors="replace")


def judge(hook: HookSpec, event: str, result: RunResult, on_fault: OnFault = "block",
          replaced: Mapping[str, HookSpec] | None = None) -> Verdict:
    """Turn one sync run into its effect on the chain (exit codes, stdout JSON, fail policy).

    Args:
        hook: the hook that ran.
        event: the canonical event.
        result: what the runner saw.
        on_fault: the engine's policy for a hook that could not start.
        replaced: user hooks a trusted project hook of the same name ran in place of.
    """
    if result.spawn_error is not None:  # a hook that cannot start is our fault, not its own
        return _start_fault(hook, event, result.spawn_error, on_fault)
    verdict = _judge_run(hook, event, result)
    if replaced and hook.name in replaced and hook.scope == "project":
        note = (f"{hook.name}: the trusted project hook ran in place of the user hook of the "
                f"same name ({replaced[hook.name].dir})")
        verdict = _with_warning(verdict, note)
    return verdict


def _tail(data: bytes, size: int, limit: int = 500) -> str:
    text = decode(data).strip()
    if len(text) > limit:
        text = "..." + text[-limit:]
    if size > len(data):
        text += f" [{size - len(data)} bytes beyond the 1 MiB kept were dropped]"
    return text


def _with_warning(verdict: Verdict, note: str) -> Verdict:
    if verdict is _ALLOW:
        verdict = Verdict("allow")
    verdict.warning = f"{verdict.warning}; {note}" if verdict.warning else note
    return verdict


def _start_fault(hook: HookSpec, event: str, error: str, on_fault: OnFault) -> Verdict:
    what = f"hook {hook.name} could not start: {error}; fix its entry script ({hook.dir})"
    outcome = fault_outcome(event, what, on_fault=on_fault)
    verdict = Verdict("error")
    verdict.message = f"could not start: {error}"
    verdict.warning = outcome.warnings[-1]
    if outcome.denied:
        verdict.deny = True
        verdict.reason = outcome.reason
        verdict.blocked_by = FAULT_SOURCE
    return verdict


def _judge_run(hook: HookSpec, event: str, result: RunResult) -> Verdict:
    if result.timed_out:
        return _failure(hook, "timeout", f"timed out after {hook.timeout} ms and was killed")
    code = result.exit_code
    if code == 0 and not result.stdout:
        return _ALLOW  # the common case: nothing to parse
    if code == 2:
        if result.stdout and _answers_deny(result.stdout):
            # the deny written as a JSON answer too (hookkit, a persistent hook's answer): its
            # reason is the answer's, and stderr stays the hook's log (its prints)
            return _parse_stdout(hook, event, result)
        verdict = Verdict("deny")
        verdict.deny = True
        stderr = decode(result.stderr).strip()
        verdict.reason = stderr or f"blocked by hook {hook.name} (exit 2, no reason given)"
        verdict.message = cap_text(verdict.reason, 500)
        return verdict
    if code != 0:
        how = (f"exit {code}" if code is not None and code >= 0
               else f"killed by signal {-(code or 0)}")
        if result.limit:  # "hit metadata.limits.cpu_seconds (5 s)"
            how = f"{how}, {result.limit}"
        detail = _tail(result.stderr, result.stderr_size)
        return _failure(hook, "error", f"{how}" + (f": {detail}" if detail else ""))
    return _parse_stdout(hook, event, result)


def _answers_deny(stdout: bytes) -> bool:
    """Whether ``stdout`` is a JSON object whose ``decision`` is deny (or block)."""
    try:
        data = json.loads(stdout)
    except (ValueError, RecursionError):
        return False
    word = data.get("decision") if isinstance(data, dict) else None
    return isinstance(word, str) and word.strip().lower() in _DENY_WORDS


def out_of_time(hook: HookSpec, budget: float, *, ran: bool) -> Verdict:
    """A hook the event's chain deadline (``budget`` seconds for its hooks together) cut
    short (``ran``: it was killed at the deadline) or left no time to run: its failure, under
    its ``on_error`` (a fail-closed hook denies, a fail-open one is skipped with a warning)."""
    what = (f"stopped at the chain deadline ({budget:g} s for the hooks of this event "
            "together) and killed" if ran else
            f"not run: the hooks before it used up the chain deadline ({budget:g} s for the "
            "hooks of this event together)")
    return _failure(hook, "timeout", what + "; raise --chain-timeout (MCP_HOOKS_CHAIN_TIMEOUT) "
                    "or make the hooks faster")


def _failure(hook: HookSpec, status: Status, what: str) -> Verdict:
    verdict = Verdict(status)
    verdict.message = what
    if hook.on_error == "block":
        verdict.deny = True
        verdict.reason = (
            f"hook {hook.name} failed and fails closed (metadata.on_error: block): {what}"
        )
        verdict.warning = f"{hook.name}: {what}; blocked because it fails closed"
    else:
        verdict.warning = f"{hook.name}: {what}; allowed (fail open)"
    return verdict


def _parse_stdout(hook: HookSpec, event: str, result: RunResult) -> Verdict:
    """A run's stdout, read as the answer protocol: decision first, then ``ANSWER_FIELDS``."""
    data = _answer_object(hook, result)
    if isinstance(data, Verdict):
        return data
    signal = None
    if data.get("intensity") is not None:
        try:
            signal = printed_signal(data, source=hook.name, hook=event)
        except ConfigError as exc:
            return _failure(hook, "error", f"its signal cannot be read: {exc}")
        if signal.blocks and data.get("decision") is None:
            data = {**data, "decision": "deny", "reason": signal.payload.get("reason")}
    notes: list[str] = []
    verdict = _decide(hook, data, notes)
    if verdict.ask is not None and not can_block(event):
        verdict.ask = None
        notes.append(f"decision 'ask' on {event}, which cannot block: allowed")
    verdict.signal = signal
    for field, read in ANSWER_FIELDS:
        read(verdict, data.get(field), event, notes)
    if verdict.context is None:
        verdict.context = _fallback_context(verdict, signal)
    if notes:
        verdict.warning = f"{hook.name}: " + "; ".join(notes)
    return verdict


def _answer_object(hook: HookSpec, result: RunResult) -> dict[str, Any] | Verdict:
    """The stdout's JSON object, or the verdict when there is none to read."""
    text = decode(result.stdout).strip()
    if not text:
        return Verdict("allow")
    if result.stdout_size > len(result.stdout):
        return _failure(hook, "error", "stdout is over 1 MiB, so it cannot be a decision")
    try:
        data = json.loads(text)
    except ValueError:
        return _failure(hook, "error", f"stdout is not JSON: {cap_text(text, 200)!r}")
    if not isinstance(data, dict):
        return _failure(hook, "error", f"stdout must be a JSON object, got {type(data).__name__}")
    return data


def _decide(hook: HookSpec, data: dict[str, Any], notes: list[str]) -> Verdict:
    """The ``decision`` field (and its ``reason``): a word of ``_WORDS``, else the hook's policy."""
    decision = data.get("decision")
    if decision is None:
        decision = "allow"
    word = decision.strip().lower() if isinstance(decision, str) else ""
    kind = _WORDS.get(word)
    if kind is None:  # a word we cannot read: the hook's failure policy decides
        kind = "deny" if hook.on_error == "block" else "allow"
        how = "denied (fails closed)" if kind == "deny" else "treated as allow"
        notes.append(f"decision {decision!r} is not allow or deny; {how}")
    if kind != "deny":
        verdict = Verdict("allow")
        if kind == "ask":
            verdict.ask = str(data.get("reason") or f"hook {hook.name} asks a person to "
                              "approve this call")
        if kind == "warn":
            verdict.notice = str(data.get("reason") or f"warning from hook {hook.name}")
        return verdict
    verdict = Verdict("deny")
    verdict.deny = True
    reason = data.get("reason")
    verdict.reason = str(reason) if reason else f"blocked by hook {hook.name}"
    if word not in _WORDS:  # a fail-closed hook that says something we cannot read denies
        verdict.reason = (f"hook {hook.name} fails closed and its decision {decision!r} "
                          f"is not allow or deny: {verdict.reason}")
    verdict.message = cap_text(verdict.reason, 500)
    return verdict


def _modified_input(verdict: Verdict, value: Any, event: str, notes: list[str]) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        notes.append("modified_input must be a JSON object; ignored")
    elif event not in _INPUT_EVENTS:
        notes.append(f"modified_input only applies to before_tool and before_model, not "
                     f"{event}; ignored")
    elif event == "before_model" and not isinstance(value.get("messages"), list):
        notes.append('modified_input on before_model must be {"messages": [...]}; ignored')
    else:
        verdict.modified_input = value


def _modified_output(verdict: Verdict, value: Any, event: str, notes: list[str]) -> None:
    if value is None:
        return
    if event not in _OUTPUT_EVENTS:
        notes.append(f"modified_output only applies to after_tool and after_model, not "
                     f"{event}; ignored")
    else:
        verdict.modified_output = value


def _additional_context(verdict: Verdict, value: Any, event: str, notes: list[str]) -> None:
    if isinstance(value, list):
        value = "\n".join(str(c) for c in value)
    if value:
        verdict.context = str(value)


def _log(verdict: Verdict, value: Any, event: str, notes: list[str]) -> None:
    if value and verdict.message is None:  # a deny's reason is its message already
        verdict.message = cap_text(str(value), 500)


_FieldReader = Callable[[Verdict, Any, str, list[str]], None]
# The answer's fields after ``decision``/``reason`` (and a printed signal's ``intensity``), in
# the order they are read: each reader gets the field's value (None when absent), the event,
# and the notes that become the verdict's warning.
ANSWER_FIELDS: tuple[tuple[str, _FieldReader], ...] = (
    ("modified_input", _modified_input),
    ("modified_output", _modified_output),
    ("additional_context", _additional_context),
    ("log", _log),
)


def _fallback_context(verdict: Verdict, signal: Signal | None) -> str | None:
    """The context when the hook gave none: its warning's text, or its signal's."""
    if verdict.notice:
        return verdict.notice
    if signal is None:
        return None
    if signal.intensity in ("prompt", "aid") or (
            signal.intensity == "control" and verdict.modified_input is None
            and verdict.modified_output is None):
        return signal.text()  # an adjustment no rewrite carries: say what it was
    return None
