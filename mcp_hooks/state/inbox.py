"""Aid signals waiting for the next event of their session.

An aid is advice that arrives after the reply: the result of an async HOOK.md hook, or of a
hooks.yaml entry with ``async: true``. Nothing can be said to the agent about the event that
started it (it was answered already), so the aid waits here, one JSONL file per session under
``paths.aid_inbox_dir()``, and the engine hands it over as ``additional_context`` (and as the
signals themselves) on the session's next event: "an aid as context on the next turn".

- ``put`` appends under an exclusive ``flock``: concurrent writers never tear a line.
- ``take`` claims the whole file by renaming it first, so two events of one session never
  deliver the same aid twice; with nothing new in the folder it costs one ``stat``.
- Without a session id there is no next turn to wait for: the aid is only logged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from mcp_hooks.spec.signals import Signal

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

MAX_WAITING = 50  # aid signals handed over per event, the newest kept
_MAX_FILE = 1 << 20  # bytes read from one session's inbox


def _file_name(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class AidInbox:
    """The waiting aid signals of every session, in one folder.

    Args:
        root: the folder; None for ``paths.aid_inbox_dir()``.
    """

    def __init__(self, root: Path | None = None) -> None:
        if root is None:
            from mcp_hooks.paths import aid_inbox_dir

            root = aid_inbox_dir()
        self.root = Path(root)
        self._names: dict[str, str] = {}  # session -> its file's path
        self._empty: dict[str, int] = {}  # session -> folder mtime when it had nothing

    def _path(self, session_id: str) -> Path:
        return self.root / f"{_file_name(session_id)}.jsonl"

    def _nothing_new(self, session_id: str) -> bool:
        """Whether the folder is unchanged since this session last found nothing: one
        ``stat``, instead of a ``rename`` that fails. A folder changed in the last 50 ms
        is checked anyway (its mtime may not have moved for a write in the same tick)."""
        try:
            mtime = os.stat(self.root).st_mtime_ns
        except OSError:
            return True  # no inbox folder: nothing ever waited
        settled = time.time_ns() - mtime > 50_000_000
        if settled and self._empty.get(session_id) == mtime:
            return True
        if len(self._empty) > 10_000:
            self._empty.clear()
        if settled:  # a recent mtime may not move again for a write in the same tick
            self._empty[session_id] = mtime
        else:
            self._empty.pop(session_id, None)
        return False

    def put(self, session_id: str | None, signals: list[Signal]) -> None:
        """Leave ``signals`` for the session's next event; never raises."""
        if not session_id or not signals:
            return
        data = b"".join(json.dumps(s.as_dict(), ensure_ascii=True, default=str).encode() + b"\n"
                        for s in signals)
        with contextlib.suppress(OSError):
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self._path(session_id), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                os.write(fd, data)
            finally:
                os.close(fd)

    def take(self, session_id: str | None) -> list[Signal]:
        """The session's waiting aid, oldest first, removed from the inbox; never raises."""
        if not session_id or self._nothing_new(session_id):
            return []
        path = self._path(session_id)
        claimed = path.with_name(f"{path.stem}.{os.getpid()}.taking")
        try:
            os.rename(path, claimed)
        except OSError:
            return []  # nothing waiting (the common case), or another event took it
        self._empty.pop(session_id, None)
        try:
            fd = os.open(claimed, os.O_RDONLY)
            try:
                if fcntl is not None:  # a writer that opened the file before the rename
                    fcntl.flock(fd, fcntl.LOCK_EX)
                raw = os.read(fd, _MAX_FILE)
            finally:
                os.close(fd)
        except OSError:
            return []
        finally:
            with contextlib.suppress(OSError):
                os.unlink(claimed)
        out: list[Signal] = []
        for line in raw.splitlines():
            with contextlib.suppress(Exception):  # a torn or foreign line is skipped
                out.append(Signal.from_dict(json.loads(line)))
        return out[-MAX_WAITING:]


def deliver_async(event: str, session_id: str | None, hook_name: str, stdout: bytes,
                  exit_code: int | None, log_path: Path | None) -> None:
    """An async hook finished: its advice, if any, to the signal log and the inbox."""
    signal = async_aid(event, hook_name, stdout, exit_code)
    if signal is None:
        return
    AidInbox().put(session_id, [signal])  # first: once logged, it is waiting
    if log_path is not None:
        from mcp_hooks.state.signallog import SignalLog

        SignalLog.beside(log_path).record([signal], session_id)


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
    from mcp_hooks.spec.signals import from_async_result

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
