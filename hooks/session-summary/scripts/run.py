"""Write a Markdown summary of the ending session from the mcp-hooks event log."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

from mcp_hooks.hookkit import hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def state_dir() -> Path:
    base = (os.environ.get("XDG_STATE_HOME")
            or os.path.join(os.path.expanduser("~"), ".local", "state"))
    return Path(base) / "mcp-hooks"


def log_path() -> Path:
    env = os.environ.get("MCP_HOOKS_LOG")
    if env and env.lower() not in ("off", "0", "false", "none"):
        return Path(env)
    return state_dir() / "events.jsonl"


def read_log(session: str) -> list[dict[str, Any]]:
    """This machine's event log file, for an engine that passed no session_log."""
    events = []
    try:
        with open(log_path(), encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and record.get("session_id") == session:
                    events.append(record)
    except OSError:
        pass
    return events


def session_events(payload: dict[str, Any], session: str) -> list[dict[str, Any]]:
    """The session's records: the engine hands them over from its state store (every
    replica's, with a shared --state: the store's URL never reaches a hook); older engines do
    not, and this machine's event log is read instead."""
    given = payload.get("session_log")
    records = given.get("records") if isinstance(given, dict) else None
    if isinstance(records, list):
        return [e for e in records if isinstance(e, dict)]
    return read_log(session)


def summary(payload: dict[str, Any], session: str, tools: Counter[Any],
            denials: list[dict[str, Any]], failures: list[tuple[Any, Any]],
            logged: int) -> list[str]:
    """The Markdown lines of the summary."""
    lines = [f"# Session {session}", "",
             f"- work dir: {payload.get('work_dir')}",
             f"- duration: {payload.get('duration_seconds', '?')} s, steps: "
             f"{payload.get('total_steps', '?')}, exit: {payload.get('exit_reason', '?')}",
             f"- events logged: {logged}; tool calls checked: {sum(tools.values())}; "
             f"denied: {len(denials)}; failed hooks: {len(failures)}", ""]
    if tools:
        lines += ["## Tools", ""] + [f"- {name}: {n}" for name, n in tools.most_common()] + [""]
    if denials:
        lines += ["## Denied", ""] + [
            f"- {e.get('ts')} {e.get('event')} {e.get('tool_name') or ''} by "
            f"{e.get('blocked_by')}: {str(e.get('reason') or '').splitlines()[0][:200]}"
            for e in denials] + [""]
    if failures:
        lines += ["## Failed hooks", ""] + [
            f"- {event}: {h.get('name')} {h.get('status')}: {h.get('message')}"
            for event, h in failures] + [""]
    return lines


@hook
def main(payload: dict[str, Any]) -> dict[str, Any] | None:
    session = payload.get("session_id") or "unknown-session"
    events = session_events(payload, session)
    tools = Counter(e.get("tool_name") for e in events if e.get("event") == "before_tool")
    denials = [e for e in events if e.get("decision") == "deny"]
    failures = [(e.get("event"), h) for e in events for h in e.get("hooks") or []
                if h.get("status") in ("error", "timeout")]
    lines = summary(payload, session, tools, denials, failures, len(events))
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", session)[:100]
    out = state_dir() / "sessions" / f"{safe}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines), encoding="utf-8")
    # a note for the record, never a question: an aid signal (the lowest intensity), whose
    # text still reaches the host as context; a plain additional_context would be a prompt
    return {"intensity": "aid", "type": "session_summary",
            "context_info": f"Session summary written to {out}: {sum(tools.values())} tool "
                            f"calls checked, {len(denials)} denied, {len(failures)} failed "
                            "hooks."}
