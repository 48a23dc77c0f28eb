"""``mcp-hooks bridge <host>``: the command a host's native hook config runs.

Reads the host's payload on stdin, translates it (``Host.translate``), fires the event at the
engine, and answers in the host's own stdout JSON, stderr and exit code (``Host.reply``).

It never opens the gate by accident. When mcp-hooks itself cannot reach a decision (a payload
that is not JSON, not an object, nested too deeply, holding a lone surrogate or a wrong-typed
field; an event it does not know; an engine or reply failure), an event that can block is
denied in the host's own block form (``Host.fault_reply``: ``fault_outcome`` through
``Host.reply``), with a reason that says what broke and how to fix it. When the event cannot
be told (no ``--event``, none in the payload), the host's most universal block form answers
(exit 2 with the reason on stderr; Copilot CLI: ``permissionDecision: deny``). Events that
cannot block (session end, after stop, post compact, after tool failure) get the warning
only. ``--on-fault warn`` (or ``MCP_HOOKS_ON_FAULT=warn``) lets such calls through with the
warning instead. A stop the host reports as a continuation is never blocked by a fault, so a
lasting fault cannot keep an agent working forever.

A host runs this as a new process on every tool call, so the import graph stays small: the
host module, the engine and the options; never the MCP SDK, Starlette or the server.

Stop loops across processes: the engine's loop guard counts consecutive ``before_stop``
blocks per session in memory, and each bridge run is a new process, so the bridge keeps the
count in a small file per host and session (``$XDG_STATE_HOME/mcp-hooks/stop/``) and passes
it as ``stop_block_count``; the host's own flag (``stop_hook_active``, Cursor's
``loop_count``) is passed too. A stop the host reports as not being a continuation resets
the count, as does any stop that is allowed.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hooks.hosts import UnknownHostError, get_host
from mcp_hooks.hosts.base import (
    BridgeInputError,
    Call,
    Host,
    Reply,
    answer_outcome,
    load_payload,
    unreadable,
)
from mcp_hooks.options import CommonOptions

if TYPE_CHECKING:
    from mcp_hooks.engine import Outcome

EXIT_USAGE = 64
STOP_STATE_TTL = 3600.0  # seconds; an interrupted loop's count is forgotten after this


@dataclass(frozen=True)
class BridgeOptions:
    """How to answer one host hook call.

    Attributes:
        event: the host's event name (``--event``); None: the payload's own field.
        common: the shared options as given (folders, log, stop cap, fault mode, trust).
            Without a project dir (given or ``$MCP_HOOKS_PROJECT_DIR``), the project is
            found from the work dir the host reports.
    """

    event: str | None = None
    common: CommonOptions = field(default_factory=CommonOptions)


def run_bridge(host_name: str, options: BridgeOptions) -> int:
    """Run one host hook call: stdin payload in, host answer out. Returns the exit code."""
    try:
        host = get_host(host_name)
    except UnknownHostError as exc:
        print(f"mcp-hooks bridge: {exc}", file=sys.stderr)
        return EXIT_USAGE
    raw = sys.stdin.buffer.read()
    reply = answer(host, raw, options)
    # a lone surrogate in a reason must not crash the answer: escape it, JSON stays valid
    if reply.stdout:
        sys.stdout.buffer.write((reply.stdout + "\n").encode("utf-8", "backslashreplace"))
        sys.stdout.flush()
    if reply.stderr:
        sys.stderr.buffer.write(reply.stderr.encode("utf-8", "backslashreplace"))
        sys.stderr.flush()
    return reply.exit_code


def answer(host: Host, raw: bytes, options: BridgeOptions) -> Reply:
    """The host's answer to one payload; never raises. What mcp-hooks cannot decide is a
    deny in the host's form (see the module docstring), or a warning under ``warn``."""
    from mcp_hooks.options import on_fault as fault_mode

    on_fault = fault_mode(options.common)
    flag = options.event
    payload: Any = None
    try:
        payload = load_payload(raw)
        host_event = host.event_of(payload, flag)
        call = host.translate(host_event, payload)
    except Exception as exc:  # any payload we cannot read is a fault of ours
        return host.fault_reply(unreadable(host, exc), host.known_event(flag, payload),
                                on_fault, payload)
    outcome: Outcome | BaseException
    try:
        outcome = fire_call(call, options.common)
    except Exception as exc:
        outcome = exc
    return answer_outcome(host, call, outcome, on_fault, payload)


def fire_call(call: Call, args: CommonOptions) -> Outcome:
    """Fire the translated call at a fresh engine over the registry the options describe."""
    from mcp_hooks import options
    from mcp_hooks.discovery import Registry, find_project_dir
    from mcp_hooks.engine import Engine, Event

    if args.project_dir is not None or os.environ.get("MCP_HOOKS_PROJECT_DIR"):
        project = options.project_dir(args)
    else:
        start = call.fields.get("work_dir") or os.getcwd()
        project = find_project_dir(Path(start))
    registry = Registry(options.user_dir(args), project, watch=False,
                        trust_project_hooks=options.trust_project_hooks(args))
    stop_state = _StopState(call) if call.event == "before_stop" else None
    if stop_state is not None:
        stop_state.before()
    event = Event.create(event_type=call.event, **call.fields)

    engine = Engine(registry, log=options.event_log(args),
                    stop_block_cap=options.stop_block_cap(args), one_shot=True,
                    on_fault=options.on_fault(args))
    try:
        outcome = engine.fire_blocking(event)
    finally:
        registry.close()
    if stop_state is not None:
        stop_state.after(outcome)
    return outcome


class _StopState:
    """The consecutive stop-block count of one host session, kept between bridge runs."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.extra: dict[str, Any] = call.fields.setdefault("payload", {})
        host = self.extra.get("host", {}).get("name", "host")
        session = call.session_id
        self.path: Path | None = None
        if session:
            digest = hashlib.sha256(f"{host}\0{session}".encode()).hexdigest()[:32]
            self.path = _state_dir() / f"{host}-{digest}"

    def before(self) -> None:
        flag = self.extra.get("stop_hook_active")
        count = 0 if flag is False else self._read()
        given = self.extra.get("stop_block_count")
        if isinstance(given, int) and not isinstance(given, bool):
            count = max(count, given)
        self.extra["stop_block_count"] = count
        if count and flag is None:
            self.extra["stop_hook_active"] = True

    def after(self, outcome: Outcome) -> None:
        if self.path is None:
            return
        if outcome.continue_working:
            count = self.extra.get("stop_block_count", 0) + 1
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.path.write_text(str(count))
            except OSError:
                pass
        else:
            self.path.unlink(missing_ok=True)

    def _read(self) -> int:
        if self.path is None:
            return 0
        try:
            st = self.path.stat()
            if time.time() - st.st_mtime > STOP_STATE_TTL:
                return 0
            return max(0, int(self.path.read_text().strip() or 0))
        except (OSError, ValueError):
            return 0


def _state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "mcp-hooks" / "stop"


__all__ = ["BridgeInputError", "BridgeOptions", "answer", "fire_call", "run_bridge"]
