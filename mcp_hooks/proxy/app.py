"""The proxy's MCP server: the upstreams' tools, resources and prompts, served and gated.

``Proxy`` is a low-level MCP ``Server`` that serves the union of its upstreams' tools,
resources, resource templates and prompts, unchanged (``catalog``), and passes every
``tools/call`` through the hooks (``gate``). It adds one resource of its own,
``hooks://proxy/status``: each upstream's state, last error, restarts and tools. Its parts:

    Proxy ── startup   serve at once; the listing window; requests that wait for a start
          ── catalog   names -> upstreams (aggregation, prefixes, routes)
          ── gate      before_tool -> upstream -> after_tool / after_tool_failure
          ── sessions  downstream sessions: session_start, session_end
          ── fast      the fast paths' own answers to plain tools/call (stdio; http_fast)
          ── passthrough  resources, templates, prompts, completions to their upstream
          └─ upstreams one ``Upstream`` (its state machine) per server

Use as an async context manager inside an entered ``Engine``; upstream connections run in
the proxy's task group, session events in a second one outside it, so stopping the upstreams
never cancels the ``session_end`` hooks that run meanwhile. ``run_proxy`` serves it until
the client goes or the process is told to stop; ``serve_proxy`` is the command's entry.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import socket
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.dispatcher import ProgressFnT

from mcp_hooks import __version__
from mcp_hooks.engine.engine import Engine
from mcp_hooks.engine.observe import EventObserver
from mcp_hooks.engine.wiring import wire
from mcp_hooks.proxy.catalog import Catalog, NameMemory
from mcp_hooks.proxy.config import UpstreamSpec, upstream_secrets
from mcp_hooks.proxy.fast import FastPath
from mcp_hooks.proxy.gate import Gate
from mcp_hooks.proxy.http_fast import HttpFastPath
from mcp_hooks.proxy.listing import Kind
from mcp_hooks.proxy.passthrough import Passthrough
from mcp_hooks.proxy.relay import progress_forwarder, request_peer
from mcp_hooks.proxy.results import error_result
from mcp_hooks.proxy.sessions import DownstreamSession, SessionMiddleware, Sessions
from mcp_hooks.proxy.startup import LISTING_WINDOW, Startup
from mcp_hooks.proxy.upstream import (
    DEFAULT_STARTUP_TIMEOUT,
    DEFAULT_TIMEOUT,
    Upstream,
)
from mcp_hooks.server import transport
from mcp_hooks.server.approval import RoundGuard, RoundRefused, state_security, take_round
from mcp_hooks.server.health import health_routes
from mcp_hooks.server.stdio import stdio_transport
from mcp_hooks.settings import Settings
from mcp_hooks.state.eventlog import EventLog

if TYPE_CHECKING:
    from mcp_hooks.registry.discovery import Registry
    from mcp_hooks.server.transport import FastPathWrap, ServeOptions

logger = logging.getLogger("mcp_hooks.proxy")

@dataclass(frozen=True)
class ProxySettings:
    """How the proxy treats its upstreams.

    Attributes:
        prefix_all: prefix every tool and prompt ``<server>__``, not only colliding ones.
        timeout: seconds an upstream request may take (a server's own ``timeout`` wins).
        startup_timeout: seconds an upstream may take to start and list what it has.
        startup_wait: the listing window: seconds after the start during which a listing
            waits for the upstreams still in their first start (``startup``); the proxy
            answers ``initialize`` at once either way, and slower upstreams join later with a
            list-changed notification.
        fast_stdio: the hand-written stdio paths (the downstream fast path, the upstreams'
            raw channel); False uses the SDK's stdio transports on both sides
            (``MCP_HOOKS_PROXY_STDIO=sdk``), for comparison or as a way out of a bug.
        fast_http: the streamable-HTTP fast paths (downstream ``http_fast``, the upstreams'
            ``upstream_http``); False: the SDK on both sides (``MCP_HOOKS_PROXY_HTTP=sdk``).
        routes: Starlette routes served beside ``/healthz`` over HTTP/SSE (``--metrics``).
    """

    prefix_all: bool = False
    timeout: float = DEFAULT_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    startup_wait: float = LISTING_WINDOW
    fast_stdio: bool = True
    fast_http: bool = True
    routes: tuple[Any, ...] = ()


class _ProxyServer(Server[Any]):
    """The proxy's low-level server: says it sends list-changed notifications on every era."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(
                prompts_changed=True, resources_changed=True, tools_changed=True),
            experimental_capabilities, extensions,
        )


class Proxy:
    """An MCP server in front of upstream MCP servers, gating every tool call with hooks.

    Use as an async context manager inside an entered ``Engine``; ``server`` is the MCP
    server to serve, or to connect a ``Client`` to in memory::

        async with Engine(registry, log=log) as engine, Proxy(specs, engine) as proxy:
            await proxy.start()
            await serve(proxy.server, options)

    Args:
        specs: the upstream servers.
        engine: fires the hooks (entered).
        settings: prefixes and timeouts.
        log: the event log, for upstream state changes.
        transport: how the proxy itself is served (``stdio``, ``http``, ``sse``), for the
            session events.
    """

    def __init__(
        self,
        specs: Sequence[UpstreamSpec],
        engine: Engine,
        settings: ProxySettings | None = None,
        *,
        log: EventLog | None = None,
        transport: str = "stdio",
    ) -> None:
        self.settings = settings or ProxySettings()
        self.engine = engine
        self.transport = transport
        self.upstreams = [
            Upstream(spec, timeout=self.settings.timeout,
                     startup_timeout=self.settings.startup_timeout,
                     on_change=self._upstream_changed, log=log,
                     fast_stdio=self.settings.fast_stdio, fast_http=self.settings.fast_http)
            for spec in specs
        ]
        self.startup = Startup(self.upstreams, window=self.settings.startup_wait,
                               startup_timeout=self.settings.startup_timeout)
        self.catalog = Catalog(prefix_all=self.settings.prefix_all,
                               memory=NameMemory.default())
        self.gate = Gate(engine, self.catalog)
        self.sessions = Sessions(self.gate.fire, transport=transport,
                                 upstreams=[u.name for u in self.upstreams])
        self._bus = InMemorySubscriptionBus()
        self._up_tg: TaskGroup | None = None
        self._ev_tg: TaskGroup | None = None
        passthrough = Passthrough(self.catalog, self.upstreams, self.startup, self.status)

        self.server = _ProxyServer(
            "mcp-hooks-proxy",
            version=__version__,
            title="mcp-hooks gating proxy",
            instructions=self._instructions(),
            get_tool_input_schema=self.catalog.input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=passthrough.list_resources,
            on_list_resource_templates=passthrough.list_templates,
            on_read_resource=passthrough.read_resource,
            on_list_prompts=passthrough.list_prompts,
            on_get_prompt=passthrough.get_prompt,
            on_completion=passthrough.complete,
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        self.server.middleware.append(SessionMiddleware(self.sessions))
        # an ask's input_required round: its requestState sealed under this process's key,
        # bound to the tool and its exact arguments (``server/approval.py``)
        self.server.middleware += [RoundGuard(lambda: engine.store), RequestStateBoundary(
            state_security(engine.settings), default_audience="mcp-hooks-proxy")]
        self._fast = FastPath(self.catalog, self.sessions, self.gate,
                              lambda: self.server.server_info_stamp)

    @property
    def shutdown_reason(self) -> str | None:
        """Why the proxy stops, for ``session_end`` (None: it has not been told)."""
        return self.sessions.shutdown_reason

    @shutdown_reason.setter
    def shutdown_reason(self, reason: str | None) -> None:
        self.sessions.shutdown_reason = reason

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> Proxy:
        # Session events outside, upstream connections inside: cancelling the upstreams at
        # the end must not cancel the session_end hooks that run meanwhile.
        ev_tg = anyio.create_task_group()
        await ev_tg.__aenter__()
        up_tg = anyio.create_task_group()
        await up_tg.__aenter__()
        self._up_tg, self._ev_tg = up_tg, ev_tg
        self.sessions.bind(ev_tg)
        for upstream in self.upstreams:
            upstream.bind(up_tg)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        reason = self.shutdown_reason or ("error" if exc is not None else "proxy_shutdown")
        self.sessions.close_all(reason)
        ev_tg, up_tg = self._ev_tg, self._up_tg
        assert ev_tg is not None and up_tg is not None
        # Upstreams stop while the session_end hooks run: hosts give a proxy about 2 s to
        # exit once they close its stdin.
        for upstream in self.upstreams:
            upstream.stop()
        up_tg.cancel_scope.cancel()
        try:
            await up_tg.__aexit__(None, None, None)
        finally:
            self._up_tg = None
            try:
                await ev_tg.__aexit__(None, None, None)
            finally:
                self._ev_tg = None
                self.sessions.bind(None)
        return None

    async def start(self, wait: float = 0.0) -> None:
        """Start every upstream in the background (``startup.Startup.begin``) and return at
        once, or after at most ``wait`` s if each is up or has failed sooner."""
        self.startup.begin(self._up_tg)
        with anyio.move_on_after(wait):
            for upstream in self.startup.starting():
                await upstream.start().wait()  # the attempt under way: nothing new starts

    def _instructions(self) -> str:
        names = ", ".join(u.name for u in self.upstreams) or "none"
        text = (
            f"This server forwards the tools, resources and prompts of the MCP servers "
            f"{names}. Every tool call passes through the user's HOOK.md hooks first: a call "
            "a hook refuses returns an error that says why; do not retry it unchanged."
        )
        for upstream in self.upstreams:
            if upstream.instructions:
                text += f"\n\n{upstream.name}: {upstream.instructions.strip()}"
        return text

    # -- what is served, and when it changes ----------------------------------------------

    def rebuild(self) -> None:
        """Recompute what the proxy serves from its upstreams' listings."""
        self.catalog.rebuild(self.upstreams)
        self.server.instructions = self._instructions()  # for the clients still to come
        self.startup.rebuilt()

    async def _upstream_changed(self, upstream: Upstream, kinds: set[Kind]) -> None:
        self.rebuild()
        await self.notify_changed(kinds)

    async def notify_changed(self, kinds: set[Kind]) -> None:
        """Tell every downstream client that can hear it that these lists changed."""
        events: dict[Kind, ServerEvent] = {
            "tools": ToolsListChanged(), "resources": ResourcesListChanged(),
            "prompts": PromptsListChanged(),
        }
        for kind in sorted(kinds):
            await self._bus.publish(events[kind])  # 2026-07-28 clients' listen streams
            for connection in list(self.sessions.connections.values()):  # handshake era
                if kind == "tools":
                    await connection.send_tool_list_changed()
                elif kind == "resources":
                    await connection.send_resource_list_changed()
                else:
                    await connection.send_prompt_list_changed()

    # -- tools ----------------------------------------------------------------------------

    async def call_tool(
        self,
        session: DownstreamSession,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressFnT | None = None,
    ) -> dict[str, Any]:
        """One ``tools/call`` through the hooks (``Gate.call_tool``); the result in wire form.
        A name no upstream lists yet waits while upstreams are starting (``startup``)."""
        await self._await_tool(name)
        return await self.gate.call_tool(session, name, arguments, progress)

    async def _await_tool(self, name: str) -> None:
        if name not in self.catalog.tool_routes:
            await self.startup.await_known(lambda: name in self.catalog.tool_routes)

    def fast_request(self, message: dict[str, Any]) -> Awaitable[dict[str, Any]] | None:
        """The stdio fast path (``fast.FastPath``): a ``tools/call`` request the proxy
        answers itself (as its JSON-RPC response), or None to leave it to the SDK server."""
        return self._fast(message)

    def http_fast_path(self) -> FastPathWrap | None:
        """The streamable-HTTP fast path's wrapper (``http_fast``), None when it is off."""
        if not self.settings.fast_http:
            return None
        return lambda app, security, path: HttpFastPath(app, self._fast, security, path)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await self.startup.before_listing()
        return types.ListToolsResult(tools=self.catalog.tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        await self._await_tool(params.name)
        session = self.sessions.of(ctx)
        if params.request_state is not None:  # the retry of an ask's round: its answer first
            try:
                await take_round(self.engine.store, params.request_state,
                                 params.input_responses, session.client or "")
            except RoundRefused as exc:
                return types.CallToolResult.model_validate(error_result(str(exc)))
        result = await self.gate.call_tool(session, params.name, dict(params.arguments or {}),
                                           progress_forwarder(ctx), request_peer(ctx, session.id))
        if result.get("resultType") == "input_required":
            return types.InputRequiredResult.model_validate(result, by_name=False)
        return types.CallToolResult.model_validate(result, by_name=False)

    # -- status ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """What ``hooks://proxy/status`` shows."""
        registry = self.engine.registry
        return {
            "proxy": {
                "transport": self.transport,
                "prefix_all": self.settings.prefix_all,
                "timeout_seconds": self.settings.timeout,
                "startup_timeout_seconds": self.settings.startup_timeout,
                "tools": len(self.catalog.tools),
                "fast_path_calls": self._fast.served,
                "upstreams_starting": [u.name for u in self.startup.starting()],
                "hooks_user_dir": str(registry.user_dir),
                "project_dir": str(registry.project_dir) if registry.project_dir else None,
            },
            "upstreams": [u.status() for u in self.upstreams],
            "sessions": self.sessions.status(),
        }


# -- serving -------------------------------------------------------------------------------


async def run_proxy(
    specs: Sequence[UpstreamSpec],
    engine: Engine,
    settings: ProxySettings,
    serve_options: ServeOptions,
    *,
    log: EventLog | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Serve the proxy until the client goes (stdio) or the process is told to stop.

    Over stdio (pipes, as hosts start MCP servers) the proxy serves on its own event-loop
    transport with the fast path (``stdio.stdio_streams``), or with the SDK's
    ``stdio_server`` when ``settings.fast_stdio`` is off or stdio is a terminal
    (``stdio.stdio_transport``), on the stdout it owns; HTTP and SSE go through
    ``transport.serve``.

    Args:
        specs: the upstream servers.
        engine: the entered engine.
        settings: prefixes, timeouts, the stdio switch.
        serve_options: how to serve.
        log: the event log, for upstream state changes.
        sock: HTTP/SSE: the socket ``transport.bind`` returned; bound here when None.

    Raises:
        AddressInUseError: HTTP/SSE, and the port is taken (before any upstream starts).
    """
    own = transport.bind(serve_options) if sock is None else None
    try:
        await _run(specs, engine, settings, serve_options, log, sock or own)
    finally:
        if own is not None:
            own.close()


async def _run(
    specs: Sequence[UpstreamSpec],
    engine: Engine,
    settings: ProxySettings,
    serve_options: ServeOptions,
    log: EventLog | None,
    sock: socket.socket | None,
) -> None:
    stdio = serve_options.transport == "stdio"
    shutdown = anyio.Event()
    async with anyio.create_task_group() as outer:
        async def on_signal(serving: anyio.CancelScope) -> None:
            # Lives until the proxy is done, so a SIGTERM during the shutdown (a host that
            # lost patience) cannot kill the proxy before it has stopped its upstreams.
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    if proxy.shutdown_reason is None:
                        proxy.shutdown_reason = "proxy_shutdown"
                    shutdown.set()
                    if stdio:
                        serving.cancel()

        async with Proxy(specs, engine, settings, log=log,
                         transport=serve_options.transport) as proxy:
            with anyio.CancelScope() as serving:
                outer.start_soon(on_signal, serving)
                await proxy.start()
                server = proxy.server
                if stdio:  # on the stdout the proxy owns (``ownstdout``)
                    async with stdio_transport(
                            proxy.fast_request, replace_lone_surrogates=True,
                            event_loop=settings.fast_stdio) as (read, write):
                        await server.run(read, write, server.create_initialization_options())
                else:
                    await transport.serve(server, serve_options, shutdown=shutdown, sock=sock,
                                          routes=[*health_routes(), *settings.routes],
                                          fast_path=proxy.http_fast_path())
            if proxy.shutdown_reason is None and stdio:
                proxy.shutdown_reason = "client_disconnected"
        outer.cancel_scope.cancel()


def serve_proxy(
    specs: Sequence[UpstreamSpec],
    *,
    settings: ProxySettings,
    serve_options: ServeOptions,
    registry: Registry,
    hooks: Settings,
    observer: EventObserver | None = None,
) -> None:
    """``mcp-hooks proxy``: serve the upstreams, gated, until told to stop. ``observer``:
    the engine's (``engine/observe.py``; ``--otel``: ``tracing.py``).

    Hooks never see the proxy's token nor the upstreams' configured credentials in their
    environment (``config.upstream_secrets``).

    Raises:
        TransportConfigError: ``serve_options`` must not be served.
        AddressInUseError: HTTP/SSE, and the port is taken (raised before anything starts,
            so alone, not inside an exception group).
    """
    serve_options.check()
    transport.configure_logging(serve_options.log_level)
    hooks = dataclasses.replace(hooks, secrets=(
        *hooks.secrets, *([serve_options.token] if serve_options.token else []),
        *upstream_secrets(specs)))
    sock = transport.bind(serve_options)  # AddressInUseError now, before anything starts

    async def main() -> None:
        async with Engine(registry, hooks, wire(registry, hooks, observer=observer)) as engine:
            await run_proxy(specs, engine, settings, serve_options, log=engine.log, sock=sock)

    try:
        anyio.run(main)
    finally:
        if sock is not None:
            sock.close()
