"""What the MCP server tells a model: its instructions and the ``lifecycle-protocol`` prompt.

Kept apart from ``server.py`` so the words can be read (and reviewed) as words.
"""

from __future__ import annotations

from collections.abc import Iterable

INSTRUCTIONS = (
    "This server runs the user's lifecycle hooks: call fire_hook_event with event_type "
    "before_tool (with tool_name and tool_input) before you run any tool, and with "
    "session_start, before_agent, after_tool, after_tool_failure, before_stop and the other "
    "events at those moments. Obey the result: decision deny means do not do it and tell the "
    "user the reason, modified_input replaces the tool's input, continue_working means keep "
    "working on the reason instead of stopping, and additional_context is for you to read."
)

PROMPT_NAME = "lifecycle-protocol"
PROMPT_DESCRIPTION = (
    "How and when to fire lifecycle events at this server, and how to obey what comes back. "
    "Use it in an agent host without native hooks."
)

_PROTOCOL = """\
# Lifecycle hooks: the protocol

This session is gated by lifecycle hooks. They are the user's rules (security checks, test
gates, formatters, audit logs), run by the `fire_hook_event` tool. Follow this protocol for
the whole session.

## When to fire which event

- `session_start`: the session begins (once). Send `session_id`.
- `before_agent`: you received the user's message, before working on it.
  Send `payload: {"prompt": ...}`.
- `before_tool`: **before every tool call.** Send `tool_name`, `tool_input`, `tool_use_id`.
- `after_tool`: a tool call succeeded. Send `tool_name`, `tool_input`, `tool_output`.
- `after_tool_failure`: a tool call failed. Send `tool_name`, `tool_input`, `error`.
- `before_stop`: you are about to stop and hand back to the user.
  Send `payload: {"stop_reason": ..., "final_message": ...}`.
- `subagent_start` / `subagent_stop`: you start / finish a subagent.
  Send `payload: {"subagent_name": ...}`.
- `pre_compact` / `post_compact`: before / after compacting the context.
- `session_end`: the session ends.

Always send the same `session_id` for one session and, when you work in a project folder,
its absolute path as `work_dir`. Do not fire events for the `fire_hook_event`, `list_hooks`
or `get_hook` calls themselves.

## How to obey the result

The result is one decision:

- `decision: "deny"` on `before_tool`: **do not run the tool.** Tell the user it was
  blocked, by which hook (`blocked_by`) and why (`reason`); then choose another way or ask.
- `modified_input` (not null): run the tool with exactly this input instead of yours.
- `modified_output` (not null, after a tool): use it in place of the tool's output.
- `continue_working: true` (after `before_stop`): **do not stop.** The `reason` is your next
  instruction: work on it, then fire `before_stop` again when you are done.
- `additional_context`: read it; it is information the hooks want you to have.
- `decision: "deny"` on another event: do not go on with what the event announced, and
  say why.
- `warnings` are for the user; mention them if they matter.

A hook result is the user's policy, not a suggestion: never work around a deny by running
the same thing another way. Call `list_hooks` to see which hooks exist and `get_hook` to
read one in full.
"""


def lifecycle_protocol(events_with_hooks: Iterable[str] = ()) -> str:
    """The prompt text, ending with the events that have hooks right now (if any)."""
    events = sorted(set(events_with_hooks))
    if not events:
        tail = "\nNo hooks are installed for this project yet; firing events is still cheap.\n"
    else:
        tail = f"\nHooks are installed right now for: {', '.join(events)}.\n"
    return _PROTOCOL + tail
