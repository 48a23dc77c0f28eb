"""The event log's record of one fired event (``kind: event``): the decision, each hook's run
with what it printed (and what an audited hook would have done), the versions of the hooks
that decided (``hooks_digest``, ``layer_digests``), the links whose failure let the event
through (``fail_open``) and what ``mcp-hooks replay`` needs (``replayable.py``)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from mcp_hooks.engine.judge import decode
from mcp_hooks.engine.replayable import replay_entry, rewrite_entry
from mcp_hooks.runner import RunResult
from mcp_hooks.spec.outcome import Event, Outcome
from mcp_hooks.state.eventlog import now


def event_record(event: Event, name: str, work_dir: str, outcome: Outcome,
                 outputs: dict[str, RunResult], fail_open: list[str], *, hooks_digest: str,
                 layer_digests: dict[str, str], secrets: Collection[str],
                 door: str = "") -> dict[str, Any]:
    """The record of ``event`` (canonical ``name``) answered with ``outcome``; ``outputs``:
    each hook's run by name; ``door``: what fired it (``Settings.door``; none: not said)."""
    hooks = []
    for run in outcome.hooks:
        result = outputs.get(run.name)
        record = run.as_dict()
        if run.would is not None:
            record["would"] = run.would
        if result is not None:
            if result.stdout:
                record["stdout"] = decode(result.stdout)
            if result.stderr:
                record["stderr"] = decode(result.stderr)
        hooks.append(record)
    entry: dict[str, Any] = {
        "ts": now(),
        "kind": "event",
        "event": name,
        "event_type": event.event_type,
        "session_id": event.session_id,
        "work_dir": work_dir,
        "tool_name": event.tool_name,
        "decision": outcome.decision,
        "reason": outcome.reason,
        "blocked_by": outcome.blocked_by,
        "continue_working": outcome.continue_working,
        "modified_input": outcome.modified_input is not None,
        "hooks": hooks,
        "warnings": outcome.warnings,
        "hooks_digest": hooks_digest,
        "layer_digests": layer_digests,
    }
    if door:
        entry["door"] = door
    if fail_open:  # an allow a failure gave: countable (Envoy's failure_mode_allowed)
        entry["fail_open"] = fail_open
    entry.update(replay_entry(event, secrets))  # mcp-hooks replay
    entry.update(rewrite_entry(outcome.modified_input, secrets))
    return entry
