"""Every private MCP SDK (and Starlette) name mcp-hooks reaches, in one module.

The SDK leaves a few gaps that our doors need filled; each workaround below names the gap, what
breaks when an SDK upgrade closes or moves it, and how to check. Nothing else in the package may
reach a private SDK name: import it from here. Written against ``mcp`` 2.3.0 and Starlette's
``Request``; after an upgrade run ``tests/server/test_server.py`` (it touches every name here:
the list-changed capability and notice, SSE) and the proxy's tests.

======================================  =============================================
here                                    private name it covers
======================================  =============================================
``lowlevel_server(server)``             ``MCPServer._lowlevel_server``
``default_notification_options(...)``   a method assigned onto a ``Server`` instance
``session_connection(ctx)``             ``ServerSession._connection``
``asgi_send(request)``                  Starlette's ``Request._send``
``TransportStreams``                    ``mcp.client._transport.TransportStreams``
``create_mcp_http_client``              ``mcp.shared._httpx_utils.create_mcp_http_client``
``request_stamp(client)``               ``ClientSession._stamp``
======================================  =============================================

This module imports only what its names need, so importing it costs the SDK, which every
caller has loaded already.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

# A type alias: (read stream, write stream) of a client transport, as every SDK transport's
# context manager yields it. Breaks if: the SDK renames the private module; check with
# `python -c "from mcp.client._transport import TransportStreams"`; the shape is also
# `tuple[MemoryObjectReceiveStream[SessionMessage | Exception],
# MemoryObjectSendStream[SessionMessage]]`, which can replace it if it goes.
from mcp.client._transport import TransportStreams
from mcp.server import MCPServer
from mcp.server.connection import Connection

# The httpx client the SDK's own HTTP transports build (MCP's timeouts, redirects followed);
# the proxy passes it the upstream's headers. Breaks if: the SDK moves or renames it; check
# with `python -c "from mcp.shared._httpx_utils import create_mcp_http_client"`; the
# replacement is `httpx.AsyncClient(follow_redirects=True, timeout=httpx.Timeout(30, read=300))`.
from mcp.shared._httpx_utils import create_mcp_http_client

if TYPE_CHECKING:
    from mcp.server import MCPServer, NotificationOptions, Server
    from mcp.server.connection import Connection
    from starlette.requests import Request
    from starlette.types import Send

__all__ = [
    "TransportStreams",
    "asgi_send",
    "create_mcp_http_client",
    "default_notification_options",
    "lowlevel_server",
    "request_stamp",
    "session_connection",
]


def lowlevel_server(server: MCPServer[Any] | Server[Any]) -> Server[Any]:
    """The low-level ``Server`` under an ``MCPServer`` (a low-level one as it is).

    Gap: ``MCPServer`` serves only through its own ``run()``, with the SDK's transports; our
    transports (the event-loop stdio, SSE with extra routes, the bearer check) need the
    low-level server's ``run()`` and ``streamable_http_app()``. The SDK's own in-memory
    transport unwraps ``MCPServer`` the same way.

    Breaks if: the attribute is renamed (AttributeError on every ``serve``); check with
    ``grep -n _lowlevel_server mcp/server/mcpserver/server.py`` in the SDK.
    """
    if isinstance(server, MCPServer):
        lowlevel: Server[Any] = server._lowlevel_server
        return lowlevel
    return server


def default_notification_options(
    server: MCPServer[Any] | Server[Any], defaults: NotificationOptions
) -> None:
    """Make ``server`` advertise ``defaults`` (``resources.listChanged``, ...) at initialize.

    Gap: every SDK transport builds the initialize result from the low-level server's
    ``create_initialization_options()`` and never passes the notification flags it takes,
    so a server cannot say it sends list-changed notices. This replaces the method on this
    one instance with one that passes ``defaults`` when the caller passes none (the proxy,
    which builds its own low-level ``Server``, may subclass instead).

    Breaks if: the method's signature changes (the initialize result then lacks
    ``listChanged``, or initialize fails); ``tests/server/test_server.py`` checks the capability.
    """
    lowlevel = lowlevel_server(server)
    create = lowlevel.create_initialization_options

    def create_initialization_options(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> Any:
        return create(notification_options or defaults, experimental_capabilities, extensions)

    lowlevel.create_initialization_options = create_initialization_options  # type: ignore[method-assign]


def session_connection(ctx: Any) -> Connection | None:
    """The ``Connection`` a request's session belongs to, or None (2026-07-28 era requests).

    Gap: the SDK has no public handle on a handshake-era connection (stdio, SSE, stateful
    streamable HTTP), yet it is the only place to keep per-connection state (the proxy's
    downstream sessions), to hear it close (``connection.exit_stack``) and to push a notice
    on its standalone channel (the server's list-changed).

    Breaks if: ``ServerSession`` renames ``_connection`` (this then returns None: the server
    stops pushing list-changed to legacy clients, the proxy treats every request as
    2026-07-28 era); ``tests/server/test_server.py`` and the proxy's session tests notice.
    """
    connection = getattr(getattr(ctx, "session", None), "_connection", None)
    return connection if isinstance(connection, Connection) else None


def asgi_send(request: Request) -> Send:
    """The ASGI ``send`` callable behind a Starlette request.

    Gap: the SDK's ``SseServerTransport.connect_sse`` takes the raw ASGI ``(scope, receive,
    send)`` and writes the response itself, but a Starlette ``Route`` endpoint gets only the
    ``Request``, which keeps ``send`` private. (The SDK's own examples do the same.)

    Breaks if: Starlette renames ``Request._send`` (SSE connections then fail at once);
    ``tests/server/test_server_transports.py`` serves SSE.
    """
    send: Send = request._send
    return send


def request_stamp(client: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    """How a connected ``Client`` stamps a request it sends: the 2026-07-28 envelope in
    ``params._meta`` (version, client info, capabilities) and the routing headers
    (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``) in
    ``opts["headers"]``.

    Gap: the proxy's raw streamable-HTTP channel to an upstream (``proxy/upstream_http.py``)
    sends ``tools/call`` itself, and must send exactly what the client's session would; the
    session keeps its stamp private.

    Breaks if: ``ClientSession`` renames ``_stamp`` or changes its signature (AttributeError
    or TypeError on the first raw call, which the proxy reports as an upstream failure);
    ``tests/proxy/test_proxy_http_fast.py`` calls through the channel.
    """
    stamp: Callable[[dict[str, Any], dict[str, Any]], None] = client.session._stamp
    return stamp
