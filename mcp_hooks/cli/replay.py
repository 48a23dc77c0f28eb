"""``mcp-hooks replay``: fire logged events again against another hooks folder; say what changes.

The events come from the configured event log (``--log``, or a shared store's records with
``--state URL``), by ``--session`` and ``--since``; each one's ``event_fields``
(``engine/replayable.py``) is fired through an ``Engine`` over ``--hooks DIR`` alone (no user,
project or managed folder; the same limits and timeouts the hooks declare), every hook in
audit mode, so each hook's whole verdict is seen and none stops the others. A
``DIR/hooks.yaml`` is replayed too (its entries audited, named ``hooks.yaml:<source>``): an
entry that would now deny, ask or rewrite is a change, and so is one that stopped the
recorded event and now would not. Without it, hooks.yaml entries are not compared. Hooks run in a
scratch copy of each event's ``work_dir`` (one per folder, made once per replay), never the
original; a folder that no longer exists is replayed in an empty one.

Per hook, the recorded decision (``decision_of``: its ``would``, else ``deny`` for a deny, else
``rewrite`` with the input its stdout gave, else ``allow``) is compared with the replayed one;
every difference is a change: allow -> deny, deny -> allow, a different rewrite, a new ask, ...
A hook the recorded chain never reached (an earlier hook denied) is not compared. An event
whose fields were not logged (``event_dropped``: size, secret) or that cannot be fired is
counted and named. Exit 1 when something changed, 0 when nothing did.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from mcp_hooks import options
from mcp_hooks.cli.logs import add_since_option, when
from mcp_hooks.control.ladder import Ladder
from mcp_hooks.engine.engine import Engine
from mcp_hooks.engine.entries import ControlLayer
from mcp_hooks.engine.wiring import wire
from mcp_hooks.errors import EXIT_FAILURE, EXIT_OK, ConfigError, MCPHooksError
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.settings import Settings, process_values
from mcp_hooks.spec.outcome import FAULT_SOURCE, Event, HookRun
from mcp_hooks.state.files import FileStore


def add_parser(sub: Any) -> None:
    """Declare ``replay`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser(
        "replay", help="fire logged events again against another hooks folder; list changes",
        description="Fire the logged events again against --hooks DIR and report every hook "
        "decision that changes (allow -> deny, deny -> allow, a different rewrite, a new ask). "
        "Exit 1 when something changed, 0 when nothing did.")
    p.add_argument("--hooks", type=Path, metavar="DIR", required=True,
                   help="the hooks folder to replay against (a folder of hook folders)")
    p.add_argument("--session", metavar="ID", help="only this session's events")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_since_option(p)
    options.add_common_options(p)


@dataclass
class Report:
    """What a replay found."""

    events: int = 0
    changes: list[dict[str, Any]] = field(default_factory=list)
    not_replayed: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"events": self.events, "replayed": self.events - len(self.not_replayed),
                "changed": len(self.changes), "changes": self.changes,
                "not_replayed": self.not_replayed}


def decision_of(hook: dict[str, Any] | HookRun) -> dict[str, Any]:
    """A hook's decision as recorded (a log record's hook entry) or replayed (a ``HookRun``
    in audit mode): ``{"decision": word, "reason": ..., "modified_input": ...}``."""
    data = hook.as_dict() | {"would": hook.would} if isinstance(hook, HookRun) else hook
    would = data.get("would")
    if isinstance(would, dict):
        return {k: would.get(k) for k in ("decision", "reason", "modified_input")}
    if data.get("status") == "deny":
        return {"decision": "deny", "reason": data.get("message"), "modified_input": None}
    try:
        said = json.loads(data.get("stdout") or "null")
    except ValueError:
        said = None
    if isinstance(said, dict) and isinstance(said.get("modified_input"), dict):
        return {"decision": "rewrite", "reason": said.get("reason"),
                "modified_input": said["modified_input"]}
    return {"decision": "allow", "reason": None, "modified_input": None}


def _changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return bool(old["decision"] != new["decision"] or (
        old["decision"] == "rewrite" and old["modified_input"] != new["modified_input"]))


ENTRY = "hooks.yaml:"  # how a hooks.yaml entry is named among the hooks (engine/audit.py)
_ALLOW = {"decision": "allow", "reason": None, "modified_input": None}


def _entry_stopped(record: dict[str, Any], before: dict[str, Any]) -> str | None:
    """The hooks.yaml entry (as ``hooks.yaml:<source>``) whose deny or ask stopped the
    recorded event, or None: ``blocked_by`` names no HOOK.md hook that ran, nor our fault."""
    blocked = record.get("blocked_by")
    if not blocked or blocked in before or blocked == FAULT_SOURCE \
            or record.get("decision") not in ("deny", "ask"):
        return None
    return ENTRY + str(blocked)


def _recorded(name: str, record: dict[str, Any], before: dict[str, Any],
              entry_stop: str | None) -> dict[str, Any] | None:
    """What ``name`` decided in the record; None when the recorded chain never reached it
    (an earlier hook denied)."""
    if name in before:
        return decision_of(before[name])
    if name == entry_stop:
        return {"decision": record.get("decision"), "reason": record.get("reason"),
                "modified_input": None}
    if record.get("decision") == "deny" and not name.startswith(ENTRY):
        return None  # a HOOK.md hook after the deny never ran
    if record.get("decision") == "deny" and entry_stop is None:
        return None  # a HOOK.md hook denied: the hooks.yaml entries, the last links, never ran
    return dict(_ALLOW)


def compare(record: dict[str, Any], runs: list[HookRun],
            entries: bool = False) -> list[dict[str, Any]]:
    """The changed decisions of one event: recorded hooks vs the replayed ``runs``.
    ``entries``: hooks.yaml was replayed too, so an entry that stopped the recorded event
    and would not now (no ``hooks.yaml:<source>`` run) is a change as well."""
    before = {h["name"]: h for h in record.get("hooks") or [] if isinstance(h, dict)
              and h.get("mode") != "async"}
    entry_stop = _entry_stopped(record, before)
    changes: list[tuple[str, dict[str, Any] | None, dict[str, Any]]] = []
    for run in runs:
        old = _recorded(run.name, record, before, entry_stop)
        if old is not None:
            changes.append((run.name, old, decision_of(run)))
    if entries and entry_stop is not None and entry_stop not in {r.name for r in runs}:
        changes.append((entry_stop, _recorded(entry_stop, record, before, entry_stop),
                        dict(_ALLOW)))
    return [{"ts": record.get("ts"), "event": record.get("event"),
             "session_id": record.get("session_id"), "tool_name": record.get("tool_name"),
             "hook": name, "before": old["decision"], "after": new["decision"],
             "reason": new["reason"] or old["reason"], "modified_input": new["modified_input"]}
            for name, old, new in changes if old is not None and _changed(old, new)]


class _Scratch:
    """One scratch copy per recorded ``work_dir``, made on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: dict[str, str] = {}

    def of(self, work_dir: str | None) -> str:
        key = work_dir or ""
        if key not in self.made:
            target = self.root / f"work-{len(self.made)}"
            source = Path(key) if key else None
            if source is not None and source.is_dir():
                shutil.copytree(source, target, symlinks=True,
                                ignore_dangling_symlinks=True)
            else:
                target.mkdir()
            self.made[key] = str(target)
        return str(self.made[key])


async def replay(records: Iterable[dict[str, Any]], hooks_dir: Path,
                 scratch_root: Path) -> Report:
    """Fire each record's event against ``hooks_dir`` (see the module docstring)."""
    report = Report()
    scratch = _Scratch(scratch_root)
    # the candidate hooks alone: no project (so no trust asked), no managed layer
    registry = Registry(hooks_dir, None, watch=False, trust_project_hooks=False,
                        trust_store=TrustStore(scratch_root / "trust.json"), managed_dir=False)
    settings = Settings(**(process_values() | {"mode": "audit"}))  # the environment's kept
    store = FileStore(scratch_root / "state", log=None)
    yaml = hooks_dir / "hooks.yaml"
    control: ControlLayer | Literal[False] = ControlLayer(
        None, user_file=yaml, ladder=Ladder(store=store), watch=False, trust_project=False,
        trust_store=registry.trust_store, mode="audit") if yaml.is_file() else False
    parts = wire(registry, settings, store=store, control=control)
    async with Engine(registry, settings, parts) as engine:
        for record in records:
            if record.get("kind", "event") != "event":
                continue
            report.events += 1
            fields = record.get("event_fields")
            if not isinstance(fields, dict):
                report.not_replayed.append(_named(record, record.get("event_dropped")
                                                  or "not logged (a record of an older "
                                                  "mcp-hooks)"))
                continue
            try:
                event = Event.create(**{**fields, "work_dir": scratch.of(fields.get("work_dir"))})
                outcome = await engine.fire(event)
            except (MCPHooksError, OSError, TypeError) as exc:
                report.not_replayed.append(_named(record, f"cannot be fired: {exc}"))
                continue
            report.changes += compare(record, [h for h in outcome.hooks if h.mode == "sync"],
                                      entries=control is not False)
    return report


def _named(record: dict[str, Any], why: object) -> dict[str, Any]:
    return {"ts": record.get("ts"), "event": record.get("event"),
            "session_id": record.get("session_id"), "why": str(why)}


def _text(report: Report) -> str:
    lines = [f"{c['ts']}  {c['event']}  {c['tool_name'] or '-'}  {c['hook']}: "
             f"{c['before']} -> {c['after']}" + (f"  ({c['reason']})" if c["reason"] else "")
             for c in report.changes]
    lines += [f"{n['ts']}  {n['event']}  not replayed: {n['why']}" for n in report.not_replayed]
    data = report.as_dict()
    lines.append(f"{data['events']} event(s), {data['replayed']} replayed, "
                 f"{data['changed']} change(s), {len(report.not_replayed)} not replayed")
    return "\n".join(lines)


def command(args: argparse.Namespace) -> int:
    # lazy: 3 ms of cold start (python -X importtime), only `replay` reads a store
    from mcp_hooks.state.reader import close_log, open_log

    hooks_dir = Path(args.hooks).expanduser()
    if not hooks_dir.is_dir():
        raise ConfigError(f"--hooks {hooks_dir}: not a folder; give the hooks folder to "
                          "replay against (a folder of hook folders)")
    log = open_log(options.state_url(args), options.log_path(args), "events")
    try:
        since = getattr(args, "since", None)
        records = sorted((r for r in log.read(args.session)
                          if since is None or when(r) >= since), key=when)
    finally:
        close_log(log)
    with tempfile.TemporaryDirectory(prefix="mcp-hooks-replay-") as tmp:
        report = anyio.run(replay, records, hooks_dir, Path(tmp))
    print(json.dumps(report.as_dict(), indent=2) if args.json else _text(report),
          file=sys.stdout)
    return EXIT_FAILURE if report.changes else EXIT_OK
