"""Cursor: ``.cursor/hooks.json`` (``{"version": 1, "hooks": {event: [{command}]}}``).

Cursor's answers are flat snake_case JSON. Its granular events name no tool, so the bridge
gives them one: ``beforeShellExecution``/``afterShellExecution`` -> ``Shell``,
``beforeReadFile`` -> ``ReadFile``, ``afterFileEdit`` -> ``EditFile``; the MCP events carry
the tool's name and its input as a JSON string, which is parsed. The generic
``preToolUse``/``postToolUse`` events (newer Cursor) carry ``tool_name``/``tool_input``.

Carries over: deny (``permission: deny`` with ``agent_message`` for the model and
``user_message`` for the user; ``continue: false`` on ``beforeSubmitPrompt``), a rewrite
(``updated_input``, on ``preToolUse`` only), context (``additional_context`` on
``sessionStart`` and ``postToolUse``), the stop gate (``followup_message`` on ``stop``;
``loop_count`` becomes our ``stop_block_count``). A plain allow is ``{}``: no permission is
granted, Cursor's own approval flow decides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from mcp_hooks.hosts.base import (
    HOOK_TIMEOUT_S,
    Call,
    Host,
    Reply,
    json_answer,
)
from mcp_hooks.hosts.replies import denied_by, joined, json_reply
from mcp_hooks.spec.vocabulary import CURSOR, CURSOR_EVENT_TOOLS, ToolMap, Vocabulary

if TYPE_CHECKING:
    from mcp_hooks.spec.outcome import Outcome

_PERMISSION = frozenset({"preToolUse", "beforeShellExecution", "beforeMCPExecution",
                         "beforeReadFile", "subagentStart"})
_CONTEXT = frozenset({"sessionStart", "postToolUse"})


class Cursor(Host):
    name = "cursor"
    title = "Cursor"
    config_format = "flat"
    project_config = ".cursor/hooks.json"
    user_config = (None, ".cursor", "hooks.json")
    programs = ("cursor-agent", "cursor")
    gate_event = "beforeShellExecution"
    events: ClassVar[dict[str, str]] = {
        "sessionStart": "session_start",
        "sessionEnd": "session_end",
        "beforeSubmitPrompt": "before_agent",
        "afterAgentResponse": "after_agent",
        "preToolUse": "before_tool",
        "postToolUse": "after_tool",
        "postToolUseFailure": "after_tool_failure",
        "beforeShellExecution": "before_tool",
        "afterShellExecution": "after_tool",
        "beforeMCPExecution": "before_tool",
        "afterMCPExecution": "after_tool",
        "beforeReadFile": "before_tool",
        "afterFileEdit": "after_tool",
        "stop": "before_stop",
        "subagentStart": "subagent_start",
        "subagentStop": "subagent_stop",
        "preCompact": "pre_compact",
    }
    # The documented (v1.7) events plus the session ones; the generic preToolUse/postToolUse
    # would run the bridge twice for a shell command, so they are not installed by default.
    install_events = ("sessionStart", "sessionEnd", "beforeSubmitPrompt", "beforeShellExecution",
                      "afterShellExecution", "beforeMCPExecution", "afterMCPExecution",
                      "beforeReadFile", "afterFileEdit", "stop")
    tool_events = frozenset({"preToolUse", "postToolUse", "postToolUseFailure",
                             "beforeShellExecution", "afterShellExecution",
                             "beforeMCPExecution", "afterMCPExecution", "beforeReadFile",
                             "afterFileEdit"})
    vocabulary: ClassVar[Vocabulary] = CURSOR
    session_keys = ("conversation_id", "session_id")
    cwd_keys = ("workspace_roots", "cwd")
    project_env = ("CURSOR_PROJECT_DIR", "CLAUDE_PROJECT_DIR")
    tool_use_id_keys = ("tool_use_id", "generation_id")
    output_keys = ("output", "result_json", "tool_output", "tool_response")
    error_keys = ("error", "error_message")
    field_map: ClassVar[dict[str, str]] = {
        "prompt": "prompt",
        "text": "response",
        "status": "stop_reason",
        "model": "model",
        "subagent_type": "subagent_type",
        "trigger": "trigger",
    }

    def entry(self, event: str, command: str) -> dict[str, Any]:
        return {"command": command, "timeout": HOOK_TIMEOUT_S}

    def shell_call(self, command: str, session: str, work: Path) -> dict[str, Any]:
        return {"hook_event_name": self.gate_event, "conversation_id": session,
                "generation_id": session, "workspace_roots": [str(work)], "cwd": str(work),
                "command": command}

    def deny_reason(self, stdout: str, stderr: str, code: int) -> str | None:
        if code == 2:
            return stderr.strip()
        data = json_answer(stdout, code)
        if data and data.get("permission") == "deny":
            return str(data.get("agent_message", ""))
        return None

    def host_tool(self, host_event: str, payload: Mapping[str, Any]) -> tuple[str | None, Any]:
        fixed = CURSOR_EVENT_TOOLS.get(host_event)
        if fixed is not None:
            if host_event == "afterFileEdit":
                return fixed.host_name, {k: payload[k] for k in ("file_path", "edits")
                                         if k in payload}
            if host_event == "beforeReadFile":
                return fixed.host_name, {k: payload[k] for k in ("file_path", "content")
                                         if k in payload}
            return fixed.host_name, {k: payload[k] for k in ("command", "cwd") if k in payload}
        name, data = super().host_tool(host_event, payload)
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError:
                data = {"input": data}
        return name, data

    def tool_map(self, host_event: str, tool_name: str) -> ToolMap | None:
        return CURSOR_EVENT_TOOLS.get(host_event) or self.vocabulary.get(tool_name)

    def canonical_tool(
        self, tool_name: str, tool_input: dict[str, Any], payload: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        fixed = CURSOR_EVENT_TOOLS.get(str(payload.get("hook_event_name", "")))
        if fixed is not None:
            return fixed.canonical, fixed.to_canonical(tool_input)
        return self.vocabulary.canonical(tool_name, tool_input)

    def stop_fields(self, payload: Mapping[str, Any], extra: dict[str, Any]) -> None:
        count = payload.get("loop_count")
        if isinstance(count, int) and not isinstance(count, bool):
            extra["stop_block_count"] = count
            extra["stop_hook_active"] = count > 0

    def translate(self, host_event: str, payload: dict[str, Any]) -> Call:
        # the event may come from --event only; canonical_tool reads it from the payload
        return super().translate(host_event, {**payload, "hook_event_name": host_event})

    def reply(self, call: Call, outcome: Outcome) -> Reply:
        event = call.host_event
        out: dict[str, Any] = {}
        notes = list(call.notes)
        contexts = list(outcome.additional_context)
        if outcome.denied:
            reason = outcome.reason or denied_by(outcome)
            if event in _PERMISSION:
                out = {"permission": "deny", "agent_message": reason,
                       "user_message": f"{denied_by(outcome)}: {reason}"}
            elif event == "beforeSubmitPrompt":
                out = {"continue": False, "user_message": reason}
            elif event == "stop":
                out = {"followup_message": joined([reason, *contexts])}
                contexts = []
            else:
                notes.append(f"Cursor cannot block {event}; {outcome.blocked_by} said: {reason}")
        elif event == "preToolUse":
            rewritten, why = self.host_input(call, outcome)
            if why:
                notes.append(why)
            if rewritten is not None:
                out["updated_input"] = rewritten
        elif outcome.modified_input is not None:
            notes.append(f"Cursor cannot rewrite the input on {event} (only on preToolUse); "
                         "the rewrite by a hook was not applied")
        if outcome.modified_output is not None and not outcome.denied:
            notes.append(f"Cursor cannot rewrite the output of {event}; ignored")
        if contexts:
            if event in _CONTEXT:
                out["additional_context"] = joined(contexts)
            else:
                notes.append(f"Cursor takes no context on {event}: {joined(contexts)}")
        return json_reply(out, outcome, notes)


HOST = Cursor()
