"""``mcp-hooks bridge <host>``: the command a host's native hook config runs.

Reads the host's payload on stdin, translates it (``Host.translate``), fires the event at the
engine, and answers in the host's own stdout JSON, stderr and exit code (``Host.reply``). The
bridge owns its stdout (``ownstdout.owned_stdout``): anything else that prints while it runs
(a trusted oracle printing at import, a library) goes to stderr, so stdout is exactly the
host's answer.

It never opens the gate by accident. When mcp-hooks itself cannot reach a decision (a payload
that is not JSON, not an object, nested too deeply, holding a lone surrogate or a wrong-typed
field; an event it does not know; an engine or reply failure), an event that can block is
denied in the host's own block form (``Host.fault_reply``: ``fault_outcome`` through
``Host.reply``), with a reason that says what broke and how to fix it. ``answer`` is the
bridge's one guard: it takes any ``BaseException``, so a ``KeyboardInterrupt`` (the host or a
user sends SIGINT while a hook runs: the hook's processes are stopped) or an oracle's
``SystemExit`` is answered with that deny too, and the exit code is the reply's, never 130.
When the event cannot be told (no ``--event``, none in the payload), the host's most
universal block form answers (exit 2 with the reason on stderr; Copilot CLI:
``permissionDecision: deny``). Events that cannot block (session end, after stop, post
compact, after tool failure) get the warning only. ``--on-fault warn`` (or
``MCP_HOOKS_ON_FAULT=warn``) lets such calls through with the warning instead. A stop the
host reports as a continuation is never blocked by a fault, so a lasting fault cannot keep an
agent working forever.

A host runs this as a new process on every tool call, so the import graph stays small: the
host module, the engine and the options; never the MCP SDK, Starlette or the server.

Stop loops across processes: each bridge run is a new process, so the engine's loop guard
(``stopguard.StopGuard``) keeps its count of consecutive ``before_stop`` blocks in the file
store, one small file per host and session (``$XDG_STATE_HOME/mcp-hooks/stop/``); the host's
own flag (``stop_hook_active``, Cursor's ``loop_count``) is passed too. A stop the host
reports as not being a continuation resets the count, as does any stop that is allowed.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from mcp_hooks.engine.asking import call_host_asks
from mcp_hooks.engine.engine import Engine
from mcp_hooks.engine.stopguard import StopGuard
from mcp_hooks.engine.wiring import wire
from mcp_hooks.errors import ConfigError
from mcp_hooks.hosts import UnknownHostError, get_host
from mcp_hooks.hosts.answering import answer_outcome, load_payload, shows_aid, unreadable
from mcp_hooks.hosts.asking import asks_natively
from mcp_hooks.hosts.base import (
    FAULT_FIX,
    BridgeInputError,
    Call,
    Host,
    Reply,
)
from mcp_hooks.hosts.prompts import answer_prompt, close_answered, prompt_of, unanswered
from mcp_hooks.options import CommonOptions, log_of, trust_store_of
from mcp_hooks.options import on_fault as configured_fault
from mcp_hooks.options import settings as read_settings
from mcp_hooks.ownstdout import owned_stdout
from mcp_hooks.registry.discovery import Registry, find_project_dir
from mcp_hooks.settings import OnFault
from mcp_hooks.spec.asking import Approver
from mcp_hooks.spec.outcome import Event
from mcp_hooks.state.url import close_store, store_for

# the share of its host's hook timeout a bridge gives the hooks of one event together (the
# chain deadline); the rest is for the bridge's own start, the state store and the answer
CHAIN_SHARE = 0.9

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcp_hooks.engine.stopguard import StopGuard
    from mcp_hooks.spec.outcome import Outcome
    from mcp_hooks.state.store import StateStore

EXIT_USAGE = 64


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

    with owned_stdout() as out:
        reply = answer(host, sys.stdin.buffer.read, options)
        _write(reply, out)
    return reply.exit_code


def answer(host: Host, raw: bytes | Callable[[], bytes], options: BridgeOptions) -> Reply:
    """The host's answer to one payload (its bytes, or what reads them: the host's stdin);
    never raises. What mcp-hooks cannot decide is a deny in the host's form (see the module
    docstring), or a warning under ``warn``."""
    on_fault = fault_mode(options.common)
    flag = options.event
    payload: Any = None
    try:
        payload = load_payload(raw if isinstance(raw, bytes) else raw())
        host_event = host.event_of(payload, flag)
        if host_event in host.prompt_events:  # the host's own dialog: no hook runs
            return answer_prompt(host, host_event, payload, options.common,
                                 chain_deadline(host))
        call = host.translate(host_event, payload)
    except BaseException as exc:  # a payload we cannot read (or SIGINT while reading): ours
        if (prompt := prompt_of(host, flag, payload)) is not None:
            return unanswered(prompt, exc)  # the host's own dialog decides, never our deny
        return host.fault_reply(unreadable(host, exc), host.known_event(flag, payload),
                                on_fault, payload)
    outcome: Outcome | BaseException
    troubles: list[str] = []
    # a call that ran while its ask waited was answered in the host's dialog (prompts.py)
    closing = (functools.partial(close_answered, host, call, troubles)
               if host.prompt_events and call.event == "after_tool" else None)
    try:
        outcome = fire_call(call, options.common, hold_aid=not shows_aid(host, call),
                            deadline=chain_deadline(host), door=f"bridge/{host.name}",
                            approve=call_host_asks if asks_natively(host, call) else None,
                            then=closing)
    except BaseException as exc:  # whatever it was (SystemExit, KeyboardInterrupt): a fault
        outcome = exc
    reply = answer_outcome(host, call, outcome, on_fault, payload)
    if troubles:
        reply = replace(reply, stderr=f"{reply.stderr}mcp-hooks bridge: {troubles[0]}\n")
    return reply


def chain_deadline(host: Host) -> float:
    """Seconds the hooks of one event may take together in ``host``'s bridge:
    ``CHAIN_SHARE`` of the host's hook timeout (``Host.hook_timeout_s``), so the bridge answers
    (a fail-closed hook left unrun denies) before the host gives up on it and lets the call
    through (docs/bridges.md, "The chain deadline")."""
    return CHAIN_SHARE * host.hook_timeout_s


def fault_exit(host_name: str, options: BridgeOptions, what: str) -> int:
    """Answer the host with a fault (``what`` broke) when the bridge could not run to its
    answer (the command line's boundary calls this); the exit code."""
    host = get_host(host_name)
    prompt = prompt_of(host, options.event, None)
    reply = (unanswered(prompt, RuntimeError(what)) if prompt is not None else
             host.fault_reply(f"{what}; {FAULT_FIX}", host.known_event(options.event, None),
                              fault_mode(options.common), None))
    with owned_stdout() as out:
        _write(reply, out)
    return reply.exit_code


def fault_mode(common: CommonOptions) -> OnFault:
    """``--on-fault``, else ``MCP_HOOKS_ON_FAULT``; ``block`` when the settings cannot be
    read (a bad value fails closed: ``fire_call`` raises it, and the deny names it)."""
    try:
        return configured_fault(common)
    except ConfigError:
        return "block"


def _write(reply: Reply, out: BinaryIO) -> None:
    # a lone surrogate in a reason must not crash the answer: escape it, JSON stays valid
    if reply.stdout:
        out.write((reply.stdout + "\n").encode("utf-8", "backslashreplace"))
        out.flush()
    if reply.stderr:
        sys.stderr.buffer.write(reply.stderr.encode("utf-8", "backslashreplace"))
        sys.stderr.flush()


def fire_call(call: Call, args: CommonOptions, *, hold_aid: bool = False,
              deadline: float | None = None, approve: Approver | None = None,
              door: str = "bridge", then: Callable[[StateStore], None] | None = None
              ) -> Outcome:
    """Fire the translated call at a fresh engine over the registry the options describe
    (``hold_aid``: the host's reply cannot show waiting aid, leave it for a later event;
    ``deadline``: the host's chain deadline, ``Host.chain_deadline``, when it is shorter
    than the ``chain_timeout`` setting; ``approve``: how a hook's ask reaches a person,
    ``asking.call_host_asks`` where the host asks natively, else None: out of band within
    the chain deadline, then the fallback, a deny naming the pending ask)."""
    settings = replace(read_settings(args), door=door)  # ConfigError: a deny naming it
    if deadline is not None and deadline < settings.chain_timeout:
        settings = replace(settings, chain_timeout=deadline)
    project = settings.project_dir
    if project is None:  # none given: the project of the folder the agent works in
        project = find_project_dir(Path(call.fields.get("work_dir") or os.getcwd()))
    event = Event.create(event_type=call.event, **call.fields)
    log = log_of(settings)
    # StateUnavailable (a store that cannot be reached): a fault, a deny naming it
    store = store_for(settings.state, log, settings.replica_id)
    try:  # project hooks trusted as the door says: the trust file, or the shared store's
        registry = Registry(settings.user_dir, project, watch=False,
                            trust_project_hooks=settings.trust_project_hooks,
                            trust_store=trust_store_of(settings, store),
                            managed_dir=settings.managed_dir)
    except BaseException:
        close_store(store)
        raise
    engine = Engine(registry, settings, wire(
        registry, settings, log=log, one_shot=True, store=store,
        stop_guard=stop_guard(call, settings.stop_block_cap, store)))
    try:
        outcome = engine.fire_blocking(event, hold_aid=hold_aid, approve=approve)
        if then is not None:  # more work on the same store, after the event (never raises)
            then(store)
        return outcome
    finally:
        registry.close()
        close_store(store)


def stop_guard(call: Call, cap: int, store: StateStore) -> StopGuard:
    """The loop guard of one bridge run: its count in ``store`` per host and session."""
    host = call.fields.get("payload", {}).get("host", {}).get("name", "host")
    return StopGuard(cap, store, host, new_turn_resets=True)


__all__ = ["CHAIN_SHARE", "BridgeInputError", "BridgeOptions", "answer", "chain_deadline",
           "fire_call", "run_bridge"]
