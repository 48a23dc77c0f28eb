"""Readable text for people: an outcome, the hook table, event-log lines."""

from __future__ import annotations

from typing import Any

from mcp_hooks.discovery import Registry
from mcp_hooks.hookfile import HookSpec
from mcp_hooks.outcome import Outcome

_MARK = {"allow": "ok", "deny": "DENY", "error": "ERR", "timeout": "TIME", "scheduled": "bg"}


def _paint(text: str, code: str, color: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if color else text


def format_outcome(outcome: Outcome, *, color: bool = False) -> str:
    """The decision on one line, then one line per hook, then reason, context and warnings."""
    if outcome.denied:
        head = _paint("DENIED", "1;31", color) + f"  {outcome.event_type}  by {outcome.blocked_by}"
        if outcome.continue_working:
            head += "  (keep working)"
    else:
        head = _paint("ALLOWED", "1;32", color) + f"  {outcome.event_type}"
        if not outcome.hooks:
            head += "  (no hook matched)"
    lines = [head]
    if outcome.reason:
        lines.append(_indent("reason: ", outcome.reason))
    if outcome.modified_input is not None:
        lines.append(f"  modified input: {outcome.modified_input}")
    if outcome.modified_output is not None:
        lines.append(f"  modified output: {outcome.modified_output}")
    for text in outcome.additional_context:
        lines.append(_indent("context: ", text))
    for run in outcome.hooks:
        code = "-" if run.exit_code is None else str(run.exit_code)
        line = (f"  {_MARK[run.status]:<4} {run.name:<28} {run.scope:<7} p{run.priority:<4} "
                f"{run.mode:<5} exit {code:<3} {run.duration_ms:8.1f} ms")
        if run.message:
            first = run.message.strip().splitlines()[0] if run.message.strip() else ""
            line += f"  {first[:80]}"
        lines.append(line)
    for warning in outcome.warnings:
        lines.append(_paint(f"  warning: {warning}", "33", color))
    return "\n".join(lines)


def _indent(label: str, text: str) -> str:
    pad = " " * (2 + len(label))
    body = text.strip().splitlines() or [""]
    return "\n".join([f"  {label}{body[0]}", *(pad + line for line in body[1:])])


def format_hooks(registry: Registry, hooks: list[HookSpec]) -> str:
    """The hook table, then invalid hooks with their errors, then warnings."""
    lines = [f"user hooks:    {registry.user_dir}",
             f"project hooks: {registry.project_dir}/.agents/hooks" if registry.project_dir
             else "project hooks: (none)", ""]
    shown = [(h, "trusted") for h in hooks]  # every hook that runs is trusted
    shown += [(u.spec, u.status) for u in registry.untrusted]
    if shown:
        rows = [("NAME", "TRIGGER", "SCOPE", "TRUST", "PRIO", "MODE", "TIMEOUT", "MATCHER")]
        for h, trust in shown:
            matcher = " ".join(
                f"{k}={v}" for k, v in (("tool", h.matcher_tool), ("pattern", h.matcher_pattern))
                if v
            ) or "-"
            scope = "project*" if h.scope == "project" and h.name in registry.replaced \
                else h.scope
            rows.append((h.name, h.trigger, scope, trust, str(h.priority),
                         "async" if h.is_async else "sync", f"{h.timeout / 1000:g}s", matcher))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        for row in rows:
            cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
            lines.append("  ".join([*cells, row[-1]]).rstrip())
    else:
        lines.append("no hooks installed (create one with `mcp-hooks new NAME --trigger EVENT`)")
    if registry.replaced:
        lines += ["", "project* replaces the user hook of the same name: " + ", ".join(
            f"{name} ({user.dir})" for name, user in sorted(registry.replaced.items()))]
    if registry.untrusted:
        project = registry.untrusted[0].project_dir
        lines += ["", f"{len(registry.untrusted)} project hook(s) do not run until you have "
                  f"read and trusted them: mcp-hooks trust {project}"]
    if registry.invalid:
        lines += ["", f"invalid hooks ({len(registry.invalid)}), not loaded; each blocks the "
                  "events it could handle until fixed (--on-fault warn lets them through):"]
        for invalid in registry.invalid:
            wakes = "any event" if invalid.event is None else invalid.event
            held = "" if invalid.in_scope else ", untrusted: blocks nothing"
            lines.append(f"  {invalid}  [{wakes}{held}]")
    if registry.warnings:
        lines += ["", "warnings:"] + [f"  {w}" for w in registry.warnings]
    return "\n".join(lines)


def format_log_record(record: dict[str, Any]) -> str:
    """One event-log record on one line."""
    ts = str(record.get("ts", ""))[:23].replace("T", " ")
    if record.get("kind") == "async_result":
        hook = record.get("hook") or {}
        return (f"{ts}  {record.get('event', '?'):<18} async {hook.get('name')}: "
                f"{hook.get('status')} (exit {hook.get('exit_code')}, "
                f"{hook.get('duration_ms')} ms)")
    if record.get("kind") == "proxy_upstream":
        line = f"{ts}  proxy upstream {record.get('upstream')} is {record.get('state')}"
        return line + (f": {record['error']}" if record.get("error") else "")
    hooks = ", ".join(f"{h.get('name')}={h.get('status')}" for h in record.get("hooks") or [])
    decision = str(record.get("decision", "?")).upper()
    line = f"{ts}  {record.get('event', '?'):<18} {decision:<5}"
    if record.get("tool_name"):
        line += f" tool={record['tool_name']}"
    if record.get("session_id"):
        line += f" session={record['session_id']}"
    line += f"  [{hooks or 'no hooks'}]"
    if record.get("reason"):
        line += f"  reason: {str(record['reason']).splitlines()[0][:100]}"
    return line
