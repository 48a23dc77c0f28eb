"""Aid signals waiting for the next event of their session.

An aid is advice that arrives after the reply: the result of an async HOOK.md hook, or of a
hooks.yaml entry with ``async: true``. Nothing can be said to the agent about the event that
started it (it was answered already), so the aid waits here, one JSONL file per session under
``paths.aid_inbox_dir()``, and the engine hands it over as ``additional_context`` (and as the
signals themselves) on the session's next event: "an aid as context on the next turn".

The queue is the engine's state store's (``store.StateStore``: ``put`` and ``take_all``, each
item taken by one caller); the file store keeps one JSONL file per session under
``paths.aid_inbox_dir()`` (``files.py``). Without a session id there is no next turn to wait
for: the aid is only logged.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from mcp_hooks.paths import aid_inbox_dir
from mcp_hooks.spec.signals import Signal, from_async_result
from mcp_hooks.state.files import FileStore
from mcp_hooks.state.signallog import signal_record
from mcp_hooks.state.store import StateStore

MAX_WAITING = 50  # aid signals handed over per event, the newest kept


class AidInbox:
    """The waiting aid signals of every session, in a state store.

    Args:
        root: the folder of a file store of its own; None for ``paths.aid_inbox_dir()``.
        store: the engine's state store (then ``root`` is not used).
    """

    def __init__(self, root: Path | None = None, store: StateStore | None = None) -> None:
        if store is None:
            if root is None:
                root = aid_inbox_dir()
            store = FileStore(Path(root).parent, log=None, queues=Path(root))
        self.store: StateStore = store

    def put(self, session_id: str | None, signals: list[Signal]) -> None:
        """Leave ``signals`` for the session's next event; never raises."""
        if session_id and signals:
            self.store.put(session_id, [s.as_dict() for s in signals])

    def take(self, session_id: str | None) -> list[Signal]:
        """The session's waiting aid, oldest first, removed from the inbox; never raises."""
        if not session_id:
            return []
        out: list[Signal] = []
        for item in self.store.take_all(session_id):
            with contextlib.suppress(Exception):  # a foreign item is skipped
                out.append(Signal.from_dict(item))
        return out[-MAX_WAITING:]


def deliver_async(event: str, session_id: str | None, hook_name: str, stdout: bytes,
                  exit_code: int | None, log_path: Path | None,
                  store: StateStore | None = None, replica: str | None = None) -> None:
    """An async hook finished: its advice, if any, to the inbox and the signal log (of
    ``store``; default the file store with the log at ``log_path``, none without, its
    records stamped ``replica``)."""
    signal = async_aid(event, hook_name, stdout, exit_code)
    if signal is None:
        return
    if store is None:
        store = FileStore(log=log_path, replica=replica)
    AidInbox(store=store).put(session_id, [signal])  # first: once logged, it is waiting

    store.append("signals", signal_record(signal, session_id))


def aid_context(signal: Signal) -> str:
    """How a delivered aid reads in ``additional_context``."""
    return f"advice from {signal.source} (after an earlier {signal.context.hook} event): " \
        f"{signal.text()}"


def async_aid(event: str, hook_name: str, stdout: bytes, exit_code: int | None,
              correlation_id: str | None = None) -> Signal | None:
    """A finished async HOOK.md hook as an aid signal, or None when it said nothing.

    What it says: its answer's ``additional_context`` (or ``systemMessage``), else its plain
    stdout; a run that failed (exit other than 0) carries no advice.
    """
    if exit_code != 0 or not stdout.strip():
        return None
    text = stdout.decode("utf-8", errors="replace").strip()
    try:
        answer: Any = json.loads(text)
    except ValueError:
        answer = None
    if isinstance(answer, dict):
        said = answer.get("additional_context") or answer.get("systemMessage")
        specific = answer.get("hookSpecificOutput")
        if not said and isinstance(specific, dict):
            said = specific.get("additionalContext")
        if not isinstance(said, str) or not said.strip():
            return None
        text = said.strip()
    return from_async_result(source=hook_name, hook=event, text=text[:4000],
                             correlation_id=correlation_id)
