"""What an engine works with, built once per process from one ``Settings`` (``wire``).

An ``Engine`` fires events; it does not choose its collaborators. ``wire`` does, once, from
the settings and the door's few choices, and hands back ``EngineParts``, a frozen record the
engine's constructor takes as it is:

- **state**: the store (``settings.state``: the file store with the event log, or a shared
  one, ``state.url.store_for``), the event log (``settings.log``), the aid inbox, the stop
  guard counting in that store (``settings.stop_block_cap``);
- **how hooks run**: the runner (``runner.run_hook`` on an event loop, the blocking
  ``run_hook_blocking`` for a one-shot process), the launcher of background work
  (``launch.make_launcher``: the engine's task group and a thread, or a detached process),
  the persistent processes' pool and their default count, where blocking work runs (oracles
  and asks off the event loop, or in place; the store's calls, ``offloop.store_caller``),
  the hooks' environment (``settings.secrets`` left out);
- **what the event also meets**: the hooks.yaml control layer of the registry's project
  (watching for changes unless one-shot), the ask settler (``asking.Asker``, its webhook
  notifier), the observer (``observe.py``).

A door that shares a part between its engines (the server's store, the library's stop
guard, a lane's pool) passes it in; everything else is the default, made here and nowhere
else. ``Engine(registry, settings)`` wires its own parts with no choice made.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from mcp_hooks.control.ladder import Ladder
from mcp_hooks.engine.asking import Asker
from mcp_hooks.engine.entries import ControlLayer
from mcp_hooks.engine.launch import Launcher, make_launcher
from mcp_hooks.engine.observe import EventObserver
from mcp_hooks.engine.offloop import Caller, call_here, call_off_loop, store_caller
from mcp_hooks.engine.stopguard import StopGuard
from mcp_hooks.engine.webhook import ask_notifier
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.runner import RunResult, adopt, run_hook, run_hook_blocking
from mcp_hooks.runner.hookenv import HookEnvs, hook_environment
from mcp_hooks.runner.persistent import PersistentPool, default_processes
from mcp_hooks.settings import Settings
from mcp_hooks.state.eventlog import EventLog
from mcp_hooks.state.inbox import AidInbox
from mcp_hooks.state.signallog import SignalLog
from mcp_hooks.state.store import StateStore
from mcp_hooks.state.url import scheme, store_for

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11

Runner = Callable[..., Awaitable[RunResult]]


class Choices(TypedDict, total=False):
    """What a door chooses of its engine's parts (``wire``); each one left out, or None, is
    the default made from the settings.

    Keys:
        one_shot: for a process that fires one event and exits: async hooks detached, the
            blocking runner, blocking work and the store's calls in place, no watching
            (``fire_blocking`` runs the hooks without an event loop).
        detach_async: run async hooks in a detached process (``mcp-hooks fire``, a host
            bridge: the caller exits at once; their results still reach the log).
        log: where to append event records; default one at ``settings.log``, if any.
        store: the per-session state, shared with the door (its logs are the engine's, and
            the door closes it); default the one ``settings.state`` names, closed with the
            engine (the file store with ``log`` as its event log, none without).
        pool: the persistent hooks' processes, shared; default made on the first one and
            closed with the engine.
        control: the hooks.yaml control layer; default the registry project's; False: none.
        stop_guard: the loop guard (the host bridges count under the host's name); default
            one counting in the store, namespace ``engine``, with ``settings.stop_block_cap``.
        launcher: starts async hooks; default chosen by ``detach_async``/``one_shot``.
        runner: runs one hook (``run_hook``'s signature); default chosen by ``one_shot``.
        observer: told of each event, its sync hooks and its outcome; default none.
    """

    one_shot: bool
    detach_async: bool
    log: EventLog | None
    store: StateStore | None
    pool: PersistentPool | None
    control: ControlLayer | Literal[False] | None
    stop_guard: StopGuard | None
    launcher: Launcher | None
    runner: Runner | None
    observer: EventObserver | None


@dataclasses.dataclass(frozen=True)
class EngineParts:
    """An engine's collaborators, made by ``wire`` (``dataclasses.replace`` swaps one that
    depends on no other: the runner, the observer, the signal log)."""

    store: StateStore  # the per-session state: stop counts, ladder, aid, logs, answers
    owns_store: bool  # made here, so closed with the engine (a shared store's pool)
    log: EventLog | None  # where event records go (None: only the store's, if given)
    logs: bool  # whether events are recorded at all (a log, or a store given)
    one_shot: bool  # a process that fires one event and exits (``fire_blocking``)
    runner: Runner  # runs one hook (``run_hook``'s signature)
    launcher: Launcher  # starts async hooks and ``async: true`` entries
    pool: PersistentPool | None  # persistent hooks' processes; None: made on first need
    processes: int  # a persistent hook's processes when its metadata does not say
    blocking: Caller  # where oracles and asks run: off the event loop, or in place
    store_call: Caller  # where the store's calls around an event run
    envs: HookEnvs  # each hook's environment, secrets left out
    stop_guard: StopGuard  # the stop loop guard
    control: ControlLayer | None  # the hooks.yaml control layer; None: none
    inbox: AidInbox  # where aid waits for a session's next event
    asker: Asker  # a hook's ask settled
    observer: EventObserver | None = None  # told of each event, sync hook and outcome
    signal_log: SignalLog | None = None  # where signals go instead of the store's


async def _run_blocking(argv: tuple[str, ...], stdin: bytes, **options: Any) -> RunResult:
    """The blocking runner behind the async interface: it never suspends, so a one-shot
    engine's ``fire`` runs to the end in one step (``fire_blocking``)."""
    return run_hook_blocking(argv, stdin, **options)


def event_log(settings: Settings, log: EventLog | None) -> EventLog | None:
    """The event log as given, else one at ``settings.log`` (None: none)."""
    if log is None and settings.log is not None:
        return EventLog(settings.log)
    return log


def control_layer(registry: Registry, settings: Settings, store: StateStore, *,
                  one_shot: bool) -> ControlLayer:
    """The hooks.yaml control layer of the registry's project, its ladder in ``store``
    (watching for changes unless ``one_shot`` or the registry does not)."""
    return ControlLayer(registry.project_dir, watch=not one_shot and registry.watching,
                        secrets=settings.secrets, environment=settings.environment,
                        trust_project=registry.trust_project_hooks,
                        trust_store=registry.trust_store, ladder=Ladder(store=store),
                        managed_dir=registry.managed_dir, mode=settings.mode)


def wire(registry: Registry, settings: Settings, **choices: Unpack[Choices]) -> EngineParts:
    """An engine's parts for ``registry`` from ``settings`` and the door's ``choices``
    (``Choices``: each one left out is the default described there).

    Raises:
        StateUnavailable: the store ``settings.state`` names cannot be opened.
    """
    one_shot = choices.get("one_shot", False)
    adopt(settings.runner)  # the process's spawn strategy (MCP_HOOKS_RUNNER)
    log = event_log(settings, choices.get("log"))
    store = choices.get("store")
    state = store if store is not None else store_for(settings.state, log, settings.replica_id)
    blocking = call_here if one_shot else call_off_loop
    control = choices.get("control")
    if control is None:
        control = control_layer(registry, settings, state, one_shot=one_shot)
    guard = choices.get("stop_guard")
    return EngineParts(
        store=state, owns_store=store is None, log=log, logs=log is not None or store is not None,
        one_shot=one_shot, runner=choices.get("runner") or (
            _run_blocking if one_shot else run_hook),
        launcher=choices.get("launcher") or make_launcher(
            log, detached=choices.get("detach_async", False) or one_shot, store=state,
            state=settings.state, replica=settings.replica_id),
        # a replica on a shared store runs more of each persistent hook's processes
        pool=choices.get("pool"), processes=default_processes(scheme(settings.state) != "file"),
        blocking=blocking, store_call=store_caller(state, one_shot),
        envs=HookEnvs(hook_environment(os.environ, settings.secrets)),
        stop_guard=guard if guard is not None else StopGuard(settings.stop_block_cap, state),
        control=control or None, inbox=AidInbox(store=state),
        asker=Asker(state, settings, blocking, one_shot=one_shot,
                    notify=ask_notifier(settings.ask_webhook)),
        observer=choices.get("observer"))


__all__ = ["Choices", "EngineParts", "control_layer", "event_log", "wire"]
