"""The state store: the one interface behind every per-session record.

Everything mcp-hooks remembers about a session between two events goes through one
``StateStore``: the loop guard's stop counts, the escalation ladder's steps, the aid waiting
for a session's next event, the signals sent and their answers, and the event log. One store
object per engine (built once, handed down); ``files.FileStore`` keeps today's files, and a
shared backend (Redis, PostgreSQL) implements the same operations so several server processes
behave as one.

The operations and their contract (``tests/state/test_contract.py`` checks each on every
backend):

Counters (``namespace``, ``session``, ``key``; the stop guard uses namespace = the host or
door, key ``""``; the ladder namespace ``"ladder"``, key ``"<trigger>/<entry>"``):

- ``increment(namespace, session, key, ttl=...)``: add one atomically and return the new
  value (1 for a count that did not exist or had expired). Concurrent increments from threads
  and processes are never lost: N increments from anywhere add exactly N. The count expires
  ``ttl`` seconds after its last increment (a backend may keep it longer while other keys of
  the same session are written, never shorter).
- ``count(namespace, session, key, ttl=...)``: the current value; 0 for none or expired.
- ``reset(namespace, session=None, key=None)``: forget one key of a session, every key of a
  session (``key`` None), or every session of the namespace (``session`` None).

  Counters never raise: a store that cannot be read counts 0, one that cannot be written
  loses the increment (``increment`` then returns what it could read plus one, at least 1).
  A shared store that is lost counts in this process's memory meanwhile (``remote.py``).
  A count the store holds that is not a whole number from 1 to ``files.MAX_COUNT`` (text,
  a negative or huge number: written by something other than an increment) counts 0, and
  the next increment starts it over at 1; a shared store reports the first such count on
  stderr (``remote.SpoolingLog.malformed``), and it is not a lost store: no event is denied
  for it.
  A lost count only weakens the loop guard's cap and the ladder's climb; the hooks still
  decide every event, so the engine still guards.

Logs (``log`` is ``"events"`` or ``"signals"``; records are JSON objects, ``session_id`` the
field read by session):

- ``append(log, record)``: add one record whole, never torn or interleaved with another
  writer's. Never raises: a record that cannot be written is reported once on stderr and
  lost (the event that wanted to log it is not failed).
- ``read(log, session=None)``: the records, oldest first (a backend may bound how far back:
  the file backend reads the last ``eventlog.READ_LIMIT`` bytes), only those whose
  ``session_id`` is ``session`` when given. Raises ``ConfigError`` when the log exists but
  cannot be read (not a regular file, no permission), naming it and the fix.

Answer-once (a signal's answer, compare-and-set):

- ``answer_once(signal_id, action, build)``: the answer of the signal sent with this id
  (a ``kind: "signal"`` record appended to ``"signals"``). The first call stores
  ``build(sent_record)`` (a dict with ``action``) and returns it; a later call with the same
  action returns the stored answer unchanged (a retry is harmless); a later call with another
  action raises ``AlreadyAnswered`` (a ``ConfigError`` saying what was answered and when).
  Exactly one answer is ever stored, however many threads and processes race. Raises
  ``UnknownSignal`` (a ``ConfigError``) when no such signal was sent, whatever ``build``
  raises (nothing is stored then), and ``StateUnavailable`` (a ``RunError``) when the store
  cannot be read or written: nothing is stored, the caller answers again later.

Asks (``spec/asking.py``; implemented once in ``asks.py`` over three primitives each backend
gives: ``ask_load``, ``ask_swap`` (compare-and-set), ``ask_keys``):

- ``put_ask(request)``: keep a new pending ask, answerable until ``request.expires``. Raises
  ``StateUnavailable`` when it cannot be kept (the door then falls back: nobody could answer).
- ``answer_ask(id, answer)``: store the one answer of a pending ask and return its request.
  Exactly one answer is ever stored, however many threads and processes race; every other
  raises ``AskAnswered``. An id never put (or forgotten) raises ``UnknownAsk``; one past its
  expiry ``AskExpired`` (all ``ConfigError``: exit 64, never a second decision).
- ``get_ask(id)``: the ask and its answer (``asks.AskRecord``), or None.
- ``pending_asks()``: the asks not yet answered nor expired, oldest first.
- ``approval_for(binding, session_id)``: the answer stored for exactly this call (the ask's
  binding and session), taken once (a plain approval or refusal covers one run; whoever takes
  it first gets it), or kept (an approval ``for_session``); None when there is none.
- ``pending_for(binding, session_id)``: the ask of this call still waiting, if any (a retry of
  the same call waits on it instead of asking again).
- ``approved_elsewhere(request)``: the last ask of the same session, event and tool when it was
  approved for another input (reported when a new ask is made: an approval never carries
  over to another input).

Queue (the aid waiting for a session's next event):

- ``put(session, items)``: add JSON objects to the session's queue, in order. Never raises
  (an item that cannot be kept is lost, as an undelivered advice).
- ``take_all(session)``: every item queued for the session, oldest first, removed; each item
  is taken by exactly one caller however many race (delivered once). Never raises: a queue
  that cannot be read yields nothing.

Once-only names (a forwarded request's nonce, ``server/forward.py``):

- ``claim(name, ttl=...)``: True for the first claim of ``name``, and again only once that
  claim is ``ttl`` seconds old; False while it lives. Exactly one of any number of racing
  threads, processes and replicas gets True (a set-if-absent with an expiry). Raises
  ``StateUnavailable`` when the store cannot answer: a claim is never guessed.

Thread safety: one store object is shared by every thread and task of its engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal, Protocol, runtime_checkable

from mcp_hooks.errors import ConfigError, RunError
from mcp_hooks.spec.asking import AskAnswer, AskRecord, AskRequest

LogName = Literal["events", "signals"]
LOGS: tuple[LogName, ...] = ("events", "signals")


class UnknownSignal(ConfigError, LookupError):
    """``answer_once`` for a signal id that was never sent (or is out of reach)."""


class AlreadyAnswered(ConfigError):
    """``answer_once`` with another action than the one stored first."""

    def __init__(self, message: str, answer: dict[str, Any]) -> None:
        super().__init__(message)
        self.answer = answer


class UnknownAsk(ConfigError, LookupError):
    """An ask id that was never put, or is forgotten (``mcp-hooks pending`` lists them)."""

    http_status = 404  # the answer of an HTTP door (``serve``'s /asks, the dashboard)


class AskExpired(ConfigError):
    """An ask answered after its expiry: nobody waits on it; the call must be made again."""

    http_status = 410


class AskAnswered(ConfigError):
    """An ask answered already: the first answer stands, this one is not stored."""

    http_status = 409


class StateUnavailable(RunError):
    """The store cannot be read or written (a full disk, a lost server)."""


@runtime_checkable
class StateStore(Protocol):
    """Per-session state: counters, logs, answer-once, queues (contract in the module
    docstring)."""

    def increment(self, namespace: str, session: str, key: str = "", *, ttl: float) -> int:
        """Add one to the count and return the new value; never raises."""
        ...

    def count(self, namespace: str, session: str, key: str = "", *, ttl: float) -> int:
        """The current count; 0 for none or expired; never raises."""
        ...

    def reset(self, namespace: str, session: str | None = None, key: str | None = None) -> None:
        """Forget a key, a session's keys, or a namespace's sessions; never raises."""
        ...

    def append(self, log: LogName, record: dict[str, Any]) -> None:
        """Append one record to a log; never raises (reports once on stderr)."""
        ...

    def read(self, log: LogName, session: str | None = None) -> Iterator[dict[str, Any]]:
        """A log's records, oldest first; ``ConfigError`` when it cannot be read."""
        ...

    def answer_once(self, signal_id: str, action: str,
                    build: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """Store the first answer of a signal, return the stored one (see the contract)."""
        ...

    def put_ask(self, request: AskRequest) -> None:
        """Keep a new pending ask; ``StateUnavailable`` when it cannot be kept."""
        ...

    def answer_ask(self, ask_id: str, answer: AskAnswer) -> AskRequest:
        """Store the one answer of a pending ask (``UnknownAsk``, ``AskExpired``,
        ``AskAnswered`` otherwise); returns the ask answered."""
        ...

    def get_ask(self, ask_id: str) -> AskRecord | None:
        """The ask and its answer so far, or None."""
        ...

    def pending_asks(self) -> list[AskRequest]:
        """The asks waiting for an answer, oldest first."""
        ...

    def approval_for(self, binding: str, session_id: str | None) -> AskAnswer | None:
        """The answer stored for exactly this call: taken once, or kept ``for_session``."""
        ...

    def pending_for(self, binding: str, session_id: str | None) -> AskRequest | None:
        """The ask of this call still waiting for an answer, if any."""
        ...

    def approved_elsewhere(self, request: AskRequest) -> AskRecord | None:
        """The last ask of this session, event and tool, approved for another input."""
        ...

    def put(self, session: str, items: list[dict[str, Any]]) -> None:
        """Queue items for the session; never raises."""
        ...

    def take_all(self, session: str) -> list[dict[str, Any]]:
        """Take every item queued for the session, oldest first; never raises."""
        ...

    def claim(self, name: str, *, ttl: float) -> bool:
        """True for the first claim of ``name`` within ``ttl`` seconds, False for any later
        one; ``StateUnavailable`` when the store cannot answer."""
        ...
