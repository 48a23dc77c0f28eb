"""Deny agent tool calls that change the hook folders, the trust store or a host's hook config.

``check(event)`` reads one before_tool event and returns the reason to deny it, or None;
run.py serves it with ``mcp_hooks.hookkit`` (one-shot: exit 2 with the reason on stderr;
persistent: one answer per event line). Standard library and ``mcp_hooks.spec.patchtext``
(the patch reader protect-secrets shares). See ../HOOK.md for what is protected and what
this cannot see. The modules, lowest first:

- ``protected_paths``: what is protected, and whether one path names it (``Guard``);
- ``shell_words``: a command's tokens, braces, options and the verbs that write;
- ``verb_writes``: what each shell verb writes;
- ``shell_writes``: what a whole shell command writes (``Shell``), nesting and all;
- ``declared_readers``: the tools HOOK.md declares readers;
- ``git_writes``: what mcp-server-git's writers change;
- ``tool_writes``: what one tool call writes, by the tool's kind;
- this module: the answer.
"""

from __future__ import annotations

import os

from protected_paths import MAX_LOOKUPS, Guard, TooBig
from tool_writes import ASK_THE_USER, check_tool

from mcp_hooks.spec.patchtext import TooManyValues

PREFIX = "Hook configuration protected:"
UNREADABLE = (f"{PREFIX} the event could not be read as JSON, so this tool call cannot be "
              "checked and is refused.")


def check(payload: dict[str, object]) -> str | None:
    """The refusal (its reason for the agent) of one before_tool event, or None to allow."""
    work_dir = payload.get("work_dir") or payload.get("cwd") or os.getcwd()
    if not isinstance(work_dir, str) or not os.path.isabs(work_dir):
        work_dir = os.getcwd()
    guard = Guard(os.path.normpath(work_dir))
    try:
        found = check_tool(guard, payload)
    except (TooBig, TooManyValues):
        tool = payload.get("tool_name") or payload.get("tool")
        return (f"{PREFIX} refused this {tool if isinstance(tool, str) else ''} call: it names "
                f"more paths than the {MAX_LOOKUPS} this guard checks per call, so it cannot "
                "tell whether it changes hook folders or the hosts' hook config. Split it into "
                "smaller calls (fewer files or words per command).")
    if found is None:
        return None
    what, path, label, *advice = found
    shown = path if len(path) <= 200 else path[:200] + "..."
    shown = shown.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"{PREFIX} refused {what} {shown!s} — {label}. {advice[0] if advice else ASK_THE_USER}"
