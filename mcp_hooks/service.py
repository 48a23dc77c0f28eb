"""Projects -> engines: the hooks a long-running door (the MCP server, the bridge endpoint)
fires events at, bounded by roots, reloaded when they change on disk.

``HookService`` owns one ``Registry`` and ``Engine`` per project (found from a call's
``work_dir``, which must lie under one of the service's roots), one shared user folder and
event log, and a watcher that notices hooks changing on disk and tells its listeners. Doors
use ``await service.engine_for(work_dir)``, ``service.fire(event)`` and
``service.registry_for(work_dir)``; ``find_hook`` and ``read_hook`` serve progressive
disclosure (a hook's whole HOOK.md, read only when asked).

It knows no MCP. Its errors come from ``mcp_hooks.errors``: a caller's mistake (a
``work_dir`` outside the roots, a hook name that is not one, a hook that is not installed) is
a ``BadRequest`` (a ``ConfigError``); a project whose hooks cannot be loaded right now is
``ServiceUnavailable`` (a ``RunError``). A door reports the first to its caller and answers an
event hit by the second with ``fault_outcome`` (``fire`` does so itself).

Fail closed: ``fire`` answers an event whose project's hooks cannot be loaded with
``fault_outcome`` under the ``on_fault`` policy (for an event that can block, a deny whose
reason says what broke); anything else that breaks under it is raised to the door, whose one
guard answers it the same way (``guard.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup

from mcp_hooks.engine.engine import Engine
from mcp_hooks.engine.observe import EventObserver
from mcp_hooks.engine.wiring import wire
from mcp_hooks.errors import ConfigError, HookFileError, RunError
from mcp_hooks.options import trust_store_of
from mcp_hooks.registry.discovery import (
    Registry,
    find_project_dir,
    project_hooks_dir,
)
from mcp_hooks.registry.folders import InvalidHook
from mcp_hooks.runner.persistent import PersistentPool
from mcp_hooks.settings import Settings
from mcp_hooks.spec.asking import Approver
from mcp_hooks.spec.events import canonical_event
from mcp_hooks.spec.hookfile import NAME_RE, HookSpec, parse_frontmatter, read_hook_file
from mcp_hooks.spec.outcome import Event, HookRun, OnFault, Outcome, fault_outcome
from mcp_hooks.state.eventlog import EventLog
from mcp_hooks.state.store import StateStore
from mcp_hooks.state.url import close_store, store_for

logger = logging.getLogger("mcp_hooks.service")

WATCH_INTERVAL = 0.5  # seconds between looks for hooks changed on disk

ChangeListener = Callable[[], Awaitable[None]]


class BadRequest(ConfigError):
    """A request the service cannot carry out as written (a ``work_dir`` outside the roots, a
    hook name that is not one, no such hook); the message says what is wrong."""


class ServiceUnavailable(RunError):
    """The hooks of a project cannot be loaded right now (the server log says why): an error
    for a listing, a fault (a deny, under ``on_fault="block"``) for an event."""


class HookService:
    """Registries and engines per project, the roots that bound them, and change watching.

    Use as an async context manager: engines (and the async hooks they run) live in the
    service's own task, and the watcher runs until the block ends.

    Args:
        settings: ``project_dir`` (the default project, used when a call names no
            ``work_dir``; None: the nearest one with ``.agents/hooks`` from the current
            folder), ``user_dir`` (shared by every project), ``log`` (one event log shared by
            every engine), ``stop_block_cap``, ``on_fault`` (``block``, the default: what the
            server cannot process denies an event that can block; ``warn``: it is let
            through with a warning, ``outcome.fault_outcome``), ``secrets`` (values no hook
            may see in its environment: the server's token, which ``Settings`` adds) and
            ``trust_project_hooks`` (``Settings``).
        roots: folders whose subfolders clients may name as ``work_dir``; default
            ``[project_dir]``. Symlinks are resolved before checking.
        strict: unknown frontmatter keys make a hook invalid.
        watch_interval: seconds between looks for changes on disk (list-changed notices).
        observer: told of every event each engine fires (``engine/observe.py``; ``serve
            --otel`` passes ``tracing.OtelObserver``); default none.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        roots: Sequence[Path] = (),
        strict: bool = False,
        watch_interval: float = WATCH_INTERVAL,
        observer: EventObserver | None = None,
    ) -> None:
        self.settings = settings
        self.project_dir = Path(os.path.realpath(
            settings.project_dir or find_project_dir(Path.cwd())))
        self.on_fault: OnFault = settings.on_fault
        self.user_dir = settings.user_dir
        self.roots = [Path(os.path.realpath(r)) for r in roots] or [self.project_dir]
        self.log = EventLog(settings.log) if settings.log is not None else None
        # one per service: every engine's state (--state; a shared store is reached now,
        # StateUnavailable naming it when it cannot be)
        self.store: StateStore = store_for(settings.state, self.log, settings.replica_id)
        self.strict = strict
        self.watch_interval = watch_interval
        self._engines: dict[Path, Engine] = {}
        self._seen_generation: dict[Path, int] = {}
        self._pools: dict[Path, PersistentPool] = {}  # persistent hook processes, per engine
        self._listeners: list[ChangeListener] = []
        self._stack: AsyncExitStack | None = None
        self._tg: TaskGroup | None = None
        self._lock = anyio.Lock()
        self.observer = observer  # every engine's (tracing.py: serve --otel)

    async def __aenter__(self) -> HookService:
        self._request_send, self._requests = anyio.create_memory_object_stream[
            tuple[Path, anyio.Event]
        ](16)
        self._watch_scope = anyio.CancelScope()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        await self._tg.start(self._keep_engines)
        self._tg.start_soon(self._watch)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg, self._tg = self._tg, None
        assert tg is not None
        self._request_send.close()
        self._watch_scope.cancel()
        if exc is not None:
            tg.cancel_scope.cancel()
        try:
            return await tg.__aexit__(exc_type, exc, tb)
        finally:
            for engine in self._engines.values():
                engine.registry.close()
            self._engines.clear()
            close_store(self.store)

    # Engines are entered (and left) by one task of their own: an Engine holds a task group
    # for its async hooks, and a task group must be left by the task that entered it.
    async def _keep_engines(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        async with AsyncExitStack() as stack, self._requests:
            task_status.started()
            async for project, done in self._requests:
                if project not in self._engines:
                    try:
                        pool = self._pools[project] = PersistentPool()
                        stack.push_async_callback(pool.aclose)  # after its engine closed
                        engine = await stack.enter_async_context(self._new_engine(project))
                    except Exception:
                        logger.exception("cannot load the hooks of %s", project)
                        done.set()
                        continue
                    self._engines[project] = engine
                    self._seen_generation[project] = engine.registry.generation
                done.set()
            # leaving the stack waits for running async hooks (each bounded by its timeout)

    def _new_engine(self, project: Path) -> Engine:
        registry = Registry(self.user_dir, project, strict=self.strict,
                            watch=self.settings.watch,
                            trust_project_hooks=self.settings.trust_project_hooks,
                            trust_store=trust_store_of(self.settings, self.store),
                            managed_dir=self.settings.managed_dir)
        for bad in registry.invalid:
            logger.warning("invalid hook not loaded: %s", bad)
        return Engine(registry, self.settings, wire(
            registry, self.settings, log=self.log, pool=self._pools.get(project),
            store=self.store, observer=self.observer))

    # -- projects ----------------------------------------------------------------------------

    def locate(self, work_dir: str | None) -> tuple[Path, str | None]:
        """The project a ``work_dir`` belongs to, and the work_dir to run hooks in.

        Raises:
            BadRequest: ``work_dir`` is not an absolute, existing folder under a root.
        """
        if work_dir is None:
            return self.project_dir, None
        if not work_dir or not os.path.isabs(work_dir):
            raise BadRequest(
                f"work_dir must be an absolute path to the project folder, got {work_dir!r}"
            )
        real = Path(os.path.realpath(work_dir))
        if not real.is_dir():
            raise BadRequest(f"work_dir {work_dir} is not an existing folder")
        root = next((r for r in self.roots if real == r or r in real.parents), None)
        if root is None:
            roots = ", ".join(str(r) for r in self.roots)
            raise BadRequest(
                f"work_dir {work_dir} is outside the folders this server may run hooks in "
                f"({roots}); start the server with --root for that folder"
            )
        project = find_project_dir(real, stop=root)
        if project != root and not project_hooks_dir(project).is_dir():
            project = root  # no project of its own below the root: one registry for the root
        return project, str(real)

    async def engine_for(self, work_dir: str | None) -> Engine:
        """The engine of the project ``work_dir`` lies in (the default project for None).

        Raises:
            BadRequest: ``work_dir`` is not an existing folder under one of the roots.
        """
        project, _ = self.locate(work_dir)
        return await self._engine(project)

    async def _engine(self, project: Path) -> Engine:
        engine = self._engines.get(project)
        if engine is not None:
            return engine
        if self._tg is None:
            raise RuntimeError("enter the HookService (async with service:) before using it")
        done = anyio.Event()
        await self._request_send.send((project, done))
        await done.wait()
        engine = self._engines.get(project)
        if engine is None:
            raise ServiceUnavailable(f"the hooks of {project} cannot be loaded; see the server log")
        return engine

    async def registry_for(self, work_dir: str | None) -> Registry:
        """The registry of the project ``work_dir`` lies in, refreshed from disk."""
        registry = (await self.engine_for(work_dir)).registry
        registry.refresh()
        return registry

    async def fire(
        self, event: Event, *, on_hook_done: Callable[[HookRun], Awaitable[None]] | None = None,
        approve: Approver | None = None,
    ) -> Outcome:
        """Fire an event at the hooks of its ``work_dir``'s project (root-checked).

        A project whose hooks cannot be loaded is a fault (``fault_outcome``); anything
        else that breaks (the engine's, ``Engine.fire``) is raised to the door's one guard.
        ``approve``: the door's way to ask a person when a hook asks (``spec/asking.py``).

        Raises:
            BadRequest: the work_dir is outside the roots (or not an existing folder).
            UnknownEventError: the event type is not in the catalogue.
        """
        name = canonical_event(event.event_type)
        project, work_dir = self.locate(event.work_dir)
        try:
            engine = await self._engine(project)
            if work_dir != event.work_dir:
                event = dataclasses.replace(event, work_dir=work_dir)
            return await engine.fire(event, on_hook_done=on_hook_done, approve=approve)
        except ServiceUnavailable as exc:
            return self.fault(name, str(exc))

    def fault(self, event: str, what: str) -> Outcome:
        """The outcome of an event the server cannot decide, under its ``on_fault`` policy."""
        return fault_outcome(event, what, on_fault=self.on_fault)

    # -- change notices ------------------------------------------------------------------------

    def add_listener(self, listener: ChangeListener) -> None:
        """Await ``listener()`` whenever the hooks of any loaded project change on disk."""
        self._listeners.append(listener)

    async def check_changes(self) -> bool:
        """Look at the disk now; tell the listeners if anything changed. True if it did."""
        changed = False
        for project, engine in list(self._engines.items()):
            engine.registry.refresh()
            if engine.registry.generation != self._seen_generation.get(project):
                self._seen_generation[project] = engine.registry.generation
                changed = True
                pool = self._pools.get(project)
                if pool is not None:  # processes of hooks gone stop now, not at the next event
                    await pool.prune(engine.registry)
        if changed:
            for listener in list(self._listeners):
                try:
                    await listener()
                except Exception:  # a listener's failure never stops the watcher
                    logger.exception("list-changed listener failed")
        return changed

    async def _watch(self) -> None:
        with self._watch_scope:
            with contextlib.suppress(ServiceUnavailable):  # logged; its events answer a fault
                await self._engine(self.project_dir)
            while True:
                await anyio.sleep(self.watch_interval)
                try:
                    await self.check_changes()
                except Exception:  # the watcher must outlive anything on disk
                    logger.exception("looking for changed hooks failed")


# -- progressive disclosure ------------------------------------------------------------------


def check_hook_name(name: str) -> None:
    """Refuse a name that is not a hook's plain name (a path, ``..``, an invalid name).

    Raises:
        BadRequest: the name looks like a path or breaks the naming rule.
    """
    if any(c in name for c in "/\\") or ".." in name or name.startswith("."):
        raise BadRequest(
            f"{name!r} looks like a path; a hook is named by its plain name, such as "
            "block-dangerous-commands (list_hooks shows them)"
        )
    if not name or len(name) > 64 or not NAME_RE.match(name):
        raise BadRequest(
            f"{name!r} is not a hook name: names are 1-64 lowercase letters, digits and single "
            "hyphens (list_hooks shows them)"
        )


def find_hook(registry: Registry, name: str) -> HookSpec:
    """The hook of that name that runs, else an untrusted project hook of that name.

    Raises:
        BadRequest: not a hook name, an invalid hook, or no hook of that name.
    """
    check_hook_name(name)
    hook = registry.get(name)
    if hook is not None:
        return hook
    held = next((u for u in registry.untrusted if u.name == name), None)
    if held is not None:
        return held.spec
    bad: InvalidHook | None = next((b for b in registry.invalid if b.name == name), None)
    if bad is not None:
        raise BadRequest(f"hook {name!r} is invalid and not loaded: {bad}")
    known = [h.name for h in registry.hooks()] + [u.name for u in registry.untrusted]
    shown = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
    raise BadRequest(
        f"no hook named {name!r}; " + (f"installed: {shown}" if known else "no hooks are installed")
    )


@dataclasses.dataclass(frozen=True)
class HookText:
    """A hook's HOOK.md as read now: the whole text (newlines as ``\\n``), its frontmatter as
    PyYAML reads it, and its prose."""

    text: str
    metadata: dict[str, Any]
    body: str


def read_hook(hook: HookSpec) -> HookText:
    """Read a hook's whole HOOK.md now, with ``python-frontmatter`` (speed does not matter here).

    The index reads frontmatter with the measured YAML subset; a document asked for by a person
    or a model is read by the library. The file may have changed since the index read it, so
    it passes the index's guards first (size cap, nesting, no aliases) before PyYAML sees it.

    Raises:
        BadRequest: the file cannot be read, or no longer parses as a HOOK.md.
    """
    import frontmatter  # lazy: PyYAML, 7 ms of the server's cold start (python -X importtime)

    try:
        text = read_hook_file(hook.hook_file).replace("\r\n", "\n").replace("\r", "\n")
        parse_frontmatter(hook.hook_file, text)  # the guards, before PyYAML
        post = frontmatter.loads(text)
    except (OSError, ValueError, HookFileError) as exc:
        raise BadRequest(f"hook {hook.name!r}: cannot read {hook.hook_file}: {exc}") from None
    return HookText(text=text, metadata=dict(post.metadata), body=post.content)
