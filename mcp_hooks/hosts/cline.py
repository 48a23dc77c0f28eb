"""Cline CLI: one executable per event in a hooks folder (``~/.cline/hooks/<Event>``).

Cline runs every file named after an event (``PreToolUse``, ``TaskComplete``, ...) in
``$CLINE_DIR/hooks`` (default ``~/.cline/hooks``), ``~/Documents/Cline/Hooks`` and a project's
``.clinerules/hooks`` and ``.cline/hooks``, with a JSON payload on stdin whose ``hookName``
says what happened (``tool_call``, ``tool_result``, ``agent_end``, ...). ``install`` writes one
small ``sh`` script per event there, each running ``mcp-hooks bridge cline --event <Event>``.

Cline reads the answer as JSON on stdout and ignores exit codes; it reads it only on
``PreToolUse`` and ``PostToolUse`` (the other events run detached: their answer is not
waited for). What Cline CLI 3.0.65 does with it (read from its code and measured in
``tests/e2e``):

- ``cancel: true`` ends the whole run; the model never reads why;
- ``context`` becomes a user message ``<hook_context source="PreToolUse" ...>`` after the
  tool's result (``PostToolUse`` too);
- ``overrideInput`` replaces the tool's input, as a whole.

So a deny on ``PreToolUse`` is ``overrideInput: null`` (an input no tool of Cline's own accepts:
the tool fails its input check and does not run) with the reason as ``context``: the model
reads it and goes on. Tools that are not Cline's own (MCP tools) might run with such an input,
so they are denied with ``cancel`` (the run ends, the user sees the reason). A rewrite is
``overrideInput``; ``run_commands`` takes a list of commands, which hooks see as one shell
text (``vocabulary.CLINE``). Cline has no stop gate: ``TaskComplete`` is dispatched after the
run has ended and its answer is ignored, so it is our ``after_stop``; a ``before_stop`` hook
does not run on Cline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from mcp_hooks.hosts.base import (
    BridgeInputError,
    Call,
    Host,
    Reply,
    json_answer,
)
from mcp_hooks.hosts.replies import denied_by, joined, json_reply
from mcp_hooks.spec.vocabulary import CLINE, Vocabulary

if TYPE_CHECKING:
    from mcp_hooks.spec.outcome import Outcome

# Cline's payload ``hookName`` -> the event (file) name
HOOK_NAMES: dict[str, str] = {
    "agent_start": "TaskStart",
    "agent_resume": "TaskResume",
    "prompt_submit": "UserPromptSubmit",
    "tool_call": "PreToolUse",
    "tool_result": "PostToolUse",
    "agent_end": "TaskComplete",
    "agent_abort": "TaskCancel",
    "agent_error": "TaskError",
    "session_shutdown": "SessionShutdown",
}
_ANSWERED = frozenset({"PreToolUse", "PostToolUse"})  # the events whose answer Cline reads
# Cline's own tools: their input check refuses ``null``, so a deny can keep the run going
REFUSABLE = frozenset({"run_commands", "read_files", "editor", "apply_patch", "search_codebase",
                       "fetch_web_content", "skills", "ask_question", "spawn_agent",
                       "submit_and_exit"})
_STOP_REASONS = {"TaskComplete": "completed", "TaskCancel": "aborted", "TaskError": "error"}
MARKER = "# mcp-hooks: Cline runs this file on "
_SCRIPT = re.compile(r"^" + re.escape(MARKER) + r"(\w+)\b.*?^exec (.+) \"\$@\"$",
                     re.MULTILINE | re.DOTALL)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _failure(record: dict[str, Any], post: dict[str, Any]) -> Any:
    """Why a tool call failed, or None: the call's ``error``, or (``run_commands``, which
    Cline reports as a success) the first command whose result says ``success: false``."""
    if record.get("error") or post.get("success") is False:
        return record.get("error") or record.get("output")
    output = record.get("output")
    for item in output if isinstance(output, list) else []:
        if isinstance(item, dict) and item.get("success") is False:
            return item.get("error") or item.get("result") or "the command failed"
    return None


class Cline(Host):
    name = "cline"
    title = "Cline"
    # Cline runs its hook files with a fixed limit, none written per hook (Cline's hook docs:
    # 30 s, HOOK_EXECUTION_TIMEOUT_MS)
    hook_timeout_s = 30.0
    config_format = "files"
    project_config = ".clinerules/hooks"
    user_config = ("CLINE_DIR", ".cline", "hooks")
    default_scope = "user"
    programs = ("cline",)
    shell_tool = "run_commands"
    event_key = "hookName"
    events: ClassVar[dict[str, str]] = {
        "TaskStart": "session_start",
        "TaskResume": "session_start",
        "UserPromptSubmit": "before_agent",
        "PreToolUse": "before_tool",
        "PostToolUse": "after_tool",
        "TaskComplete": "after_stop",
        "TaskCancel": "after_stop",
        "TaskError": "after_stop",
        "SessionShutdown": "session_end",
    }
    install_events = tuple(events)
    tool_events = frozenset({"PreToolUse", "PostToolUse"})
    vocabulary: ClassVar[Vocabulary] = CLINE
    session_keys = ("taskId",)
    cwd_keys = ("workspaceRoots",)
    field_map: ClassVar[dict[str, str]] = {"clineVersion": "host_version"}

    # -- in ------------------------------------------------------------------------------

    def event_of(self, payload: Mapping[str, Any], flag: str | None) -> str:
        named = payload.get(self.event_key)
        return super().event_of({self.event_key: HOOK_NAMES.get(str(named), named)}, flag)

    def known_event(self, flag: str | None, payload: Any) -> str | None:
        if isinstance(payload, dict):
            named = payload.get(self.event_key)
            payload = {self.event_key: HOOK_NAMES.get(str(named), named)}
        return super().known_event(flag, payload)

    def host_tool(self, host_event: str, payload: Mapping[str, Any]) -> tuple[str | None, Any]:
        key = {"PreToolUse": "tool_call", "PostToolUse": "tool_result"}.get(host_event)
        if key is None:
            return None, None
        call = payload.get(key)
        if not isinstance(call, dict):
            raise BridgeInputError(f"the {host_event} payload has no {key!r} object")
        return call.get("name"), call.get("input")

    def adjust(self, call: Call) -> None:
        payload, extra = call.payload, call.fields["payload"]
        record = _object(payload.get("tool_call") or payload.get("tool_result"))
        if record.get("id") is not None:
            call.fields["tool_use_id"] = str(record["id"])
        if call.host_event == "PostToolUse":
            error = _failure(record, _object(payload.get("postToolUse")))
            if error is not None:
                call.event = "after_tool_failure"
                call.fields.pop("tool_output", None)
                call.fields["error"] = error
            else:
                call.fields["tool_output"] = record.get("output")
        elif call.host_event == "UserPromptSubmit":
            prompt = _object(payload.get("userPromptSubmit")).get("prompt")
            if isinstance(prompt, str):
                extra["prompt"] = prompt
        elif call.host_event in ("TaskStart", "TaskResume"):
            extra["source"] = "resume" if call.host_event == "TaskResume" else "startup"
        elif call.host_event in _STOP_REASONS:
            extra["stop_reason"] = _STOP_REASONS[call.host_event]
            turn = _object(payload.get("turn"))
            if isinstance(turn.get("outputText"), str):
                extra["final_message"] = turn["outputText"]
            error = _object(payload.get("error")).get("message") or payload.get("reason")
            if isinstance(error, str) and error:
                extra["error"] = error

    # -- out -----------------------------------------------------------------------------

    def reply(self, call: Call, outcome: Outcome) -> Reply:
        event = call.host_event
        out: dict[str, Any] = {}
        notes = list(call.notes)
        contexts = list(outcome.additional_context)
        reason = outcome.reason or denied_by(outcome)
        if event not in _ANSWERED:
            return self._unanswered(event, outcome, notes, contexts, reason)
        if event == "PreToolUse" and outcome.denied:
            return self._refuse(call, outcome, notes, contexts, reason)
        if event == "PreToolUse":
            rewritten, why = self.host_input(call, outcome)
            if why:
                notes.append(why)
            if rewritten is not None:
                out["overrideInput"] = rewritten
        elif outcome.denied:  # after the tool ran: the reason goes beside its result
            contexts.insert(0, reason)
        if outcome.modified_output is not None and not outcome.denied:
            notes.append(f"Cline cannot rewrite the output of {event}; ignored")
        if contexts:
            out["context"] = joined(contexts)
        return json_reply(out, outcome, notes)

    @staticmethod
    def _unanswered(event: str, outcome: Outcome, notes: list[str], contexts: list[str],
                    reason: str) -> Reply:
        """An event Cline does not wait for: nothing to answer, notes on what was lost."""
        if outcome.denied:
            notes.append(f"Cline cannot block {event} (it does not wait for this hook); "
                         f"{outcome.blocked_by} said: {reason}")
        if contexts:
            notes.append(f"Cline takes no context on {event}: {joined(contexts)}")
        return json_reply({}, outcome, notes)

    @staticmethod
    def _refuse(call: Call, outcome: Outcome, notes: list[str], contexts: list[str],
                reason: str) -> Reply:
        """A denied tool call: refused in place when Cline can, else the run is cancelled."""
        tool = call.host_tool_name or "tool"
        if tool in REFUSABLE:
            out = {"overrideInput": None, "context": joined(
                [f"mcp-hooks refused this {tool} call, so it did not run: {reason}",
                 *contexts])}
            return json_reply(out, outcome, notes)
        what = (f"{tool} (Cline can only for its own tools)" if call.host_tool_name
                else "a call it could not read")
        notes.append(f"Cline cannot refuse {what} and carry on, so the run is cancelled; "
                     "the model does not see the reason")
        return json_reply({"cancel": True, "errorMessage": reason}, outcome, notes)

    def fault_call(self, host_event: str, event: str, payload: Any) -> Call:
        call = Call(host_event, event, {})
        record = _object(_object(payload).get("tool_call"))
        if isinstance(record.get("name"), str):
            call.host_tool_name = record["name"]  # a deny that keeps the run going
        return call

    def universal_block(self, what: str) -> Reply:
        """Cline ignores exit codes: the block that needs no event is ``cancel`` (the run
        ends; the user sees the reason)."""
        reason = f"mcp-hooks could not check this call, so it is blocked: {what}"
        return Reply.json({"cancel": True, "errorMessage": reason},
                          stderr=f"mcp-hooks: {reason}\n")

    # -- install and doctor ----------------------------------------------------------------

    def config_text(self, commands: Mapping[str, str]) -> str:
        (event, command), = commands.items()
        return (f"#!/bin/sh\n{MARKER}{event}; written by `mcp-hooks install cline`,\n"
                "# removed by `mcp-hooks uninstall cline`. It hands the hook call to the "
                "mcp-hooks bridge.\n"
                f'exec {command} "$@"\n')

    def config_commands(self, text: str) -> dict[str, str] | None:
        found = _SCRIPT.search(text)
        return {found.group(1): found.group(2)} if found else None

    def install_notes(self, scope: str, via: str, server_name: str) -> list[str]:
        return ["Cline has no stop gate: its TaskComplete runs after the task has ended, so "
                "before_stop hooks do not run there (after_stop ones do). A deny of one of "
                "Cline's own tools lets the model read the reason and go on; a deny of any "
                "other tool (an MCP tool) cancels the run."]

    def shell_call(self, command: str, session: str, work: Path) -> dict[str, Any]:
        return {"clineVersion": "", "hookName": "tool_call", "taskId": session,
                "workspaceRoots": [str(work)], "iteration": 1,
                "tool_call": {"id": session, "name": self.shell_tool,
                              "input": {"commands": [command]}},
                "preToolUse": {"toolName": self.shell_tool,
                               "parameters": {"commands": json.dumps([command])}}}

    def deny_reason(self, stdout: str, stderr: str, code: int) -> str | None:
        data = json_answer(stdout, 0)  # Cline reads stdout whatever the exit code
        if not data:
            return None
        if data.get("cancel") is True:
            return str(data.get("errorMessage", ""))
        if "overrideInput" in data and data["overrideInput"] is None:
            return str(data.get("context", ""))
        return None


HOST = Cline()
