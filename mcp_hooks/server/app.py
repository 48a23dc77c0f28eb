"""The MCP server: ``fire_hook_event``, ``list_hooks``, ``get_hook``, the ``hooks://``
resources and the ``lifecycle-protocol`` prompt, as a thin adapter over the engine.

Two parts:

- ``HookService`` owns the engine side: one ``Registry`` and ``Engine`` per project (found
  from a call's ``work_dir``, which must lie under one of the server's roots), one shared user
  folder and event log, and a watcher that notices hooks changing on disk. Other adapters
  (the host-bridge endpoint, an extra tool) use ``await service.engine_for(work_dir)``.
- ``build_server(service)`` returns the ``MCPServer`` that exposes it; ``serve_command`` is the
  ``mcp-hooks serve`` entry point, which hands that server to ``transport.serve``.

Bad requests (unknown event, malformed arguments, a hook name that is unknown or looks like a
path, a ``work_dir`` outside the roots) are tool errors (``isError``) whose text says what is
wrong; a hook that crashes is an ``Outcome`` entry, never a server failure.

Fail closed: what the server cannot process although the request is well formed (more than
``MAX_PAYLOAD_BYTES`` of event data, nesting deeper than the engine reads, a hook folder that
cannot be loaded, an exception of our own anywhere around the engine) is answered by
``engine.fault_outcome`` under the ``--on-fault`` policy: for an event that can block, a deny
whose reason says what broke (``blocked_by: "mcp-hooks"``), never a crash and never a silent
allow. The server keeps answering its other clients.

Trust: project hooks run only once trusted (``mcp-hooks trust``). ``list_hooks`` and
``hooks://index`` show every hook's ``trust`` (``trusted``, ``untrusted``, ``changed``; the
untrusted ones with the ``fix`` command), ``replaces`` for a trusted project hook that
replaces a user hook, and invalid hooks with the ``event`` they could have handled. Secrets:
the server's token never reaches a hook's environment (``Engine(secrets=...)``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import sys
import weakref
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any

import anyio
from anyio.abc import TaskGroup
from mcp.server import MCPServer, NotificationOptions
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.mcpserver.tools import Tool
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, ResourceUpdated
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from mcp_types import Resource as MCPResource
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_hooks import __version__, matching
from mcp_hooks.discovery import (
    InvalidHook,
    Registry,
    UntrustedHook,
    find_project_dir,
    project_hooks_dir,
)
from mcp_hooks.engine import (
    DEFAULT_STOP_BLOCK_CAP,
    Engine,
    Event,
    HookRun,
    OnFault,
    Outcome,
    cap_text,
    fault_outcome,
)
from mcp_hooks.errors import MCPHooksError
from mcp_hooks.eventlog import EventLog
from mcp_hooks.events import TOOL_EVENTS, canonical_event, catalogue
from mcp_hooks.hookfile import NAME_RE, HookSpec
from mcp_hooks.prompts import INSTRUCTIONS, PROMPT_DESCRIPTION, PROMPT_NAME, lifecycle_protocol

logger = logging.getLogger("mcp_hooks.server")

SERVER_NAME = "mcp-hooks"
MAX_PAYLOAD_BYTES = 1 << 20  # JSON bytes of tool_input, tool_output, error, payload, context
WATCH_INTERVAL = 0.5  # seconds between looks for hooks changed on disk
INDEX_URI = "hooks://index"
EVENTS_URI = "hooks://events"
HOOK_URI = "hooks://hooks/{name}"

ChangeListener = Callable[[], Awaitable[None]]


class BadRequest(ToolError):
    """A caller's mistake, reported to the client as a tool error with this message."""


class HooksUnavailable(BadRequest):
    """The hooks of a project cannot be loaded: a tool error for a listing, a fault (a deny,
    under ``--on-fault block``) for an event."""


# -- the engine side -------------------------------------------------------------------------


class HookService:
    """Registries and engines per project, the roots that bound them, and change watching.

    Use as an async context manager: engines (and the async hooks they run) live in the
    service's own task, and the watcher runs until the block ends.

    Args:
        project_dir: the default project (used when a call names no ``work_dir``).
        user_dir: the user hooks folder, shared by every project; None for the default.
        roots: folders whose subfolders clients may name as ``work_dir``; default
            ``[project_dir]``. Symlinks are resolved before checking.
        log: the event log shared by every engine; None for none.
        stop_block_cap: the ``before_stop`` loop guard's cap.
        strict: unknown frontmatter keys make a hook invalid.
        watch_interval: seconds between looks for changes on disk (list-changed notices).
        on_fault: ``block`` (default): what the server cannot process denies an event that
            can block; ``warn``: it is let through with a warning (``engine.fault_outcome``).
        secrets: values no hook may see in its environment (the server's token).
        trust_project_hooks: run every project hook without the trust store; None: the
            environment decides (``MCP_HOOKS_TRUST_PROJECT_HOOKS``).
    """

    def __init__(
        self,
        project_dir: Path,
        *,
        user_dir: Path | None = None,
        roots: Sequence[Path] = (),
        log: EventLog | None = None,
        stop_block_cap: int = DEFAULT_STOP_BLOCK_CAP,
        strict: bool = False,
        watch_interval: float = WATCH_INTERVAL,
        on_fault: OnFault = "block",
        secrets: Sequence[str] = (),
        trust_project_hooks: bool | None = None,
    ) -> None:
        self.project_dir = Path(os.path.realpath(project_dir))
        self.on_fault: OnFault = "warn" if on_fault == "warn" else "block"
        self.secrets = tuple(s for s in secrets if s)
        self.trust_project_hooks = trust_project_hooks
        self.user_dir = user_dir
        self.roots = [Path(os.path.realpath(r)) for r in roots] or [self.project_dir]
        self.log = log
        self.stop_block_cap = stop_block_cap
        self.strict = strict
        self.watch_interval = watch_interval
        self._engines: dict[Path, Engine] = {}
        self._seen_generation: dict[Path, int] = {}
        self._listeners: list[ChangeListener] = []
        self._stack: AsyncExitStack | None = None
        self._tg: TaskGroup | None = None
        self._lock = anyio.Lock()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> HookService:
        """The service ``mcp-hooks serve`` options describe."""
        from mcp_hooks import options
        from mcp_hooks.transport import options_from_args

        project = options.project_dir(args)
        roots = [Path(r).expanduser() for r in (getattr(args, "root", None) or [])]
        token = options_from_args(args).token
        return cls(
            project, user_dir=options.user_dir(args), roots=roots, log=options.event_log(args),
            stop_block_cap=options.stop_block_cap(args), on_fault=options.on_fault(args),
            secrets=[token] if token else [],
            trust_project_hooks=options.trust_project_hooks(args),
        )

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

    # Engines are entered (and left) by one task of their own: an Engine holds a task group
    # for its async hooks, and a task group must be left by the task that entered it.
    async def _keep_engines(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        async with AsyncExitStack() as stack, self._requests:
            task_status.started()
            async for project, done in self._requests:
                if project not in self._engines:
                    try:
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
                            trust_project_hooks=self.trust_project_hooks)
        for bad in registry.invalid:
            logger.warning("invalid hook not loaded: %s", bad)
        return Engine(registry, log=self.log, stop_block_cap=self.stop_block_cap,
                      on_fault=self.on_fault, secrets=self.secrets)

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
            raise HooksUnavailable(f"the hooks of {project} cannot be loaded; see the server log")
        return engine

    async def registry_for(self, work_dir: str | None) -> Registry:
        """The registry of the project ``work_dir`` lies in, refreshed from disk."""
        registry = (await self.engine_for(work_dir)).registry
        registry.refresh()
        return registry

    async def fire(
        self, event: Event, *, on_hook_done: Callable[[HookRun], Awaitable[None]] | None = None
    ) -> Outcome:
        """Fire an event at the hooks of its ``work_dir``'s project (root-checked).

        Never raises for what the server cannot process: a project whose hooks cannot be
        loaded, or any exception of ours around the engine, is a fault (``fault_outcome``).

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
            return await engine.fire(event, on_hook_done=on_hook_done)
        except HooksUnavailable as exc:
            return self.fault(name, str(exc))
        except Exception as exc:  # ours: never a crash, never a silent allow
            logger.exception("the server failed on a %s event", name)
            return self.fault(name, f"the server failed: {type(exc).__name__}: "
                              f"{cap_text(str(exc), 300)}")

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
        if changed:
            for listener in list(self._listeners):
                try:
                    await listener()
                except Exception:  # a listener's failure never stops the watcher
                    logger.exception("list-changed listener failed")
        return changed

    async def _watch(self) -> None:
        with self._watch_scope:
            with contextlib.suppress(HooksUnavailable):  # logged; its events answer a fault
                await self._engine(self.project_dir)
            while True:
                await anyio.sleep(self.watch_interval)
                try:
                    await self.check_changes()
                except Exception:  # the watcher must outlive anything on disk
                    logger.exception("looking for changed hooks failed")


# -- structured results ----------------------------------------------------------------------


class HookInfo(BaseModel):
    """A hook's metadata, as listings show it (no prose, no script)."""

    model_config = ConfigDict(populate_by_name=True)

    name: str
    description: str
    trigger: str = Field(description="the event as the hook spells it")
    event: str = Field(description="the canonical event name")
    scope: str = Field(description="user or project")
    priority: int
    is_async: bool = Field(alias="async")
    timeout: int = Field(description="milliseconds")
    matcher: dict[str, str] | None = None
    on_error: str = Field(description="allow (fail open) or block (fail closed)")
    trust: str = Field(
        default="trusted", description="trusted (it runs), untrusted (a project hook never "
        "trusted: it does not run) or changed (changed since it was trusted: it does not run)")
    fix: str | None = Field(
        default=None, description="for a hook that is not trusted: the command that trusts it, "
        "to run once a person has read it")
    replaces: str | None = Field(
        default=None, description="for a trusted project hook: the folder of the user hook of "
        "the same name it replaces")

    @classmethod
    def of(cls, hook: HookSpec, registry: Registry | None = None) -> HookInfo:
        data = hook.frontmatter()
        if registry is not None and hook.scope == "project":
            user = registry.replaced.get(hook.name)
            if user is not None and registry.get(hook.name) is hook:
                data["replaces"] = str(user.dir)
        return cls.model_validate(data)

    @classmethod
    def held(cls, untrusted: UntrustedHook) -> HookInfo:
        return cls.model_validate(untrusted.spec.frontmatter() | {
            "trust": untrusted.status, "fix": untrusted.fix})


class InvalidHookInfo(BaseModel):
    """A hook folder that could not be loaded, and why."""

    name: str
    scope: str
    file: str
    field: str | None
    reason: str
    event: str | None = Field(
        default=None, description="the event it could have handled (null: any); until fixed "
        "it blocks that event (under --on-fault block)")
    in_scope: bool = Field(
        default=True, description="false for an untrusted project hook, which would not run "
        "anyway and blocks nothing")


class HookListing(BaseModel):
    """The hooks of a project (user and project level, with their trust), and the ones that
    failed to load."""

    hooks: list[HookInfo]
    invalid: list[InvalidHookInfo]
    warnings: list[str] = Field(default_factory=list)


class HookDocument(BaseModel):
    """One hook in full: its parsed frontmatter and the whole HOOK.md."""

    name: str
    scope: str
    path: str = Field(description="the HOOK.md file")
    frontmatter: HookInfo
    text: str = Field(description="the whole HOOK.md")
    trust: str = Field(default="trusted", description="trusted, untrusted or changed; a hook "
                       "that is not trusted is shown but does not run")
    notes: list[str] = Field(default_factory=list)


def _admits(hook: HookSpec, tool_name: str) -> bool:
    if hook.event not in TOOL_EVENTS:
        return False
    matcher = hook.tool_re
    return matcher is None or matching.fullmatch(matcher, tool_name)


def _listing(
    registry: Registry, event: str | None = None, tool_name: str | None = None
) -> HookListing:
    hooks = registry.for_event(event) if event is not None else registry.hooks()
    held = [u for u in registry.untrusted if event is None or u.spec.event == event]
    invalid = [bad for bad in registry.invalid if event is None or bad.event in (None, event)]
    if tool_name is not None:
        hooks = [h for h in hooks if _admits(h, tool_name)]
        held = [u for u in held if _admits(u.spec, tool_name)]
    return HookListing(
        hooks=[HookInfo.of(h, registry) for h in hooks] + [HookInfo.held(u) for u in held],
        invalid=[InvalidHookInfo.model_validate(bad.as_dict()) for bad in invalid],
        warnings=list(registry.warnings),
    )


def _check_hook_name(name: str) -> None:
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


def _find_hook(registry: Registry, name: str) -> HookSpec:
    """The hook of that name that runs, else an untrusted project hook of that name."""
    _check_hook_name(name)
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


def _document(registry: Registry, hook: HookSpec) -> HookDocument:
    try:
        text = hook.read_text()
    except (OSError, ValueError) as exc:
        raise BadRequest(f"hook {hook.name!r}: cannot read {hook.hook_file}: {exc}") from None
    held = {u.name: u for u in registry.untrusted}.get(hook.name)
    notes: list[str] = []
    if held is not None and held.spec is hook:
        info = HookInfo.held(held)
        trust = held.status
        notes.append(f"this project hook is {held.status}, so it does not run; read it, then "
                     f"trust it with: {held.fix}")
    else:
        info = HookInfo.of(hook, registry)
        trust = "trusted"
        if held is not None:
            notes.append(f"a project hook of the same name ({held.spec.dir}) is {held.status} "
                         f"and does not run; this {hook.scope} hook runs instead")
        if info.replaces:
            notes.append(f"this trusted project hook replaces the user hook {info.replaces}")
    return HookDocument(name=hook.name, scope=hook.scope, path=str(hook.hook_file),
                        frontmatter=info, text=text, trust=trust, notes=notes)


def _unprocessable(values: Sequence[Any]) -> str | None:
    """Why event data the client sent is more than the server processes, or None.

    More than ``MAX_PAYLOAD_BYTES`` of JSON is well formed, but not something the server will
    hand on: a fault (a deny for an event that can block), with the fix in the reason. Data
    nested deeper than the engine reads is the engine's to judge (a fault only when a hook
    would have seen it); only its strings are counted here.
    """
    size = 0
    for value in values:
        if value is None:
            continue
        if matching.larger_than(value, MAX_PAYLOAD_BYTES - size):  # cheap, before encoding
            size = MAX_PAYLOAD_BYTES + 1
        elif matching.depth(value) <= matching.MAX_DEPTH:
            text = json.dumps(value, ensure_ascii=False, default=str)
            size += len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_PAYLOAD_BYTES:
            return (f"the event carries more than {MAX_PAYLOAD_BYTES} bytes (1 MiB) of JSON "
                    "data, the limit: send a summary or a file path instead of whole contents")
    return None


def _fired(outcome: Outcome) -> CallToolResult:
    """The tool result of an outcome: compact JSON text beside the structured copy (every
    byte is parsed by the client).

    Lone surrogates (valid in JSON, not in UTF-8; a hook's ``modified_input`` may hold one)
    cannot be written as UTF-8: the text then escapes them (``\\udcff``, ASCII JSON that
    round-trips) and the structured copy has U+FFFD in their place, so the reply can always
    be sent.
    """
    data = outcome.as_dict()
    text = outcome.to_json()
    try:
        text.encode()
    except UnicodeEncodeError:
        data = json.loads(text.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
        text = json.dumps(outcome.as_dict(), default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=data)


def _describe_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        got = err.get("input")
        kind = type(got).__name__ if got is not None else "null"
        if err["type"] == "missing":
            parts.append(f"{where}: required")
        else:
            parts.append(f"{where}: {err['msg'].lower()} (got {kind})")
    return "invalid arguments: " + "; ".join(parts)


def simplify_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same JSON schema, cheaper to validate and to read: ``$ref``s inlined, titles
    dropped, and ``anyOf: [{type: T}, {type: null}]`` written as ``type: [T, null]``."""
    defs: dict[str, Any] = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return walk(defs[ref.rsplit("/", 1)[1]])
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "title"):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: walk(sub) for name, sub in value.items()}
            else:
                out[key] = walk(value)
        any_of = out.get("anyOf")
        if isinstance(any_of, list) and len(any_of) == 2 and {"type": "null"} in any_of:
            other = next(a for a in any_of if a != {"type": "null"})
            simple = isinstance(other, dict) and set(other) == {"type"}
            if simple and isinstance(other["type"], str):
                del out["anyOf"]
                out["type"] = [other["type"], "null"]
        return out

    result: dict[str, Any] = walk(schema)
    return result


class _Tool(Tool):
    """A tool whose argument errors read as one line naming the field, not a pydantic dump,
    and whose output schema is simplified (clients validate every result against it)."""

    @cached_property
    def output_schema(self) -> dict[str, Any] | None:
        schema = self.fn_metadata.output_schema
        return None if schema is None else simplify_schema(schema)

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise BadRequest(_describe_validation(exc.__cause__)) from None
            if isinstance(exc.__cause__, BadRequest):
                raise exc.__cause__ from None
            raise


# -- the MCP server --------------------------------------------------------------------------


class _Notifier:
    """Delivers "the hooks changed" to every client that can hear it.

    2026-07-28 clients hear it on their ``subscriptions/listen`` streams (the bus); legacy
    clients on their connection's standalone channel (stdio, SSE, stateful HTTP).
    """

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._legacy: weakref.WeakSet[Connection] = weakref.WeakSet()

    async def track(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method == "initialize":
            # The SDK has no public handle on a legacy connection; its session holds one.
            connection = getattr(ctx.session, "_connection", None)
            if isinstance(connection, Connection):
                self._legacy.add(connection)
        return await call_next(ctx)

    async def hooks_changed(self) -> None:
        await self.bus.publish(ResourcesListChanged())
        await self.bus.publish(ResourceUpdated(uri=INDEX_URI))
        for connection in list(self._legacy):
            with anyio.move_on_after(1):
                await connection.send_resource_list_changed()


class _HooksServer(MCPServer[Any]):
    """``MCPServer`` whose resource list names every hook of the default project."""

    def __init__(self, service: HookService, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.service = service

    async def list_resources(self) -> list[MCPResource]:
        resources = await super().list_resources()
        registry = await self.service.registry_for(None)
        for hook in registry.hooks():
            resources.append(MCPResource(
                uri=f"hooks://hooks/{hook.name}", name=hook.name, title=f"HOOK.md of {hook.name}",
                description=hook.description, mime_type="text/markdown",
            ))
        return resources


FIRE_DESCRIPTION = """\
Fire a lifecycle event at the user's hooks and get back the one decision you must follow.

Call it at every lifecycle point of your work: before_tool BEFORE running any tool (give
tool_name and tool_input), after_tool after it succeeds (add tool_output), after_tool_failure
when it fails (add error), before_stop before you stop and hand back, and session_start,
before_agent, subagent_start/subagent_stop, pre_compact/post_compact, session_end at those
moments. Aliases such as pre-tool-call or pre-tool-use are accepted.

Obey the result: decision "deny" means do not run the tool (or do the step) and tell the user
the reason; modified_input, when not null, is the input to use instead of yours;
continue_working true means do not stop, work on the reason; additional_context is for you
to read. Send the same session_id throughout a session and work_dir as the absolute project
folder. Event data beyond 1 MiB of JSON is denied; so is any event mcp-hooks cannot decide
(blocked_by "mcp-hooks", the reason says what broke). Read warnings: they name hooks that
did not run (an untrusted project hook, with the command that trusts it)."""

LIST_DESCRIPTION = """\
List the lifecycle hooks installed for this user and project: name, description, trigger
event, scope, priority, async, timeout, matcher and trust (a project hook runs only once
trusted: untrusted and changed ones are listed with the fix command, and do not run), plus
hooks that failed to load with the reason and the event they block until fixed. Filter by
event_type (any event name or alias) and/or tool_name (the tool-event hooks whose matcher
admits that tool). Use it to learn which events matter here; it runs nothing."""

GET_DESCRIPTION = """\
Read one hook in full: its whole HOOK.md (what it checks and why, written for people and
models), its parsed frontmatter and its trust (an untrusted project hook can be read, not
run). Give the plain name shown by list_hooks. It runs nothing."""


def build_server(service: HookService, *, name: str = SERVER_NAME) -> MCPServer[Any]:
    """The MCP server exposing a ``HookService``: tools, resources, prompt, notices.

    Args:
        service: the engine side; it must be entered (``async with service``) while the
            server serves.
        name: the server name clients see.

    Returns:
        An ``MCPServer``; serve it with ``transport.serve`` or an in-memory ``Client``.
    """
    notifier = _Notifier()

    async def fire_hook_event(
        event_type: Annotated[str, Field(
            description="the lifecycle event: before_tool, after_tool, after_tool_failure, "
            "before_stop, session_start, before_agent, ... (or an alias such as pre-tool-call)")],
        ctx: Context[Any, Any],
        session_id: Annotated[str | None, Field(
            description="the agent session's id, the same for every event of a session")] = None,
        work_dir: Annotated[str | None, Field(
            description="absolute path of the project folder the agent works in")] = None,
        tool_name: Annotated[str | None, Field(
            description="tool events: the tool's name, such as Bash or Edit")] = None,
        tool_input: Annotated[dict[str, Any] | None, Field(
            description="tool events: the tool's arguments")] = None,
        tool_use_id: Annotated[str | None, Field(description="tool events: the call's id")] = None,
        tool_output: Annotated[Any, Field(description="after_tool: what the tool returned")] = None,
        error: Annotated[Any, Field(description="after_tool_failure: the error")] = None,
        payload: Annotated[dict[str, Any] | None, Field(
            description="further event fields: prompt, stop_reason, final_message, "
            "subagent_name, ... (see the hooks://events resource)")] = None,
        context: Annotated[dict[str, Any] | None, Field(
            description="free-form context handed to the hooks")] = None,
    ) -> Annotated[CallToolResult, Outcome]:
        try:
            name = canonical_event(event_type)
        except MCPHooksError as exc:
            raise BadRequest(str(exc)) from None
        try:
            fault = _unprocessable((tool_input, tool_output, error, payload, context))
            if fault is not None:
                return _fired(service.fault(name, fault))
            try:
                event = Event.create(
                    event_type=event_type, session_id=session_id, work_dir=work_dir,
                    tool_name=tool_name, tool_input=tool_input, tool_use_id=tool_use_id,
                    tool_output=tool_output, error=error, payload=payload or {},
                    context=context or {},
                )
            except MCPHooksError as exc:
                raise BadRequest(str(exc)) from None
            progress = _Progress(ctx, service, event)
            outcome = await service.fire(event, on_hook_done=progress)
            return _fired(outcome)
        except BadRequest:
            raise
        except Exception as exc:  # ours, around the engine: a fault, never a crash
            logger.exception("fire_hook_event failed on a %s event", name)
            return _fired(service.fault(name, f"the server failed: {type(exc).__name__}: "
                                        f"{cap_text(str(exc), 300)}"))

    async def list_hooks(
        event_type: Annotated[str | None, Field(
            description="only hooks of this event (any name or alias)")] = None,
        tool_name: Annotated[str | None, Field(
            description="only tool-event hooks whose matcher admits this tool")] = None,
        work_dir: Annotated[str | None, Field(
            description="absolute project folder (default: the server's project)")] = None,
    ) -> HookListing:
        event = None
        if event_type is not None:
            try:
                event = canonical_event(event_type)
            except MCPHooksError as exc:
                raise BadRequest(str(exc)) from None
        return _listing(await service.registry_for(work_dir), event, tool_name)

    async def get_hook(
        name: Annotated[str, Field(description="the hook's name, as list_hooks shows it")],
        work_dir: Annotated[str | None, Field(
            description="absolute project folder (default: the server's project)")] = None,
    ) -> HookDocument:
        _check_hook_name(name)
        registry = await service.registry_for(work_dir)
        return _document(registry, _find_hook(registry, name))

    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    tools = [
        _Tool.from_function(
            fire_hook_event, title="Fire a lifecycle hook event", description=FIRE_DESCRIPTION,
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                        idempotent_hint=False, open_world_hint=False),
        ),
        _Tool.from_function(list_hooks, title="List hooks", description=LIST_DESCRIPTION,
                            annotations=read_only),
        _Tool.from_function(get_hook, title="Read a hook", description=GET_DESCRIPTION,
                            annotations=read_only),
    ]
    server = _HooksServer(
        service, name=name, title="Lifecycle hooks", version=__version__,
        instructions=INSTRUCTIONS, tools=tools, subscriptions=notifier.bus,
    )
    server.middleware.append(notifier.track)
    service.add_listener(notifier.hooks_changed)
    _advertise_list_changed(server)

    async def index() -> str:
        registry = await service.registry_for(None)
        listing = _listing(registry)
        data = {
            "project_dir": str(registry.project_dir) if registry.project_dir else None,
            "user_dir": str(registry.user_dir),
            **listing.model_dump(mode="json", by_alias=True),
        }
        return json.dumps(data, indent=1)

    def events() -> str:
        return json.dumps(catalogue(), indent=1)

    async def hook_text(name: str) -> str:
        registry = await service.registry_for(None)
        try:
            return _find_hook(registry, name).read_text()
        except BadRequest as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except OSError as exc:
            raise ResourceNotFoundError(f"hook {name!r}: cannot read HOOK.md: {exc}") from None

    server.add_resource(FunctionResource.from_function(
        index, uri=INDEX_URI, name="hook-index", title="Hook index",
        description="JSON metadata of every hook (user and project), invalid hooks with errors",
        mime_type="application/json",
    ))
    server.add_resource(FunctionResource.from_function(
        events, uri=EVENTS_URI, name="event-catalogue", title="Event catalogue",
        description="Every lifecycle event: canonical name, aliases, layer, payload fields, "
        "what a deny means", mime_type="application/json",
    ))
    server.resource(
        HOOK_URI, name="hook", title="A hook's HOOK.md",
        description="The whole HOOK.md of one hook, by name", mime_type="text/markdown",
    )(hook_text)

    async def protocol() -> str:
        registry = await service.registry_for(None)
        return lifecycle_protocol(h.event for h in registry.hooks())

    server.add_prompt(Prompt.from_function(
        protocol, name=PROMPT_NAME, title="Lifecycle hook protocol",
        description=PROMPT_DESCRIPTION,
    ))
    return server


def _advertise_list_changed(server: MCPServer[Any]) -> None:
    """Make handshake-era clients see ``resources.listChanged``.

    Every transport builds the initialize result from the low-level server's
    ``create_initialization_options()``, which takes the notification flags as an argument
    the transports never pass; this instance gets a version that passes them.
    """
    lowlevel: Server[Any] = server._lowlevel_server
    create = lowlevel.create_initialization_options

    def create_initialization_options(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return create(
            notification_options or NotificationOptions(resources_changed=True),
            experimental_capabilities, extensions,
        )

    lowlevel.create_initialization_options = create_initialization_options  # type: ignore[method-assign]


class _Progress:
    """Reports each finished sync hook to a client that asked for progress."""

    def __init__(self, ctx: Context[Any, Any], service: HookService, event: Event) -> None:
        self.ctx = ctx
        self.service = service
        self.event = event
        self.done = 0
        self.total: int | None = None

    async def __call__(self, run: HookRun) -> None:
        self.done += 1
        if self.total is None:
            try:
                registry = (await self.service.engine_for(self.event.work_dir)).registry
                selected = registry.select(canonical_event(self.event.event_type),
                                           self.event.tool_name, self.event.tool_input)
                self.total = max(self.done, sum(1 for h in selected if not h.is_async))
            except Exception:  # a progress count must never fail the event
                self.total = self.done
        message = f"{run.name}: {run.status} ({run.duration_ms:.0f} ms)"
        try:
            await self.ctx.report_progress(self.done, self.total, message)
        except Exception:  # a client gone away must not fail the event
            logger.debug("progress notification not sent", exc_info=True)


# -- the command -----------------------------------------------------------------------------


def serve_command(args: argparse.Namespace) -> int:
    """``mcp-hooks serve``: serve the hooks over stdio, streamable HTTP or SSE."""
    from mcp_hooks.transport import (
        TransportConfigError,
        configure_logging,
        options_from_args,
        serve,
    )

    options = options_from_args(args)
    try:
        options.check()
    except TransportConfigError as exc:
        print(f"mcp-hooks serve: {exc}", file=sys.stderr)
        return 64
    configure_logging(options.log_level)
    service = HookService.from_args(args)
    if not getattr(args, "root", None) and service.roots == [Path("/")]:
        # Started in / (as some desktop hosts do) with no project named: every folder on the
        # machine would be a root, so any folder's .agents/hooks could be made to run.
        print("mcp-hooks serve: no project to serve: the server was started in / and would "
              "accept any folder as work_dir; pass --project-dir DIR (or --root DIR)",
              file=sys.stderr)
        return 64
    for root in service.roots:
        if not root.is_dir():
            print(f"mcp-hooks serve: --root {root} is not an existing folder", file=sys.stderr)
            return 64

    from mcp_hooks.hosts.forward import bridge_routes, register_bridge_tool

    async def main() -> None:
        async with service:
            server = build_server(service)
            if getattr(args, "bridge_tool", False):  # Claude Code mcp_tool hooks
                register_bridge_tool(server, service.engine_for)
            # POST /hooks/bridge/<host>: host hook calls forwarded by `install --via server`;
            # mounted only when a token is set (bridge_routes returns [] otherwise)
            await serve(server, options, routes=bridge_routes(service.engine_for, options.token))

    try:
        anyio.run(main)
    except TransportConfigError as exc:
        print(f"mcp-hooks serve: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
