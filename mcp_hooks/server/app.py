"""The MCP server: ``fire_hook_event``, ``respond_to_signal``, ``list_hooks``, ``get_hook``
(``tools``), the ``hooks://`` resources and the ``lifecycle-protocol`` prompt, as a thin
adapter over a ``HookService``.

``build_server(service)`` returns the ``MCPServer`` that exposes it; ``serve_hooks(service,
options)`` serves it (and the host-bridge endpoints) with ``transport.serve``. Every word the
model reads is in ``prompts``; the tools, their errors and the door's one guard are in
``tools``; the structured results are in ``results``; every private SDK name reached is in
``sdk_compat``.

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
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server import MCPServer, NotificationOptions
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, ResourceUpdated
from mcp_types import Resource as MCPResource

from mcp_hooks import __version__
from mcp_hooks.engine.offloop import Caller, close_caller, store_caller
from mcp_hooks.server import prompts
from mcp_hooks.server.approval import (
    RoundGuard,
    state_security,
)
from mcp_hooks.server.asks import ask_routes, register_ask_tools
from mcp_hooks.server.forward import Claim, bridge_routes, register_bridge_tool
from mcp_hooks.server.health import health_routes, store_ready
from mcp_hooks.server.results import (
    listing,
)
from mcp_hooks.server.sdk_compat import default_notification_options, session_connection
from mcp_hooks.server.tools import hook_tools
from mcp_hooks.server.transport import bind, serve
from mcp_hooks.service import (
    BadRequest,
    HookService,
    find_hook,
    read_hook,
)
from mcp_hooks.spec.events import catalogue
from mcp_hooks.spec.vocabulary import tool_catalogue
from mcp_hooks.state.url import scheme

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from mcp_hooks.server.transport import ServeOptions
    from mcp_hooks.state.store import StateStore

logger = logging.getLogger("mcp_hooks.server")

SERVER_NAME = "mcp-hooks"
INDEX_URI = "hooks://index"
EVENTS_URI = "hooks://events"
HOOK_URI = "hooks://hooks/{name}"

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

    server = _HooksServer(
        service, name=name, title=prompts.SERVER_TITLE, version=__version__,
        instructions=prompts.INSTRUCTIONS, tools=hook_tools(service), subscriptions=notifier.bus,
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


# -- serving ---------------------------------------------------------------------------------


def claim_on(store: StateStore, call: Caller) -> Claim:
    """The shared ``store``'s nonce claim, awaited through ``call`` (the store's asyncio
    lane, as an engine's store calls: no worker thread per request)."""

    async def claim(name: str, *, ttl: float) -> bool:
        return await call(lambda: store.claim(name, ttl=ttl))

    return claim


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
            claims = store_caller(service.store, one_shot=False)  # its asyncio lane
            mounted = bridge_routes(service.engine_for, options.token, service.on_fault,
                                    claim=claim_on(service.store, claims) if shared else None)
            mounted += health_routes(partial(_ready, service))  # GET /healthz, /readyz
            mounted += ask_routes(service.store, options.token)  # /asks (with a token only)
            try:
                await serve(server, options, routes=[*mounted, *routes], sock=sock)
            finally:
                await close_caller(claims)
    finally:
        if sock is not None:
            sock.close()
