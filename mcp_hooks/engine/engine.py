"""One event -> one ``Outcome``: select, start async hooks, run the chain, guard, log.

The engine knows nothing of MCP, the command line or any agent host: adapters build an
``Event`` (``outcome.py``), call ``Engine.fire`` and translate the ``Outcome`` back.

Running an event (``Engine.fire``):

1. **Select** the hooks whose trigger resolves to the event (matchers on tool events only).
   What stops the event being decided (a hook in scope that did not load, a payload too deep,
   a missing ``work_dir``) is a fault: ``fault_outcome`` under the engine's ``on_fault``.
2. **Start async hooks** at once with the original payload, through the engine's
   ``Launcher`` (``launch.py``); they cannot block or modify, and their results go
   to the event log when they finish, after the reply.
3. **The chain**: one ordered list of links, the sync HOOK.md hooks (scripts and callables,
   in ``discovery.run_order``) then the trigger's hooks.yaml entries (``entries.py``, decided
   as a group off the event loop), run by one loop (``links.py``) within one deadline
   (``Settings.chain_timeout`` from the event's start): each link sees the payload as the
   links before it rewrote it (the chain owns it, ``chain.py``), its verdict is applied in one
   place (``Chain.apply``), and the first block stops every later link (``Chain.stopped``).
   Each verdict also becomes signals (one ``correlation_id`` per event; the outcome lists
   them strongest first). Aid left for the session by an earlier event (``inbox.py``: async
   hooks' and entries' advice) joins this outcome as context.
4. **Guard**: ``before_stop`` denied -> ``continue_working``; the ``StopGuard``
   (``stopguard.py``) counts consecutive blocks per session (a fault's deny too) and lets
   the stop through at its cap, saying so (its block signals become prompts then).
5. **Log** the event (``eventlog.py``) and its signals (``signallog.py``, beside it); an event
   a failure let through (``Chain.fail_open``: a fail-open hook that failed, a fault under
   ``on_fault: warn``) names who failed in its record's ``fail_open``.

What varies between callers is chosen once, at construction, never tested per hook: the
runner (``runner.run_hook`` on an event loop, or the blocking ``run_hook_blocking`` for a
one-shot process), the launcher of background work (``launch.make_launcher``: the engine's
task group and a thread, or a detached process), where blocking oracles run (off the event
loop, or in place) and the stop guard's counter (memory, or a file per session for the host
bridges).
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from mcp_hooks.engine import offloop
from mcp_hooks.engine.callables import CallableHook, notify
from mcp_hooks.engine.chain import Chain
from mcp_hooks.engine.entries import ControlLayer
from mcp_hooks.engine.launch import AsyncJob, Launcher
from mcp_hooks.engine.links import ChainRun, HooksYaml, sync_links
from mcp_hooks.engine.links import HookDone as HookDone  # the doors' name for it
from mcp_hooks.engine.observe import reporting
from mcp_hooks.engine.offloop import call_here, run_unsuspended
from mcp_hooks.engine.payload import event_payload, stdin_for
from mcp_hooks.engine.record import event_record
from mcp_hooks.engine.sessionlog import session_log
from mcp_hooks.engine.stopguard import StopTicket, before_event
from mcp_hooks.engine.wiring import Choices, EngineParts, Runner, wire
from mcp_hooks.guard import named, passes_through
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.runner import RunResult
from mcp_hooks.runner.persistent import PersistentPool
from mcp_hooks.settings import Settings
from mcp_hooks.spec import matching
from mcp_hooks.spec.asking import Approver
from mcp_hooks.spec.events import can_block, canonical_event, is_notification
from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.spec.outcome import FAULT_SOURCE, Event, HookRun, OnFault, Outcome, fault_outcome
from mcp_hooks.state.signallog import signal_record
from mcp_hooks.state.spool import Mark, after_event, event_mark
from mcp_hooks.state.store import StateStore
from mcp_hooks.state.url import close_store

_THREAD_MATCH = 1 << 16  # characters of tool input past which matching leaves the event loop

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11


class Engine:
    """Fires events at the hooks of a ``Registry``.

    ``fire`` is a coroutine and needs an asyncio event loop (the runner and the task group
    of async hooks live on it); a one-shot engine's ``fire_blocking`` needs none. Use as an
    async context manager: async hooks run in the engine's task group, and leaving the block
    waits for them (each bounded by its own timeout).

    Args:
        registry: where the hooks come from.
        settings: the settings that reach the engine (``Settings``): ``stop_block_cap``
            (consecutive ``before_stop`` blocks per session before the loop guard lets the
            agent stop; 0 turns it off), ``on_fault`` (``block``, the default: a fault of ours
            on an event that can block is a deny saying what broke; ``warn``: an allow with
            the warning, ``fault_outcome``), ``secrets`` (values no hook may see in its
            environment; ``MCP_HOOKS_TOKEN`` is always left out, ``hook_environment``),
            ``state`` and ``log``; default ``Settings()``.
        parts: what the engine works with (``wiring.EngineParts``: store, logs, runner,
            launcher, pool, stop guard, control layer, inbox, observer ...), made by
            ``wiring.wire`` from the same settings; None: wired here from ``choices``.
        choices: the door's choices of parts when ``parts`` is None (``wiring.Choices``:
            ``one_shot``, ``log``, ``store``, ``observer`` ...); ``Engine(registry,
            settings, one_shot=True)`` is ``Engine(registry, settings, wire(registry,
            settings, one_shot=True))``.

    Raises:
        TypeError: both ``parts`` and ``choices`` given.
    """

    def __init__(self, registry: Registry, settings: Settings | None = None,
                 parts: EngineParts | None = None, **choices: Unpack[Choices]) -> None:
        settings = settings if settings is not None else Settings()
        if parts is None:
            parts = wire(registry, settings, **choices)
        elif choices:
            raise TypeError(f"Engine: give parts or {', '.join(sorted(choices))}, not both "
                            "(pass them to wiring.wire, which makes the parts)")
        self.settings = settings
        self.registry = registry
        self.log = parts.log
        self._logs = parts.logs
        self.store: StateStore = parts.store
        self._owns_store = parts.owns_store  # closed with the engine (a shared store's pool)
        self.signal_log = parts.signal_log
        self.one_shot = parts.one_shot
        self.on_fault: OnFault = settings.on_fault
        self.stop_guard = parts.stop_guard
        self._runner: Runner = parts.runner
        self._pool, self._owns_pool = parts.pool, False
        self._processes = parts.processes  # metadata.processes when a hook does not say
        self._launcher: Launcher = parts.launcher
        # a one-shot engine never suspends: big inputs are matched in place, not in a thread
        self._select = self._select_here if parts.one_shot else self._select_on_loop
        self._blocking = parts.blocking  # oracles, asks
        self._store_call = parts.store_call  # store calls around each event
        self._in_place = self._store_call is call_here  # those calls made without awaiting
        self._envs = parts.envs
        self.control: ControlLayer | None = parts.control
        self._inbox = parts.inbox
        self._observer = parts.observer
        self._asker = parts.asker

    async def __aenter__(self) -> Engine:
        await self._launcher.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # the caller's own error propagates as it was; the async hooks are stopped then
        try:
            await self._launcher.close(exc)
        finally:
            if self._owns_pool and self._pool is not None:  # persistent hook processes
                await self._pool.aclose()  # later runs are one-shot
            await offloop.close_caller(self._store_call)  # a shared store's asyncio client
            if self._owns_store:
                close_store(self.store)

    # -- firing --------------------------------------------------------------------------

    async def fire(self, event: Event, *, on_hook_done: HookDone | None = None,
                   hold_aid: bool = False, approve: Approver | None = None,
                   woken: bool | None = None) -> Outcome:
        """Run the hooks an event wakes and return the one decision.

        What it cannot process but expects (a payload too deep or unencodable, a hook in
        scope that did not load or could not start, a missing ``work_dir``) is a fault,
        answered by ``fault_outcome`` under the engine's ``on_fault`` policy: a deny saying
        what broke, for an event that can block. A hook's own failure is its verdict
        (``judge``, ``callables``). Anything else (an error of ours, an oracle's
        ``SystemExit``, a ``KeyboardInterrupt`` that stopped a one-shot engine's hook) is
        raised: the door's one guard answers it (``guard.py``). The engine only records the
        event in its log first, as the fault it will be answered with (``_note_fault``), so
        ``mcp-hooks log`` shows it once; a cancellation of the awaiting task and the
        coroutine being closed are not recorded (``guard.passes_through``).

        Args:
            event: the event.
            on_hook_done: awaited after each sync hook finishes (for progress reports).
            hold_aid: leave the session's waiting aid for a later event (the caller's reply
                to this one cannot show it: a host event with no context form).
            approve: the door's way to ask a person when a hook answers ``ask``
                (``spec/asking.py``, ``engine/asking.py``); None: out of band only.
            woken: the door has just asked ``wakes(name, control=False)`` (changes on disk
                picked up) and ``control.wakes(name)``, this being the latter's answer: the
                engine asks neither again (one poll of each watcher per event). None: it
                asks both itself.

        Raises:
            UnknownEventError: the event type is not in the catalogue.
            BaseException: whatever broke below; the door turns it into its fault answer.
        """
        name = canonical_event(event.event_type)
        trace = self._observer.event(name, event) if self._observer is not None else None
        try:
            outcome = await self._fire(name, event, on_hook_done if trace is None
                                       else reporting(trace, on_hook_done), hold_aid, approve,
                                       woken)
        except BaseException as exc:  # recorded, then raised to the door's guard
            if not passes_through(exc):
                self._note_fault(event, name, exc)
            if trace is not None:
                trace.finish(None, exc)
            raise
        if trace is not None:
            trace.finish(outcome, None)
        return outcome

    def _note_fault(self, event: Event, name: str, exc: BaseException) -> None:
        """Log an event whose firing raised, as the fault the door answers (never raises:
        the log must not hide what broke)."""
        outcome = fault_outcome(name, f"the engine failed: {named(exc)}", on_fault=self.on_fault)
        with contextlib.suppress(Exception):  # a log that fails never hides the fault itself
            self._logged(event, name, self._work_dir(event), outcome, {})

    async def _fire(self, name: str, event: Event, on_hook_done: HookDone | None,
                    hold_aid: bool = False, approve: Approver | None = None,
                    woken: bool | None = None) -> Outcome:
        # 1. select (each store call off the event loop: a slow store holds no other event;
        # the chain deadline counts from here)
        start = time.monotonic()
        if woken is None:  # else the door has just picked up changes (``wakes``)
            self.registry.refresh()
        if self._pool is not None:  # stop processes of hooks gone since (runner.persistent)
            await self._pool.prune(self.registry)
        hooks = self._select(name, event)
        if hooks is None:  # a big input is matched off the event loop
            hooks = await self._select_off_loop(name, event)
        work_dir = self._work_dir(event)
        payload = event_payload(name, event, work_dir)
        if name == "session_end" and hooks:  # every replica's records (sessionlog.py)
            payload["session_log"] = await self._store_call(lambda: session_log(self.store, event))
        notes = self.registry.held_notes(name, event.tool_name, event.tool_input)  # trust's
        before = functools.partial(before_event, self.stop_guard, self.store, name, event,
                                   payload)
        ticket, lost = (before() if self._in_place
                        else await self._store_call(before, event.session_id))
        fault = self._fault(name, event, hooks, payload, work_dir, lost)
        mark = event_mark()  # a store call failing for this event from here fails it closed
        if fault is not None:
            outcome = fault_outcome(name, fault, on_fault=self.on_fault, warnings=notes)
            if outcome.denied or not os.path.isdir(work_dir):  # 4. guard (a fault counts too)
                mark.open = False
                return await self._store_call(lambda: self._fault_only(
                    event, name, work_dir, outcome, ticket))
            notes = outcome.warnings  # warn: the valid hooks (and hooks.yaml) run, warned
        # 2. start async hooks; the chain (3.) owns the payload from here
        chain = Chain(name, event, self._start_async(name, event, hooks, payload, work_dir), notes,
                      self.settings.chain_timeout, start, payload)  # the payload is the chain's
        chain.approve = approve
        if fault is not None:  # on_fault: warn let the fault through
            chain.failed.append(FAULT_SOURCE)
        return await self._decide(name, event, hooks, work_dir, chain, (ticket, mark),
                                  on_hook_done, hold_aid, woken)

    async def _decide(self, name: str, event: Event, hooks: list[HookSpec], work_dir: str,
                      chain: Chain, marks: tuple[StopTicket | None, Mark],
                      on_hook_done: HookDone | None, hold_aid: bool, woken: bool | None
                      ) -> Outcome:
        """Steps 3 to 5: the session's aid, the chain's links in one loop, the guard, the log
        (``marks``: the stop's ticket and the event's count of failed store calls). A local
        store's calls run in place (``_in_place``), a shared one's on its asyncio client."""
        if not hold_aid and event.session_id:  # no session: no aid waits
            take = functools.partial(self._inbox.take, event.session_id)
            chain.deliver(take() if self._in_place
                          else await self._store_call(take, event.session_id))
        todo = sync_links(name, hooks) if hooks else []  # 3. the chain's links (links.py)
        if self.control is not None and (self.control.wakes(name) if woken is None else woken):
            todo.append(HooksYaml(self.control, self._blocking, self._launcher, self.log))
        if todo:
            await ChainRun(name, event, work_dir, chain, todo, registry=self.registry,
                           run_script=self._run_one, asker=self._asker, on_fault=self.on_fault,
                           mode=self.settings.mode, on_hook_done=on_hook_done).run()
        outcome = after_event(self.store, marks[1], name, chain.outcome(name), self.on_fault)
        finish = functools.partial(self._finish, event, name, work_dir, outcome, marks[0],
                                   chain)  # 4. guard, 5. log
        return finish() if self._in_place else await self._store_call(finish, event.session_id)

    def _finish(self, event: Event, name: str, work_dir: str, outcome: Outcome,
                ticket: StopTicket | None, chain: Chain) -> Outcome:
        """Steps 4 and 5 (the store's calls): count the stop; log the event, naming who failed."""
        outcome = self.stop_guard.after(ticket, outcome)
        return self._logged(event, name, work_dir, outcome, chain.outputs, chain.delivered,
                            fail_open=[] if outcome.denied else chain.fail_open())

    def _fault_only(self, event: Event, name: str, work_dir: str, outcome: Outcome,
                    ticket: StopTicket | None) -> Outcome:
        """A fault's outcome with no hook run: denied, or let through (``warn``) where no
        hook can run (no ``work_dir``): then logged as a fail-open pass of ours."""
        outcome = self.stop_guard.after(ticket, outcome)
        passed = not outcome.denied and can_block(name)
        return self._logged(event, name, work_dir, outcome, {},
                            fail_open=[FAULT_SOURCE] if passed else [])

    def wakes(self, name: str, *, control: bool = True) -> bool:
        """Whether firing this canonical event could do anything but allow: a hook or
        callable for it, one in scope that did not load, an untrusted project hook to warn
        of, a hooks.yaml entry. Picks up changes on disk first. False: ``fire`` would return
        a plain allow, so a caller may answer one itself (the library's fast path,
        ``api.py``), skipping the event log and aid waiting for the session.
        ``control=False``: the caller has asked hooks.yaml itself."""
        registry = self.registry
        registry.refresh()
        if registry.wakes(name):
            return True
        return control and self.control is not None and self.control.wakes(name)

    def _select_here(self, name: str, event: Event) -> list[HookSpec] | None:
        return self.registry.select(name, event.tool_name, event.tool_input)

    def _select_on_loop(self, name: str, event: Event) -> list[HookSpec] | None:
        """The selection, or None when the input is big enough to be matched off the event
        loop (``_select_off_loop``): other clients go on meanwhile."""
        if (event.tool_input and self.registry.has_patterns(name)
                and matching.larger_than(event.tool_input, _THREAD_MATCH)):
            return None
        return self.registry.select(name, event.tool_name, event.tool_input)

    async def _select_off_loop(self, name: str, event: Event) -> list[HookSpec]:
        # a one-shot `fire` never comes here. lazy: 1.3 ms of cold fire (python -X importtime)
        import anyio

        return await anyio.to_thread.run_sync(
            self.registry.select, name, event.tool_name, event.tool_input)

    def _start_async(self, name: str, event: Event, hooks: list[HookSpec],
                     payload: dict[str, Any], work_dir: str) -> list[HookRun]:
        """Hand the async hooks to the launcher; their ``scheduled`` runs, in order.

        A notification (``events.NOTIFY_ONLY``: the streamed chunks) makes every hook one:
        scripts go to the launcher, Python callables start beside the caller
        (``callables.notify``), and none is waited for."""
        every = is_notification(name)
        started = [hook for hook in hooks if hook.is_async or every]
        if not started:
            return []
        jobs = [AsyncJob(hook, stdin_for(hook, payload), work_dir,
                         self._envs.get(hook, work_dir, event.session_id))
                for hook in started if not isinstance(hook, CallableHook)]
        if jobs:
            self._launcher.launch(name, event.session_id, jobs)
        calls = [hook for hook in started if isinstance(hook, CallableHook)]
        if calls:
            notify(calls, name, dict(payload, event_type=name))
        return [HookRun(name=hook.name, scope=hook.scope, priority=hook.priority,
                        mode="async", status="scheduled") for hook in started]

    async def _run_one(self, hook: HookSpec, stdin: bytes, work_dir: str,
                       event: Event, timeout: float) -> RunResult:
        """Run one sync script hook: the one place that chooses how (its resident process
        when persistent, else a process of its own; ``links.HookLink`` calls a callable)."""
        if hook.persistent and not self.one_shot:  # its resident process (runner.persistent)
            if self._pool is None:
                self._pool, self._owns_pool = PersistentPool(one_shot=self._runner), True
            return await self._pool.run(
                hook, stdin, cwd=work_dir, env=self._envs.get(hook, work_dir, event.session_id),
                timeout=timeout, limits=hook.limits,
                generation=self.registry.generation, root=self.registry.project_dir,
                processes=hook.processes or self._processes)
        return await self._runner(hook.entry, stdin, cwd=work_dir,
                                  env=self._envs.get(hook, work_dir, event.session_id),
                                  timeout=timeout, limits=hook.limits)

    def _fault(self, name: str, event: Event, hooks: list[HookSpec], payload: dict[str, Any],
               work_dir: str, lost: str | None) -> str | None:
        """What stops this event being decided, or None: a shared store known lost
        (``before_event``), broken hooks in scope (whose declared matcher admits the call), a
        payload we cannot hand on, a missing folder."""
        if lost is not None:  # a shared store known lost (spool.py): asked again first
            return lost
        broken = self.registry.faults_for(name, (event.tool_name, event.tool_input))
        if broken:
            shown = "; ".join(str(i) for i in broken[:5])
            more = f" (and {len(broken) - 5} more)" if len(broken) > 5 else ""
            return (f"{len(broken)} hook(s) that could handle {name} failed to load: {shown}"
                    f"{more}. Fix or remove them (`mcp-hooks validate` shows each problem)")
        if not [h for h in hooks if not isinstance(h, CallableHook)]:
            return None  # nothing to encode, no folder to run in (callables copy the input)
        deepest = matching.depth(payload)
        if deepest > matching.MAX_DEPTH:
            return (f"the event nests {deepest}+ levels deep; mcp-hooks hands hooks at most "
                    f"{matching.MAX_DEPTH}. Send a flatter tool input")
        if not os.path.isdir(work_dir):
            return f"work_dir {work_dir!r} is not an existing folder, so no hook can run in it"
        return None

    def _work_dir(self, event: Event) -> str:
        if event.work_dir is not None:
            return event.work_dir
        if self.registry.project_dir is not None:
            return str(self.registry.project_dir)
        return os.getcwd()

    def fire_blocking(self, event: Event, *, on_hook_done: HookDone | None = None,
                      hold_aid: bool = False, approve: Approver | None = None) -> Outcome:
        """``fire`` for a one-shot process, with no event loop at all.

        With ``one_shot`` the engine never suspends (hooks run in ``poll``, async hooks are
        handed to a detached process), so its coroutine runs to the end in one step; so
        must ``on_hook_done`` and ``approve`` (coroutines that await nothing).

        Raises:
            UnknownEventError: as ``fire``.
        """
        if not self.one_shot:
            raise RuntimeError("fire_blocking needs an Engine made with one_shot=True")
        outcome = run_unsuspended(self.fire(event, on_hook_done=on_hook_done,
                                            hold_aid=hold_aid, approve=approve))
        if outcome is None:
            raise RuntimeError("a one-shot engine must not wait on an event loop")
        return outcome

    # -- the log -------------------------------------------------------------------------

    def _logged(self, event: Event, name: str, work_dir: str, outcome: Outcome,
                outputs: dict[str, RunResult], delivered: frozenset[str] = frozenset(),
                fail_open: list[str] | None = None) -> Outcome:
        """Log the event (``fail_open``: the links whose failure let it through, its record's
        ``fail_open`` field, ``mcp-hooks log --fail-open``) and its signals."""
        if self._logs:
            self._log_event(event, name, work_dir, outcome, outputs, fail_open or [])
        sent = [s for s in outcome.signals if s.id not in delivered]
        if self.signal_log is not None and sent:
            self.signal_log.record(sent, event.session_id)
        elif self._logs:
            for signal in sent:
                self.store.append("signals", signal_record(signal, event.session_id))
        return outcome

    def _log_event(
        self, event: Event, name: str, work_dir: str, outcome: Outcome,
        outputs: dict[str, RunResult], fail_open: list[str],
    ) -> None:
        control = self.control
        digest = self.registry.hooks_digest()
        layers = self.registry.layer_digests()
        if control is not None:
            digest, layers = control.digest(digest), layers | control.layer_digests()
        self.store.append("events", event_record(
            event, name, work_dir, outcome, outputs, fail_open, hooks_digest=digest,
            layer_digests=layers, secrets=self.settings.secrets, door=self.settings.door))

