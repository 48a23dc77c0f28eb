"""Audit mode: a hook's verdict recorded as what it *would* have done, never enforced.

A hook is audited when its HOOK.md says ``metadata.mode: audit``, a hooks.yaml entry says
``mode: audit``, or the process runs with ``--mode audit`` (``MCP_HOOKS_MODE=audit``), except
a managed hook, which only its own HOOK.md can put in audit (docs/policy.md: the agent's user
sets the process's environment, and no one below the managed layer may demote it).

``audited(hook, event, verdict, mode)`` wraps whatever verdict a link gave, generically: any
effect on the event (a deny, a stop-block, a rewrite of the input or output, an ask or any
later decision word a verdict carries in ``status`` or an ``ask`` attribute, context, a signal
the hook printed) becomes a plain allow, and the effect is returned as the ``would`` record
the event log and the trace keep (``HookRun.would``; ``mcp-hooks log --would``). A failure
that fails open keeps its warning; nothing else of an audited hook reaches the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp_hooks.engine.judge import Verdict
from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.spec.outcome import HookRun

if TYPE_CHECKING:
    from mcp_hooks.control.schema import Entry

_PLAIN = frozenset({"allow", "error", "timeout", "scheduled"})  # statuses that decide nothing


def in_audit(hook: HookSpec, mode: str) -> bool:
    """Whether this hook's verdicts are only recorded (see the module docstring)."""
    if hook.metadata.get("mode") == "audit":
        return True
    return mode == "audit" and hook.scope != "managed"


def would_of(event: str, verdict: Verdict) -> dict[str, Any] | None:
    """What a verdict would have done to the event, or None when nothing."""
    did: list[str] = []
    status = str(verdict.status)
    if verdict.deny:
        did.append("stop-block" if event == "before_stop" else "deny")
    elif status not in _PLAIN:
        did.append(status)  # a decision word added later ("ask"), recorded as it is
    if getattr(verdict, "ask", None):
        did.append("ask")
    if verdict.modified_input is not None:
        did.append("rewrite")
    if verdict.modified_output is not None:
        did.append("rewrite output")
    if verdict.signal is not None and not did:
        did.append(f"signal {verdict.signal.intensity}")
    if verdict.context and not did:
        did.append("context")
    if not did:
        return None
    record: dict[str, Any] = {"decision": did[0], "effects": did, "reason": verdict.reason}
    if verdict.modified_input is not None:
        record["modified_input"] = verdict.modified_input
    return record


def audited(hook: HookSpec, event: str, verdict: Verdict,
            mode: str) -> tuple[Verdict, dict[str, Any] | None]:
    """The verdict to apply and the ``would`` record (None: the hook is enforced, or its
    verdict changes nothing)."""
    if not in_audit(hook, mode):
        return verdict, None
    would = would_of(event, verdict)
    if would is None:
        return verdict, None
    plain = Verdict("allow")
    plain.warning = verdict.warning if verdict.status in ("error", "timeout") else None
    return plain, would


def audited_entries(trigger: str, verdicts: list[Verdict], entries: Sequence[Entry],
                    mode: str) -> list[Verdict]:
    """The hooks.yaml entries' verdicts with each audited entry's (``mode: audit``, or the
    process's audit mode for an entry not of the managed layer) made a plain allow whose
    ``would`` says what it would have done (matched by the signal's source)."""
    # lazy: 44 ms of cold fire (python -X importtime), already paid: only ``decide`` calls this
    from mcp_hooks.control.evaluation import source_name

    audit = {source_name(e): e for e in entries
             if e.audit or (mode == "audit" and e.layer != "managed")}
    if not audit:
        return verdicts
    out = []
    for verdict in verdicts:
        signal = verdict.signal
        entry = audit.get(signal.source) if signal is not None else None
        would = would_of(trigger, verdict) if entry is not None else None
        if would is None or signal is None or entry is None:
            out.append(verdict)
            continue
        plain = Verdict("allow")
        plain.would = {**would, "hook": signal.source, "scope": entry.layer}
        out.append(plain)
    return out


def would_runs(verdicts: Sequence[Verdict]) -> list[HookRun]:
    """The ``HookRun`` of each audited hooks.yaml entry that would have changed the event,
    for the event log (named ``hooks.yaml:<source>``)."""
    return [HookRun(name=f"hooks.yaml:{v.would['hook']}", scope=str(v.would["scope"]),
                    priority=0, mode="sync", status="allow", would=v.would)
            for v in verdicts if v.would is not None]
