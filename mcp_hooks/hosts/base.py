"""What every host bridge has in common: the translated call, the reply, the host interface.

A host module maps three things at run time:

1. the host's event name -> our canonical event (``Host.events``; ``prompts.py``);
2. the host's payload -> the fields of an engine ``Event`` (``Host.translate``), the tool
   renamed into the shared vocabulary and the host's own view kept under ``host``;
3. our ``Outcome`` -> the host's stdout JSON, stderr and exit code (``Host.reply``);

and declares what ``install`` and ``doctor`` need to know of it, so that neither switches on
a host's name: its config file per scope and that file's format (``config_path``,
``config_format``), the handler written there (``entry``) and how ours is told apart
(``command_keys``), its install notes, and the shell tool call ``doctor`` probes it with
(``gate_event``, ``shell_call``, ``deny_reason``).

Signals (``signals.py``) reach a host through the forms it has, with no host-specific code:

- **block**: the deny form (the outcome is a deny);
- **control**: a rewrite of the tool input is the host's rewrite form (``host_input``;
  refused where the host's tool cannot take it); any other adjustment reaches the model as
  the context the engine wrote for it;
- **prompt**: its message is in ``additional_context``, so it goes to the host's context
  field; a warning (severity medium or high) is also shown to the user, with its signal id
  and the ``mcp-hooks respond`` actions that answer it (``replies.signal_notes``:
  ``systemMessage`` where the host shows one, stderr everywhere);
- **aid**: the engine hands it over as ``additional_context`` of the session's next event
  whose reply shows the model that context, so it reaches the host as that event's context;
  an event whose reply has no context form (Claude Code's Stop, most of Cursor's events)
  leaves it waiting (``answering.shows_aid``, ``Engine.fire(hold_aid=True)``): taken once,
  shown once.

Where a host has no form for the event (no context field, no rewrite), the bridge says so
on stderr as for any other outcome: docs/bridges.md has the table.

This module must stay cheap to import: the bridge runs as a new process on every tool call.
It imports the engine only for type checking.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from mcp_hooks.errors import RunError
from mcp_hooks.spec import outcome
from mcp_hooks.spec.toolcall import NAMED_TOOL_EVENTS, rewrite_failed
from mcp_hooks.spec.vocabulary import MCP_CLIENTS, RewriteError, ToolMap, Vocabulary

if TYPE_CHECKING:
    from mcp_hooks.spec.outcome import Outcome

EXIT_FAIL_OPEN = 1  # every host treats exit 1 as "hook failed, carry on"
EXIT_BLOCK = 2  # the block exit code of Claude Code, Codex, Gemini CLI, Cursor and Kimi CLI
FAULT_FIX = "run `mcp-hooks doctor` to see what is broken"
HOOK_TIMEOUT_S = 600  # the longest a HOOK.md may run (hookfile's cap); each hook has its own


# Claude Code's hook event names (PascalCase), which Codex and Kimi CLI adopted too.
CLAUDE_EVENTS: dict[str, str] = {
    "SessionStart": "session_start", "SessionEnd": "session_end",
    "UserPromptSubmit": "before_agent", "PreToolUse": "before_tool", "PostToolUse": "after_tool",
    "PostToolUseFailure": "after_tool_failure", "Stop": "before_stop",
    "SubagentStart": "subagent_start", "SubagentStop": "subagent_stop",
    "PreCompact": "pre_compact", "PostCompact": "post_compact",
}

class BridgeInputError(RunError, ValueError):
    """A payload the bridge cannot translate (not JSON, not an object, unknown event)."""


@dataclass
class Call:
    """One host hook call, translated.

    Attributes:
        host_event: the event as the host names it.
        event: our canonical event.
        fields: keyword arguments for ``Event.create`` (all but ``event_type``).
        tool: the vocabulary entry of the host's tool, when it has a canonical name.
        host_tool_name, host_tool_input: the tool's name and input as the host sent them.
        payload: the host's whole payload.
        notes: warnings from the translation itself (for stderr and the user).
    """

    host_event: str
    event: str
    fields: dict[str, Any]
    tool: ToolMap | None = None
    host_tool_name: str | None = None
    host_tool_input: dict[str, Any] | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def session_id(self) -> str | None:
        return v if isinstance(v := self.fields.get("session_id"), str) else None


@dataclass
class Reply:
    """What the bridge prints and how it exits."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0

    @classmethod
    def json(cls, data: Mapping[str, Any], stderr: str = "") -> Reply:
        return cls(json.dumps(data, ensure_ascii=False) if data else "", stderr, 0)


def fail_open(message: str) -> Reply:
    """A call the bridge cannot hand to the engine and must not block: say why, carry on."""
    return Reply("", f"mcp-hooks bridge: {message}; the host carries on (fail open)\n",
                 EXIT_FAIL_OPEN)


# -- our own faults -----------------------------------------------------------------------


def fault_outcome(event: str, what: str, *, on_fault: str = "block") -> Outcome:
    """The engine's answer for an event mcp-hooks could not decide: a deny by ``mcp-hooks``
    whose reason says what broke and how to fix it, or an allow with that as a warning
    (``warn``, or an event that cannot block). Imported here, when a fault happens."""
    return outcome.fault_outcome(event, what, on_fault=on_fault)


class Host:
    """One agent host: its events, payload fields and answer forms.

    Subclasses set the class attributes and override ``reply``; most need nothing else. A
    name its ``vocabulary`` lacks is read as ``vocabulary.MCP_CLIENTS`` reads it (every door).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if isinstance(own := cls.__dict__.get("vocabulary"), Vocabulary):  # its names first
            cls.vocabulary = Vocabulary({**MCP_CLIENTS.tools, **own.tools})

    name: ClassVar[str]
    title: ClassVar[str]
    # host event -> canonical event; the install set is the keys of ``install_events``
    events: ClassVar[dict[str, str]]
    install_events: ClassVar[tuple[str, ...]]
    tool_events: ClassVar[frozenset[str]] = frozenset()
    vocabulary: ClassVar[Vocabulary]
    event_key: ClassVar[str] = "hook_event_name"
    session_keys: ClassVar[tuple[str, ...]] = ("session_id",)
    cwd_keys: ClassVar[tuple[str, ...]] = ("cwd",)
    project_env: ClassVar[tuple[str, ...]] = ()
    tool_name_keys: ClassVar[tuple[str, ...]] = ("tool_name",)
    tool_input_keys: ClassVar[tuple[str, ...]] = ("tool_input",)
    tool_use_id_keys: ClassVar[tuple[str, ...]] = ("tool_use_id",)
    output_keys: ClassVar[tuple[str, ...]] = ("tool_response",)
    error_keys: ClassVar[tuple[str, ...]] = ("error",)
    stop_flag_key: ClassVar[str] = "stop_hook_active"
    # payload fields copied into the event payload under our names (host key -> our key)
    field_map: ClassVar[dict[str, str]] = {}

    # -- where `install` writes, and what (see ``mcp_hooks.hosts.install``) ----------------
    # "grouped": {"hooks": {event: [{"hooks": [handler]}]}}; "flat": {"version": 1, "hooks":
    # {event: [handler]}}; "toml": Kimi's [[hooks]] tables, one managed block of text;
    # "files", "module": files we generate (``configfile.Generated``)
    config_format: ClassVar[str] = "grouped"
    project_config: ClassVar[str | None] = None  # under the project; None: no project scope
    # user scope: ($VAR, else this folder under the home folder) / file
    user_config: ClassVar[tuple[str | None, str, str]]
    default_scope: ClassVar[str] = "project"
    command_keys: ClassVar[tuple[str, ...]] = ("command",)  # where a handler holds its command
    native_vias: ClassVar[frozenset[str]] = frozenset()  # --via choices beyond command/server
    # -- how `doctor` probes the gate: a shell tool call that must come back denied ----------
    gate_event: ClassVar[str] = "PreToolUse"
    shell_tool: ClassVar[str] = "Bash"
    # -- how `init` tells the host is installed: a program on PATH, or its config folder -----
    programs: ClassVar[tuple[str, ...]] = ()
    # how long the host waits for the bridge (bridge.chain_deadline): what install writes
    hook_timeout_s: ClassVar[float] = HOOK_TIMEOUT_S
    native_ask: ClassVar[frozenset[str]] = frozenset()  # events with its own ask (asking.py)
    prompt_events: ClassVar[dict[str, str]] = {}  # its prompt event -> gate event (prompts.py)
    no_ask_modes: ClassVar[frozenset[str]] = frozenset({"bypassPermissions", "yolo"})

    # -- in ------------------------------------------------------------------------------

    def event_of(self, payload: Mapping[str, Any], flag: str | None) -> str:
        """The host's event name: the ``--event`` flag wins, else the payload's field.

        Raises:
            BridgeInputError: no event name, or one this host does not have.
        """
        name = flag or payload.get(self.event_key)
        if not isinstance(name, str) or not name:
            raise BridgeInputError(
                f"no event name: the payload has no {self.event_key!r} and no --event was given"
            )
        if name not in self.events and name not in self.prompt_events:
            raise BridgeInputError(
                f"{self.title} event {name!r} is not bridged; known: {', '.join(self.events)}"
            )
        return name

    def work_dir(self, payload: Mapping[str, Any]) -> str | None:
        """The folder the agent works in, as the host reports it."""
        for key in self.cwd_keys:
            value = payload.get(key)
            if isinstance(value, list) and value and isinstance(value[0], str):
                value = value[0]
            if isinstance(value, str) and value and os.path.isdir(value):
                return value
        for var in self.project_env:
            value = os.environ.get(var)
            if value and os.path.isdir(value):
                return value
        return None

    def translate(self, host_event: str, payload: dict[str, Any]) -> Call:
        """The host's payload as the fields of one engine ``Event``."""
        event = self.events[host_event]
        fields: dict[str, Any] = {}
        if (session := _first(payload, self.session_keys)) is not None:
            fields["session_id"] = str(session)
        if (work_dir := self.work_dir(payload)) is not None:
            fields["work_dir"] = work_dir
        extra = {ours: payload[key] for key, ours in self.field_map.items() if key in payload}
        call = Call(host_event, event, fields, payload=payload)
        host: dict[str, Any] = {"name": self.name, "event": host_event}
        self._translate_tool(call, host)
        if event == "after_tool":
            fields["tool_output"] = _first(payload, self.output_keys)
        if event == "after_tool_failure":
            fields["error"] = _first(payload, self.error_keys)
        if event == "before_stop":
            self.stop_fields(payload, extra)
        excluded = {*self.tool_input_keys}
        host["payload"] = {k: v for k, v in payload.items() if k not in excluded}
        extra["host"] = host
        fields["payload"] = extra
        self.adjust(call)
        return call

    def _translate_tool(self, call: Call, host: dict[str, Any]) -> None:
        """The tool's fields of ``call`` (canonical name and input), when its event has a tool."""
        payload, fields = call.payload, call.fields
        tool_name, tool_input = self.host_tool(call.host_event, payload)
        if tool_name is None and call.event not in NAMED_TOOL_EVENTS:
            return
        if tool_name is not None and not isinstance(tool_name, str):
            raise BridgeInputError(f"the tool name must be a string, got "
                                   f"{type(tool_name).__name__}")
        if tool_input is not None and not isinstance(tool_input, dict):
            raise BridgeInputError(f"the tool input must be a JSON object, got "
                                   f"{type(tool_input).__name__}")
        tool_input = tool_input if isinstance(tool_input, dict) else {}
        call.host_tool_name, call.host_tool_input = tool_name, tool_input
        name, canonical_input = self.canonical_tool(tool_name or "", tool_input, payload)
        call.tool = self.tool_map(call.host_event, tool_name or "")
        command = canonical_input.get("command")
        if name == "Shell" and command is not None and not isinstance(command, str):
            raise BridgeInputError(f"the shell command must be a string, got "
                                   f"{type(command).__name__}")
        fields["tool_name"], fields["tool_input"] = name, canonical_input
        use_id = _first(payload, self.tool_use_id_keys)
        if use_id is not None:
            fields["tool_use_id"] = str(use_id)
        host["tool_name"], host["tool_input"] = tool_name, tool_input

    def host_tool(self, host_event: str, payload: Mapping[str, Any]) -> tuple[str | None, Any]:
        """The tool name and input as the host sent them (None when the event has none)."""
        return _first(payload, self.tool_name_keys), _first(payload, self.tool_input_keys)

    def tool_map(self, host_event: str, tool_name: str) -> ToolMap | None:
        return self.vocabulary.get(tool_name)

    def canonical_tool(
        self, tool_name: str, tool_input: dict[str, Any], payload: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        return self.vocabulary.canonical(tool_name, tool_input)

    def stop_fields(self, payload: Mapping[str, Any], extra: dict[str, Any]) -> None:
        """Pass the host's own stop-loop flag on, so our loop guard and hooks see it."""
        flag = payload.get(self.stop_flag_key)
        if isinstance(flag, bool):
            extra["stop_hook_active"] = flag

    def adjust(self, call: Call) -> None:
        """A last host-specific touch on the translated call (default: none)."""

    # -- out -----------------------------------------------------------------------------

    def host_input(self, call: Call, outcome: Outcome) -> tuple[dict[str, Any] | None, str | None]:
        """The rewrite in the host tool's shape, or None and why it cannot be expressed."""
        if outcome.modified_input is None:
            return None, None
        original = call.host_tool_input or {}
        if call.tool is None:
            return dict(outcome.modified_input), None
        try:
            return call.tool.to_host(outcome.modified_input, original), None
        except RewriteError as exc:
            return None, rewrite_failed(exc)

    def reply(self, call: Call, outcome: Outcome) -> Reply:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- install and doctor ------------------------------------------------------------------

    def config_path(self, scope: str, project: Path) -> Path | None:
        """The hook config file for ``scope`` (None: the host has no such scope). The home
        folder is read for user scope only."""
        if scope == "project":
            return None if self.project_config is None else project / self.project_config
        var, folder, file = self.user_config
        value = os.environ.get(var) if var else None
        return (Path(value) if value else Path(os.path.expanduser("~"), folder)) / file

    def config_home(self, home: Path) -> Path:
        """The host's own folder of user settings (``~/.claude``, ``$CODEX_HOME``, ...)."""
        var, folder, file = self.user_config
        value = os.environ.get(var) if var else None
        base = Path(value) if value else home / folder
        return base if folder else base / file.split("/")[0]

    def installed(self, home: Path, path: str | None = None) -> str | None:
        """Why the host looks installed here (its program on ``path``, default ``$PATH``; or
        its config folder under ``home``), or None."""
        import shutil  # lazy: 2 ms of every bridge start (zlib, bz2, lzma); doctor, init only
        for program in self.programs:
            found = shutil.which(program, path=path)
            if found:
                return f"{program} is on PATH ({found})"
        folder = self.config_home(home)
        return f"{folder} exists" if folder.is_dir() else None

    def user_config_text(self) -> str:
        """The user config's place in words: ``$VAR/file, default ~/folder/file``."""
        var, folder, file = self.user_config
        default = "~/" + "/".join(p for p in (folder, file) if p)
        return f"${var}/{file}, default {default}" if var else default

    def entry(self, event: str, command: str) -> dict[str, Any]:
        """The handler ``install`` writes for ``event``, running ``command``."""
        return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}

    def entry_command(self, handler: Mapping[str, Any]) -> str | None:
        """The command a handler of this host's config runs (None: it runs none)."""
        for key in self.command_keys:
            value = handler.get(key)
            if isinstance(value, str):
                return value
        return None

    def install_notes(self, scope: str, via: str, server_name: str) -> list[str]:
        """What the user must know after ``install`` (trust prompts, exports)."""
        return []

    def shell_call(self, command: str, session: str, work: Path) -> dict[str, Any]:
        """The payload of a shell tool call of ``command`` on ``gate_event``, as sent."""
        return {"hook_event_name": self.gate_event, "session_id": session, "cwd": str(work),
                "tool_name": self.shell_tool, "tool_input": {"command": command},
                "tool_use_id": session}

    def deny_reason(self, stdout: str, stderr: str, code: int) -> str | None:
        """The reason of a deny on ``gate_event`` in this host's form (None: not a deny)."""
        if code == 2:
            return stderr.strip()
        data = json_answer(stdout, code)
        specific = data.get("hookSpecificOutput") if data else None
        if isinstance(specific, dict) and specific.get("permissionDecision") == "deny":
            return str(specific.get("permissionDecisionReason", ""))
        return None

    # -- our own faults --------------------------------------------------------------------

    def known_event(self, flag: str | None, payload: Any) -> str | None:
        """The host event a call was for, as far as it can be told: ``--event``, else the
        payload's field; None when neither names an event of this host."""
        if flag in self.events:
            return flag
        if isinstance(payload, dict):
            named = payload.get(self.event_key)
            if isinstance(named, str) and named in self.events:
                return named
        return None

    def fault_reply(self, what: str, host_event: str | None, on_fault: str,
                    payload: Any = None) -> Reply:
        """The answer to a call mcp-hooks could not decide (``what`` says why and the fix).

        For a known host event: ``fault_outcome`` in the host's own reply form, a deny where
        the event can block, else the warning only. For no known event: the host's most
        universal block form (``universal_block``). ``on_fault="warn"`` lets the call
        through with the warning instead.
        """
        if host_event is not None and host_event in self.events:
            event = self.events[host_event]
            if event == "before_stop" and self.continuing(payload):
                # our own loop guard: a fault never keeps the agent working twice in a row
                on_fault = "warn"
            outcome = fault_outcome(event, what, on_fault=on_fault)
            try:
                return self.reply(self.fault_call(host_event, event, payload), outcome)
            except Exception:  # the universal form below still answers
                pass
        if on_fault == "warn":
            return Reply("", f"mcp-hooks bridge: {what}; let through unchecked (on-fault: "
                         "warn)\n", EXIT_FAIL_OPEN)
        return self.universal_block(what)

    def fault_call(self, host_event: str, event: str, payload: Any) -> Call:
        """The call a fault answer is built for: the event only (the payload could not be
        read); a host whose block form depends on the tool fills in what it can tell."""
        return Call(host_event, event, {})

    def universal_block(self, what: str) -> Reply:
        """A block that needs no event: exit 2 with the reason on stderr."""
        return Reply("", f"mcp-hooks could not check this call, so it is blocked: {what}\n",
                     EXIT_BLOCK)

    def continuing(self, payload: Any) -> bool:
        """Whether the host says this stop is a continuation of a blocked one."""
        if not isinstance(payload, dict):
            return False
        count = payload.get("loop_count")
        return payload.get(self.stop_flag_key) is True or (
            isinstance(count, int) and not isinstance(count, bool) and count > 0)


def json_answer(stdout: str, code: int) -> dict[str, Any] | None:
    """A hook's JSON answer (None: a failure, not JSON, or not an object)."""
    if code != 0:
        return None
    try:
        data = json.loads(stdout) if stdout.strip() else {}
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _first(payload: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in payload:
            return payload[key]
    return None
