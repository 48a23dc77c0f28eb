"""The logs as the CLI reads them (``log``, ``signals``, ``respond``), from the configured store.

``open_log(url, path, log)`` is what those commands read: for ``file:`` (the default) the
event log file ``path`` or the signal log beside it, exactly as before ``--state``; for a
shared store (``redis://``, ``postgresql://``) a :class:`StoreLog` over that store's log, so
every replica's records are read as one log. A ``StoreLog`` offers what the file logs offer
the CLI: ``read`` (oldest first, by session), ``follow`` (polls the store), ``resolve`` (a
unique start of a signal id, an ambiguous one listing the candidates) and ``respond`` (the
store's answer-once, any replica's signal). Its ``path`` names the store without its
password. The records of ``doctor --state``'s probe sessions (``PROBE_SESSION_PREFIX``) are
skipped by ``read`` and ``follow`` unless that session is asked for. A store that cannot be
reached raises ``StateUnavailable`` naming it and the fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp_hooks.errors import ConfigError
from mcp_hooks.state.eventlog import EventLog
from mcp_hooks.state.remote import redact
from mcp_hooks.state.signallog import SignalLog, respond
from mcp_hooks.state.store import LogName, StateStore
from mcp_hooks.state.url import close_store, open_store, replica_name, scheme

POLL = 0.5  # seconds between two reads of a shared store by ``follow``
SHOWN = 10  # candidates an ambiguous signal id lists
# ``doctor --state`` probes a store in a session of its own named so: its records are no
# event of any agent, and every reader here skips them (unless that session is asked for)
PROBE_SESSION_PREFIX = "mcp-hooks-doctor-"


def is_probe(record: dict[str, Any]) -> bool:
    """Whether a log record is one of ``doctor --state``'s probe records."""
    session = record.get("session_id")
    return isinstance(session, str) and session.startswith(PROBE_SESSION_PREFIX)


def _real(records: Iterator[dict[str, Any]], session_id: str | None
          ) -> Iterator[dict[str, Any]]:
    """``records`` without the doctor's probes (all of them when a session is named)."""
    return records if session_id is not None else (r for r in records if not is_probe(r))


class StoreLog:
    """One log of a shared store, read as ``EventLog`` reads its file."""

    def __init__(self, store: StateStore, log: LogName, url: str) -> None:
        self.store = store
        self.log: LogName = log
        self.path = f"the state store {redact(url)}"  # how messages name it

    def read(self, session_id: str | None = None) -> Iterator[dict[str, Any]]:
        """The log's records, oldest first (``session_id``: that session's only), without
        ``doctor --state``'s probe records."""
        return _real(self.store.read(self.log, session_id), session_id)

    def follow(self, session_id: str | None = None,
               poll: float = POLL) -> Iterator[dict[str, Any]]:
        """Records as they are appended, from now on, until interrupted."""
        follow = getattr(self.store, "follow", None)
        if not callable(follow):
            raise ConfigError(f"{self.path} cannot be followed; read it without --follow")
        records: Iterator[dict[str, Any]] = follow(self.log, session_id, poll)
        return _real(records, session_id)

    def resolve(self, prefix: str) -> str:
        """The id of the one signal whose id starts with ``prefix``.

        Raises:
            ConfigError: none does (how to list them is said), or several do (listed).
        """
        if not prefix:
            raise ConfigError("the signal id is empty; `mcp-hooks signals` lists them")
        search = getattr(self.store, "signal_ids", None)
        found: list[str] = search(prefix, SHOWN + 1) if callable(search) else [prefix]
        if len(found) == 1:
            return found[0]
        if not found:
            raise ConfigError(f"no signal {prefix!r} in {self.path} (or it has expired); "
                              "`mcp-hooks signals --state URL` lists the signals sent and "
                              "their ids")
        shown = ", ".join(found[:SHOWN]) + (" and more" if len(found) > SHOWN else "")
        raise ConfigError(f"signal id {prefix!r} is ambiguous: several signals start with it "
                          f"({shown}); give more of the id")

    def respond(self, signal_id: str, action: str, details: dict[str, Any] | None = None,
                *, session_id: str | None = None) -> dict[str, Any]:
        """Record the answer to a signal in the store (``signallog.respond``)."""
        return respond(self.store, signal_id, action, details, session_id=session_id)

    def close(self) -> None:
        close_store(self.store)


def open_log(url: str, path: Path, log: LogName) -> EventLog | StoreLog:
    """The log ``log`` (``events`` or ``signals``) the settings point at: for ``file:`` the
    event log file ``path``, or the signal log beside it; else the shared store ``url``
    names (connected now: ``StateUnavailable`` when it cannot be)."""
    if log == "signals":
        return open_signal_log(url, path)
    if scheme(url) == "file":
        return EventLog(path)
    return StoreLog(open_store(url, replica=replica_name()), log, url)


def open_signal_log(url: str, path: Path) -> SignalLog | StoreLog:
    """``open_log(url, path, "signals")``, typed for ``respond`` (``resolve``, ``respond``)."""
    if scheme(url) == "file":
        return SignalLog.beside(path)
    return StoreLog(open_store(url, replica=replica_name()), "signals", url)


def close_log(log: EventLog | StoreLog) -> None:
    """Let go of a shared store's connections (a file log holds none); never raises."""
    if isinstance(log, StoreLog):
        log.close()


__all__ = ["StoreLog", "close_log", "open_log", "open_signal_log"]
