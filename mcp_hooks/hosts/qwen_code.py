"""Qwen Code: Claude Code's hook format in ``.qwen/settings.json`` (``~/.qwen/settings.json``).

Qwen's events, payloads and answers follow Claude Code's; its tools are its own
(``run_shell_command`` with ``directory``, ``read_file``/``write_file``/``edit`` with
``file_path``, ``glob``, ``grep_search``, ``agent``: ``vocabulary.QWEN_CODE``). What Qwen Code
0.24.4 does with an answer (read from its code and measured in ``tests/e2e``):

- ``PreToolUse``: a deny (``permissionDecision: deny``) holds and the model reads the reason
  as the tool's result. ``updatedInput`` and ``additionalContext`` are not read there, so a
  rewrite cannot be applied: it is refused like any rewrite a host cannot carry (a deny saying
  so, or a warning under ``--on-fault warn``), never dropped while the original runs;
- ``UserPromptSubmit`` fires before every model call, continuations after a tool result
  included (their ``prompt`` is empty): a non-empty prompt is our ``before_agent``, an empty
  one ``before_model``. Both block (``decision: block``) and take ``additionalContext``;
- ``PostToolUse``: its ``tool_response`` is ``{llmContent, returnDisplay}`` (the output is
  ``llmContent``); ``additionalContext`` is appended to the result, a ``decision: block`` is
  not read, so a deny there reaches the model as context beside the result;
- ``Stop`` / ``SubagentStop``: ``decision: block`` + ``reason`` sends the reason as the next
  user turn; ``stop_hook_active`` is passed to our loop guard, and Qwen has its own cap of 8
  consecutive blocks (``stopHookBlockingCap``, ``QWEN_CODE_STOP_HOOK_BLOCK_CAP``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from mcp_hooks.hosts.base import CLAUDE_EVENTS, Call
from mcp_hooks.hosts.claude_code import ClaudeShaped
from mcp_hooks.spec.vocabulary import QWEN_CODE, Vocabulary

if TYPE_CHECKING:
    from mcp_hooks.spec.outcome import Outcome

NO_REWRITE = ("Qwen Code does not apply a PreToolUse hook's updatedInput (0.24.4), so the "
              "rewrite by a hook cannot be carried out")


class QwenCode(ClaudeShaped):
    name = "qwen-code"
    title = "Qwen Code"
    project_config = ".qwen/settings.json"
    user_config = (None, ".qwen", "settings.json")
    programs = ("qwen",)
    native_ask = frozenset({"PreToolUse"})  # headless: read as a deny with the reason
    no_ask_modes = frozenset()  # yolo too: its ask is a deny there (run, docs/ask.md)
    shell_tool = "run_shell_command"
    events: ClassVar[dict[str, str]] = dict(CLAUDE_EVENTS)
    install_events = tuple(events)
    tool_events = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
    vocabulary: ClassVar[Vocabulary] = QWEN_CODE
    project_env = ("QWEN_PROJECT_DIR", "CLAUDE_PROJECT_DIR")
    tool_use_id_keys = ("tool_use_id", "tool_call_id")
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
    decision_events = frozenset({"Stop", "SubagentStop", "UserPromptSubmit"})
    context_events = frozenset({"SessionStart", "UserPromptSubmit", "PostToolUse",
                                "PostToolUseFailure", "SubagentStart"})
    output_rewrite = False

    def adjust(self, call: Call) -> None:
        if call.host_event == "UserPromptSubmit":
            prompt = call.payload.get("prompt")
            if not (isinstance(prompt, str) and prompt.strip()):
                call.event = "before_model"  # a continuation: Qwen is about to call the model
        elif call.host_event == "PostToolUse":
            response = call.payload.get("tool_response")
            if isinstance(response, dict) and "llmContent" in response:
                call.fields["tool_output"] = response["llmContent"]

    def host_input(self, call: Call, outcome: Outcome) -> tuple[dict[str, Any] | None,
                                                                  str | None]:
        if outcome.modified_input is None:
            return None, None
        return None, f"the rewrite by a hook was not applied: {NO_REWRITE}"


HOST = QwenCode()
