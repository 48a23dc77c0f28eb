"""The event catalogue: canonical names, aliases, layers and payload fields, as data.

Canonical names are the snake_case ones of the Agent Hooks spec (plus ``after_stop`` and
``post_compact`` from its kebab-case edition). Every other spelling found in the seed
documents is an alias: a hook may subscribe with any of them. ``SPEC_NAMES`` holds the
trigger names of the current (kebab-case) spec, the only ones another implementation reads:
what a hook meant to be shared, and the bundled library, write (``spec_name``).

The issue-lifecycle events (layer ``issue``: ``before_issue_start`` ... ``after_issue_close``)
are the control protocol's extension (seed ``002``), not the Agent Hooks spec's: their seed
spellings (``pre-issue-start`` ...) are aliases, ``spec_name`` gives those, and they are not in
``SPEC_NAMES`` (``validate --portable`` says another implementation will not fire them). Their
payload carries an ``issue`` object (``ISSUE_FIELDS``), checked by ``issue_problem``; the
``after_*`` ones happen after the fact and cannot block.

The agent-loop events (seeds ``003``/``004``: AgentScope's in-process hooks) are an extension
too: ``before_model``/``after_model`` around each model (reasoning) call, the streamed chunks
``reasoning_chunk`` and ``tool_output_chunk``, and ``error`` with its ``phase``
(``ERROR_PHASES``). AgentScope's spellings are aliases (Python ``pre_reasoning``, Java
``PreReasoning``, ``PreCall``, ``PreActing``, ``ActingChunk``, ``Error`` ...); ``spec_name``
gives a kebab-case spelling (``LOOP_NAMES``), not in ``SPEC_NAMES``. What a hook may change:

- ``before_model``: its ``modified_input`` is the new model input, ``{"messages": [...]}``
  (the payload's ``messages`` for the hooks after it and ``Outcome.modified_input`` for the
  caller);
- ``after_model``: its ``modified_output`` is the new ``response`` (``Outcome.modified_output``);
- the chunk events are notifications (``notify_only``): every matching hook starts at once, as
  an async hook does, their results are ignored and the caller gets an allow without waiting;
  they cannot block. ``error`` is reported after the fact and cannot block either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_hooks.errors import UnknownEventError

BASE_FIELDS: tuple[str, ...] = ("event_type", "timestamp", "session_id", "work_dir", "context")
TOOL_FIELDS: tuple[str, ...] = ("tool_name", "tool_input", "tool_use_id")
# the ``issue`` object of the issue-lifecycle events: key -> what it must be
ISSUE_FIELDS: dict[str, str] = {
    "id": "a string", "type": "a string", "title": "a string", "status": "a string",
    "checklist": 'a list of {"text": string, "done": boolean}',
    "files_changed": "a list of paths (strings)",
}


@dataclass(frozen=True)
class EventInfo:
    """One canonical event.

    Attributes:
        name: canonical snake_case name.
        layer: session, turn, react, subagent, context, issue or model.
        summary: when the event fires.
        on_deny: what a deny (exit 2, ``decision: deny``) does to the agent.
        fields: payload fields beyond the base ones, in the order hooks usually read them.
        aliases: every other accepted spelling.
    """

    name: str
    layer: str
    summary: str
    on_deny: str
    fields: tuple[str, ...]
    aliases: tuple[str, ...]

    @property
    def can_block(self) -> bool:
        """Whether a deny changes what happens next (a tool, a turn, a stop, a start).

        The events after the fact (a session ended, the agent stopped, the context was
        compacted, a tool failed) are only reported: a deny there is a message, so a fault of
        ours on them is a warning, never a deny (see ``engine.fault_outcome``).
        """
        return self.name not in _CANNOT_BLOCK

    @property
    def notify_only(self) -> bool:
        """A notification (the streamed chunks): its hooks all start at once like async
        hooks, their results are ignored, and firing it never waits for them."""
        return self.name in NOTIFY_ONLY

    @property
    def is_tool_event(self) -> bool:
        return self.layer == "react"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layer": self.layer,
            "summary": self.summary,
            "can_block": self.can_block,
            "notify_only": self.notify_only,
            "on_deny": self.on_deny,
            "payload_fields": [*BASE_FIELDS, *self.fields],
            "aliases": list(self.aliases),
            "spec_name": spec_name(self.name),
        }


def _event(
    name: str, layer: str, summary: str, on_deny: str, fields: tuple[str, ...], *aliases: str
) -> EventInfo:
    return EventInfo(name, layer, summary, on_deny, fields, aliases)


_CANNOT_BLOCK = frozenset({"session_end", "after_stop", "post_compact", "after_tool_failure",
                           "after_issue_start", "after_issue_submit", "after_issue_close",
                           "reasoning_chunk", "tool_output_chunk", "error"})
# notifications: every hook starts at once as an async hook does, none is waited for
NOTIFY_ONLY = frozenset({"reasoning_chunk", "tool_output_chunk"})
# where an ``error`` event's error happened (its ``phase`` field)
ERROR_PHASES: tuple[str, ...] = ("reply", "reasoning", "acting", "model", "tool", "hook",
                                 "session", "other")


def can_block(event: str) -> bool:
    """``EventInfo.can_block`` by canonical name; a name we do not know is taken to block."""
    return event not in _CANNOT_BLOCK


def is_notification(event: str) -> bool:
    """``EventInfo.notify_only`` by canonical name."""
    return event in NOTIFY_ONLY

EVENTS: dict[str, EventInfo] = {
    e.name: e
    for e in (
        _event(
            "session_start", "session", "an agent session starts",
            "the session should not start; the reason says why",
            ("model", "args"), "pre-session",
        ),
        _event(
            "session_end", "session", "an agent session ends",
            "reported to the user; the session ends anyway",
            ("duration_seconds", "total_steps", "exit_reason"), "post-session",
        ),
        _event(
            "before_agent", "turn", "before the agent processes the user's input",
            "the input is refused; the reason says why",
            ("prompt",), "pre-agent-turn", "pre_reply", "PreCall",
        ),
        _event(
            "after_agent", "turn", "after the agent has produced its reply",
            "the reply is flagged; the reason says why",
            ("prompt", "response"), "post-agent-turn", "post_reply", "PostCall",
        ),
        _event(
            "before_stop", "turn", "the agent is about to stop and hand back (quality gate)",
            "the agent keeps working, with the reason as its next instruction",
            ("stop_reason", "step_count", "final_message", "stop_hook_active",
             "stop_block_count"),
            "pre-agent-turn-stop",
        ),
        _event(
            "after_stop", "turn", "the agent has stopped",
            "reported to the user",
            ("stop_reason", "step_count", "final_message"), "post-agent-turn-stop",
        ),
        _event(
            "before_tool", "react", "a tool is about to run",
            "the tool does not run; the agent is told the reason",
            TOOL_FIELDS, "pre-tool-call", "pre-tool-use", "pre_acting", "PreActing",
        ),
        _event(
            "after_tool", "react", "a tool has run successfully",
            "the agent is told the result was rejected, and why",
            (*TOOL_FIELDS, "tool_output"), "post-tool-call", "post-tool-use", "post_acting",
            "PostActing",
        ),
        _event(
            "after_tool_failure", "react", "a tool has failed",
            "the agent is told the reason beside the failure",
            (*TOOL_FIELDS, "error"), "post-tool-call-failure",
        ),
        _event(
            "subagent_start", "subagent", "a subagent is about to start",
            "the subagent does not start; the reason says why",
            ("subagent_name", "subagent_type", "task_description"), "pre-subagent",
        ),
        _event(
            "subagent_stop", "subagent", "a subagent has stopped",
            "the parent agent is told the reason",
            ("subagent_name", "subagent_type", "result"), "post-subagent",
        ),
        _event(
            "pre_compact", "context", "the context is about to be compacted",
            "the compaction should not happen; the reason says why",
            ("trigger", "token_count"), "pre-context-compact",
        ),
        _event(
            "post_compact", "context", "the context has been compacted",
            "reported to the user",
            ("trigger", "token_count"), "post-context-compact",
        ),
        _event(
            "before_issue_start", "issue", "work on an issue is about to start",
            "the issue does not start; the reason says what to prepare first",
            ("issue",), "pre-issue-start", "pre_issue_start",
        ),
        _event(
            "after_issue_start", "issue", "work on an issue has started",
            "reported to the agent; the issue has started anyway",
            ("issue",), "post-issue-start", "post_issue_start",
        ),
        _event(
            "before_issue_submit", "issue", "an issue is about to be submitted (quality gate)",
            "the submit is refused; the agent fixes what the reason says and submits again",
            ("issue",), "pre-issue-submit", "pre_issue_submit",
        ),
        _event(
            "after_issue_submit", "issue", "an issue has been submitted for review",
            "reported to the agent; the submit stands",
            ("issue",), "post-issue-submit", "post_issue_submit",
        ),
        _event(
            "before_issue_close", "issue", "an issue is about to be closed",
            "the issue stays open; the reason says what is missing",
            ("issue",), "pre-issue-close", "pre_issue_close",
        ),
        _event(
            "after_issue_close", "issue", "an issue has been closed",
            "reported to the agent; the issue is closed anyway",
            ("issue",), "post-issue-close", "post_issue_close",
        ),
        _event(
            "before_model", "model", "the model is about to be called (a reasoning step)",
            "the model is not called; the reason says why",
            ("messages",), "pre-reasoning", "pre_reasoning", "PreReasoning", "before_reasoning",
        ),
        _event(
            "after_model", "model", "the model has answered (the whole response, once streamed)",
            "the response is rejected; the reason says why",
            ("messages", "response"), "post-reasoning", "post_reasoning", "PostReasoning",
            "after_reasoning",
        ),
        _event(
            "reasoning_chunk", "model", "the model streamed a chunk (notification only)",
            "nothing: a notification cannot block; its hooks run beside the stream",
            ("chunk", "accumulated"), "reasoning-chunk", "ReasoningChunk",
        ),
        _event(
            "tool_output_chunk", "react", "a tool streamed a chunk of output (notification only)",
            "nothing: a notification cannot block; its hooks run beside the stream",
            (*TOOL_FIELDS, "chunk"), "tool-output-chunk", "acting_chunk", "ActingChunk",
        ),
        _event(
            "error", "turn", "the agent hit an error (phase: reply, reasoning, acting ...)",
            "reported; the error stands (it is raised to the caller anyway)",
            ("error", "phase"), "Error",
        ),
    )
}

# canonical name -> the trigger name of the current spec (kebab-case, pre-/post-)
SPEC_NAMES: dict[str, str] = {
    "session_start": "pre-session", "session_end": "post-session",
    "before_agent": "pre-agent-turn", "after_agent": "post-agent-turn",
    "before_stop": "pre-agent-turn-stop", "after_stop": "post-agent-turn-stop",
    "before_tool": "pre-tool-call", "after_tool": "post-tool-call",
    "after_tool_failure": "post-tool-call-failure",
    "subagent_start": "pre-subagent", "subagent_stop": "post-subagent",
    "pre_compact": "pre-context-compact", "post_compact": "post-context-compact",
}
# the issue events' names in the seed's hooks.yaml (an extension: not in SPEC_NAMES)
SEED_NAMES: dict[str, str] = {
    "before_issue_start": "pre-issue-start", "after_issue_start": "post-issue-start",
    "before_issue_submit": "pre-issue-submit", "after_issue_submit": "post-issue-submit",
    "before_issue_close": "pre-issue-close", "after_issue_close": "post-issue-close",
}
# the agent-loop events' kebab spellings (an extension: not in SPEC_NAMES)
LOOP_NAMES: dict[str, str] = {
    "before_model": "pre-reasoning", "after_model": "post-reasoning",
    "reasoning_chunk": "reasoning-chunk", "tool_output_chunk": "tool-output-chunk",
    "error": "error",
}
ISSUE_EVENTS: frozenset[str] = frozenset(SEED_NAMES)
ALIASES: dict[str, str] = {alias: e.name for e in EVENTS.values() for alias in e.aliases}
TOOL_EVENTS: frozenset[str] = frozenset(n for n, e in EVENTS.items() if e.is_tool_event)
_SPELLINGS: dict[str, str] = {**{n: n for n in EVENTS}, **ALIASES}


def canonical_event(name: str) -> str:
    """The canonical name of an event given under any accepted spelling.

    Raises:
        UnknownEventError: the name is neither canonical nor an alias.
    """
    try:
        return _SPELLINGS[name]
    except (KeyError, TypeError):
        raise UnknownEventError(str(name), list(EVENTS), _SPELLINGS) from None


def spec_name(name: str) -> str:
    """The current spec's (kebab-case) trigger name of an event given under any spelling.

    Raises:
        UnknownEventError: the name is neither canonical nor an alias.
    """
    name = canonical_event(name)
    return SPEC_NAMES.get(name) or SEED_NAMES.get(name) or LOOP_NAMES[name]


def issue_problem(issue: Any) -> str | None:
    """What is wrong with an issue-lifecycle event's ``issue`` object, or None.

    Every key is optional; unknown keys are left to the hooks. ``checklist`` items are
    ``{"text": string, "done": boolean}``; ``files_changed`` holds paths.
    """
    if not isinstance(issue, dict):
        return "must be a JSON object (id, type, title, status, checklist, files_changed)"
    for key in ("id", "type", "title", "status"):
        if issue.get(key) is not None and not isinstance(issue[key], str):
            return f"{key} must be {ISSUE_FIELDS[key]}"
    checklist = issue.get("checklist")
    if checklist is not None:
        if not isinstance(checklist, list):
            return f"checklist must be {ISSUE_FIELDS['checklist']}"
        for n, item in enumerate(checklist):
            if (not isinstance(item, dict) or not isinstance(item.get("text"), str)
                    or not isinstance(item.get("done", False), bool)):
                return f"checklist[{n}] must be {{\"text\": string, \"done\": boolean}}"
    files = issue.get("files_changed")
    if files is not None and (not isinstance(files, list)
                              or not all(isinstance(f, str) for f in files)):
        return f"files_changed must be {ISSUE_FIELDS['files_changed']}"
    return None


def is_known_event(name: str) -> bool:
    return name in _SPELLINGS


def catalogue() -> list[dict[str, Any]]:
    """The catalogue as JSON-ready data (for ``hooks://events`` and ``mcp-hooks events``)."""
    return [e.as_dict() for e in EVENTS.values()]
