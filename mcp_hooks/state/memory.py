"""The in-memory state store: one process's state, gone with it (``store.StateStore``).

For an engine that keeps nothing between runs (the Python API's ``Hooks`` loop guard, tests).
Every operation holds one lock, so threads see the contract of ``store.py``; other processes
see nothing of it. The logs keep at most ``MAX_RECORDS`` records each (the oldest dropped).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from mcp_hooks.state.asks import AskBook
from mcp_hooks.state.asktables import MemoryTable
from mcp_hooks.state.store import AlreadyAnswered, LogName, UnknownSignal

MAX_RECORDS = 10_000


class MemoryStore(AskBook):
    """The state store in this process's memory (asks: ``asktables.MemoryTable``)."""

    def __init__(self) -> None:
        self.ask_table = MemoryTable()
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str], tuple[int, float]] = {}  # -> (n, last at)
        self._logs: dict[str, deque[dict[str, Any]]] = {
            "events": deque(maxlen=MAX_RECORDS), "signals": deque(maxlen=MAX_RECORDS)}
        self._answers: dict[str, dict[str, Any]] = {}
        self._queues: dict[str, list[dict[str, Any]]] = {}

    def count(self, namespace: str, session: str, key: str = "", *, ttl: float) -> int:
        with self._lock:
            value, at = self._counts.get((namespace, session, key), (0, 0.0))
            return value if time.monotonic() - at <= ttl else 0

    def increment(self, namespace: str, session: str, key: str = "", *, ttl: float) -> int:
        with self._lock:
            now = time.monotonic()
            value, at = self._counts.get((namespace, session, key), (0, 0.0))
            value = (value if now - at <= ttl else 0) + 1
            self._counts[(namespace, session, key)] = (value, now)
            if len(self._counts) > 100_000:  # forget the expired (one ttl for all: the caller's)
                self._counts = {k: v for k, v in self._counts.items() if now - v[1] <= ttl}
            return value

    def reset(self, namespace: str, session: str | None = None, key: str | None = None) -> None:
        with self._lock:
            for ns, s, k in list(self._counts):
                if ns == namespace and session in (None, s) and key in (None, k):
                    del self._counts[(ns, s, k)]

    def append(self, log: LogName, record: dict[str, Any]) -> None:
        with self._lock:
            self._logs[log].append(dict(record))

    def read(self, log: LogName, session: str | None = None) -> Iterator[dict[str, Any]]:
        with self._lock:
            records = list(self._logs[log])
        return iter([r for r in records if session is None or r.get("session_id") == session])

    def answer_once(self, signal_id: str, action: str,
                    build: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            sent = next((r for r in self._logs["signals"] if r.get("kind") == "signal"
                         and r.get("signal_id") == signal_id), None)
            if sent is None:
                raise UnknownSignal(f"no signal {signal_id!r} was sent in this process; "
                                    "`mcp-hooks signals` lists the signals sent and their ids")
            answered = self._answers.get(signal_id)
            if answered is not None:
                if answered.get("action") == action:
                    return answered
                raise AlreadyAnswered(f"signal {signal_id} was already answered: "
                                      f"{answered.get('action')} at "
                                      f"{answered.get('timestamp')}", answered)
            record = build(dict(sent))
            self._answers[signal_id] = record
            self._logs["signals"].append(record)
            return record

    def put(self, session: str, items: list[dict[str, Any]]) -> None:
        if items:
            with self._lock:
                self._queues.setdefault(session, []).extend(dict(i) for i in items)

    def take_all(self, session: str) -> list[dict[str, Any]]:
        with self._lock:
            return self._queues.pop(session, [])
