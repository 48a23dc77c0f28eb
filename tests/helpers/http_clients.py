"""SDK clients over HTTP and SSE (``http_client``, with the bearer token), a free loopback
port and a wait until something listens on it."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_listening(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


@asynccontextmanager
async def http_client(url: str, transport: str, token: str, **handlers: Any
                      ) -> AsyncIterator[Client]:
    """An SDK client over HTTP or SSE; ``handlers``: its ``elicitation_callback`` ..."""
    headers = {"Authorization": f"Bearer {token}"}
    if transport == "sse":
        async with Client(sse_client(url, headers=headers), **handlers) as client:
            yield client
    else:
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
                Client(streamable_http_client(url, http_client=http), **handlers) as client:
            yield client
