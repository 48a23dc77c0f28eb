"""GitHub Copilot CLI: ``.github/hooks/*.json`` (``~/.copilot/hooks/*.json`` for the user).

Copilot's camelCase events (``preToolUse``, ``agentStop``, ...) send camelCase payloads with
no event name in them (``sessionId``, ``toolName``, ``toolArgs``), so the installed command
passes ``--event``; the VS Code-compatible PascalCase events (``PreToolUse``, ``Stop``, ...)
send snake_case payloads with ``hook_event_name``. Both are accepted. Tools are lowercase
(``bash``, ``view``, ``create``, ``edit``, ...).

Carries over: deny on ``preToolUse`` (``permissionDecision: deny`` + reason; a non-zero exit
blocks too, but the model then reads only "hook exited with code 2", never the reason), a
rewrite (``modifiedArgs``, no permission decision), the stop gate and a blocked prompt
(``decision: block`` + ``reason`` on ``agentStop``/``subagentStop`` and
``userPromptSubmitted``: the prompt is not sent, the reason goes to the user), context
(``additionalContext`` on ``sessionStart``, ``userPromptSubmitted``, ``postToolUse``,
``postToolUseFailure`` and ``subagentStart``; Copilot CLI 1.0.102 appends a tool's to its
result as "Additional guidance from postToolUse hooks"). Measured against the real program
in ``tests/e2e`` (docs/e2e.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from mcp_hooks.hosts.asking import asks_natively, native_ask_reason
from mcp_hooks.hosts.base import (
    HOOK_TIMEOUT_S,
    Call,
    Host,
    Reply,
    json_answer,
)
from mcp_hooks.hosts.replies import denied_by, joined, json_reply
from mcp_hooks.spec.vocabulary import COPILOT_CLI, Vocabulary

if TYPE_CHECKING:
    from mcp_hooks.spec.outcome import Outcome

_PRE_TOOL = frozenset({"preToolUse", "PreToolUse"})
_STOPS = frozenset({"agentStop", "subagentStop", "Stop", "SubagentStop"})
_PROMPT = frozenset({"userPromptSubmitted", "UserPromptSubmit"})
# events whose deny reaches the model as context (they cannot block)
_CONTEXT = frozenset({"postToolUse", "PostToolUse", "postToolUseFailure", "PostToolUseFailure",
                      "subagentStart"})
# events whose top-level additionalContext Copilot CLI 1.0.102 hands to the model (measured:
# session start as a user message, a prompt inside <system_reminder>, a tool's after its result)
_TAKES_CONTEXT = _CONTEXT | _PROMPT | {"sessionStart", "SessionStart"}


class CopilotCli(Host):
    name = "copilot-cli"
    title = "Copilot CLI"
    native_ask = _PRE_TOOL
    config_format = "flat"
    project_config = ".github/hooks/mcp-hooks.json"
    user_config = ("COPILOT_HOME", ".copilot", "hooks/mcp-hooks.json")
    programs = ("copilot",)
    command_keys = ("bash", "powershell")
    gate_event = "preToolUse"
    events: ClassVar[dict[str, str]] = {
        "sessionStart": "session_start",
        "sessionEnd": "session_end",
        "userPromptSubmitted": "before_agent",
        "preToolUse": "before_tool",
        "postToolUse": "after_tool",
        "postToolUseFailure": "after_tool_failure",
        "agentStop": "before_stop",
        "subagentStart": "subagent_start",
        "subagentStop": "subagent_stop",
        "preCompact": "pre_compact",
        # the VS Code-compatible spellings
        "SessionStart": "session_start",
        "SessionEnd": "session_end",
        "UserPromptSubmit": "before_agent",
        "PreToolUse": "before_tool",
        "PostToolUse": "after_tool",
        "PostToolUseFailure": "after_tool_failure",
        "Stop": "before_stop",
        "SubagentStop": "subagent_stop",
        "PreCompact": "pre_compact",
    }
    install_events = ("sessionStart", "sessionEnd", "userPromptSubmitted", "preToolUse",
                      "postToolUse", "postToolUseFailure", "agentStop", "subagentStart",
                      "subagentStop", "preCompact")
    tool_events = frozenset({"preToolUse", "postToolUse", "postToolUseFailure", "PreToolUse",
                             "PostToolUse", "PostToolUseFailure"})
    vocabulary: ClassVar[Vocabulary] = COPILOT_CLI
    session_keys = ("sessionId", "session_id")
    tool_name_keys = ("toolName", "tool_name")
    tool_input_keys = ("toolArgs", "tool_input")
    tool_use_id_keys = ("toolCallId", "tool_use_id")
    output_keys = ("toolResult", "tool_result")
    field_map: ClassVar[dict[str, str]] = {
        "prompt": "prompt",
        "stopReason": "stop_reason",
        "stop_reason": "stop_reason",
        "agentName": "subagent_name",
        "agent_name": "subagent_name",
        "trigger": "trigger",
        "source": "source",
        "reason": "exit_reason",
        "transcriptPath": "transcript_path",
        "transcript_path": "transcript_path",
    }

    def entry(self, event: str, command: str) -> dict[str, Any]:
        return {"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT_S}

    def install_notes(self, scope: str, via: str, server_name: str) -> list[str]:
        if scope != "project":
            return []
        return ["Copilot CLI loads repository hooks in prompt mode (-p) only for a trusted "
                "folder or with GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true."]

    def shell_call(self, command: str, session: str, work: Path) -> dict[str, Any]:
        # camelCase, no event name: the installed command passes --event
        return {"sessionId": session, "cwd": str(work), "toolName": "bash",
                "toolArgs": json.dumps({"command": command})}

    def deny_reason(self, stdout: str, stderr: str, code: int) -> str | None:
        # only permissionDecision carries a reason (an exit code blocks without one)
        data = json_answer(stdout, code)
        if data and data.get("permissionDecision") == "deny":
            return str(data.get("permissionDecisionReason", ""))
        return None

    def host_tool(self, host_event: str, payload: Mapping[str, Any]) -> tuple[str | None, Any]:
        name, args = super().host_tool(host_event, payload)
        if isinstance(args, str):  # toolArgs may arrive as a JSON string
            try:
                args = json.loads(args)
            except ValueError:
                args = {"input": args}
        return name, args

    def universal_block(self, what: str) -> Reply:
        """Copilot CLI's block with a reason: ``permissionDecision`` (an exit code has none)."""
        reason = f"mcp-hooks could not check this call, so it is blocked: {what}"
        return Reply.json({"permissionDecision": "deny", "permissionDecisionReason": reason},
                          stderr=f"mcp-hooks: {reason}\n")

    def _allowed_call(self, call: Call, outcome: Outcome, notes: list[str]) -> dict[str, Any]:
        """An allowed ``preToolUse``: the host's own ask (a hook asked), the rewrite."""
        out: dict[str, Any] = {}
        if outcome.ask is not None and asks_natively(self, call):
            out = {"permissionDecision": "ask",  # Copilot CLI asks the person itself
                   "permissionDecisionReason": native_ask_reason(outcome.ask)}
        rewritten, why = self.host_input(call, outcome)
        if why:
            notes.append(why)
        if rewritten is not None:
            out["modifiedArgs"] = rewritten
        return out

    def reply(self, call: Call, outcome: Outcome) -> Reply:
        event = call.host_event
        out: dict[str, Any] = {}
        notes = list(call.notes)
        contexts = list(outcome.additional_context)
        if outcome.denied:
            reason = outcome.reason or denied_by(outcome)
            if event in _PRE_TOOL:
                out = {"permissionDecision": "deny", "permissionDecisionReason": reason}
            elif event in _STOPS or event in _PROMPT:  # a blocked prompt is never sent
                out = {"decision": "block", "reason": joined([reason, *contexts])}
                contexts = []
            elif event in _CONTEXT:
                contexts.insert(0, reason)
            else:
                notes.append(f"Copilot CLI cannot block {event}; {outcome.blocked_by} said: "
                             f"{reason}")
        elif event in _PRE_TOOL:
            out = self._allowed_call(call, outcome, notes)
        if outcome.modified_output is not None and not outcome.denied:
            notes.append(f"Copilot CLI cannot rewrite the output of {event} from a command "
                         "hook; ignored")
        if contexts:
            if event in _TAKES_CONTEXT:
                out["additionalContext"] = joined(contexts)
            else:
                notes.append(f"Copilot CLI takes no context on {event}: {joined(contexts)}")
        return json_reply(out, outcome, notes)


HOST = CopilotCli()
