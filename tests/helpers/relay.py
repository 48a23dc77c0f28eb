"""A TCP relay on loopback: what ``balancer.Balancer`` and ``tcpproxy.Proxy`` share.

It listens on a port the kernel picks and pipes each accepted connection to an upstream the
subclass picks (``_upstream``), a thread per direction, until either side closes; a subclass
may gate each chunk (``_gate``: lag it, hold it, drop it). ``close()`` (or leaving the
``with`` block) stops accepting and cuts every connection still open.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

Gate = Callable[[bool], bool]  # (a chunk of the reply?) -> send it on
_R = TypeVar("_R", bound="Relay")


class Relay:
    """The listener, its acceptor thread and the connections open now."""

    name = "relay"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(256)
        self.port = int(self._listener.getsockname()[1])
        self._closed = threading.Event()
        self._open: set[socket.socket] = set()
        self._acceptor = threading.Thread(target=self._accept, name=f"{self.name}-accept",
                                          daemon=True)

    def __enter__(self: _R) -> _R:
        self._acceptor.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the acceptor (close does not)
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

    def _upstream(self) -> socket.socket | None:
        """A connection to where this client's bytes go; None: the client is closed."""
        raise NotImplementedError

    def _gate(self) -> Gate | None:
        """One connection's gate for its chunks; None: every chunk goes on at once."""
        return None

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = self._upstream()
        if upstream is None:
            client.close()
            return
        with self._lock:
            self._open.update((client, upstream))
        gate = self._gate()
        back = threading.Thread(target=pipe, args=(upstream, client, gate, True), daemon=True)
        back.start()
        pipe(client, upstream, gate, False)
        back.join()
        with self._lock:
            self._open.difference_update((client, upstream))
        client.close()
        upstream.close()


def pipe(source: socket.socket, sink: socket.socket, gate: Gate | None = None,
         reply: bool = False) -> None:
    """Copy ``source`` to ``sink`` (each chunk ``gate`` lets on) until ``source`` ends; then
    end ``sink``'s writing side (or all of it when ``source`` broke: a killed server resets
    its client's connection)."""
    broken = False
    try:
        while True:
            chunk = source.recv(65536)
            if not chunk:
                break
            if gate is None or gate(reply):
                sink.sendall(chunk)
    except OSError:
        broken = True
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_RDWR if broken else socket.SHUT_WR)


__all__ = ["Gate", "Relay", "pipe"]
