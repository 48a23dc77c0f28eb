"""A small round-robin TCP load balancer on loopback, for the replica tests and bench.

It listens on a port the kernel picks and hands each accepted connection to the next backend
in turn, piping bytes both ways until either side closes. A backend that refuses the
connection (a replica killed) is skipped: the next one in turn is tried, so a dead replica
costs the requests that were on it when it died, never the ones after. Balancing is per
connection, as a TCP balancer does: an HTTP client that should be spread over the backends
opens a new connection per request (``httpx2.Limits(max_keepalive_connections=0)``).

Threads, one per direction of each connection; ``connections`` counts what each backend was
handed, so a test can tell the load was spread.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

from tests.helpers.relay import Relay

CONNECT_TIMEOUT = 30.0  # seconds to reach a backend on loopback (stops a hang, never reached)


class Balancer(Relay):
    """Round-robin over ``backends`` (``(host, port)`` pairs); use as a context manager."""

    name = "balancer"

    def __init__(self, backends: list[tuple[str, int]]) -> None:
        if not backends:
            raise ValueError("Balancer needs at least one backend")
        super().__init__()
        self.backends = list(backends)
        self.connections = [0] * len(backends)
        self.refused = 0
        self._next = 0

    @property
    def url(self) -> str:
        """The MCP endpoint behind the balancer (``serve --transport http``'s path)."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def _order(self) -> Iterator[int]:
        """Every backend once, starting with the next in turn."""
        with self._lock:
            start = self._next
            self._next = (self._next + 1) % len(self.backends)
        for n in range(len(self.backends)):
            yield (start + n) % len(self.backends)

    def _upstream(self) -> socket.socket | None:
        """The next backend in turn that accepts; None when every one refuses (the client
        sees its connection closed)."""
        for index in self._order():
            try:
                upstream = socket.create_connection(self.backends[index],
                                                    timeout=CONNECT_TIMEOUT)
            except OSError:  # refused: that backend is down, try the next one
                with self._lock:
                    self.refused += 1
                continue
            upstream.settimeout(None)
            with self._lock:
                self.connections[index] += 1
            return upstream
        return None
