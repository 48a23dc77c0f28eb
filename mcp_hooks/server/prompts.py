"""Every word the MCP server says to a model: its instructions, the descriptions of its tools,
their arguments, its resources and its prompt, and the ``lifecycle-protocol`` prompt itself.

Kept apart from ``app.py`` so the words can be read (and reviewed) as words; ``app.py`` only
wires them to the tools and resources they describe.
"""

from __future__ import annotations

from collections.abc import Iterable

INSTRUCTIONS = (
    "This server runs the user's lifecycle hooks: call fire_hook_event with event_type "
    "before_tool (with tool_name and tool_input) before you run any tool, and with "
    "session_start, before_agent, after_tool, after_tool_failure, before_stop and the other "
    "events at those moments. Obey the result: decision deny means do not do it and tell the "
    "user the reason, modified_input replaces the tool's input, continue_working means keep "
    "working on the reason instead of stopping, additional_context is for you to read, and "
    "each of its signals (block, control, prompt or aid) is answered with respond_to_signal "
    "once you have acted on it."
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

## Tool names

Send each tool's name and input as your host knows them: hooks see them in one vocabulary.
Well-known host names are read as these canonical tools (their input keys in brackets):
`Shell` (command, cwd) for Bash, bash, shell, run_shell_command; `ReadFile` (path, offset,
limit) for Read, view; `WriteFile` (path, content) for Write, create; `EditFile` (path,
edits) for Edit, MultiEdit, edit, replace, StrReplaceFile; `ApplyPatch` (patch) for
apply_patch; `Glob`, `Grep`, `ListDir` (LS), `WebFetch`, `WebSearch`, `Agent` (Task).
`file_path` becomes `path`, and so on; `hooks://events` lists every name. Other tools (MCP
tools, your own) reach the hooks as you name them. A `modified_input` comes back in your
tool's own keys: use it as it is.

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


# -- tools -----------------------------------------------------------------------------------

FIRE_TITLE = "Fire a lifecycle hook event"
FIRE_DESCRIPTION = """\
Fire a lifecycle event at the user's hooks and get back the one decision you must follow.

Call it at every lifecycle point of your work: before_tool BEFORE running any tool (give
tool_name and tool_input), after_tool after it succeeds (add tool_output), after_tool_failure
when it fails (add error), before_stop before you stop and hand back, and session_start,
before_agent, subagent_start/subagent_stop, pre_compact/post_compact, session_end at those
moments. Aliases such as pre-tool-call or pre-tool-use are accepted.

Give tool_name and tool_input as your host knows them: well-known host tools are read as
one vocabulary (Bash -> Shell, Write -> WriteFile, Edit -> EditFile, Read -> ReadFile, ...,
file_path -> path; hooks://events lists them), and modified_input comes back in your keys.

Obey the result: decision "deny" means do not run the tool (or do the step) and tell the user
the reason; modified_input, when not null, is the input to use instead of yours;
continue_working true means do not stop, work on the reason; additional_context is for you
to read. Send the same session_id throughout a session and work_dir as the absolute project
folder. Event data beyond 1 MiB of JSON is denied; so is any event mcp-hooks cannot decide
(blocked_by "mcp-hooks", the reason says what broke). Read warnings: they name hooks that
did not run (an untrusted project hook, with the command that trusts it).

signals lists every intervention behind the decision, strongest first, each with an id
(header.id) and an intensity: block (must fix: follow payload.resolution_path), control (the
input was adjusted: payload.modifications), prompt (a warning: payload.message and
suggestions; you may go on) or aid (advice). Answer each with respond_to_signal. The issue
events (before_issue_start, before_issue_submit, before_issue_close and their after_*
events; pre-issue-submit and the like are aliases) take payload {"issue": {"id", "type",
"title", "status", "checklist": [{"text", "done"}], "files_changed": [paths]}}."""

FIRE_ARGS = {
    "event_type": "the lifecycle event: before_tool, after_tool, after_tool_failure, "
    "before_stop, session_start, before_agent, ... (or an alias such as pre-tool-call)",
    "session_id": "the agent session's id, the same for every event of a session",
    "work_dir": "absolute path of the project folder the agent works in",
    "tool_name": "tool events: the tool's name as your host knows it, such as Bash or Edit; "
    "hooks see the canonical name (Shell, ReadFile, WriteFile, EditFile, ApplyPatch, Glob, "
    "Grep, ListDir, WebFetch, WebSearch, Agent; see hooks://events)",
    "tool_input": "tool events: the tool's arguments in your host's keys (file_path, ...); "
    "hooks see canonical keys (path, command, content, ...)",
    "tool_use_id": "tool events: the call's id",
    "tool_output": "after_tool: what the tool returned",
    "error": "after_tool_failure: the error",
    "payload": "further event fields: prompt, stop_reason, final_message, subagent_name, ... "
    "(see the hooks://events resource)",
    "context": "free-form context handed to the hooks",
}

RESPOND_TITLE = "Answer a signal"
RESPOND_DESCRIPTION = """\
Tell the control layer what you did about a signal from a fire_hook_event result (its
header.id). The action must fit the signal's intensity:
block: retry_after_fix (you fixed it and will retry), proceed_with_risk, abort;
control: accept_modification, reject_modification;
prompt: acknowledge (read it, going on), apply_suggestion, dismiss;
aid: suggestion_applied, suggestion_deferred.
Each signal is answered once; the answer goes to the signal log, where repeated violations
are counted. An action of another intensity is an error that lists the ones that fit."""

RESPOND_ARGS = {
    "signal_id": "the signal's header.id, from a fire_hook_event result",
    "action": "what you did: retry_after_fix, proceed_with_risk, abort (block); "
    "accept_modification, reject_modification (control); acknowledge, apply_suggestion, "
    "dismiss (prompt); suggestion_applied, suggestion_deferred (aid)",
    "details": "optional object: what you fixed, which suggestion you applied, why",
    "session_id": "your session's id (default: the session the signal was sent to)",
}

LIST_TITLE = "List hooks"
LIST_DESCRIPTION = """\
List the lifecycle hooks installed for this user and project: name, description, trigger
event, scope, priority, async, timeout, matcher and trust (a project hook runs only once
trusted: untrusted and changed ones are listed with the fix command, and do not run), plus
hooks that failed to load with the reason and the event they block until fixed. Filter by
event_type (any event name or alias) and/or tool_name (the tool-event hooks whose matcher
admits that tool). Use it to learn which events matter here; it runs nothing."""

LIST_ARGS = {
    "event_type": "only hooks of this event (any name or alias)",
    "tool_name": "only tool-event hooks whose matcher admits this tool",
    "work_dir": "absolute project folder (default: the server's project)",
}

GET_TITLE = "Read a hook"
GET_DESCRIPTION = """\
Read one hook in full: its whole HOOK.md (what it checks and why, written for people and
models), its parsed frontmatter and its trust (an untrusted project hook can be read, not
run). Give the plain name shown by list_hooks. It runs nothing."""

GET_ARGS = {
    "name": "the hook's name, as list_hooks shows it",
    "work_dir": "absolute project folder (default: the server's project)",
}

# -- resources and the prompt's listing ------------------------------------------------------

SERVER_TITLE = "Lifecycle hooks"
INDEX_TITLE = "Hook index"
INDEX_DESCRIPTION = "JSON metadata of every hook (user and project), invalid hooks with errors"
EVENTS_TITLE = "Event catalogue"
EVENTS_DESCRIPTION = ("Every lifecycle event: canonical name, the spec's kebab-case name, "
                      "aliases, layer, payload fields, what a deny means; tool events add the "
                      "tool vocabulary: canonical tool names, their input keys and the host "
                      "names read as each")
HOOK_TITLE = "A hook's HOOK.md"
HOOK_DESCRIPTION = "The whole HOOK.md of one hook, by name"
PROMPT_TITLE = "Lifecycle hook protocol"


def hook_resource_title(name: str) -> str:
    """The title of one hook's ``hooks://hooks/{name}`` entry in the resource list."""
    return f"HOOK.md of {name}"


# -- what the result schemas say (the tools' output schemas) ---------------------------------

RESULT_FIELDS = {
    "trigger": "the event as the hook spells it",
    "event": "the canonical event name",
    "scope": "user or project",
    "timeout": "milliseconds",
    "on_error": "allow (fail open) or block (fail closed)",
    "trust": "trusted (it runs), untrusted (a project hook never trusted: it does not run) or "
    "changed (changed since it was trusted: it does not run)",
    "fix": "for a hook that is not trusted: the command that trusts it, to run once a person "
    "has read it",
    "consumed": "true: the line records a response to the signal",
    "action": "the response: one of the actions of the signal's intensity",
    "replaces": "for a trusted project hook: the folder of the user hook of the same name it "
    "replaces",
    "invalid_event": "the event it could have handled (null: any); until fixed it blocks that "
    "event (under --on-fault block)",
    "in_scope": "false for an untrusted project hook, which would not run anyway and blocks "
    "nothing",
    "path": "the HOOK.md file",
    "text": "the whole HOOK.md",
    "body": "the HOOK.md's prose, after its frontmatter",
    "document_trust": "trusted, untrusted or changed; a hook that is not trusted is shown but "
    "does not run",
}
