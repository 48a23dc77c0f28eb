"""Kimi CLI: ``[[hooks]]`` tables in ``config.toml`` (``$KIMI_SHARE_DIR``, default ``~/.kimi``).

Kimi's events and payloads follow Claude Code's names; its tools are canonical already
(``Shell``, ``ReadFile``, ``WriteFile``, ...; ``StrReplaceFile`` becomes ``EditFile``) and
the tool call id is ``tool_call_id``.

Carries over: a deny on ``PreToolUse``, ``UserPromptSubmit`` and ``Stop``
(``hookSpecificOutput.permissionDecision: deny`` + reason; on ``Stop`` the reason is sent as
the next user turn, at most once per turn: Kimi's own guard). Not carried: rewrites (Kimi has
none: a warning on stderr instead), blocks of ``PostToolUse`` (run after the fact, fire and
forget). Context is printed as plain text on stdout, which Kimi's documentation says is added
to the context (Kimi 1.49-1.51 does not read it yet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from mcp_hooks.hosts.base import (
    CLAUDE_EVENTS,
    HOOK_TIMEOUT_S,
    Call,
    Host,
    Reply,
)
from mcp_hooks.hosts.replies import denied_by, joined, json_reply, warning_text
from mcp_hooks.spec.vocabulary import KIMI_CLI, Vocabulary

if TYPE_CHECKING:
    from mcp_hooks.spec.outcome import Outcome

_BLOCKS = frozenset({"PreToolUse", "UserPromptSubmit", "Stop"})


class KimiCli(Host):
    name = "kimi-cli"
    title = "Kimi CLI"
    config_format = "toml"
    user_config = ("KIMI_SHARE_DIR", ".kimi", "config.toml")  # Kimi has no project config
    programs = ("kimi",)
    default_scope = "user"
    shell_tool = "Shell"
    events: ClassVar[dict[str, str]] = dict(CLAUDE_EVENTS)
    install_events = ("SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse",
                      "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStart",
                      "SubagentStop", "PreCompact", "PostCompact")
    tool_events = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
    vocabulary: ClassVar[Vocabulary] = KIMI_CLI
    tool_use_id_keys = ("tool_call_id", "tool_use_id")
    output_keys = ("tool_output",)
    field_map: ClassVar[dict[str, str]] = {
        "prompt": "prompt",
        "agent_name": "subagent_name",
        "response": "result",
        "trigger": "trigger",
        "token_count": "token_count",
        "source": "source",
        "reason": "exit_reason",
    }

    def entry(self, event: str, command: str) -> dict[str, Any]:
        return {"event": event, "command": command, "timeout": HOOK_TIMEOUT_S}

    def reply(self, call: Call, outcome: Outcome) -> Reply:
        event = call.host_event
        notes = list(call.notes)
        contexts = list(outcome.additional_context)
        if outcome.modified_input is not None:
            notes.append("Kimi CLI cannot rewrite a tool's input; the rewrite by a hook was "
                         "not applied")
        if outcome.modified_output is not None:
            notes.append(f"Kimi CLI cannot rewrite the output of {event}; ignored")
        if outcome.denied:
            reason = outcome.reason or denied_by(outcome)
            if event in _BLOCKS:
                decision = {"hookSpecificOutput": {
                    "hookEventName": event,
                    "permissionDecision": "deny",
                    "permissionDecisionReason": joined([reason, *contexts]),
                }}
                return json_reply(decision, outcome, notes)
            notes.append(f"Kimi CLI cannot block {event}; {outcome.blocked_by} said: {reason}")
        warnings = warning_text(outcome, notes)
        return Reply(joined(contexts), warnings + "\n" if warnings else "", 0)


HOST = KimiCli()
