"""The asks' part of the state store contract (``store.py``), written once over three
primitives each backend gives (memory, files, Redis, PostgreSQL):

- ``ask_load(key)``: the text stored under ``key``, None when none (or expired);
- ``ask_swap(key, expect, new, ttl)``: store ``new`` (kept ``ttl`` seconds) only if the key
  holds ``expect`` now (None: holds nothing); True when it did. Atomic across threads and
  processes: of N racing swaps from one ``expect``, exactly one is True;
- ``ask_keys()``: every ``ask:`` key held (a pending list reads them all).

Keys: ``ask:<id>`` holds the ``AskRecord`` JSON; ``bind:<binding>`` the id of the last ask of
that call (a retry finds its answer, or waits on it). Each answer is one swap from the pending
record, so one answer wins; a one-run answer is taken by one more swap (``used``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from mcp_hooks.spec.asking import (
    GRANT_TTL,
    AskAnswer,
    AskRecord,
    AskRequest,
    binding_of,
    canonical_json,
)
from mcp_hooks.state.eventlog import now
from mcp_hooks.state.store import (
    AskAnswered,
    AskExpired,
    StateStore,
    StateUnavailable,
    UnknownAsk,
)

ASK = "ask:"
BIND = "bind:"
CALL = "call:"  # + the digest of session, event and tool: the last ask of that tool
T = TypeVar("T")
_TRIES = 64  # swaps lost to other writers before giving up (each loss is another's win)


def _text(record: AskRecord) -> str:
    return canonical_json(record.as_dict())


def _read(text: str | None) -> AskRecord | None:
    if text is None:
        return None
    try:
        return AskRecord.from_dict(json.loads(text))
    except (ValueError, KeyError, TypeError):
        return None  # a value we did not write: no ask


class AskTable(Protocol):
    """The three primitives (``asktables.py``)."""

    def load(self, key: str) -> str | None: ...

    def swap(self, key: str, expect: str | None, new: str, ttl: float) -> bool: ...

    def keys(self, prefix: str) -> list[str]: ...


class AskBook:
    """``put_ask`` ... ``pending_for`` for a store that gives the three primitives: its
    ``ask_table`` (``asktables.py``), or its own ``ask_load``/``ask_swap``/``ask_keys``."""

    ask_table: AskTable

    def _table(self, call: Callable[[AskTable], T]) -> T:
        try:
            return call(self.ask_table)
        except (OSError, TimeoutError) as exc:
            where = getattr(self.ask_table, "folder", "the store")
            raise StateUnavailable(f"the asks in {where} cannot be read or written: "
                                   f"{getattr(exc, 'strerror', None) or exc}; fix the folder "
                                   "(free space, permissions) and ask again") from None

    def ask_load(self, key: str) -> str | None:
        return self._table(lambda table: table.load(key))

    def ask_swap(self, key: str, expect: str | None, new: str, ttl: float) -> bool:
        return self._table(lambda table: table.swap(key, expect, new, ttl))

    def ask_keys(self) -> list[str]:
        return self._table(lambda table: table.keys(ASK))

    def _ttl(self, request: AskRequest) -> float:
        return max(request.expires - time.time(), 1.0) + GRANT_TTL

    def put_ask(self, request: AskRequest) -> None:
        record = AskRecord(request)
        if not self.ask_swap(ASK + request.id, None, _text(record), self._ttl(request)):
            raise StateUnavailable(f"ask {request.id} exists already (an id drawn twice)")
        for key in (BIND + request.binding, CALL + call_of(request)):
            for _ in range(_TRIES):
                if self.ask_swap(key, self.ask_load(key), request.id, self._ttl(request)):
                    break

    def approved_elsewhere(self, request: AskRequest) -> AskRecord | None:
        """The last ask of the same session, event and tool, approved for another input and
        not used yet (an approval presented for a different call: never applied, reported)."""
        ask_id = self.ask_load(CALL + call_of(request))
        record = None if ask_id is None else self.get_ask(ask_id)
        if (record is None or record.answer is None or not record.answer.approved
                or record.used or record.request.binding == request.binding):
            return None
        return record

    def get_ask(self, ask_id: str) -> AskRecord | None:
        return _read(self.ask_load(ASK + ask_id))

    def answer_ask(self, ask_id: str, answer: AskAnswer) -> AskRequest:
        key = ASK + ask_id
        if answer.at == 0:
            answer = AskAnswer(answer.approved, answer.reason, answer.by, answer.channel,
                               answer.for_session, time.time())
        for _ in range(_TRIES):
            text = self.ask_load(key)
            record = _read(text)
            if record is None:
                raise UnknownAsk(f"no ask {ask_id!r} in the state store (never asked, or "
                                 "forgotten); `mcp-hooks pending` lists the asks waiting")
            _check_open(record, ask_id)
            done = AskRecord(record.request, answer)
            if self.ask_swap(key, text, _text(done), self._ttl(record.request)):
                return record.request
        raise StateUnavailable(f"ask {ask_id}: the store kept changing under the answer; "
                               "answer again")

    def pending_asks(self) -> list[AskRequest]:
        now = time.time()
        records = [self.get_ask(key[len(ASK):]) for key in self.ask_keys()]
        waiting = [r.request for r in records if r is not None and r.pending(now)]
        return sorted(waiting, key=lambda r: (r.created, r.id))

    def _last(self, binding: str, session_id: str | None) -> tuple[str, str, AskRecord] | None:
        ask_id = self.ask_load(BIND + binding)
        if ask_id is None:
            return None
        text = self.ask_load(ASK + ask_id)
        record = _read(text)
        if (record is None or text is None or record.request.binding != binding
                or record.request.session_id != session_id):
            return None
        return ASK + ask_id, text, record

    def pending_for(self, binding: str, session_id: str | None) -> AskRequest | None:
        found = self._last(binding, session_id)
        if found is None or not found[2].pending(time.time()):
            return None
        return found[2].request

    def approval_for(self, binding: str, session_id: str | None) -> AskAnswer | None:
        for _ in range(_TRIES):
            found = self._last(binding, session_id)
            if found is None:
                return None
            key, text, record = found
            answer = record.answer
            if answer is None or record.used or time.time() - answer.at > GRANT_TTL:
                return None
            if answer.approved and answer.for_session:
                return answer
            used = AskRecord(record.request, answer, used=True)
            if self.ask_swap(key, text, _text(used), self._ttl(record.request)):
                return answer
        return None


def _check_open(record: AskRecord, ask_id: str) -> None:
    if record.answer is not None:
        a = record.answer
        raise AskAnswered(
            f"ask {ask_id} was already answered: {'approved' if a.approved else 'refused'}"
            f"{f' by {a.by}' if a.by else ''}{f' via {a.channel}' if a.channel else ''} at "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(a.at))}; the first answer "
            "stands")
    if time.time() >= record.request.expires:
        raise AskExpired(
            f"ask {ask_id} expired at "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(record.request.expires))}; "
            "nobody waits on it now: let the agent make the call again and answer the new ask")


def call_of(request: AskRequest) -> str:
    """The digest of an ask's session, event and tool (its input left out)."""
    return binding_of(request.session_id, request.event_type, request.tool_name, None)


def ask_record(kind: str, request: AskRequest, **fields: Any) -> dict[str, Any]:
    """An event-log record of an ask: ``kind`` ``ask`` (made), ``ask_answer`` (answered:
    ``approved``, ``channel``, ``by``, ``reason``), ``ask_timeout`` (nobody answered in time)."""
    return {"ts": now(), "kind": kind, "ask_id": request.id, "event": request.event_type,
            "session_id": request.session_id, "tool_name": request.tool_name,
            "hook": request.hook, "binding": request.binding, **fields}


def answer(store: StateStore, ask_id: str, given: AskAnswer) -> AskRequest:
    """Store a person's answer to an ask and log it (``ask_answer``): the one way every
    channel answers (the CLI, HTTP, a door's approver, an MCP tool). Raises as
    ``StateStore.answer_ask``: ``UnknownAsk``, ``AskExpired``, ``AskAnswered``."""
    request = store.answer_ask(ask_id, given)
    store.append("events", ask_record(
        "ask_answer", request, approved=given.approved, channel=given.channel, by=given.by,
        reason=given.reason, for_session=given.for_session))
    return request
