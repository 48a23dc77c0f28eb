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

import contextlib
import socket
import threading
from collections.abc import Iterator
from types import TracebackType

CONNECT_TIMEOUT = 30.0  # seconds to reach a backend on loopback (stops a hang, never reached)


class Balancer:
    """Round-robin over ``backends`` (``(host, port)`` pairs); use as a context manager."""

    def __init__(self, backends: list[tuple[str, int]]) -> None:
        if not backends:
            raise ValueError("Balancer needs at least one backend")
        self.backends = list(backends)
        self.connections = [0] * len(backends)
        self.refused = 0
        self._next = 0
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(256)
        self.port = int(self._listener.getsockname()[1])
        self._closed = threading.Event()
        self._open: set[socket.socket] = set()
        self._acceptor = threading.Thread(target=self._accept, name="balancer-accept",
                                          daemon=True)

    @property
    def url(self) -> str:
        """The MCP endpoint behind the balancer (``serve --transport http``'s path)."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> Balancer:
        self._acceptor.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            still = list(self._open)
        for sock in still:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        self._acceptor.join(10)

    def _order(self) -> Iterator[int]:
        """Every backend once, starting with the next in turn."""
        with self._lock:
            start = self._next
            self._next = (self._next + 1) % len(self.backends)
        for n in range(len(self.backends)):
            yield (start + n) % len(self.backends)

    def _connect(self) -> socket.socket | None:
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

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = self._connect()
        if upstream is None:  # every backend down: the client sees its connection closed
            client.close()
            return
        with self._lock:
            self._open.update((client, upstream))
        back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
        back.start()
        _pipe(client, upstream)
        back.join()
        with self._lock:
            self._open.difference_update((client, upstream))
        client.close()
        upstream.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until ``source`` ends; then end ``sink``'s writing side
    (or all of it when ``source`` broke: a killed backend resets its client's connection)."""
    broken = False
    try:
        while True:
            chunk = source.recv(65536)
            if not chunk:
                break
            sink.sendall(chunk)
    except OSError:
        broken = True
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_RDWR if broken else socket.SHUT_WR)
