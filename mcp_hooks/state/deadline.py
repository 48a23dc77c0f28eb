"""Client-side deadlines for the shared stores' calls (``postgres.py``).

A server that accepts a query and never answers (a black-holed path, a hung proxy, a frozen
host) is not noticed by the server-side ``statement_timeout``, nor by TCP (the path still
acknowledges every byte): the client would wait on its socket for good. :func:`within`
bounds a block from the client's side: when the block has not ended ``seconds`` after it
began, ``expire`` runs (the PostgreSQL store shuts its connection's socket down with
:func:`cut`, so the waiting read returns at once with an error) and the block's
``Deadline.passed`` is true, so the caller discards the connection and reports a lost store.

One daemon thread per process (started on the first deadline) waits on the earliest
deadline; a block that ends in time costs a heap push and a flag, never a thread of its own.
``expire`` runs under the watchdog's lock and is never run for a block that has ended, so it
never touches a connection already handed to another caller.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


class Deadline:
    """One guarded block: ``passed`` once its ``expire`` ran."""

    __slots__ = ("done", "expire", "passed", "seconds")

    def __init__(self, seconds: float, expire: Callable[[], None]) -> None:
        self.seconds = seconds
        self.expire = expire
        self.done = False
        self.passed = False


class _Watchdog:
    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, deadline: Deadline) -> None:
        with self._lock:
            heapq.heappush(self._heap, (time.monotonic() + deadline.seconds,
                                        next(self._order), deadline))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="mcp-hooks-deadline",
                                                daemon=True)
                self._thread.start()
            elif self._heap[0][2] is deadline:
                self._lock.notify()

    def end(self, deadline: Deadline) -> None:
        with self._lock:
            deadline.done = True  # left in the heap: dropped when its time comes

    def _run(self) -> None:
        with self._lock:
            while True:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._lock.wait()
                    continue
                at, _, first = self._heap[0]
                left = at - time.monotonic()
                if left > 0:
                    self._lock.wait(min(left, 3600.0))  # a wait past that overflows
                    continue
                heapq.heappop(self._heap)
                first.done = first.passed = True
                with contextlib.suppress(Exception):  # never kills the watchdog
                    first.expire()


_WATCHDOG = _Watchdog()


@contextlib.contextmanager
def within(seconds: float, expire: Callable[[], None]) -> Iterator[Deadline]:
    """Run the block; if it has not ended after ``seconds``, call ``expire`` (once, from the
    watchdog thread) and set the yielded ``Deadline.passed``."""
    deadline = Deadline(seconds, expire)
    _WATCHDOG.add(deadline)
    try:
        yield deadline
    finally:
        _WATCHDOG.end(deadline)


def cut_connection(conn: Any) -> None:
    """``cut`` the socket of a client library's connection (``fileno()``), unless it was
    closed already (its descriptor may be another socket's by now)."""
    if not conn.closed:
        cut(conn.fileno())


def cut(fileno: int) -> None:
    """Shut down both directions of the socket behind ``fileno`` (a client library's own
    descriptor, left open for it to close): a read waiting on it returns at once."""
    if fileno < 0:
        return
    sock = socket.socket(fileno=os.dup(fileno))
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


__all__ = ["Deadline", "cut", "cut_connection", "within"]
