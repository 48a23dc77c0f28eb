"""The words of a host's reply: the warnings and signal notes beside a decision, the JSON.

Every host's ``reply`` says the same things in its own fields: the warnings (the host's own
notes, the outcome's, and its signals' beyond the decision: ``signal_notes``, each with its
id and the ``mcp-hooks respond`` actions that answer it) on stderr and, where the host shows
one, in ``systemMessage`` (``warning_text``, ``json_reply``); who denied (``denied_by``);
several texts as one (``joined``). ``base.py`` declares the ``Host`` and its ``Reply``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_hooks.hosts.base import Reply
from mcp_hooks.spec.signals import ACTIONS

if TYPE_CHECKING:
    from mcp_hooks.spec.outcome import Outcome


def joined(parts: list[str]) -> str:
    return "\n\n".join(p for p in parts if p)


def signal_notes(outcome: Outcome) -> list[str]:
    """What the user should see of the outcome's signals beyond its decision: each warning
    (a prompt of severity medium or high) and each adjustment other than a rewrite the host
    carries (a control signal not on ``tool_input``/``tool_output``), with the signal's id
    and the actions ``mcp-hooks respond`` takes for it. Blocks are the deny itself, aid and
    plain context (severity low) only the model's."""
    notes: list[str] = []
    for signal in outcome.signals:
        if signal.intensity == "prompt" and signal.payload.get("severity") != "low":
            what = "warning"
        elif signal.intensity == "control" and any(
                not isinstance(m, dict) or m.get("field") not in ("tool_input", "tool_output")
                for m in signal.payload.get("modifications", ())):
            what = "adjusted"
        else:
            continue
        actions = "|".join(ACTIONS[signal.intensity])
        notes.append(f"{what} from {signal.source or 'a hook'}: {signal.text()} [{signal.intensity}"
                     f" signal {signal.id}; answer: mcp-hooks respond {signal.id} {actions}]")
    return notes


def warning_text(outcome: Outcome, notes: list[str]) -> str:
    """One line per warning, for stderr and the user-facing message fields: the host's own
    notes, the outcome's warnings, then its signals' (``signal_notes``)."""
    return "\n".join(f"mcp-hooks: {w}"
                     for w in (*notes, *outcome.warnings, *signal_notes(outcome)))


def json_reply(out: dict[str, Any], outcome: Outcome, notes: list[str], *,
               system_message: bool = False) -> Reply:
    """The host's JSON answer, with the warnings on stderr (and in ``systemMessage`` for hosts
    that show it to the user)."""
    warnings = warning_text(outcome, notes)
    if warnings and system_message:
        out["systemMessage"] = warnings
    return Reply.json(out, stderr=warnings + "\n" if warnings else "")


def denied_by(outcome: Outcome) -> str:
    return f"mcp-hooks: {outcome.event_type} denied by {outcome.blocked_by or 'a hook'}"
