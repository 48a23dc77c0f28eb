"""A TCP proxy on loopback in front of one server (Redis, PostgreSQL) that a test can make
lag, black-hole or hold, then restore: what a store behind a bad network path looks like.

``Proxy(("127.0.0.1", port))`` listens on a port the kernel picks (``url(server_url)`` is the
server's URL pointed at it) and pipes each connection to the server, a thread per direction:

- ``lag(seconds)``: each chunk of a reply is sent that much later;
- ``blackhole()``: from now on the proxy accepts and reads, and forwards nothing either way;
  a connection that lost bytes so stays dark after ``restore()`` (its stream is broken: its
  client must drop it and connect again, as after a real black hole);
- ``hold()``: replies are kept back until ``release()``; ``wait_held(n)`` waits until ``n``
  connections have a reply waiting (so a test can tell calls were made at the same time,
  without measuring time);
- ``restore()``: back to piping, held replies sent.
"""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import urlsplit, urlunsplit

from tests.helpers.relay import Gate, Relay

WAIT = 120.0  # seconds ``wait_held`` waits before failing the test (stops a hang only)


class Proxy(Relay):
    """A proxy in front of ``target`` (``(host, port)``); use as a context manager."""

    name = "proxy"

    def __init__(self, target: tuple[str, int]) -> None:
        super().__init__()
        self.target = target
        self.mode = "pass"
        self.delay = 0.0
        self.held = 0  # connections with a reply kept back now
        self.accepted = 0
        self._cond = threading.Condition(self._lock)

    def url(self, server_url: str) -> str:
        """``server_url`` with its host and port replaced by the proxy's (user, password,
        path and query kept)."""
        parts = urlsplit(server_url)
        auth = parts.netloc.rpartition("@")[0]
        netloc = f"{auth}@127.0.0.1:{self.port}" if auth else f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    # -- what the test does ------------------------------------------------------------------

    def lag(self, seconds: float) -> None:
        with self._cond:
            self.mode, self.delay = "lag", seconds
            self._cond.notify_all()

    def blackhole(self) -> None:
        with self._cond:
            self.mode = "blackhole"
            self._cond.notify_all()

    def hold(self) -> None:
        with self._cond:
            self.mode = "hold"
            self._cond.notify_all()

    def restore(self) -> None:
        with self._cond:
            self.mode, self.delay = "pass", 0.0
            self._cond.notify_all()

    release = restore

    def wait_held(self, n: int, limit: float = WAIT) -> None:
        """Wait until ``n`` connections have a reply held back (fails the test after
        ``limit`` seconds: only a hang gets there)."""
        end = time.monotonic() + limit
        with self._cond:
            while self.held < n:
                left = end - time.monotonic()
                assert left > 0, f"only {self.held} of {n} calls reached the server at once"
                self._cond.wait(left)

    # -- plumbing ----------------------------------------------------------------------------

    def close(self) -> None:
        with self._cond:
            self._closed.set()
            self.mode = "pass"
            self._cond.notify_all()
        super().close()

    def _upstream(self) -> socket.socket | None:
        try:
            upstream = socket.create_connection(self.target, timeout=WAIT)
        except OSError:
            return None
        upstream.settimeout(None)
        with self._cond:
            self.accepted += 1
        return upstream

    def _gate(self) -> Gate:
        dark = threading.Event()  # this connection lost bytes to a black hole
        return lambda reply: self._forward(dark, reply)

    def _forward(self, dark: threading.Event, reply: bool) -> bool:
        """Whether a chunk read now goes on (after its lag, or once released)."""
        with self._cond:
            if self.mode == "blackhole" or dark.is_set():
                dark.set()
                return False
            if reply and self.mode == "hold":
                self.held += 1
                self._cond.notify_all()
                while self.mode == "hold" and not self._closed.is_set():
                    self._cond.wait()
                self.held -= 1
                if self.mode == "blackhole":
                    dark.set()
                    return False
            delay = self.delay if reply and self.mode == "lag" else 0.0
        if delay:
            time.sleep(delay)
        return True


__all__ = ["Proxy"]
