"""A hook's ``ask``, settled: the chain waits for a person, within its deadline (issue 30).

When a link answers ``ask`` (``judge``: ``decision: ask``; a callable's ``Ask``; a hooks.yaml
entry with ``ask: true`` whose oracle prompts), the chain stops there (``Chain.asking``) and
``Asker.settle`` finds the answer, in this order:

1. a stored answer for exactly this call (``StateStore.approval_for``: the binding of
   session, event, tool and the input as the tool would now get it): a plain one is taken
   (one run), a for-session approval kept (and remembered by this engine, so the same call
   again costs no store call). This is how "block now, approve, re-run" passes;
2. else the ask is kept pending in the store (or the one already pending for this call is
   reused), logged, posted to the webhook (``webhook.py``), and the door's own ``Approver`` is
   awaited when it has one (a y/N prompt, an elicitation, an adapter's callback). The answer
   is stored through ``answer_ask``: when an out-of-band answer won first, that one stands.
   A long-lived engine waits on both at once: an out-of-band answer while the door's form
   is still open wins, and the form is given up;
   an approver answering ``channel="host"`` defers to the host's native ask (the bridge
   answers ``ask``; the chain goes on so a later hook can still deny);
3. else the store is polled every ``POLL`` seconds (``mcp-hooks approve``, the HTTP
   endpoints, another replica) until ``ask_timeout`` (the hook's ``metadata.ask_timeout``,
   else the setting) or the chain deadline, whichever comes first.

Then: approved -> the chain goes on with the next link; refused -> a deny with the person's
reason; no answer -> the fallback (``metadata.on_ask_unavailable``, else the setting): a deny
whose reason says a person must approve and how (``mcp-hooks approve <id>``), or an allow
with a warning. Either way the ask stays pending (``Outcome.ask``), so an approval given later
lets a retry of the same call pass. A store that cannot keep the ask is the same fallback.

Every step is an event-log record: ``kind`` ``ask`` (a new ask), ``ask_answer`` (the answer,
its channel and person), ``ask_timeout`` (nobody answered in time).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcp_hooks.engine.chain import Chain
from mcp_hooks.engine.offloop import _on_a_loop, call_off_loop, pause
from mcp_hooks.errors import ConfigError, RunError
from mcp_hooks.settings import Settings, _ask_seconds, _on_ask_unavailable
from mcp_hooks.spec.asking import GRANT_TTL, Approver, AskAnswer, AskRequest, binding_of
from mcp_hooks.spec.outcome import Event, cap_text
from mcp_hooks.state.asks import answer, ask_record
from mcp_hooks.state.store import AskAnswered, AskExpired, StateStore

POLL = 0.02  # seconds between two looks at the store while waiting for an answer
RESERVE = 1.0  # seconds of the chain deadline an ask's wait leaves to the links after it
HOST = "host"  # an approver's channel meaning "the host asks natively" (the bridge answers ask)
NOBODY = "nobody"  # an approver's channel meaning "nobody here, and no time to wait": fall back

Blocking = Callable[..., Any]


def policy(metadata: dict[str, Any], settings: Settings, notes: list[str]) -> tuple[float, str]:
    """The hook's ``ask_timeout`` and ``on_ask_unavailable`` (its metadata, else the
    settings); a bad value is noted and the setting used."""
    timeout, fallback = settings.ask_timeout, settings.on_ask_unavailable
    try:
        if metadata.get("ask_timeout") is not None:
            timeout = _ask_seconds(metadata["ask_timeout"], "metadata.ask_timeout")
        if metadata.get("on_ask_unavailable") is not None:
            fallback = _on_ask_unavailable(str(metadata["on_ask_unavailable"]),
                                           "metadata.on_ask_unavailable")
    except ConfigError as exc:
        notes.append(f"{exc}; the setting is used")
    return timeout, fallback


async def nobody_waits(request: AskRequest) -> AskAnswer:
    """The approver of a door that must answer at once (a host call forwarded to ``serve``,
    whose client gives up within seconds): no out-of-band wait, the fallback now, the ask left
    pending for a retry."""
    return AskAnswer(False, channel=NOBODY)


async def call_host_asks(request: AskRequest) -> AskAnswer:
    """The approver of a door whose host asks the person itself (Claude Code's
    ``permissionDecision: "ask"``): defer to it."""
    return AskAnswer(True, channel=HOST)


async def _within(answer: Awaitable[AskAnswer | None], until: float, one_shot: bool
                  ) -> AskAnswer | None:
    """A door's approver, until ``until`` (monotonic) at the latest: None past it (the door
    holds the call no longer than the ask timeout). Where nothing suspends (a one-shot
    engine, an inline chain) the approver awaits nothing: awaited as it is."""
    if one_shot or not _on_a_loop():
        return await answer
    import anyio  # lazy: 2.2 ms of a one-shot `fire`, which never calls this (-X importtime)

    with anyio.move_on_after(max(until - time.monotonic(), 0.0)):
        return await answer  # an approver that answers without waiting: even with no time
    return None


def as_approver(callback: Callable[[AskRequest], Any] | None) -> Approver | None:
    """A caller's approve callback (``Hooks(approve=...)``, an adapter's) as an ``Approver``:
    sync or ``async def``, returning an ``AskAnswer``, a bool (approve / refuse) or None (no
    person reachable: out of band, then the fallback). A sync one runs in a worker thread
    of the running loop (in place where none runs)."""
    if callback is None:
        return None
    if inspect.iscoroutinefunction(callback):
        async def awaiting(request: AskRequest) -> AskAnswer | None:
            return _answer_of(await callback(request))
        awaiting.awaits = True  # type: ignore[attr-defined]
        return awaiting

    async def calling(request: AskRequest) -> AskAnswer | None:
        return _answer_of(await call_off_loop(lambda: callback(request)))
    return calling


def _answer_of(given: Any) -> AskAnswer | None:
    if given is None or isinstance(given, AskAnswer):
        return given
    if isinstance(given, bool):
        return AskAnswer(given, reason="" if given else "refused by the approve callback",
                         channel="callback")
    raise TypeError(f"an approve callback must return an AskAnswer, a bool or None, got "
                    f"{type(given).__name__}")


class Asker:
    """Settles the asks of one engine's chains (see the module docstring)."""

    def __init__(self, store: StateStore, settings: Settings, blocking: Blocking, *,
                 one_shot: bool, notify: Callable[[AskRequest], None] | None = None) -> None:
        self.store = store
        self.settings = settings
        self._off = blocking
        self._one_shot = one_shot
        self._notify = notify
        # for-session approvals seen, by binding: never taken, so kept here (no store call)
        self._kept: dict[str, AskAnswer] = {}

    async def _blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` where the engine runs store calls (off the event loop)."""
        return await self._off(functools.partial(fn, *args))

    def _log(self, kind: str, request: AskRequest, **fields: Any) -> None:
        self.store.append("events", ask_record(kind, request, **fields))

    async def settle(self, chain: Chain, event: Event, metadata: dict[str, Any],
                     approve: Approver | None) -> None:
        """Answer the ask the chain stopped on (``chain.asking``); see the module docstring."""
        assert chain.asking is not None
        source, reason = chain.asking
        timeout, fallback = policy(metadata, self.settings, chain.warnings)
        session = event.session_id
        binding = binding_of(session, chain.name, event.tool_name, chain.tool_input)
        kept = self._kept.get(binding)
        if kept is not None and time.time() - kept.at <= GRANT_TTL:
            self._take(chain, source, kept)
            return
        try:
            stored = await self._blocking(self.store.approval_for, binding, session)
            if stored is not None:
                self._keep(binding, stored)
                self._take(chain, source, stored)
                return
            request = await self._blocking(self._open, chain, event, source, reason, binding)
        except RunError as exc:  # the store cannot keep an ask: nobody can answer it
            chain.warnings.append(f"ask of {source}: {exc}")
            self._fallback(chain, source, reason, fallback, None)
            return
        answer = await self._ask(chain, request, approve, timeout)
        if answer is None:
            self._log("ask_timeout", request, fallback=fallback)
            self._fallback(chain, source, reason, fallback, request)
        elif answer.channel == HOST:
            chain.asking, chain.ask = None, request
        else:
            self._keep(binding, answer)
            self._take(chain, source, answer)

    def _keep(self, binding: str, given: AskAnswer) -> None:
        if given.approved and given.for_session:
            if len(self._kept) >= 10_000:
                self._kept.clear()
            self._kept[binding] = given

    def _open(self, chain: Chain, event: Event, source: str, reason: str,
              binding: str) -> AskRequest:
        """The ask pending for this call, or a new one kept, logged and notified."""
        waiting = self.store.pending_for(binding, event.session_id)
        if waiting is not None:
            return waiting
        request = AskRequest.new(session_id=event.session_id, event_type=chain.name,
                                 tool_name=event.tool_name, tool_input=chain.tool_input,
                                 hook=source, reason=reason, created=time.time())
        other = self.store.approved_elsewhere(request)
        if other is not None:  # an approval never covers another input: said, not applied
            self._log("ask_mismatch", request, approved_ask=other.request.id,
                      tool_input=request.tool_input, approved_input=other.request.tool_input)
            chain.warnings.append(
                f"{source}: ask {other.request.id} was approved for other arguments of "
                f"{request.tool_name}; it does not cover these, so they are asked again")
        self.store.put_ask(request)
        self._log("ask", request, reason=reason, tool_input=request.tool_input,
                  expires=request.expires)
        if self._notify is not None:
            self._notify(request)
        return request

    async def _ask(self, chain: Chain, request: AskRequest, approve: Approver | None,
                   timeout: float) -> AskAnswer | None:
        """The door's approver, else the store until the time is up; None: no answer."""
        # never past the chain deadline (a bridge's: below its host's hook timeout), leaving
        # the links after this one a little of it; the door's approver included
        reserve = min(RESERVE, chain.budget * 0.1)
        until = time.monotonic() + min(timeout, max(chain.left() - reserve, 0.0))
        if approve is None:
            return await self._wait(request, until)
        if not self._one_shot and _on_a_loop():
            return await self._race(request, approve, until)
        done, given = await self._door(request, approve, until)
        return given if done else await self._wait(request, until)

    async def _door(self, request: AskRequest, approve: Approver, until: float,
                    take: bool = True) -> tuple[bool, AskAnswer | None]:
        """The door's approver: (True, its answer as the chain takes it), or (False, None)
        when it reached nobody (the store is the way left). ``take`` False (racing the
        store's poll): a person's answer is only stored, and the poll takes it, so a one-run
        approval has one taker."""
        given = await _within(approve(request), until, self._one_shot)
        if given is None:
            return False, None
        if given.channel == HOST:
            self._log("ask_answer", request, approved=None, channel=HOST, by="")
            return True, given
        if given.channel == NOBODY:
            return True, None
        if not take:
            await self._blocking(self._store_answer, request, given)
            return False, None
        recorded: AskAnswer | None = await self._blocking(self._record, request, given)
        return True, recorded

    async def _race(self, request: AskRequest, approve: Approver, until: float
                    ) -> AskAnswer | None:
        """The door's approver (an elicitation form, a callback) and the store (``mcp-hooks
        approve``, the dashboard, another replica) at once: the first answer stored wins, the
        poll takes it (the only taker) and the approver's wait is cancelled (an open form is
        given up); an approver that reaches nobody leaves the store to answer until
        ``until``."""
        import anyio  # lazy: 2.2 ms of a one-shot `fire`, which never calls this (-X importtime)

        won: list[AskAnswer | None] = []
        failed: list[Exception] = []  # raised as itself, never inside an exception group
        async with anyio.create_task_group() as race:
            async def door() -> None:
                try:
                    done, given = await self._door(request, approve, until, take=False)
                except Exception as exc:  # the approver's own error: the caller's to see
                    failed.append(exc)
                    done, given = True, None
                if done:
                    won.append(given)
                    race.cancel_scope.cancel()

            async def store() -> None:
                try:
                    won.append(await self._wait(request, until))
                except Exception as exc:  # a store that fails while polled
                    failed.append(exc)
                race.cancel_scope.cancel()

            race.start_soon(door)
            race.start_soon(store)
        if failed:
            raise failed[0]
        return won[0] if won else None

    def _store_answer(self, request: AskRequest, given: AskAnswer) -> None:
        """Store the door's answer; an out-of-band one that came first stands instead."""
        # an answer stored first (or an expiry) decides: never a second decision
        with contextlib.suppress(AskAnswered, AskExpired):
            answer(self.store, request.id, given)

    def _record(self, request: AskRequest, given: AskAnswer) -> AskAnswer | None:
        """Store the door's answer (``_store_answer``) and take it for this run."""
        self._store_answer(request, given)
        return self.store.approval_for(request.binding, request.session_id)

    async def _wait(self, request: AskRequest, until: float) -> AskAnswer | None:
        while True:
            answer: AskAnswer | None = await self._blocking(self._look, request)
            if answer is not None or time.monotonic() >= until:
                return answer
            wait = min(POLL, max(until - time.monotonic(), 0.0))
            if self._one_shot:
                time.sleep(wait)  # a one-shot engine never suspends (fire_blocking)
            else:
                await pause(wait)

    def _look(self, request: AskRequest) -> AskAnswer | None:
        record = self.store.get_ask(request.id)
        if record is None or record.answer is None:
            return None
        return self.store.approval_for(request.binding, request.session_id)

    @staticmethod
    def _take(chain: Chain, source: str, given: AskAnswer) -> None:
        """An answer's effect: go on, or deny with the person's reason (logged by whoever
        stored it: ``asks.answer``)."""
        who = f" by {given.by}" if given.by else ""
        how = given.channel or "stored"
        chain.asking = None
        if given.approved:
            chain.warnings.append(f"{source}: asked; approved{who} ({how})")
            return
        said = f": {given.reason}" if given.reason else ""
        chain.refuse(source, cap_text(f"a person refused this call{who}{said}"))

    def _fallback(self, chain: Chain, source: str, reason: str, fallback: str,
                  request: AskRequest | None) -> None:
        """No answer in time (or no store to keep the ask): the fallback, the ask left
        pending for a later retry."""
        chain.asking, chain.ask = None, request
        how = (f"approve it with `mcp-hooks approve {request.id}` (or refuse it with "
               f"`mcp-hooks refuse {request.id} --reason ...`), then make the same call again"
               if request is not None else "no ask could be kept (see the warnings)")
        if fallback == "allow":
            chain.warnings.append(f"{source} asked a person ({reason}); nobody answered in "
                                  f"time, allowed (on_ask_unavailable: allow); {how}")
            return
        chain.refuse(source, cap_text(f"a person must approve this call ({reason}); nobody "
                                      f"answered in time, so it is denied: {how}"))
