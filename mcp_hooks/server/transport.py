"""Serve an MCP server over stdio, streamable HTTP or SSE, with the options mcp-hooks shares.

Every mcp-hooks command that serves MCP (``serve``, ``proxy``) offers the same transport
options (``ServeOptions``; their command-line spelling is declared once in
``mcp_hooks.cli.serve``) and the same safety rules, enforced here once:

- ``--transport stdio|http|sse``: stdio (default), streamable HTTP at ``/mcp``, or the older
  SSE transport at ``/sse`` (messages are POSTed to ``/messages/``).
- ``--host`` (default 127.0.0.1) and ``--port`` (0 picks a free port; the URL actually served
  is announced on stderr).
- ``--token`` or ``MCP_HOOKS_TOKEN``: HTTP and SSE then require ``Authorization: Bearer
  <token>`` on every request (compared in constant time; 401 otherwise, whose body says to
  set that header, and no OAuth: see ``bearer.BearerTokenMiddleware``), but for the forwarding
  endpoints' signed requests, which prove the token without sending it and are checked by
  the endpoints themselves. Binding an address that is not loopback without a token is
  refused with a message saying how to set one.
- ``--stateless``: stateless streamable HTTP (no session ids; for replicas behind a load
  balancer; the server cannot push list-changed notifications then).
- ``--allowed-host``: DNS-rebinding protection for a server reached by a real hostname: the
  ``Host`` (and ``Origin``) headers must name a loopback address or one of these hosts.
  Loopback binds get the check for loopback names automatically.
- ``--log-level``: logs go to stderr only; on stdio, stdout carries nothing but the protocol.

Usage::

    options = ServeOptions(transport="http", port=0, token=token)
    options.check()                     # TransportConfigError: refuse to start, say why
    configure_logging(options.log_level)
    await serve(server, options, routes=[Route("/hook", endpoint, methods=["POST"])])

A port already taken is ``errors.AddressInUseError``, raised by ``bind`` (which ``serve``
calls unless handed a socket) before any task group starts, so it reaches the command as one
error, not a traceback in a group. ``bind`` first, then start what else must run, then
``serve(..., sock=sock)`` keeps it so (``server.app.serve_hooks`` does).

``server`` may be a high-level ``MCPServer`` or a low-level ``Server``. Extra Starlette
routes are mounted beside the MCP endpoint on HTTP and SSE, behind the same bearer check.
``build_http_app`` returns the ASGI app itself, for tests and other ASGI servers.

This module imports the MCP SDK, Starlette and uvicorn only inside the functions that serve,
so ``ServeOptions`` is cheap to build while reading the command line.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio

from mcp_hooks.errors import AddressInUseError, ConfigError
from mcp_hooks.server.addresses import also_reachable

# The bearer check's names, imported from here by the commands and the tests that serve.
from mcp_hooks.server.bearer import AUTH_HINT as AUTH_HINT
from mcp_hooks.server.bearer import DASHBOARD_PATH as DASHBOARD_PATH
from mcp_hooks.server.bearer import NOT_OAUTH as NOT_OAUTH
from mcp_hooks.server.bearer import SELF_AUTHENTICATED_HEADER as SELF_AUTHENTICATED_HEADER
from mcp_hooks.server.bearer import SELF_AUTHENTICATED_PATH as SELF_AUTHENTICATED_PATH
from mcp_hooks.server.bearer import SELF_AUTHENTICATED_PREFIX as SELF_AUTHENTICATED_PREFIX
from mcp_hooks.server.bearer import TOKEN_ENV as TOKEN_ENV
from mcp_hooks.server.bearer import BearerTokenMiddleware

if TYPE_CHECKING:
    import anyio
    from mcp.server import MCPServer, Server
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import BaseRoute
    from starlette.types import ASGIApp

TransportName = Literal["stdio", "http", "sse"]
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")

logger = logging.getLogger("mcp_hooks.server.transport")
# wraps the SDK's streamable-HTTP app: (app, its DNS-rebinding settings, the MCP path) -> app
FastPathWrap = Callable[["ASGIApp", "TransportSecuritySettings | None", str], "ASGIApp"]


class TransportConfigError(ConfigError):
    """Options that must not be served (a public bind without a token, a bad port, an address
    that cannot be bound); the message says how to fix them."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, localhost)."""
    name = host.strip("[]").lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServeOptions:
    """How to serve: transport, address, token and HTTP settings.

    Attributes:
        transport: ``stdio``, ``http`` (streamable HTTP at ``/mcp``) or ``sse`` (``/sse``).
        host: address to bind (HTTP/SSE).
        port: port to bind; 0 picks a free one.
        token: bearer token every HTTP/SSE request must carry; None for none.
        stateless: stateless streamable HTTP.
        allowed_hosts: extra ``Host`` header values accepted (DNS-rebinding protection).
        log_level: stderr log level name.
        fast_stdio: stdio from pipes is served on the event loop (``server.stdio``: no thread
            hops, and a line the SDK would drop gets a JSON-RPC error); False: the SDK's own
            ``stdio_server``, for comparison (``bench/bench_server.py``) or as a way out of a
            bug (``mcp-hooks serve`` reads ``MCP_HOOKS_SERVE_STDIO=sdk``).
    """

    transport: TransportName = "stdio"
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    stateless: bool = False
    allowed_hosts: tuple[str, ...] = ()
    log_level: str = "WARNING"
    fast_stdio: bool = True

    def check(self) -> None:
        """Refuse options that would expose the server.

        Raises:
            TransportConfigError: a non-loopback HTTP/SSE bind without a token, a bad port.
        """
        if self.transport == "stdio":
            return
        if not 0 <= self.port <= 65535:
            raise TransportConfigError(f"--port {self.port} is not a TCP port (0-65535)")
        if self.token is None and not is_loopback(self.host):
            raise TransportConfigError(
                f"refusing to serve {self.transport} on {self.host}, which is reachable from "
                f"other machines, without a token. Set one with --token TOKEN or the "
                f"{TOKEN_ENV} environment variable (for example: export {TOKEN_ENV}="
                f"\"$(openssl rand -hex 32)\"); clients then send 'Authorization: Bearer "
                f"TOKEN'. Or bind --host 127.0.0.1."
            )

    def url(self, port: int | None = None) -> str:
        """The URL a client connects to (for HTTP/SSE)."""
        host = self.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        path = SSE_PATH if self.transport == "sse" else MCP_PATH
        return f"http://{host}:{self.port if port is None else port}{path}"


def configure_logging(level: str = "WARNING") -> None:
    """Send every log record to stderr (never stdout, which may carry the protocol)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


# -- HTTP ------------------------------------------------------------------------------------


def transport_security(options: ServeOptions) -> TransportSecuritySettings | None:
    """DNS-rebinding protection: on for loopback binds and whenever hosts are allowed."""
    # lazy: 2,200 ms (the MCP SDK) of cold start for every command that reads serve's flags
    from mcp.server.transport_security import TransportSecuritySettings

    if not options.allowed_hosts and not is_loopback(options.host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = ["127.0.0.1", "localhost", "[::1]", *options.allowed_hosts]
    hosts: list[str] = []
    origins: list[str] = []
    for name in names:
        hosts += [name, f"{name}:*"]
        for scheme in ("http", "https"):
            origins += [f"{scheme}://{name}", f"{scheme}://{name}:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def build_http_app(
    server: MCPServer | Server[Any],
    options: ServeOptions,
    routes: Sequence[BaseRoute] = (),
    fast_path: FastPathWrap | None = None,
) -> ASGIApp:
    """The ASGI app serving ``server`` over streamable HTTP (``/mcp``) or SSE (``/sse``).

    Args:
        server: the MCP server.
        options: transport (``http`` or ``sse``), token, stateless, allowed hosts.
        routes: extra Starlette routes, mounted beside the MCP endpoint, behind the token.
        fast_path: streamable HTTP: wraps the SDK's app (given its DNS-rebinding settings and
            the endpoint's path), inside the bearer check (the proxy's ``http_fast``).
    """
    # lazy: 2,200 ms (the MCP SDK) of cold start for every command that reads serve's flags
    from mcp_hooks.server.sdk_compat import lowlevel_server

    lowlevel = lowlevel_server(server)
    security = transport_security(options)
    app: ASGIApp
    if options.transport == "sse":
        app = _sse_app(lowlevel, security, routes)
    elif options.transport == "http":
        # lazy: 340 ms (starlette) of cold start for every command that reads serve's flags
        from starlette.routing import Route

        app = lowlevel.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=options.stateless,
            transport_security=security,
            host=options.host,
            custom_starlette_routes=cast("list[Route]", list(routes)),
        )
        if fast_path is not None:
            app = fast_path(app, security, MCP_PATH)
    else:
        raise ValueError(f"no HTTP app for transport {options.transport!r}")
    if options.token:
        app = BearerTokenMiddleware(app, options.token)
    return app


def _sse_app(
    lowlevel: Server[Any],
    security: TransportSecuritySettings | None,
    extra: Sequence[BaseRoute],
) -> Starlette:
    # lazy: 2,200 ms (the MCP SDK) of cold start for every command that reads serve's flags
    from mcp.server.sse import SseServerTransport

    # lazy: 340 ms (starlette) of cold start for every command that reads serve's flags
    from starlette.applications import Starlette

    # lazy: 340 ms (starlette) of cold start for every command that reads serve's flags
    from starlette.requests import Request

    # lazy: 340 ms (starlette) of cold start for every command that reads serve's flags
    from starlette.responses import Response

    # lazy: 340 ms (starlette) of cold start for every command that reads serve's flags
    from starlette.routing import Mount, Route

    # lazy: 2,200 ms (the MCP SDK) of cold start for every command that reads serve's flags
    from mcp_hooks.server.sdk_compat import asgi_send

    sse = SseServerTransport(MESSAGES_PATH, security_settings=security)

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, asgi_send(request)) as streams:
            await lowlevel.run(streams[0], streams[1], lowlevel.create_initialization_options())
        return Response()

    routes: list[BaseRoute] = [
        Route(SSE_PATH, endpoint=handle_sse, methods=["GET"]),
        Mount(MESSAGES_PATH, app=sse.handle_post_message),
        *extra,
    ]
    return Starlette(routes=routes)


# -- serving ---------------------------------------------------------------------------------


def bind(options: ServeOptions) -> socket.socket | None:
    """The listening address of HTTP/SSE options, bound now (None for stdio).

    Binding before anything else starts turns a taken port into one plain error, where a
    bind inside uvicorn would log, ``SystemExit`` and surface in a task group.

    Raises:
        AddressInUseError: another process listens on the host and port.
        TransportConfigError: the address cannot be bound for another reason (not this
            machine's, a port below 1024 without the right, a host name that does not resolve).
    """
    if options.transport == "stdio":
        return None
    family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on connections of a socket that says
    # it is TCP, and without it a kept-alive connection's answer body waits ~40 ms for the
    # client's delayed ACK (Nagle) after its headers.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind((options.host.strip("[]"), options.port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise AddressInUseError(options.host, options.port) from None
        reason = exc.strerror or str(exc)
        raise TransportConfigError(
            f"cannot listen on {options.host}:{options.port}: {reason}; pass another --host "
            "or --port") from None
    return sock


async def serve(
    server: MCPServer | Server[Any],
    options: ServeOptions,
    *,
    routes: Sequence[BaseRoute] = (),
    on_ready: Callable[[str], Awaitable[None] | None] | None = None,
    shutdown: anyio.Event | None = None,
    sock: socket.socket | None = None,
    fast_path: FastPathWrap | None = None,
) -> None:
    """Serve until the client disconnects (stdio) or the process is interrupted (HTTP/SSE).

    Args:
        server: a high-level ``MCPServer`` or a low-level ``Server``.
        options: how to serve; ``options.check()`` is called first.
        routes: extra Starlette routes for HTTP/SSE (ignored on stdio).
        on_ready: called with the URL once HTTP/SSE is listening (the stdio "URL" is
            ``stdio:``); the URL is also announced on stderr.
        shutdown: for HTTP/SSE, an event that stops the server gracefully when set.
        sock: for HTTP/SSE, the socket ``bind(options)`` returned; bound here when None.
        fast_path: for streamable HTTP, wraps the SDK's app (``build_http_app``).

    Raises:
        TransportConfigError: the options must not be served.
        AddressInUseError: HTTP/SSE: the host and port are taken (before anything starts).
    """
    # lazy: 2,200 ms (the MCP SDK) of cold start for every command that reads serve's flags
    from mcp_hooks.server.sdk_compat import lowlevel_server

    options.check()
    lowlevel = lowlevel_server(server)
    if options.transport == "stdio":
        # lazy: 2,200 ms (the MCP SDK) of cold start for every command that reads serve's flags
        from mcp_hooks.server.stdio import stdio_transport

        # From pipes, served on the event loop: no thread hops, and a line the SDK would drop
        # (too deep, not JSON-RPC) gets a JSON-RPC error instead of no answer. Either way on
        # the stdout the door owns (``ownstdout``), never on whatever fd 1 is now.
        async with stdio_transport(event_loop=options.fast_stdio) as (read_stream,
                                                                      write_stream):
            if on_ready is not None:
                await _maybe_await(on_ready("stdio:"))
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        return
    own = sock is None
    listening = bind(options) if sock is None else sock
    assert listening is not None
    try:
        await _serve_http(server, options, routes, on_ready, shutdown, listening, fast_path)
    finally:
        if own:
            listening.close()


async def _maybe_await(value: Awaitable[None] | None) -> None:
    if value is not None:
        await value


async def _serve_http(
    server: MCPServer | Server[Any],
    options: ServeOptions,
    routes: Sequence[BaseRoute],
    on_ready: Callable[[str], Awaitable[None] | None] | None,
    shutdown: anyio.Event | None,
    sock: socket.socket,
    fast_path: FastPathWrap | None = None,
) -> None:
    # lazy: 240 ms (uvicorn) of cold start for commands that read serve's flags, and stdio
    import uvicorn

    app = build_http_app(server, options, routes, fast_path)
    config = uvicorn.Config(
        app, host=options.host, port=options.port, log_config=None,
        log_level=options.log_level.lower(), lifespan="on", timeout_graceful_shutdown=2,
    )
    web = uvicorn.Server(config)
    failed: list[str] = []

    async def run_web() -> None:
        try:
            await web.serve(sockets=[sock])
        except SystemExit:  # uvicorn exits when it cannot start; it has logged why
            failed.append(f"cannot serve on {options.host}:{options.port}; see the log above")
            web.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_web)
        while not web.started:
            if failed:
                raise TransportConfigError(failed[0])
            await anyio.sleep(0.01)
        port = sock.getsockname()[1]
        url = options.url(port)
        auth = "bearer token required" if options.token else "no token"

        print(f"mcp-hooks: serving {options.transport} at {url} ({auth})"
              f"{also_reachable(options.host, url)}",
              file=sys.stderr, flush=True)
        if on_ready is not None:
            await _maybe_await(on_ready(url))
        if shutdown is not None:
            await shutdown.wait()
            web.should_exit = True
