"""Gemini CLI: ``hooks`` in ``.gemini/settings.json``; stdout must be pure JSON.

Events: ``BeforeTool``/``AfterTool`` (an ``AfterTool`` whose ``tool_response`` carries an
``error`` becomes ``after_tool_failure``), ``BeforeAgent`` -> ``before_agent``,
``AfterAgent`` -> ``before_stop`` (a deny makes Gemini retry with the reason as the prompt;
``stop_hook_active`` is set on the retry), session start/end, ``PreCompress``.

Carries over: deny (``decision: deny`` + ``reason``), a rewrite
(``hookSpecificOutput.tool_input``, merged by Gemini over the arguments), context
(``hookSpecificOutput.additionalContext`` on AfterTool, BeforeAgent, SessionStart),
warnings (``systemMessage``). MCP tools are named ``mcp__<server>__<tool>`` from the
``mcp_context`` Gemini sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from mcp_hooks.hosts.base import (
    HOOK_TIMEOUT_S,
    Call,
    Host,
    Reply,
    json_answer,
)
from mcp_hooks.hosts.replies import denied_by, joined, json_reply
from mcp_hooks.spec.vocabulary import GEMINI_CLI, Vocabulary

if TYPE_CHECKING:
    from mcp_hooks.spec.outcome import Outcome

_BLOCKS = frozenset({"BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent"})
_CONTEXT = frozenset({"AfterTool", "BeforeAgent", "SessionStart"})


class GeminiCli(Host):
    name = "gemini-cli"
    title = "Gemini CLI"
    project_config = ".gemini/settings.json"
    user_config = ("GEMINI_CLI_HOME", "", ".gemini/settings.json")
    programs = ("gemini",)
    gate_event = "BeforeTool"
    shell_tool = "run_shell_command"
    events: ClassVar[dict[str, str]] = {
        "SessionStart": "session_start",
        "SessionEnd": "session_end",
        "BeforeAgent": "before_agent",
        "AfterAgent": "before_stop",
        "BeforeTool": "before_tool",
        "AfterTool": "after_tool",
        "PreCompress": "pre_compact",
    }
    install_events = tuple(events)
    tool_events = frozenset({"BeforeTool", "AfterTool"})
    vocabulary: ClassVar[Vocabulary] = GEMINI_CLI
    project_env = ("GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR")
    field_map: ClassVar[dict[str, str]] = {
        "prompt": "prompt",
        "prompt_response": "final_message",
        "trigger": "trigger",
        "source": "source",
        "reason": "exit_reason",
        "transcript_path": "transcript_path",
    }

    def entry(self, event: str, command: str) -> dict[str, Any]:
        # Gemini reads the timeout in milliseconds
        return {"name": "mcp-hooks", "type": "command", "command": command,
                "timeout": HOOK_TIMEOUT_S * 1000}

    def deny_reason(self, stdout: str, stderr: str, code: int) -> str | None:
        if code == 2:
            return stderr.strip()
        data = json_answer(stdout, code)
        if data and data.get("decision") in ("deny", "block"):
            return str(data.get("reason", ""))
        return None

    def canonical_tool(
        self, tool_name: str, tool_input: dict[str, Any], payload: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        mcp = payload.get("mcp_context")
        if isinstance(mcp, dict) and isinstance(mcp.get("server_name"), str) \
                and isinstance(mcp.get("tool_name"), str):
            return f"mcp__{mcp['server_name']}__{mcp['tool_name']}", dict(tool_input)
        return self.vocabulary.canonical(tool_name, tool_input)

    def adjust(self, call: Call) -> None:
        response = call.payload.get("tool_response")
        if call.host_event == "AfterTool" and isinstance(response, dict) and response.get("error"):
            call.event = "after_tool_failure"
            call.fields.pop("tool_output", None)
            call.fields["error"] = response["error"]

    def reply(self, call: Call, outcome: Outcome) -> Reply:
        event = call.host_event
        out: dict[str, Any] = {}
        specific: dict[str, Any] = {"hookEventName": event}
        notes = list(call.notes)
        contexts = list(outcome.additional_context)
        if outcome.denied:
            reason = outcome.reason or denied_by(outcome)
            if event in _BLOCKS:
                out["decision"] = "deny"
                out["reason"] = joined([reason, *contexts]) if event == "AfterAgent" else reason
                if event == "AfterAgent":
                    contexts = []
            else:
                notes.append(f"Gemini CLI cannot block {event}; {outcome.blocked_by} said: "
                             f"{reason}")
        elif event == "BeforeTool":
            rewritten, why = self.host_input(call, outcome)
            if why:
                notes.append(why)
            if rewritten is not None:
                specific["tool_input"] = rewritten
        if outcome.modified_output is not None and not outcome.denied:
            notes.append(f"Gemini CLI cannot rewrite the output of {event}; ignored")
        if contexts:
            if event in _CONTEXT:
                specific["additionalContext"] = joined(contexts)
            else:
                notes.append(f"Gemini CLI takes no context on {event}: {joined(contexts)}")
        if len(specific) > 1:
            out["hookSpecificOutput"] = specific
        return json_reply(out, outcome, notes, system_message=True)


HOST = GeminiCli()
