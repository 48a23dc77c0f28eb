"""A host's own permission prompt, answered from an ask of ours (issue 30, ``docs/ask.md``).

Claude Code shows its permission dialog for a call our ``PreToolUse`` answered ``ask`` for,
and runs its ``PermissionRequest`` hooks while the dialog is open (the person's answer there
wins and stops them; a headless ``-p`` run runs none). ``install`` registers the bridge for
that event (``Host.prompt_events``: prompt event -> the gate event whose ask it answers), and
the bridge answers it here, running no hook:

- the call (session, tool and input as the host will run it: ``spec/asking.binding_of``) has
  an ask of ours still pending: wait for its answer out of band (``mcp-hooks approve``, the
  HTTP routes, the dashboard, a phone through the webhook, another replica), polling the
  store as the engine does, until ``ask_timeout`` or the bridge's chain deadline; approved:
  ``behavior: allow`` (the dialog closes and the call runs; a one-run approval is taken),
  refused: ``behavior: deny`` with the person's reason;
- no ask of ours for this call, no answer in time, or a fault of ours: no answer (empty
  stdout, exit 0), and the host's own dialog decides as if we were not installed. Never a
  deny of our own: the dialog is a gate a person already holds, and an ask of ours never
  widens into a permission of the host's (a stored approval with no pending ask is not used).

When the person answers in the dialog instead, the call runs and its ``PostToolUse`` closes
the ask still pending for it (``close_answered``: approved, channel the host's name), so it
leaves ``mcp-hooks pending``, the dashboard and the phone, and the log says who decided.
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mcp_hooks.engine.asking import POLL
from mcp_hooks.hosts.base import Host, Reply
from mcp_hooks.options import CommonOptions, log_of
from mcp_hooks.options import settings as read_settings
from mcp_hooks.spec.asking import AskAnswer, binding_of
from mcp_hooks.spec.outcome import Event, cap_text
from mcp_hooks.state.asks import answer
from mcp_hooks.state.store import AskAnswered, AskExpired, UnknownAsk
from mcp_hooks.state.url import close_store, store_for

if TYPE_CHECKING:
    from mcp_hooks.hosts.base import Call
    from mcp_hooks.settings import Settings
    from mcp_hooks.state.store import StateStore

DIALOG = "the host's own dialog decides"


def answer_prompt(host: Host, prompt_event: str, payload: dict[str, Any],
                  common: CommonOptions, deadline: float) -> Reply:
    """The host's answer to its permission prompt ``prompt_event`` (see the module
    docstring); never raises: what breaks is said on stderr and the dialog decides."""
    try:
        call = host.translate(host.prompt_events[prompt_event], payload)
        settings = replace(read_settings(common), door=f"bridge/{host.name}")
        with _opened(settings) as store:
            given = _wait(store, call, min(settings.ask_timeout, deadline))
    except BaseException as exc:  # ours, or SIGINT when the person answered in the dialog
        return unanswered(prompt_event, exc)
    if given is None:
        return Reply()
    decision: dict[str, Any] = {"behavior": "allow" if given.approved else "deny"}
    if not given.approved:
        who = f" by {given.by}" if given.by else ""
        said = f": {given.reason}" if given.reason else ""
        decision["message"] = cap_text(f"a person refused this call{who}{said} (mcp-hooks)")
    return Reply.json({"hookSpecificOutput": {"hookEventName": prompt_event,
                                              "decision": decision}})


def prompt_of(host: Host, flag: str | None, payload: Any) -> str | None:
    """The prompt event a call is for (``--event``, else the payload's), or None."""
    named = flag or (payload.get(host.event_key) if isinstance(payload, dict) else None)
    return named if isinstance(named, str) and named in host.prompt_events else None


def unanswered(prompt_event: str, exc: BaseException) -> Reply:
    """A fault of ours on a prompt: said on stderr, no answer (exit 0): the dialog decides."""
    return Reply("", f"mcp-hooks bridge: {prompt_event}: {type(exc).__name__}: {exc}; "
                     f"{DIALOG}\n", 0)


def close_answered(host: Host, call: Call, troubles: list[str], store: StateStore) -> None:
    """After a call ran (the host's ``PostToolUse``, on the bridge's own ``store``): the ask
    of ours still pending for it was answered in the host's dialog; store that answer and
    take it (it covered that run only). Never raises: what went wrong goes to ``troubles``."""
    gate = next(iter(host.prompt_events.values()))
    try:
        asked = host.translate(gate, {**call.payload, host.event_key: gate})
        request = store.pending_for(*_bound(asked))
        if request is None:
            return
        with contextlib.suppress(AskAnswered, AskExpired, UnknownAsk):  # answered first
            answer(store, request.id, AskAnswer(True, by=f"{host.title}'s dialog",
                                                channel=host.name))
        store.approval_for(request.binding, request.session_id)  # taken: that run
    except Exception as exc:  # advisory: the call has run; only the record is missing
        troubles.append(f"the ask pending for this call could not be closed ({exc})")


@contextlib.contextmanager
def _opened(settings: Settings) -> Any:
    store = store_for(settings.state, log_of(settings), settings.replica_id)
    try:
        yield store
    finally:
        close_store(store)


def _bound(call: Call) -> tuple[str, str | None]:
    """The binding and session of exactly this call (as the engine's ask names it)."""
    event = Event.create(event_type=call.event, **call.fields)
    return (binding_of(event.session_id, call.event, event.tool_name, event.tool_input),
            event.session_id)


def _wait(store: StateStore, call: Call, seconds: float) -> AskAnswer | None:
    """The answer to the ask of ours for this call, within ``seconds``; None: no such ask,
    or no answer in time. An answer given since our ``PreToolUse`` deferred to this dialog
    (a one-run answer nobody took yet) is taken at once; a for-session approval is not an
    answer to the dialog (it passes our gate, never the host's own permission)."""
    bound = _bound(call)
    given = store.approval_for(*bound)
    if given is not None and not given.for_session:
        return given
    request = store.pending_for(*bound)
    if request is None:
        return None
    until = time.monotonic() + max(min(seconds, request.expires - time.time()), 0.0)
    print(f"mcp-hooks: waiting for an answer to {request.id} (mcp-hooks approve {request.id})",
          file=sys.stderr, flush=True)  # the dialog may be answered meanwhile
    while True:
        record = store.get_ask(request.id)
        if record is not None and record.answer is not None:
            if not record.answer.approved or record.answer.for_session:
                return record.answer
            # a one-run approval covers one run: this one if it is still there to take (a
            # retry of the same call elsewhere may have used it: then the dialog decides)
            return store.approval_for(request.binding, request.session_id)
        if time.monotonic() >= until:
            return None
        time.sleep(min(POLL, max(until - time.monotonic(), 0.0)))
