"""Codex CLI: Claude-shaped ``hooks.json`` beside ``config.toml`` in ``$CODEX_HOME``.

Codex normalises its shell tools to ``Bash`` with ``{command}`` and passes ``apply_patch``
with the patch in ``command``. Differences from Claude Code that the reply honours:

- a rewrite is ``updatedInput`` *with* ``permissionDecision: allow``: Codex rejects
  ``updatedInput`` without it, and rejects ``allow`` without ``updatedInput``, so ``allow``
  carries the rewrite and approves nothing on its own; a plain allow stays empty;
- a block needs a non-empty reason (we always give one);
- ``Stop`` has no block cap in Codex: our loop guard is the only one (``stop_hook_active``
  is passed to it, and the bridge keeps the count per session between runs).
"""

from __future__ import annotations

from typing import ClassVar

from mcp_hooks.hosts.base import CLAUDE_EVENTS
from mcp_hooks.hosts.claude_code import ClaudeShaped
from mcp_hooks.spec.vocabulary import CODEX, Vocabulary


class Codex(ClaudeShaped):
    name = "codex"
    title = "Codex"
    project_config = ".codex/hooks.json"
    user_config = ("CODEX_HOME", ".codex", "hooks.json")
    programs = ("codex",)
    # Claude's names, less the events Codex does not have
    events: ClassVar[dict[str, str]] = {
        k: v for k, v in CLAUDE_EVENTS.items() if k not in ("SessionEnd", "PostToolUseFailure")
    }
    install_events = tuple(events)
    tool_events = frozenset({"PreToolUse", "PostToolUse"})
    vocabulary: ClassVar[Vocabulary] = CODEX
    field_map: ClassVar[dict[str, str]] = {
        "prompt": "prompt",
        "last_assistant_message": "final_message",
        "agent_type": "subagent_type",
        "agent_id": "subagent_name",
        "trigger": "trigger",
        "source": "source",
        "model": "model",
        "turn_id": "turn_id",
        "permission_mode": "permission_mode",
        "transcript_path": "transcript_path",
    }
    decision_events = frozenset({"PostToolUse", "Stop", "SubagentStop", "UserPromptSubmit"})
    context_events = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                                "SubagentStart"})
    rewrite_decision = "allow"

    def install_notes(self, scope: str, via: str, server_name: str) -> list[str]:
        return ["Codex runs hooks only once you trust them: review them with /hooks in Codex "
                "(or pass --dangerously-bypass-hook-trust); project hooks also need the "
                "project trusted."]


HOST = Codex()
