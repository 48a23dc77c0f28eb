"""Claude Code: ``hooks`` in ``.claude/settings.json``; JSON on stdin, JSON on stdout.

Carries over: a deny (``permissionDecision: deny`` on PreToolUse, ``decision: block`` where
the event has it), a hook's ask (``permissionDecision: ask`` with the hook's reason: Claude
Code asks the person; not in ``bypassPermissions`` mode, where it would not), a rewrite
(``updatedInput``, with no permission decision so Claude Code's own permission prompt still
happens), context (``additionalContext``), a rewritten tool
output (``updatedToolOutput``), the stop gate (``decision: block`` + ``reason`` on Stop and
SubagentStop; ``stop_hook_active`` is passed to our loop guard). Warnings go to
``systemMessage`` (the user sees them) and stderr.

Besides command hooks, ``install`` can write Claude Code's own hook types (``native_vias``):
``http`` (a POST to our server, ``http_entry``) and ``mcp_tool`` (our server's
``bridge_hook`` tool, ``mcp_tool_entry``; the hook input passed field by field).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from mcp_hooks.hosts.asking import asks_natively, native_ask_reason
from mcp_hooks.hosts.base import (
    CLAUDE_EVENTS,
    HOOK_TIMEOUT_S,
    Call,
    Host,
    Reply,
)
from mcp_hooks.hosts.replies import denied_by, joined, json_reply
from mcp_hooks.spec.vocabulary import CLAUDE_CODE, Vocabulary

if TYPE_CHECKING:
    from mcp_hooks.spec.outcome import Outcome


class ClaudeShaped(Host):
    """Claude Code's output contract, which Codex follows too (with its own differences)."""

    # events whose block form is top-level decision: block + reason
    decision_events: ClassVar[frozenset[str]] = frozenset()
    # events that carry hookSpecificOutput.additionalContext to the model
    context_events: ClassVar[frozenset[str]] = frozenset()
    stop_events: ClassVar[frozenset[str]] = frozenset({"Stop", "SubagentStop"})
    rewrite_decision: ClassVar[str | None] = None  # permissionDecision sent with updatedInput
    output_rewrite: ClassVar[bool] = True

    def reply(self, call: Call, outcome: Outcome) -> Reply:
        event = call.host_event
        out: dict[str, Any] = {}
        specific: dict[str, Any] = {"hookEventName": event}
        notes = list(call.notes)
        contexts = list(outcome.additional_context)
        if outcome.denied:
            contexts = self._deny(event, outcome, out, specific, notes, contexts)
        else:
            self._allow(call, outcome, specific, notes)
        if contexts:
            self._pass_context(event, specific, notes, contexts)
        if len(specific) > 1:
            out["hookSpecificOutput"] = specific
        return json_reply(out, outcome, notes, system_message=True)

    def _deny(self, event: str, outcome: Outcome, out: dict[str, Any],
              specific: dict[str, Any], notes: list[str], contexts: list[str]) -> list[str]:
        """A block as ``event`` can carry it; the contexts still to pass on."""
        reason = outcome.reason or denied_by(outcome)
        if event == "PreToolUse":
            specific["permissionDecision"] = "deny"
            specific["permissionDecisionReason"] = reason
        elif event in self.decision_events:
            out["decision"] = "block"
            out["reason"] = joined([reason, *contexts]) if event in self.stop_events else reason
            if event in self.stop_events:
                return []
        elif event in self.context_events:
            return [reason, *contexts]  # the model reads the reason beside the result
        else:
            notes.append(f"{self.title} cannot block {event}; {outcome.blocked_by} said: "
                         f"{reason}")
        return contexts

    def _allow(self, call: Call, outcome: Outcome, specific: dict[str, Any],
               notes: list[str]) -> None:
        """An allow: a native ask, a rewritten input or output, where ``event`` takes them."""
        event = call.host_event
        if event == "PreToolUse" and outcome.ask is not None and asks_natively(self, call):
            specific["permissionDecision"] = "ask"  # the host asks the person itself
            specific["permissionDecisionReason"] = native_ask_reason(outcome.ask)
        if event == "PreToolUse":
            rewritten, why = self.host_input(call, outcome)
            if why:
                notes.append(why)
            if rewritten is not None:
                specific["updatedInput"] = rewritten
                if self.rewrite_decision and "permissionDecision" not in specific:
                    specific["permissionDecision"] = self.rewrite_decision
        elif outcome.modified_output is not None:
            if event == "PostToolUse" and self.output_rewrite:
                specific["updatedToolOutput"] = outcome.modified_output
            else:
                notes.append(f"{self.title} cannot rewrite the output of {event}; ignored")

    def _pass_context(self, event: str, specific: dict[str, Any], notes: list[str],
                      contexts: list[str]) -> None:
        """The hooks' context for the model, or a note saying why ``event`` cannot take it."""
        if event in self.context_events:
            specific["additionalContext"] = joined(contexts)
        elif event in self.stop_events:
            # additionalContext on a stop keeps the agent working: only a block may do that
            notes.append("context from a stop hook that allowed the stop is not passed on "
                         f"(on {event} it would keep the agent working): {joined(contexts)}")
        else:
            notes.append(f"{self.title} takes no context on {event}: {joined(contexts)}")


class ClaudeCode(ClaudeShaped):
    name = "claude-code"
    title = "Claude Code"
    project_config = ".claude/settings.json"
    user_config = ("CLAUDE_CONFIG_DIR", ".claude", "settings.json")
    programs = ("claude",)
    native_vias = frozenset({"http", "mcp"})
    native_ask = frozenset({"PreToolUse"})
    prompt_events: ClassVar[dict[str, str]] = {"PermissionRequest": "PreToolUse"}
    events: ClassVar[dict[str, str]] = dict(CLAUDE_EVENTS)
    install_events = (*events, *prompt_events)
    tool_events = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
    vocabulary: ClassVar[Vocabulary] = CLAUDE_CODE
    project_env = ("CLAUDE_PROJECT_DIR",)
    field_map: ClassVar[dict[str, str]] = {
        "prompt": "prompt",
        "last_assistant_message": "final_message",
        "agent_type": "subagent_type",
        "agent_id": "subagent_name",
        "trigger": "trigger",
        "custom_instructions": "custom_instructions",
        "source": "source",
        "reason": "exit_reason",
        "model": "model",
        "permission_mode": "permission_mode",
        "transcript_path": "transcript_path",
    }
    decision_events = frozenset(
        {"PostToolUse", "Stop", "SubagentStop", "UserPromptSubmit", "PreCompact"}
    )
    context_events = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                                "PostToolUseFailure", "SubagentStart"})
    # None: Claude Code's permission flow decides. "allow" would approve the call silently.
    rewrite_decision = None

    def http_entry(self, event: str, url: str) -> dict[str, Any]:
        """A native ``type: http`` hook POSTing the hook input to ``url`` (our server)."""
        return {"type": "http", "url": f"{url}?event={event}", "timeout": HOOK_TIMEOUT_S,
                "headers": {"Authorization": "Bearer $MCP_HOOKS_TOKEN"},
                "allowedEnvVars": ["MCP_HOOKS_TOKEN"]}

    def mcp_tool_entry(self, event: str, server: str, tool: str) -> dict[str, Any]:
        """A native ``type: mcp_tool`` hook calling ``tool`` of the MCP server ``server``."""
        return {"type": "mcp_tool", "server": server, "tool": tool,
                "input": mcp_tool_input(event), "timeout": HOOK_TIMEOUT_S}

    def install_notes(self, scope: str, via: str, server_name: str) -> list[str]:
        if via == "http":
            return ["Claude Code sends the token from $MCP_HOOKS_TOKEN: export it where "
                    "Claude Code runs. If the server is down, Claude Code carries on without "
                    "the hooks."]
        if via == "mcp":
            return ["Add the server to Claude Code as an MCP server named "
                    f"{server_name!r}, started with --bridge-tool (claude mcp add mcp-hooks "
                    "-- mcp-hooks serve --bridge-tool). Until it is connected, these "
                    "(non-blocking) hooks do not run."]
        return []


LEAF_KEYS = ("command", "description", "file_path", "content", "old_string", "new_string",
             "path", "pattern", "url", "query", "prompt")


def mcp_tool_input(event: str) -> dict[str, str]:
    """The ``input`` of a Claude Code ``mcp_tool`` hook: the hook JSON, field by field.

    Claude Code substitutes ``${path}`` in string values from its hook input. Whether an
    object (``${tool_input}``) arrives as JSON text is not documented, so the common input
    keys are passed as leaves too and the tool rebuilds ``tool_input`` from them if needed.
    """
    fields = {
        "host": "claude-code",
        "hook_event_name": event,
        "session_id": "${session_id}",
        "cwd": "${cwd}",
    }
    if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        fields.update({"tool_name": "${tool_name}", "tool_input": "${tool_input}",
                       "tool_use_id": "${tool_use_id}"})
        for key in LEAF_KEYS:
            fields[f"input_{key}"] = "${tool_input." + key + "}"
    if event == "PostToolUse":
        fields["tool_response"] = "${tool_response}"
    if event == "PostToolUseFailure":
        fields["error"] = "${error}"
    if event in ("Stop", "SubagentStop"):
        fields.update({"stop_hook_active": "${stop_hook_active}",
                       "last_assistant_message": "${last_assistant_message}"})
    if event == "UserPromptSubmit":
        fields["prompt"] = "${prompt}"
    return fields


HOST = ClaudeCode()
