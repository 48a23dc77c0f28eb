"""``mcp-hooks doctor --state URL`` (or ``MCP_HOOKS_STATE``): whether a shared state store
serves this machine as ``serve --state`` would use it.

It connects (PostgreSQL: the schema is made or brought up to date, as ``serve`` does), shows
the server's version and the schema's, then round-trips one of each kind of operation in a
throwaway session of its own (``mcp-hooks-doctor-<random>``): an increment (twice: 1 then 2,
then reset), an append read back by its ``record_id``, and an answer-once (a signal sent, its
answer stored, a retry given the same answer). It prints each one's latency, this process's
replica name, and how many log records wait in this machine's spool for the store. A store
that cannot be reached, or an operation that fails or comes back wrong, is a problem naming
the URL (never its password) and the fix: ``doctor`` exits 1.

The counter is removed again; the probe's log records (one ``kind: "doctor"`` event, one
signal and its answer) stay under the doctor's own session id
(``reader.PROBE_SESSION_PREFIX``), which every reader skips: ``log``, ``log --follow`` and
``signals`` never show them, as no agent's event.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from mcp_hooks.errors import ConfigError, MissingExtraError, RunError
from mcp_hooks.state.exposure import open_warnings
from mcp_hooks.state.reader import PROBE_SESSION_PREFIX
from mcp_hooks.state.remote import redact
from mcp_hooks.state.spool import ID, Spool, failures, record_id
from mcp_hooks.state.store import StateStore, StateUnavailable
from mcp_hooks.state.url import close_store, open_store, replica_name, scheme

_T = TypeVar("_T")


class Findings(Protocol):
    """Where a check puts what it found (``doctor.Report``)."""

    def problem(self, what: str, fix: str | None = None, host: str | None = None) -> None: ...

    def warn(self, what: str, fix: str | None = None, host: str | None = None) -> None: ...


def _timed(work: Callable[[], _T], times: dict[str, float], name: str) -> _T:
    start = time.perf_counter()
    result = work()
    times[name] = round((time.perf_counter() - start) * 1000, 2)
    return result


def check_state(report: Findings, url: str) -> dict[str, Any]:
    """The ``state_store`` entry of the report (its ``path`` the redacted URL, its
    ``status`` one line); a problem in ``report`` when the store does not serve."""
    info: dict[str, Any] = {"path": redact(url), "status": "unchecked",
                            "replica": replica_name()}
    if scheme(url) == "file":
        info["status"] = "the embedded file store (one machine)"
        return info
    for line in open_warnings(url):  # a store anyone may write decides with the gate
        report.warn(line)
    waiting = Spool(url, replica_name()).count()
    info["spooled"] = waiting
    try:
        store = open_store(url, replica=replica_name())
    except (MissingExtraError, ConfigError, RunError) as exc:
        info["status"] = "NOT reachable"
        report.problem(str(exc), "check the URL, that the server runs and lets this user in "
                       "(`mcp-hooks doctor --state URL` again)")
        return info
    try:
        info.update(store.about() if hasattr(store, "about") else {})
        info["latency_ms"] = _round_trip(store)
    except (ConfigError, RunError) as exc:
        info["status"] = "NOT serving"
        report.problem(str(exc), "see the server's own log; `mcp-hooks doctor --state URL` "
                       "again once it is fixed")
        return info
    finally:
        close_store(store)
    times = ", ".join(f"{k} {v:g} ms" for k, v in info["latency_ms"].items())
    info["status"] = (f"serves: {info.get('server', '?')}, schema {info.get('schema', '?')}; "
                      f"replica {info['replica']}; {times}; {waiting} record(s) spooled here")
    if waiting:
        report.warn(f"{waiting} log record(s) wait in this machine's spool for "
                    f"{redact(url)}", "they are replayed by the next `serve --state` (or "
                    "`fire --state`) that writes to the store from this machine")
    return info


def _round_trip(store: StateStore) -> dict[str, float]:
    """One increment, append and answer-once in a throwaway session; their latency in ms;
    ``StateUnavailable`` when one is wrong."""
    session = f"{PROBE_SESSION_PREFIX}{secrets.token_hex(6)}"
    times: dict[str, float] = {}
    before = failures(store)
    counted = _timed(lambda: store.increment("doctor", session, ttl=60), times, "increment")
    if counted != 1 or store.increment("doctor", session, ttl=60) != 2:
        raise StateUnavailable(f"the state store's counter did not count 1, 2 (got {counted} "
                          "first): another program may write its keys")
    store.reset("doctor", session)
    record = record_id({"ts": "", "kind": "doctor", "session_id": session})
    _timed(lambda: store.append("events", record), times, "append")
    back = [r for r in store.read("events", session) if r.get(ID) == record[ID]]
    if failures(store) != before or len(back) != 1:
        raise StateUnavailable(f"the state store did not keep an appended record (read back "
                          f"{len(back)}); it went to the spool")
    signal = record_id({"kind": "signal", "signal_id": session, "session_id": session})
    store.append("signals", signal)

    def build(sent: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "answer", "signal_id": session, "session_id": session,
                "action": "acknowledge"}

    first = _timed(lambda: store.answer_once(session, "acknowledge", build), times,
                   "answer_once")
    if store.answer_once(session, "acknowledge", build) != first:
        raise StateUnavailable("the state store gave a retried answer-once another answer")
    return times


__all__ = ["check_state"]
