"""Readable text for people: an outcome, the hook table, event-log lines, a hook's progress
and why each hook was or was not considered for an event (``fire --verbose``); and, for
programs, :func:`emit_json`, the one way a command's ``--json`` document is printed."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from mcp_hooks.registry.discovery import Registry
from mcp_hooks.spec import matching
from mcp_hooks.spec.events import EVENTS
from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.spec.outcome import HookRun, Outcome
from mcp_hooks.spec.signals import ACTIONS

_MARK = {"allow": "ok", "deny": "DENY", "error": "ERR", "timeout": "TIME", "scheduled": "bg"}


def emit_json(document: Any) -> None:
    """Print ``document`` as a command's ``--json`` answer: one JSON document on stdout,
    indented by 2, keys in the order given (each command documents its keys in docs/cli.md)."""
    sys.stdout.write(json.dumps(document, indent=2) + "\n")
    sys.stdout.flush()


def _paint(text: str, code: str, color: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if color else text


def format_outcome(outcome: Outcome, *, color: bool = False, why_none: str = "",
                   notes: Sequence[str] = (), answerable: bool = True) -> str:
    """The decision on one line, then reason and context, one line per hook, warnings, and
    the signals with their ids and how to answer them.

    ``why_none`` says why no hook ran (default "no hook matched"), ``notes`` what to do about
    it; both only for an allowed event that no hook ran on. ``answerable``: the signals were
    logged, so ``mcp-hooks respond`` can answer them.
    """
    lines = [_head(outcome, color, why_none)]
    if not outcome.hooks and not outcome.denied:
        lines += [f"  {note}" for note in notes]
    if outcome.reason:
        lines.append(_indent("reason: ", outcome.reason))
    if outcome.modified_input is not None:
        lines.append(f"  modified input: {outcome.modified_input}")
    if outcome.modified_output is not None:
        lines.append(f"  modified output: {outcome.modified_output}")
    lines += [_indent("context: ", text) for text in outcome.additional_context]
    lines += [_run_line(run, outcome.reason) for run in outcome.hooks]
    lines += [_paint(f"  warning: {warning}", "33", color) for warning in outcome.warnings
              if not _fault_told(warning, outcome.reason)]
    lines += [format_signal(signal.id, signal.intensity, signal.source, answerable)
              for signal in outcome.signals]
    return "\n".join(lines)


def _head(outcome: Outcome, color: bool, why_none: str) -> str:
    """The decision, the event and who decided (or why no hook ran)."""
    if outcome.denied:
        head = _paint("DENIED", "1;31", color) + f"  {outcome.event_type}  by {outcome.blocked_by}"
        return head + ("  (keep working)" if outcome.continue_working else "")
    head = _paint("ALLOWED", "1;32", color) + f"  {outcome.event_type}"
    return head + ("" if outcome.hooks else f"  ({why_none or 'no hook matched'})")


def _run_line(run: HookRun, reason: str | None) -> str:
    """One hook's run: status, name, scope, priority, mode, exit code, time, first message line."""
    code = "-" if run.exit_code is None else str(run.exit_code)
    line = (f"  {_MARK[run.status]:<4} {run.name:<28} {run.scope:<7} p{run.priority:<4} "
            f"{run.mode:<5} exit {code:<3} {run.duration_ms:8.1f} ms")
    if not run.message:
        return line
    first = run.message.strip().splitlines()[0] if run.message.strip() else ""
    if run.status in ("error", "timeout") and _said(run.message, reason):
        first = "(the reason above)"  # a fault's text is printed once
    return line + f"  {first[:80]}"


def _fault_told(warning: str, reason: str | None) -> bool:
    """Whether ``warning`` is a fault the reason already says (so it is not printed twice)."""
    return warning.startswith("fault: ") and _said(
        warning[len("fault: "):].rsplit("; ", 1)[0], reason)


def _said(text: str, reason: str | None) -> bool:
    """Whether ``reason`` already holds ``text`` (a fault's text, as the deny tells it)."""
    return bool(reason) and bool(text.strip()) and text.strip() in (reason or "")


def format_signal(signal_id: str, intensity: str, source: str, answerable: bool = True) -> str:
    """One signal an outcome raised: its id, and the command that answers it."""
    head = f"  signal: {intensity} {signal_id} from {source or '?'}"
    if not answerable:
        return head + " (no signal log is kept, so it cannot be answered)"
    actions = "|".join(ACTIONS.get(intensity, ()))
    return f"{head}; answer: mcp-hooks respond {signal_id[:8]} {actions or 'ACTION'}"


def clip(text: str, width: int) -> str:
    """The first line of ``text`` in at most ``width`` characters, cut at a word boundary
    with "..." when it is longer (or has more lines)."""
    lines = text.strip().splitlines()
    first = lines[0].rstrip() if lines else ""
    if len(first) <= width and len(lines) <= 1:
        return first
    room = max(width - 3, 1)
    cut = first[:room]
    if len(first) > room and " " in cut.strip() and first[room] != " ":
        cut = cut[:cut.rstrip().rfind(" ")]  # the last whole word
    return cut.rstrip(" ,;:") + "..."


def _indent(label: str, text: str) -> str:
    pad = " " * (2 + len(label))
    body = text.strip().splitlines() or [""]
    return "\n".join([f"  {label}{body[0]}", *(pad + line for line in body[1:])])


def format_hooks(registry: Registry, hooks: list[HookSpec]) -> str:
    """The hook table, then invalid hooks with their errors, then warnings."""
    lines = [f"user hooks:    {registry.user_dir}",
             f"project hooks: {registry.project_dir}/.agents/hooks" if registry.project_dir
             else "project hooks: (none)", ""]
    if registry.managed_dir is not None:  # above both (docs/policy.md)
        lines.insert(0, f"managed hooks: {registry.managed_dir}")
    lines += _hook_table(registry, hooks)
    if registry.replaced:
        lines += ["", "project* replaces the user hook of the same name: " + ", ".join(
            f"{name} ({user.dir})" for name, user in sorted(registry.replaced.items()))]
    if registry.untrusted:
        project = registry.untrusted[0].project_dir
        lines += ["", f"{len(registry.untrusted)} project hook(s) do not run until you have "
                  f"read and trusted them: mcp-hooks trust {project}"]
    lines += _invalid_lines(registry)
    if registry.warnings:
        lines += ["", "warnings:"] + [f"  {w}" for w in registry.warnings]
    return "\n".join(lines)


def _hook_table(registry: Registry, hooks: list[HookSpec]) -> list[str]:
    """The table of the hooks that run and the untrusted ones, or how to add the first."""
    # every hook that runs is trusted; a managed one by where it is (registry/managed.py)
    shown = [(h, "location" if h.scope == "managed" else "trusted") for h in hooks]
    shown += [(u.spec, u.status) for u in registry.untrusted]
    lines: list[str] = []
    if shown:
        rows: list[tuple[str, ...]] = [
            ("NAME", "TRIGGER", "SCOPE", "TRUST", "PRIO", "MODE", "TIMEOUT", "MATCHER")]
        rows += [_hook_row(registry, h, trust) for h, trust in shown]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        for row in rows:
            cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
            lines.append("  ".join([*cells, row[-1]]).rstrip())
    else:
        lines.append("no hooks installed: add the bundled guards with `mcp-hooks init` (or pick "
                     "from `mcp-hooks add --list`), or write one with `mcp-hooks new NAME "
                     "--trigger EVENT`")
    return lines


def _hook_row(registry: Registry, h: HookSpec, trust: str) -> tuple[str, ...]:
    """One hook's row of the table."""
    matcher = " ".join(
        f"{k}={v}" for k, v in (("tool", h.matcher_tool), ("pattern", h.matcher_pattern))
        if v
    ) or "-"
    scope = "project*" if h.scope == "project" and h.name in registry.replaced \
        else h.scope
    return (h.name, h.trigger, scope, trust, str(h.priority),
            ("async" if h.is_async else "sync") + ("/audit" if h.audit else ""),
            f"{h.timeout / 1000:g}s", matcher)


def _invalid_lines(registry: Registry) -> list[str]:
    """The invalid hooks, each with the events it blocks until fixed."""
    lines: list[str] = []
    if registry.invalid:
        lines += ["", f"invalid hooks ({len(registry.invalid)}), not loaded; each blocks the "
                  "events it could handle until fixed (--on-fault warn lets them through):"]
        for invalid in registry.invalid:
            wakes = "any event" if invalid.event is None else invalid.event
            if invalid.matcher is not None and invalid.matcher.given:  # only the calls it admits
                said = [f"{k} {v}" for k, v in (("tool", invalid.matcher.tool),
                                                 ("pattern", invalid.matcher.pattern)) if v]
                wakes += f" matching {', '.join(said)}"
            held = "" if invalid.in_scope else ", untrusted: blocks nothing"
            lines.append(f"  {invalid}  [{wakes}{held}]")
    return lines


def _hook_word(hook: dict[str, Any]) -> str:
    """``name=status`` of one hook in a log line, with what an audited one would have done."""
    would = hook.get("would")
    text = f"{hook.get('name')}={hook.get('status')}"
    if isinstance(would, dict):
        text += f" (would {would.get('decision')}: {clip(str(would.get('reason') or ''), 80)})"
    return text


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
    if str(record.get("kind", "")).startswith("ask"):
        return f"{ts}  {record.get('event', '?'):<18} {_ask_line(record)}"
    hooks = ", ".join(_hook_word(h) for h in record.get("hooks") or [])
    decision = str(record.get("decision", "?")).upper()
    line = f"{ts}  {record.get('event', '?'):<18} {decision:<5}"
    if record.get("tool_name"):
        line += f" tool={record['tool_name']}"
    if record.get("session_id"):
        line += f" session={record['session_id']}"
    if record.get("replica"):
        line += f" replica={record['replica']}"
    line += f"  [{hooks or 'no hooks'}]"
    if record.get("reason"):
        line += f"  reason: {clip(str(record['reason']), 100)}"
    for warning in record.get("warnings") or []:  # the loop guard's override among them
        line += f"  warning: {clip(' '.join(str(warning).split()), 160)}"
    return line


def _ask_line(record: dict[str, Any]) -> str:
    """An ask's record (docs/ask.md): made, answered (how, by whom), or timed out."""
    head = f"{record.get('kind', 'ask').upper()} {record.get('ask_id')} hook={record.get('hook')}"
    if record.get("kind") == "ask":
        reason = clip(str(record.get("reason")), 100)
        return f"{head} tool={record.get('tool_name')}  reason: {reason}"
    if record.get("kind") == "ask_answer":
        approved = record.get("approved")
        verdict = "to the host" if approved is None else "approved" if approved else "refused"
        return f"{head} {verdict} via {record.get('channel')} by {record.get('by') or '?'}"
    if record.get("kind") == "ask_mismatch":
        return f"{head} an approval of {record.get('approved_ask')} is for other arguments"
    return f"{head} nobody answered; {record.get('fallback')}"


def format_progress(event_type: str, run: HookRun) -> str:
    """One hook that has just finished, while its event is still running (on a terminal)."""
    return (f"mcp-hooks fire: {event_type}: {run.name} {run.status} "
            f"({run.duration_ms:.0f} ms)")


def _tool_verdict(hook: HookSpec, tool: str | None) -> str | None:
    """Why ``matcher.tool`` turns the call away, or None when it lets it through."""
    if hook.matcher_tool is None:
        return None
    if tool is None:
        return f"matcher.tool {hook.matcher_tool!r}, but no --tool was given"
    matcher = hook.tool_re
    if matcher is not None and matching.fullmatch(matcher, tool):
        return None
    return f"tool {tool!r} does not match matcher.tool {hook.matcher_tool!r}"


def _pattern_verdict(hook: HookSpec, tool_input: Any) -> str | None:
    """Why ``matcher.pattern`` turns the call away, or None when it lets it through."""
    if hook.matcher_pattern is None:
        return None
    if matching.search_strings(matching.compile_matcher(hook.matcher_pattern), tool_input):
        return None
    return f"matcher.pattern {hook.matcher_pattern!r} is not found in the tool input"


def _why(hook: HookSpec, event_type: str, tool: str | None, tool_input: Any) -> str:
    """Whether one valid hook is woken by the event, and why (not)."""
    event = hook.event
    if event != event_type:
        return f"skipped  its trigger is {hook.trigger} ({event})"
    if not EVENTS[event].is_tool_event:
        return "matched  the event (matchers apply to tool events only)"
    refusal = _tool_verdict(hook, tool) or _pattern_verdict(hook, tool_input)
    if refusal is not None:
        return f"skipped  {refusal}"
    shown = [f"{k} {v!r}" for k, v in (("matcher.tool", hook.matcher_tool),
                                       ("matcher.pattern", hook.matcher_pattern)) if v]
    return "matched  " + (" and ".join(shown) if shown else "no matcher: every tool call")


def format_considered(registry: Registry, event_type: str, tool: str | None,
                      tool_input: Any) -> str:
    """Every hook the event was held against, one line each: matched or skipped, and why
    (its event, ``matcher.tool``, ``matcher.pattern``, trust, a file that does not load)."""
    lines = [f"hooks considered for {event_type}"
             + (f" (tool {tool!r})" if tool is not None else "") + ":"]
    hooks = registry.hooks()
    names = [h.name for h in hooks] + [u.name for u in registry.untrusted] \
        + [i.name for i in registry.invalid]
    width = max(map(len, names), default=0)
    for hook in hooks:
        lines.append(f"  {hook.name:<{width}}  {hook.scope:<7}  "
                     f"{_why(hook, event_type, tool, tool_input)}")
    for untrusted in registry.untrusted:
        lines.append(f"  {untrusted.name:<{width}}  project  not run: {untrusted.status} "
                     f"(see `mcp-hooks trust`)")
    for invalid in registry.invalid:
        lines.append(f"  {invalid.name:<{width}}  {invalid.scope:<7}  not loaded: {invalid}")
    if len(lines) == 1:
        lines.append(f"  none: no hook in {registry.user_dir}"
                     + (f" or {registry.project_dir}/.agents/hooks"
                        if registry.project_dir else ""))
    return "\n".join(lines)
