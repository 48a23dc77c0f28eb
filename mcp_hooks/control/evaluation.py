"""``evaluate(trigger, context)``: the hooks.yaml entries of one event -> signals.

The contract the engine relies on:

- ``trigger`` is any spelling ``config.canonical_trigger`` reads; ``context`` is an
  ``OracleContext`` or the event payload hooks receive (a mapping).
- A broken hooks.yaml fails closed: if any problem could concern this trigger
  (``ControlConfig.problems_for``), the result is one block signal per problem (source
  ``hooks.yaml``, type ``config_error``) and no oracle runs. On an event that cannot block,
  the caller reports them as it reports a broken hook there.
- Otherwise the enabled entries whose ``when`` holds run one after the other in run order
  (``Entry.sort_key``: priority >= 1 ascending, then priority 0 in definition order). Each
  signal gets ``source`` (the entry's ``id``, or the oracle's name in kebab case:
  ``checklist-validator``), ``hook`` (the canonical trigger), the issue id and
  ``correlation_id``. An entry with ``escalation`` goes through the ``Ladder``.
- The first block stops the run (the Agent Hooks rule "first blocking hook stops the
  rest"): the block is the last signal of the list.
- ``background=False`` runs the sync entries; ``background=True`` the ``async: true``
  ones, whose signals are all turned into aid (they cannot block or adjust) and never stop.
- An oracle that raises (a bug, custom code) does not raise here: it becomes a prompt
  signal of type ``oracle_fault`` naming the error, which the engine treats as it treats a
  hook that crashed (its on-fault policy).
- Untrusted project entries (``ControlConfig.untrusted_for``) never run; the caller may
  report them as it reports untrusted HOOK.md hooks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_hooks.control.config import (
    ControlConfig,
    Entry,
    canonical_trigger,
    load_config,
)
from mcp_hooks.control.context import OracleContext
from mcp_hooks.control.ladder import Ladder, convert
from mcp_hooks.signals import Signal


def source_name(entry: Entry) -> str:
    """The signal source of an entry: its ``id``, or its oracle's name in kebab case."""
    if entry.id != entry.oracle_name:
        return entry.id
    name = entry.oracle_name.rpartition(":")[2]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()


def _fault(entry: Entry, exc: BaseException) -> Signal:
    return Signal.prompt(f"oracle {entry.oracle_name} failed: {type(exc).__name__}: {exc}",
                         severity="high", type="oracle_fault",
                         suggestions=[f"fix the oracle or its entry in {entry.file}"])


def config_signals(config: ControlConfig, trigger: str, *,
                   correlation_id: str | None = None) -> list[Signal]:
    """One block signal per hooks.yaml problem that could concern ``trigger``."""
    return [Signal.block(str(p), type="config_error", source="hooks.yaml", hook=trigger,
                         correlation_id=correlation_id,
                         resolution_path=[f"fix {p.file}", "run `mcp-hooks validate`"])
            for p in config.problems_for(trigger)]


def evaluate(trigger: str, context: OracleContext | Mapping[str, Any], *,
             config: ControlConfig | None = None, project_dir: Path | None = None,
             ladder: Ladder | None = None, background: bool = False,
             correlation_id: str | None = None) -> list[Signal]:
    """The signals of ``trigger``'s hooks.yaml entries for one event (see the module doc).

    Args:
        config: the merged hooks.yaml; None loads it for ``project_dir`` (default the
            context's ``work_dir``).
        ladder: the escalation store; None for the default file, used only by entries with
            ``escalation``.
    """
    trigger = canonical_trigger(trigger)
    if not isinstance(context, OracleContext):
        context = OracleContext.from_payload(trigger, context)
    if config is None:
        config = load_config(project_dir or context.work_dir)
    broken = config_signals(config, trigger, correlation_id=correlation_id)
    if broken:
        return [] if background else broken
    out: list[Signal] = []
    for entry in config.for_trigger(trigger, context):
        if entry.async_ != background:
            continue
        try:
            signal = entry.oracle.evaluate(context)
        except Exception as exc:  # a broken oracle is a fault, never a crash of the event
            signal = _fault(entry, exc)
        if signal is not None:
            signal = signal.with_context(
                source=source_name(entry), hook=trigger,
                issue_id=signal.context.issue_id or context.issue_id,
                correlation_id=signal.header.correlation_id or correlation_id)
        if background:
            if signal is not None:
                out.append(convert(signal, "aid"))
            continue
        if entry.escalation and (signal is None or signal.header.type != "oracle_fault"):
            signal = (ladder or Ladder()).apply(context.session_id, trigger, entry.id,
                                                signal, entry.escalation)
        if signal is None:
            continue
        out.append(signal)
        if signal.blocks:
            break
    return out
