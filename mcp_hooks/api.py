"""``mcp_hooks`` as a library: load HOOK.md hooks, register Python callables, fire events.

::

    from mcp_hooks import Hooks

    hooks = Hooks(project_dir=".")            # user hooks + <project>/.agents/hooks

    @hooks.before_tool(tool="Shell")          # a Python callable in the same chain
    def no_force_push(tool_input):
        if "push --force" in tool_input.get("command", ""):
            raise PermissionError("force-push is not allowed here")   # raising denies
        return None                           # None: unchanged; a dict: the new input

    outcome = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"})
    outcome = await hooks.afire("before_model", messages=[...])      # the same Outcome

Contract (what a caller may rely on):

- ``fire`` and ``afire`` take the event (any spelling, or an ``Event``) and its fields as
  keywords: ``Event``'s own (``session_id``, ``work_dir``, ``tool_name``, ``tool_input``,
  ``tool_output``, ``error``, ``payload``, ``context`` ...); any other keyword goes into the
  payload (``messages=``, ``response=``, ``phase=``, ``chunk=``). Both return the ``Outcome``
  ``Engine.fire`` returns, never raise for a hook's failure (a fault of ours is a deny on an
  event that can block, ``on_fault``), and raise ``UnknownEventError``/``InvalidEventError``
  for a bad event. Whatever a hook, an oracle or a callable raises (``SystemExit``,
  ``KeyboardInterrupt``, ``GeneratorExit``, a ``CancelledError`` of its own, any
  ``BaseException``) is a deny naming it, and the next call works as before; only the caller's
  own interruption goes on: a cancellation of the task awaiting ``afire``
  (``guard.passes_through``), a Ctrl-C while ``fire`` waits for the worker thread (cancelled).
- **Threads and loops.** ``fire`` may be called from many threads at once and ``afire`` from
  many event loops at once (each loop gets its own engine, made under a lock); the hooks on
  disk are watched by one watcher per engine, asked under a lock (``watch``, ``discovery``).
- **One vocabulary.** A tool name a host or framework uses for one of the canonical tools
  (``Bash``, ``run_shell_command``, ``shell`` -> ``Shell``; ``file_path`` -> ``path``) is
  read as the MCP server and the proxy read it (``vocabulary.MCP_CLIENTS``): hooks see the
  canonical name and keys, and the caller's own under ``payload["host"]``; a rewrite
  (``modified_input``) comes back in the caller's keys (one its tool cannot take is a deny,
  ``on_fault``). A tool event (``before_tool``, ``after_tool``, ``after_tool_failure``)
  fired without ``tool_name`` carries a warning: no hook with a tool matcher can match it.
- **Nothing skipped in silence.** Each warning of an outcome ``fire``/``afire`` return (a
  project hook held back for want of trust, a hook that failed) is logged once per session,
  at WARNING, under the ``mcp_hooks`` logger (``Told``; the adapters, which fire unguarded,
  log under their framework's logger instead).
- **Fast path.** An event that nothing would act on (no HOOK.md hook, callable, hook that
  failed to load, untrusted project hook or hooks.yaml entry: ``Engine.wakes``) is answered
  with one shared allow ``Outcome`` per event (do not change its lists), is not logged, and
  its fields are not checked.
- **Where hooks run.** A chain of Python callables only runs at once in the caller's thread
  (``fire``) or task (``afire``). Anything else runs on an event loop: ``afire`` on the
  running loop (one engine per loop, made on first use); ``fire`` on the ``Hooks``' own worker
  thread and loop, started on first need. Persistent hook processes and async hooks live there
  as long as the ``Hooks``: ``close()``/``aclose()`` (or ``with``/``async with``) stop them.
  A closed loop's engine (``asyncio.run`` twice) is dropped, its processes killed, when the
  next loop's is made (or by ``close()``). A hook removed, changed or no longer trusted has
  its process stopped at the next event, fast path or not (the running loop's engine and the
  worker's; another loop's at its own next event).
- **fire inside a running event loop** works: the calling thread waits for the worker thread
  (the loop is blocked while hooks run: in a coroutine prefer ``afire``). ``fire`` from a hook
  on the worker thread raises ``ReentryError`` (it would deadlock), as ``close``/``aclose`` do
  from inside one of this object's hooks.
- **Callables** (``registrar.py``): ``hooks.on(event)`` or a shortcut registers one for this
  object, ``class_hook`` for every instance of the class; they run after the HOOK.md hooks.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Collection
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from mcp_hooks.engine.asking import as_approver
from mcp_hooks.engine.callables import tables_generation
from mcp_hooks.engine.engine import Engine
from mcp_hooks.engine.stopguard import StopGuard
from mcp_hooks.engine.wiring import wire
from mcp_hooks.errors import ConfigError, InvalidEventError, UnknownEventError
from mcp_hooks.guard import callers_own, named, passes_through
from mcp_hooks.lanes import Lane, LoopLauncher, ReentryError, Worker, run_inline
from mcp_hooks.registrar import CallableRegistrar
from mcp_hooks.registry.discovery import Registry, find_project_dir
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.runner.persistent import PersistentPool
from mcp_hooks.settings import Settings, for_library
from mcp_hooks.spec.asking import AskRequest
from mcp_hooks.spec.events import TOOL_EVENTS, canonical_event
from mcp_hooks.spec.outcome import Event, OnFault, Outcome, fault_outcome
from mcp_hooks.spec.toolcall import answered, read_tool_call, tool_name_of
from mcp_hooks.state.eventlog import EventLog, default_log_path
from mcp_hooks.state.remote import redact
from mcp_hooks.state.url import close_store, store_for

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Coroutine

_ALLOW: dict[str, Outcome] = {}  # the fast path's shared answers, by canonical event
_TOLD_CAP = 4096  # (session, warning) pairs remembered; past it, the memory starts afresh
# the Hooks objects whose chain runs in this context (a hook calling close() is refused)
_FIRING: ContextVar[tuple[Hooks, ...]] = ContextVar("mcp_hooks_firing", default=())


def _settings(project_dir: str | Path | None, user_dir: str | Path | None,
              log: str | Path | EventLog | bool | None, on_fault: OnFault | None,
              trust_project_hooks: bool | None, stop_block_cap: int | None,
              secrets: Collection[str] | None) -> Settings:
    """The ``Settings`` the convenience keywords of ``Hooks`` give (None: the default; what
    they leave unsaid of trust and the managed layer: ``settings.for_library``)."""
    if log is True:
        log = default_log_path()
    path = log.path if isinstance(log, EventLog) else Path(log) if log else None
    return for_library(
        project_dir=Path(project_dir) if project_dir is not None else None,
        user_dir=Path(user_dir) if user_dir is not None else None, log=path,
        on_fault=on_fault, trust_project_hooks=trust_project_hooks,
        stop_block_cap=stop_block_cap, secrets=tuple(secrets or ()))


class Told:
    """Nothing is skipped in silence: each warning of an outcome (a project hook held back
    for want of trust, a hook that failed, a tool event with no tool name) is logged once per
    session, at WARNING, through ``logger``: ``Hooks.fire``/``afire`` under ``mcp_hooks``,
    an adapter under its framework's (``adapters/_firing.py``)."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self._told: set[tuple[str, str]] = set()
        self._lock = threading.Lock()  # fire may be called from many threads at once

    def tell(self, outcome: Outcome, session_id: Any) -> Outcome:
        """Log each warning of ``outcome`` not yet logged for this session; the outcome."""
        for warning in outcome.warnings:
            key = (str(session_id), warning)
            with self._lock:
                if key in self._told:
                    continue
                if len(self._told) >= _TOLD_CAP:
                    self._told.clear()
                self._told.add(key)
            self.logger.warning("mcp-hooks (%s): %s", outcome.event_type, warning)
        return outcome


def _session_of(event: str | Event, fields: dict[str, Any]) -> str | None:
    session = event.session_id if isinstance(event, Event) else fields.get("session_id")
    return session if isinstance(session, str) else None


def _allow(name: str) -> Outcome:
    outcome = _ALLOW.get(name)
    if outcome is None:
        outcome = _ALLOW[name] = Outcome(event_type=name)
    return outcome


class Hooks(CallableRegistrar):
    """HOOK.md hooks of a user folder and a project, plus Python callables, fired as one.

    Give either ``settings`` (a ``Settings``: ``Settings.from_env()`` reads the flags and
    ``MCP_HOOKS_*`` variables a command would) or the keywords below, a convenience that builds
    the ``Settings`` (``self.settings``); not both.

    Args:
        project_dir: the project whose ``.agents/hooks`` apply (and hooks.yaml); None: none.
        settings: every setting at once (its ``project_dir`` None: no project).
        user_dir: the user hooks folder; None for ``~/.config/agents/hooks``.
        log: the event log: a path, an ``EventLog``, True for the default one; None: none.
        on_fault: ``block`` (a fault of ours denies an event that can block) or ``warn``.
        trust_project_hooks: run project hooks without the trust store (CI); None reads
            ``MCP_HOOKS_TRUST_PROJECT_HOOKS``.
        stop_block_cap: consecutive ``before_stop`` blocks per session before the loop guard
            lets the agent stop (shared by every engine of this object).
        secrets: values no hook process may see in its environment.
        watch: pick up changes on disk before each event (True), or read the folders once.
        approve: how a hook's ask reaches a person (docs/ask.md): a callback, sync or async,
            given the ``AskRequest``, returning an ``AskAnswer``, a bool or None (nobody).

    Raises:
        ConfigError: a bad value (``on_fault="wran"``, a negative cap), or ``settings`` given
            with another setting keyword.
    """

    def __init__(
        self, project_dir: str | Path | None = None, *, settings: Settings | None = None,
        user_dir: str | Path | None = None, log: str | Path | EventLog | bool | None = None,
        on_fault: OnFault | None = None, trust_project_hooks: bool | None = None,
        stop_block_cap: int | None = None, secrets: Collection[str] = (), watch: bool = True,
        approve: Callable[[AskRequest], Any] | None = None,
    ) -> None:
        given: dict[str, object] = {
            "project_dir": project_dir, "user_dir": user_dir, "log": log, "on_fault": on_fault,
            "trust_project_hooks": trust_project_hooks, "stop_block_cap": stop_block_cap,
            "secrets": secrets or None}
        if settings is None:
            settings = _settings(project_dir, user_dir, log, on_fault, trust_project_hooks,
                                 stop_block_cap, secrets)
        elif any(value is not None and value is not False for value in given.values()):
            both = ", ".join(k for k, v in given.items() if v is not None and v is not False)
            raise ConfigError(f"Hooks: give settings= or {both}, not both (put them in the "
                              "Settings: dataclasses.replace(settings, ...))")
        self.settings = settings if settings.door else replace(settings, door="api")
        self.project_dir = settings.project_dir
        self.user_dir = settings.user_dir
        self.log = log if isinstance(log, EventLog) else (
            EventLog(settings.log) if settings.log is not None else None)
        self.on_fault: OnFault = settings.on_fault
        self._approve = as_approver(approve)
        url = settings.state  # file: counts in memory, as always; a shared store: one for all
        self._store = None if url == "file:" else store_for(url, None, settings.replica_id)
        trust = TrustStore.over(self._store, redact(url), settings.trust_key)  # its key signs
        self._options = {"trust_project_hooks": settings.trust_project_hooks, "watch": watch,
                         "trust_store": trust or TrustStore(settings.trust_store),
                         "managed_dir": settings.managed_dir}
        self._guard = StopGuard(settings.stop_block_cap, self._store)
        super().__init__()  # the callables (registrar.py)
        self._inlines: dict[tuple[str, bool], tuple[tuple[int, int], bool]] = {}  # _inline
        self._lock = threading.Lock()
        self._engine = self._make_engine()  # the fast path's and the inline chains' engine
        self._seen = self._engine.registry.generation  # the hooks as the lanes last pruned
        self._worker: Worker | None = None
        self._lanes: dict[asyncio.AbstractEventLoop, Lane] = {}
        self._told = Told(logging.getLogger("mcp_hooks"))  # each warning once per session

    def _make_engine(self, pool: PersistentPool | None = None) -> Engine:
        registry = Registry(self.user_dir, self.project_dir, **self._options)  # type: ignore[arg-type]
        registry.callables = self._view
        return Engine(registry, self.settings, wire(
            registry, self.settings, log=self.log, store=self._store, pool=pool,
            stop_guard=self._guard, launcher=LoopLauncher(self.log, self._store)))

    def _make_lane(self) -> Lane:
        pool = PersistentPool()
        return Lane(self._make_engine(pool), pool)

    # -- firing ----------------------------------------------------------------------------

    def fire(self, event: str | Event, /, **fields: Any) -> Outcome:
        """Fire an event and wait for its ``Outcome`` (see the module docstring)."""
        name = canonical_event(event.event_type if isinstance(event, Event) else event)
        try:
            outcome = self._fire_unguarded(name, event, fields)
        except _MISTAKES:  # the caller's: a field of the wrong shape, a call that deadlocks
            raise
        except BaseException as exc:  # the door's one guard: a deny, whatever was raised
            if callers_own(exc):  # Ctrl-C while it waited for the worker (``Worker.run``)
                raise
            outcome = self._fault(name, exc, event, fields)
        return self._told.tell(outcome, _session_of(event, fields))

    def _fire_unguarded(self, name: str, event: str | Event, fields: dict[str, Any]) -> Outcome:
        """``fire`` without its guard: raises whatever broke below. For a door with a guard
        of its own over this one (the adapters' ``Firing``), so each door has one."""
        if name not in TOOL_EVENTS:
            return self._fire(name, event, fields)
        event, fields, call = read_tool_call(event, fields)
        return answered(name, self._fire(name, event, fields), call, self.on_fault,
                        tool_name_of(event, fields))

    def _fire(self, name: str, event: str | Event, fields: dict[str, Any]) -> Outcome:
        engine = self._engine
        control = self._control(name)
        if not control and not engine.wakes(name, control=False):
            if engine.registry.generation != self._seen:
                self._prune_worker()
            return _allow(name)
        if engine.registry.generation != self._seen:
            self._prune_worker()
        built = _build(event, fields)
        if not control and self._inline(name, sync=True):
            return run_inline(self._inside(engine.fire(built, approve=self._approve,
                                                       woken=False)), name, self.on_fault)
        with self._lock:
            if self._worker is None:
                self._worker = Worker(self._make_lane())
            worker = self._worker
        return worker.run(lambda: self._inside(worker.engine.fire(built, approve=self._approve)))

    async def afire(self, event: str | Event, /, **fields: Any) -> Outcome:
        """``fire`` for a coroutine: hooks run on the running event loop."""
        name = canonical_event(event.event_type if isinstance(event, Event) else event)
        try:
            outcome = await self._afire_unguarded(name, event, fields)
        except _MISTAKES:
            raise
        except BaseException as exc:  # the door's one guard, as in ``fire``
            if passes_through(exc):  # the caller's own cancellation still cancels
                raise
            outcome = self._fault(name, exc, event, fields)
        return self._told.tell(outcome, _session_of(event, fields))

    async def _afire_unguarded(self, name: str, event: str | Event,
                               fields: dict[str, Any]) -> Outcome:
        """``afire`` without its guard (see ``_fire_unguarded``)."""
        if name not in TOOL_EVENTS:
            return await self._afire(name, event, fields)
        event, fields, call = read_tool_call(event, fields)
        return answered(name, await self._afire(name, event, fields), call,
                        self.on_fault, tool_name_of(event, fields))

    async def _afire(self, name: str, event: str | Event, fields: dict[str, Any]) -> Outcome:
        engine = self._engine
        control = self._control(name)
        if not control and not engine.wakes(name, control=False):
            if engine.registry.generation != self._seen:
                await self._prune_here()
            return _allow(name)
        if engine.registry.generation != self._seen:
            await self._prune_here()
        built = _build(event, fields)
        if not control and self._inline(name, sync=False):
            return await self._inside(engine.fire(built, approve=self._approve, woken=False))
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        loop = asyncio.get_running_loop()
        lane = self._lanes.get(loop)
        if lane is None:
            with self._lock:  # loops of other threads make their lanes at the same time
                lane = self._lanes.get(loop)
                made = lane is None
                if lane is None:
                    for old in [old for old in self._lanes if old.is_closed()]:
                        # its loop is gone: nothing of it can be awaited; its processes die
                        self._lanes.pop(old).drop(old)
                    lane = self._lanes[loop] = self._make_lane()
            if made:
                await lane.engine.__aenter__()
        return await self._inside(lane.engine.fire(built, approve=self._approve))

    async def _inside(self, step: Coroutine[Any, Any, Outcome]) -> Outcome:
        """Run a chain of this object, marked as such (``close`` from a hook is refused)."""
        token = _FIRING.set((*_FIRING.get(), self))
        try:
            return await step
        finally:
            _FIRING.reset(token)

    def _fault(self, name: str, exc: BaseException, event: str | Event,
               fields: dict[str, Any]) -> Outcome:
        """The door's fail-closed answer, counted by the loop guard (``StopGuard.settle``)."""
        return self._guard.settle(_session_of(event, fields), fault_outcome(
            name, f"Hooks could not fire {name}: {named(exc)}", on_fault=self.on_fault))

    @property
    def stop_guard(self) -> StopGuard:
        """The ``before_stop`` loop guard every engine of this object shares; a door that
        answers a stop itself (an adapter's fault) counts it here (``StopGuard.settle``)."""
        return self._guard

    async def _prune_here(self) -> None:
        """Hooks changed on disk (seen by the fast path's registry): the running loop's lane
        and the worker stop the processes of hooks gone, without waiting for an event."""
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        self._seen = self._engine.registry.generation
        lane = self._lanes.get(asyncio.get_running_loop())
        if lane is not None:
            await lane.prune()
        self._prune_worker(wait=False)  # this loop is not blocked for the worker's

    def _prune_worker(self, *, wait: bool = True) -> None:
        """``_prune_here`` for the worker's lane, on its loop."""
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        self._seen = self._engine.registry.generation
        worker = self._worker
        if worker is not None and threading.current_thread() is not worker.thread:
            done = asyncio.run_coroutine_threadsafe(worker.lane.prune(), worker.loop)
            if wait:
                done.result()

    def _control(self, name: str) -> bool:
        """Whether hooks.yaml has entries for the event (asked once per event here)."""
        control = self._engine.control
        return control is not None and control.wakes(name)

    def _inline(self, name: str, *, sync: bool) -> bool:
        """Whether the chain is Python callables only (and, for ``fire``, none async); the
        caller has asked hooks.yaml already. Known until the hooks on disk (the registry's
        ``generation``) or a callable table change."""
        seen = (self._engine.registry.generation, tables_generation())
        known = self._inlines.get((name, sync))
        if known is not None and known[0] == seen:
            return known[1]
        inline = self._only_callables(name, sync)
        self._inlines[(name, sync)] = (seen, inline)
        return inline

    def _only_callables(self, name: str, sync: bool) -> bool:
        registry = self._engine.registry
        if (registry.for_event(name) or registry.faults_for(name)
                or any(u.spec.event == name for u in registry.untrusted)):
            return False
        awaits = getattr(self._approve, "awaits", False)  # an async approve needs a loop
        return not sync or not (awaits or any(h.awaits for h in self._view.for_event(name)))

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the worker thread, its persistent hook processes and async hooks (waiting
        for the async hooks, each bounded by its timeout). Engines of other event loops are
        closed when their loop is idle; ``aclose`` closes the running loop's.

        Raises:
            ReentryError: called from inside a hook of this object (its chain is running).
        """
        self._refuse_inside("close")
        with self._lock:
            worker, self._worker = self._worker, None
            lanes, self._lanes = self._lanes, {}
        if worker is not None:
            worker.close()
        for loop, lane in lanes.items():
            if not loop.is_closed() and not loop.is_running():
                loop.run_until_complete(lane.aclose())
            else:  # it cannot be awaited from here: its processes are killed in place
                lane.drop(loop)
        self._engine.registry.close()
        if self._store is not None:
            close_store(self._store)

    async def aclose(self) -> None:
        """``close`` from a coroutine: the running loop's engine first, then the rest."""
        import asyncio  # lazy: 59 ms of cold fire (python -X importtime)

        self._refuse_inside("aclose")
        with self._lock:
            lane = self._lanes.pop(asyncio.get_running_loop(), None)
        if lane is not None:
            await lane.aclose()
        await asyncio.to_thread(self.close)

    def _refuse_inside(self, what: str) -> None:
        worker = self._worker
        if any(h is self for h in _FIRING.get()) or (
                worker is not None and threading.current_thread() is worker.thread):
            raise ReentryError(
                f"{what}() called from inside a hook; a Hooks cannot stop the chain it is "
                f"running (it would deadlock). Close it after fire/afire has returned")

    def __enter__(self) -> Hooks:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Hooks:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()


_MISTAKES = (UnknownEventError, InvalidEventError, ReentryError)  # raised, not answered


def _build(event: str | Event, fields: dict[str, Any]) -> Event:
    """An ``Event`` from the name and keywords (unknown keywords go to the payload)."""
    if isinstance(event, Event):
        if fields:
            raise InvalidEventError("fields", "fire(Event) takes no further fields; put them "
                                    "in the Event")
        return event
    return Event.of(event, fields)


_DEFAULT: list[Hooks] = []


def default_hooks() -> Hooks:
    """The ``Hooks`` behind ``mcp_hooks.fire``/``afire``: the user hooks and the project
    found from the current folder (``discovery.find_project_dir``), made on first use."""
    if not _DEFAULT:
        hooks = Hooks(find_project_dir(Path.cwd()))
        atexit.register(hooks.close)
        _DEFAULT.append(hooks)
    return _DEFAULT[0]


def fire(event: str | Event, /, **fields: Any) -> Outcome:
    """``default_hooks().fire(...)``."""
    return default_hooks().fire(event, **fields)


async def afire(event: str | Event, /, **fields: Any) -> Outcome:
    """``default_hooks().afire(...)``."""
    return await default_hooks().afire(event, **fields)
