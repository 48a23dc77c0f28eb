"""The HTTP server's connections send small writes at once (TCP_NODELAY).

A kept-alive client (the AgentScope Java client's ``HttpClient``, Claude Code's ``http``
hooks) otherwise waits about 40 ms for every answer: uvicorn writes an answer's headers and
body separately, and with Nagle on, the body waits for the client's delayed ACK of the
headers. asyncio sets TCP_NODELAY on each accepted connection only when the listening socket
says it is TCP, so ``bind`` must create it with ``IPPROTO_TCP`` (uvicorn serves the socket
``bind`` made through the same ``loop.create_server(sock=...)`` as ``asyncio.start_server``).
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from mcp_hooks.server.transport import ServeOptions, bind


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_connections_of_the_bound_socket_have_tcp_nodelay(host: str) -> None:
    try:
        sock = bind(ServeOptions(transport="http", host=host, port=0))
    except Exception as exc:  # a machine without IPv6 loopback
        pytest.skip(f"cannot bind {host}: {exc}")
    assert sock is not None

    async def accept_one() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            conn = writer.get_extra_info("socket")
            accepted.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=sock)
        async with server:
            port = sock.getsockname()[1]
            _, writer = await asyncio.open_connection(host, port)
            try:
                return await asyncio.wait_for(accepted, 60)  # a guard against a hang only
            finally:
                writer.close()
                await writer.wait_closed()

    assert asyncio.run(accept_one()) != 0
