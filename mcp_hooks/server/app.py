"""The MCP server: ``fire_hook_event``, ``respond_to_signal``, ``list_hooks``, ``get_hook``,
the ``hooks://`` resources and the ``lifecycle-protocol`` prompt, as a thin adapter over a
``HookService``.

``build_server(service)`` returns the ``MCPServer`` that exposes it; ``serve_hooks(service,
options)`` serves it (and the host-bridge endpoints) with ``transport.serve``. Every word the
model reads is in ``prompts``; the structured results are in ``results``; every private SDK
name reached is in ``sdk_compat``.

Bad requests (unknown event, malformed arguments, a hook name that is unknown or looks like a
path, a ``work_dir`` outside the roots: the service's ``ConfigError`` kinds) and hooks that cannot
be listed (``ServiceUnavailable``) are tool errors (``isError``) whose text says what is wrong;
a hook that crashes is an ``Outcome`` entry, never a server failure.

Fail closed: what the server cannot process although the request is well formed (more than
``MAX_PAYLOAD_BYTES`` of event data, nesting deeper than the engine reads, a hook folder that
cannot be loaded, any ``BaseException`` raised from below but a cancellation:
``guard.passes_through``; ``fire_hook_event`` is this door's one guard, the service and the
engine under it raise) is answered by
``outcome.fault_outcome`` under the service's ``on_fault`` policy: for an event that can block,
a deny whose reason says what broke (``blocked_by: "mcp-hooks"``), never a crash and never a
silent allow. The server keeps answering its other clients.

Signals: each outcome's ``signals`` (``signals.py``) are in the signal log beside the event
log; ``respond_to_signal`` records the agent's answer there (``signallog.respond``, the
service's state store's answer-once: an action of another intensity, an unknown or already
answered signal is a tool error saying so). A server
run with ``--no-log`` keeps no signal log, so its signals cannot be answered (a tool error).

Trust: project hooks run only once trusted (``mcp-hooks trust``); listings and ``get_hook``
show each hook's trust. ``get_hook`` and ``hooks://hooks/{name}`` read the whole HOOK.md with
``python-frontmatter`` (``service.read_hook``); the index keeps the measured YAML subset.
Secrets: the server's token never reaches a hook's environment (``Settings.secrets``).
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Sequence
from functools import cached_property, partial
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from mcp.server import MCPServer, NotificationOptions
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.mcpserver.tools import Tool
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, ResourceUpdated
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from mcp_types import Resource as MCPResource
from pydantic import Field, ValidationError

from mcp_hooks import __version__
from mcp_hooks.errors import InvalidEventError, MCPHooksError
from mcp_hooks.guard import named, passes_through
from mcp_hooks.server import prompts
from mcp_hooks.server.approval import (
    RoundGuard,
    door_approver,
    input_required,
    state_security,
    take_round,
)
from mcp_hooks.server.asks import ask_routes, register_ask_tools
from mcp_hooks.server.forward import bridge_routes, register_bridge_tool
from mcp_hooks.server.health import health_routes, store_ready
from mcp_hooks.server.results import (
    HookDocument,
    HookListing,
    SignalResponse,
    document,
    listing,
    portable_schema,
    simplify_schema,
)
from mcp_hooks.server.sdk_compat import default_notification_options, session_connection
from mcp_hooks.server.transport import bind, serve
from mcp_hooks.service import (
    BadRequest,
    HookService,
    ServiceUnavailable,
    check_hook_name,
    find_hook,
    read_hook,
)
from mcp_hooks.spec import matching
from mcp_hooks.spec.events import canonical_event, catalogue
from mcp_hooks.spec.outcome import Event, HookRun, Outcome
from mcp_hooks.spec.toolcall import answered, caller_tool
from mcp_hooks.spec.vocabulary import MCP_CLIENTS, tool_catalogue
from mcp_hooks.state.signallog import respond
from mcp_hooks.state.store import StateUnavailable, UnknownSignal
from mcp_hooks.state.url import scheme

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from mcp_hooks.server.transport import ServeOptions

logger = logging.getLogger("mcp_hooks.server")

SERVER_NAME = "mcp-hooks"
MAX_PAYLOAD_BYTES = 1 << 20  # JSON bytes of tool_input, tool_output, error, payload, context
INDEX_URI = "hooks://index"
EVENTS_URI = "hooks://events"
HOOK_URI = "hooks://hooks/{name}"

FIRE = prompts.FIRE_ARGS
LIST = prompts.LIST_ARGS
GET = prompts.GET_ARGS
RESPOND = prompts.RESPOND_ARGS


# the caller's mistakes, answered as tool errors; any other exception is a fault of ours
_MISTAKES = (BadRequest, InvalidEventError)


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


class _Tool(Tool):
    """A tool whose argument errors read as one line naming the field, not a pydantic dump,
    whose errors of ours (``BadRequest``, ``ServiceUnavailable``, an unknown event) read as
    their message, and whose schemas are portable (``results.portable_schema``: what the MCP
    Inspector's ``--strict`` checks) and, for the output, simplified (clients validate every
    result against it)."""

    @classmethod
    def from_function(cls, *args: Any, **kwargs: Any) -> Tool:
        tool = super().from_function(*args, **kwargs)
        tool.parameters = portable_schema(tool.parameters)
        return tool

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
                raise ToolError(_describe_validation(exc.__cause__)) from None
            if isinstance(exc.__cause__, MCPHooksError):  # ours: written for the caller
                raise ToolError(str(exc.__cause__)) from None
            raise


# -- the MCP server ------------------------------------------------------------


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
            connection = session_connection(ctx)
            if connection is not None:
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
                uri=HOOK_URI.format(name=hook.name), name=hook.name,
                title=prompts.hook_resource_title(hook.name),
                description=hook.description, mime_type="text/markdown",
            ))
        return resources


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
        event_type: Annotated[str, Field(description=FIRE["event_type"])],
        ctx: Context[Any, Any],
        session_id: Annotated[str | None, Field(description=FIRE["session_id"])] = None,
        work_dir: Annotated[str | None, Field(description=FIRE["work_dir"])] = None,
        tool_name: Annotated[str | None, Field(description=FIRE["tool_name"])] = None,
        tool_input: Annotated[dict[str, Any] | None, Field(
            description=FIRE["tool_input"])] = None,
        tool_use_id: Annotated[str | None, Field(description=FIRE["tool_use_id"])] = None,
        tool_output: Annotated[Any, Field(description=FIRE["tool_output"])] = None,
        error: Annotated[Any, Field(description=FIRE["error"])] = None,
        payload: Annotated[dict[str, Any] | None, Field(description=FIRE["payload"])] = None,
        context: Annotated[dict[str, Any] | None, Field(description=FIRE["context"])] = None,
    ) -> Annotated[CallToolResult, Outcome] | InputRequiredResult:
        name = canonical_event(event_type)  # UnknownEventError: a tool error
        try:  # this door's one guard (``guard.py``): nothing under it catches for it
            fault = _unprocessable((tool_input, tool_output, error, payload, context))
            if fault is not None:
                return _fired(service.fault(name, fault))
            # one vocabulary: Bash -> Shell, file_path -> path (vocabulary.MCP_CLIENTS); the
            # caller's own name and input under payload.host, a rewrite back in its keys
            call = None if tool_name is None else caller_tool(MCP_CLIENTS, tool_name,
                                                              tool_input or {})
            if call is not None and call.host is not None:
                tool_name, tool_input = call.tool_name, call.tool_input
                payload = call.payload(payload)
            event = Event.create(
                event_type=event_type, session_id=session_id, work_dir=work_dir,
                tool_name=tool_name, tool_input=tool_input, tool_use_id=tool_use_id,
                tool_output=tool_output, error=error, payload=payload or {},
                context=context or {},
            )
            outcome = await _fire_asking(service, ctx, event)  # a person, if a hook asks
            if isinstance(outcome, InputRequiredResult):
                return outcome  # the approval form, as the 2026-07-28 client's round
            # a rewrite in the caller's keys; a tool event with no tool name, a warning
            return _fired(answered(name, outcome, call, service.on_fault, tool_name))
        except _MISTAKES:  # the caller's (a malformed field, a work_dir outside the roots)
            raise
        except BaseException as exc:  # ours, an oracle's SystemExit...: a fault, never a crash
            if passes_through(exc):  # the request was cancelled, or the server stops
                raise
            logger.error("fire_hook_event failed on a %s event", name, exc_info=exc)
            return _fired(service.fault(name, f"the server failed: {named(exc)}"))

    async def respond_to_signal(
        signal_id: Annotated[str, Field(description=RESPOND["signal_id"])],
        action: Annotated[str, Field(description=RESPOND["action"])],
        details: Annotated[dict[str, Any] | None, Field(description=RESPOND["details"])] = None,
        session_id: Annotated[str | None, Field(description=RESPOND["session_id"])] = None,
    ) -> SignalResponse:
        if service.log is None:
            raise BadRequest("this server keeps no log (--no-log), so it has no signal to "
                             "answer; serve it with a log to answer signals")
        # the look-up reads the store: off the event loop, other clients go on
        try:
            line = await anyio.to_thread.run_sync(
                lambda: respond(service.store, signal_id, action, details,
                                session_id=session_id))
        except UnknownSignal:  # its text names the server's log file or store: not for them
            raise BadRequest(f"no signal {signal_id!r} is known to this server (never sent, "
                             "expired, or too old to be read); give the header.id of a signal "
                             "that fire_hook_event returned") from None
        except StateUnavailable:
            logger.exception("respond_to_signal: the state store cannot be used")
            raise ServiceUnavailable("the server cannot reach its state now; nothing was "
                                     "recorded: answer the signal again later") from None
        return SignalResponse(signal_id=signal_id, consumed_at=line["timestamp"],
                              action=action, intensity=line["intensity"],
                              source=line["source"], hook=line["hook"],
                              consumed=True, details=details)

    async def list_hooks(
        event_type: Annotated[str | None, Field(description=LIST["event_type"])] = None,
        tool_name: Annotated[str | None, Field(description=LIST["tool_name"])] = None,
        work_dir: Annotated[str | None, Field(description=LIST["work_dir"])] = None,
    ) -> HookListing:
        event = canonical_event(event_type) if event_type is not None else None
        if tool_name is not None:  # the name hooks see (Bash -> Shell)
            tool_name = caller_tool(MCP_CLIENTS, tool_name, {}).tool_name
        return listing(await service.registry_for(work_dir), event, tool_name)

    async def get_hook(
        name: Annotated[str, Field(description=GET["name"])],
        work_dir: Annotated[str | None, Field(description=GET["work_dir"])] = None,
    ) -> HookDocument:
        check_hook_name(name)
        registry = await service.registry_for(work_dir)
        hook = find_hook(registry, name)
        return document(registry, hook, read_hook(hook))

    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    tools = [
        _Tool.from_function(
            fire_hook_event, title=prompts.FIRE_TITLE, description=prompts.FIRE_DESCRIPTION,
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                        idempotent_hint=False, open_world_hint=False),
        ),
        _Tool.from_function(
            respond_to_signal, title=prompts.RESPOND_TITLE,
            description=prompts.RESPOND_DESCRIPTION,
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                        idempotent_hint=False, open_world_hint=False),
        ),
        _Tool.from_function(list_hooks, title=prompts.LIST_TITLE,
                            description=prompts.LIST_DESCRIPTION, annotations=read_only),
        _Tool.from_function(get_hook, title=prompts.GET_TITLE,
                            description=prompts.GET_DESCRIPTION, annotations=read_only),
    ]
    server = _HooksServer(
        service, name=name, title=prompts.SERVER_TITLE, version=__version__,
        instructions=prompts.INSTRUCTIONS, tools=tools, subscriptions=notifier.bus,
        request_state_security=state_security(service.settings),  # one key for replicas
    )
    server.middleware.append(notifier.track)
    server.middleware.insert(0, RoundGuard(lambda: service.store))  # outside the SDK's seal
    service.add_listener(notifier.hooks_changed)
    # handshake-era clients see resources.listChanged (the SDK's transports never ask for it)
    default_notification_options(server, NotificationOptions(resources_changed=True))

    async def index() -> str:
        registry = await service.registry_for(None)
        data = {
            "project_dir": str(registry.project_dir) if registry.project_dir else None,
            "user_dir": str(registry.user_dir),
            **listing(registry).model_dump(mode="json", by_alias=True),
        }
        return json.dumps(data, indent=1)

    def events() -> str:
        # tool events name the tool vocabulary: canonical names, input keys, callers' names
        tools = tool_catalogue()
        data = [e | {"tools": tools} if e["layer"] == "react" else e for e in catalogue()]
        return json.dumps(data, indent=1)

    async def hook_text(name: str) -> str:
        registry = await service.registry_for(None)
        try:
            return read_hook(find_hook(registry, name)).text
        except BadRequest as exc:
            raise ResourceNotFoundError(str(exc)) from None

    server.add_resource(FunctionResource.from_function(
        index, uri=INDEX_URI, name="hook-index", title=prompts.INDEX_TITLE,
        description=prompts.INDEX_DESCRIPTION, mime_type="application/json",
    ))
    server.add_resource(FunctionResource.from_function(
        events, uri=EVENTS_URI, name="event-catalogue", title=prompts.EVENTS_TITLE,
        description=prompts.EVENTS_DESCRIPTION, mime_type="application/json",
    ))
    server.resource(
        HOOK_URI, name="hook", title=prompts.HOOK_TITLE, description=prompts.HOOK_DESCRIPTION,
        mime_type="text/markdown",
    )(hook_text)

    async def protocol() -> str:
        registry = await service.registry_for(None)
        return prompts.lifecycle_protocol(h.event for h in registry.hooks())

    server.add_prompt(Prompt.from_function(
        protocol, name=prompts.PROMPT_NAME, title=prompts.PROMPT_TITLE,
        description=prompts.PROMPT_DESCRIPTION,
    ))
    return server


async def _fire_asking(service: HookService, ctx: Context[Any, Any], event: Event
                       ) -> Outcome | InputRequiredResult:
    """Fire with the client's way to ask a person (``approval``): the form now, or the
    ``input_required`` round of a 2026-07-28 client, whose retry's answer is stored first."""
    approve, deferral = door_approver(ctx.request_context)
    if ctx.request_state is not None:  # the retry of a round: its answer first
        params = ctx.request_context.session.client_params
        await take_round(service.store, ctx.request_state, ctx.input_responses,
                         params.client_info.name if params is not None else "")
    outcome = await service.fire(event, on_hook_done=_Progress(ctx, service, event),
                                 approve=approve)
    if deferral is not None and deferral.request is not None \
            and outcome.ask is not None and not outcome.denied:
        return input_required(deferral.request)
    return outcome


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




# -- serving ---------------------------------------------------------------------------------


async def _ready(service: HookService) -> bool:
    """Whether ``service`` can decide now (``GET /readyz``): its default project's hooks are
    loaded (loaded now if not yet) and its store answers; why not goes to the log."""
    try:
        await service.engine_for(None)
    except Exception as exc:
        logger.warning("not ready: the hooks cannot be loaded: %s", exc)
        return False
    fault = await anyio.to_thread.run_sync(store_ready, service.store)
    if fault is not None:
        logger.warning("not ready: the state store does not answer: %s", fault)
        return False
    return True


async def serve_hooks(
    service: HookService, options: ServeOptions, *, bridge_tool: bool = False,
    ask_tools: bool = False, routes: Sequence[BaseRoute] = (),
) -> None:
    """Serve ``service`` as the MCP server (and the host-bridge endpoints) until the client
    disconnects (stdio) or the process is stopped (HTTP/SSE). Enters the service itself.

    Args:
        service: the engine side, not yet entered.
        options: transport, address, token (``options.check()`` must pass).
        bridge_tool: also serve ``bridge_hook``, the tool Claude Code ``mcp_tool`` hooks call.
        ask_tools: also serve ``pending_asks``, ``approve_ask``, ``refuse_ask`` (an operator's).
        routes: more HTTP routes (``serve --metrics``, ``--dashboard``), beside the others.

    Raises:
        TransportConfigError: the options must not be served.
        AddressInUseError: HTTP/SSE cannot listen: the address is taken (raised before the
            service starts, so alone, not inside an exception group).
    """
    sock = bind(options)  # AddressInUseError now, before anything else starts
    try:
        async with service:
            server = build_server(service)
            if bridge_tool:  # Claude Code mcp_tool hooks
                register_bridge_tool(server, service.engine_for, service.on_fault)
            if ask_tools:  # an operator's client answers asks (server/asks.py)
                register_ask_tools(server, service.store)
            # POST /hooks/bridge/<host>: host hook calls forwarded by `install --via server`;
            # mounted only when a token is set (bridge_routes returns [] otherwise). With a
            # shared --state, a nonce one replica accepted is refused by every other.
            shared = scheme(service.settings.state) != "file"
            mounted = bridge_routes(service.engine_for, options.token, service.on_fault,
                                    claim=service.store.claim if shared else None)
            mounted += health_routes(partial(_ready, service))  # GET /healthz, /readyz
            mounted += ask_routes(service.store, options.token)  # /asks (with a token only)
            await serve(server, options, routes=[*mounted, *routes], sock=sock)
    finally:
        if sock is not None:
            sock.close()
