"""An MCP client's own way to ask a person: the ``Approver`` of the MCP doors (issue 30).

When a hook answers ``ask`` during ``fire_hook_event`` (``serve``) or a proxied
``tools/call``, the engine calls the door's approver (``spec/asking.py``). Here it is an
``elicitation/create`` request (form mode) to the client that made the request, on that
request's own channel (on streamable HTTP, the stream of its POST)::

    message          "<hook> asks a person to approve this call: <reason>"
                     + the tool, its exact arguments (canonical JSON), the ask's id
    requestedSchema  approve: boolean (required)
                     for_session: boolean (the same call again in this session)
                     reason: string (optional; a refusal's reason reaches the agent)

The answer:

- ``accept`` with ``approve: true``: approved (``for_session`` as ticked);
- ``accept`` with ``approve: false``, ``decline``, ``cancel``: refused, with the person's
  reason or one that says how they answered;
- ``accept`` with content that does not match the form (``approve`` missing or not a
  boolean, a field of another type, a field the form does not have): refused, the reason
  naming the field;
- the client did not declare form elicitation, cannot be sent requests, or answers the
  request with an error: None, the out-of-band path (``mcp-hooks pending`` / ``approve``),
  then the fallback.

A 2026-07-28 client cannot be sent requests during a call: for one that declared form
elicitation the door answers ``input_required`` with the same form instead (``Deferral``,
``input_required``); the client retries the same call with the person's answer, and the door
stores it on the ask (``answered_round``) before firing again, so the engine takes the stored
answer. The ``requestState`` is sealed by the SDK (``mcp.server.request_state``: AES-GCM under
``state_security``'s key: ``MCP_HOOKS_ASK_KEY``, else derived from the trust key, else the
process's own; bound to the tool and its exact arguments, expiring in 10 minutes): a client
can neither forge an approval nor move it to other arguments, and with a shared key the
retry may reach any replica; a replayed retry finds its ask already answered, an error,
never a second decision.

The engine bounds the wait (the ask timeout); the approver never outlives the request it
belongs to. ``channel`` of every answer is ``elicitation``; ``by`` is the client's name (the
MCP client does not say which person answered).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from mcp_hooks.engine.asking import HOST  # the channel that defers an ask to the door
from mcp_hooks.guard import named, passes_through
from mcp_hooks.service import BadRequest
from mcp_hooks.settings import Settings
from mcp_hooks.spec.asking import Approver, AskAnswer, AskRequest, canonical_json
from mcp_hooks.state import asks
from mcp_hooks.state.eventlog import now
from mcp_hooks.state.store import AskAnswered, AskExpired, StateStore, UnknownAsk

logger = logging.getLogger("mcp_hooks.server")

_R = TypeVar("_R", bound=BaseModel)
CHANNEL = "elicitation"
_ARGUMENTS_SHOWN = 4000  # characters of the arguments in the form's message

FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Approve this call",
                    "description": "Yes: the call goes on. No: it is refused."},
        "for_session": {"type": "boolean", "title": "For this session",
                        "description": "Also approve this same call (same tool, same "
                                       "arguments) again in this session.",
                        "default": False},
        "reason": {"type": "string", "title": "Reason (optional)",
                   "description": "Why; a refusal's reason is shown to the agent."},
    },
    "required": ["approve"],
}
_TYPES: dict[str, type] = {"approve": bool, "for_session": bool, "reason": str}


class Send(Protocol):
    """Sends a typed request to the client and returns its typed result.

    Raises ``MCPError`` when the client answers with an error."""

    async def __call__(self, request: Any, result: type[_R]) -> _R: ...


def request_sender(ctx: ServerRequestContext[Any, Any]) -> Send | None:
    """A sender of requests to the client of ``ctx``'s request, on that request's channel;
    None when it cannot be sent requests (a 2026-07-28 request, no back channel)."""
    session = ctx.session
    if not session.can_send_request:
        return None
    related = ServerMessageMetadata(related_request_id=ctx.request_id)

    async def send(request: Any, result: type[_R]) -> _R:
        return await session.send_request(request, result, metadata=related)

    return send


def can_elicit_form(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether a client declared form-mode elicitation (an empty ``elicitation: {}`` is form
    mode, as 2025-06-18 clients declare it)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


def form_message(request: AskRequest) -> str:
    """What the person reads: who asks, why, the exact call, the id."""
    arguments = canonical_json(request.tool_input or {})
    if len(arguments) > _ARGUMENTS_SHOWN:
        arguments = (f"{arguments[:_ARGUMENTS_SHOWN]}... ({len(arguments) - _ARGUMENTS_SHOWN}"
                     " more characters; `mcp-hooks pending` shows them all)")
    why = request.reason or "no reason given"
    return (f"{request.hook or 'A hook'} asks a person to approve this call: {why}\n\n"
            f"Tool: {request.tool_name or '(none)'}\nArguments: {arguments}\n\n"
            f"(ask {request.id}; approving covers exactly these arguments)")


def answer_of(result: types.ElicitResult, by: str) -> AskAnswer:
    """The person's answer in an elicitation result (see the module docstring)."""
    if result.action == "decline":
        return AskAnswer(False, "the person declined the request in the client", by, CHANNEL)
    if result.action == "cancel":
        return AskAnswer(False, "the person dismissed the request in the client (cancel); "
                         "nothing was approved", by, CHANNEL)
    content = result.content or {}
    for key, value in content.items():
        want = _TYPES.get(key)
        if want is None:
            return _mismatch(f"it has a field {key!r} the form does not have", by)
        if not isinstance(value, want):
            return _mismatch(f"{key!r} is {type(value).__name__}, not {want.__name__}", by)
    if "approve" not in content:
        return _mismatch("'approve' is missing", by)
    reason = str(content.get("reason") or "")
    if content["approve"] is True:
        return AskAnswer(True, reason, by, CHANNEL, for_session=content.get("for_session")
                         is True)
    return AskAnswer(False, reason or "the person refused the call in the client", by, CHANNEL)


def _mismatch(why: str, by: str) -> AskAnswer:
    return AskAnswer(False, f"the answer did not match the approval form ({why}); "
                     "nothing was approved", by, CHANNEL)


def elicitation_approver(
    send: Send | None, capabilities: types.ClientCapabilities | None, client: str | None,
) -> Approver:
    """The approver of one request's client (see the module docstring)."""
    by = client or ""

    async def approve(request: AskRequest) -> AskAnswer | None:
        if send is None or not can_elicit_form(capabilities):
            return None  # no person reachable this way: out of band
        params = types.ElicitRequestFormParams(message=form_message(request),
                                               requested_schema=FORM)
        try:
            result = await send(types.ElicitRequest(params=params), types.ElicitResult)
        except MCPError as exc:
            logger.info("ask %s: the client answered the form with an error: %s", request.id,
                        exc.error.message)
            return None
        except BaseException as exc:
            if passes_through(exc):
                raise
            logger.warning("ask %s: the form could not be shown: %s", request.id, named(exc))
            return None
        return answer_of(result, by)

    return approve


def request_approver(ctx: ServerRequestContext[Any, Any]) -> Approver:
    """The approver of the client of ``ctx``'s request."""
    session = ctx.session
    info = session.client_params.client_info if session.client_params else None
    return elicitation_approver(request_sender(ctx), session.client_capabilities,
                                info.name if info else None)


# -- 2026-07-28: the input_required round ----------------------------------------------------

_DERIVED = "mcp-hooks ask requestState v1:"  # the trust key's use here is its own


def state_security(settings: Settings) -> RequestStateSecurity:
    """How the ``requestState`` of an ``input_required`` round is sealed: under
    ``MCP_HOOKS_ASK_KEY``, else a key derived from ``MCP_HOOKS_TRUST_KEY`` (a fleet's
    replicas share it already), else a key of this process (a retry must reach it)."""
    if settings.ask_key:
        return RequestStateSecurity(keys=[settings.ask_key])
    if settings.trust_key:
        derived = hashlib.sha256((_DERIVED + settings.trust_key).encode()).hexdigest()
        return RequestStateSecurity(keys=[derived])
    return RequestStateSecurity.ephemeral()


ROUND_KEY = "mcp-hooks-approval"  # the key of the form in ``inputRequests``


class Deferral:
    """The approver of a 2026-07-28 client that declared form elicitation: it cannot be asked
    during the request, so the ask is deferred to the door (``HOST``: the chain goes on, the
    ask stays pending) and the door answers ``input_required`` with the form
    (``input_required``); the client retries with the person's answer (``answered_round``)."""

    def __init__(self) -> None:
        self.request: AskRequest | None = None

    async def __call__(self, request: AskRequest) -> AskAnswer:
        self.request = request
        return AskAnswer(True, channel=HOST)


def input_required(request: AskRequest) -> types.InputRequiredResult:
    """The ``input_required`` result that shows the approval form. Its ``requestState`` names
    the ask; the SDK seals it (``RequestStateBoundary``: AES-GCM under the server's key, bound
    to this tool and these exact arguments, with an expiry), so a client can neither forge it
    nor move it to another call."""
    form = types.ElicitRequestFormParams(message=form_message(request), requested_schema=FORM)
    return types.InputRequiredResult(
        input_requests={ROUND_KEY: types.ElicitRequest(params=form)},
        request_state=canonical_json({"ask": request.id, "binding": request.binding}))


def answered_round(state: str, responses: dict[str, Any] | None, by: str
                   ) -> tuple[str, AskAnswer]:
    """A retry's ask id (from the SDK-verified state) and the person's answer in it (none, or
    not an elicitation result: a refusal).

    Raises:
        ValueError: the state is not one this server minted (cannot happen past the SDK's
            verification but for a server of another version).
    """
    data = json.loads(state)
    if not isinstance(data, dict) or not isinstance(data.get("ask"), str):
        raise ValueError("the requestState names no ask")
    reply = (responses or {}).get(ROUND_KEY)
    if not isinstance(reply, types.ElicitResult):
        return data["ask"], AskAnswer(False, "the retry carried no answer to the approval "
                                      "form; nothing was approved", by, CHANNEL)
    return data["ask"], answer_of(reply, by)


def door_approver(ctx: ServerRequestContext[Any, Any]) -> tuple[Approver, Deferral | None]:
    """The approver of ``ctx``'s client: the form now (handshake era), the deferral to an
    ``input_required`` round (2026-07-28 with form elicitation), or None (out of band)."""
    deferral = deferral_for(ctx)
    return (deferral, deferral) if deferral is not None else (request_approver(ctx), None)


def deferral_for(ctx: ServerRequestContext[Any, Any]) -> Deferral | None:
    """A ``Deferral`` when ``ctx``'s client is asked with an ``input_required`` round (a
    2026-07-28 request, no back channel, form elicitation declared), else None."""
    if request_sender(ctx) is None and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS \
            and can_elicit_form(ctx.session.client_capabilities):
        return Deferral()
    return None


async def take_round(store: StateStore, state: str, responses: dict[str, Any] | None,
                     by: str) -> None:
    """Store (and log, ``asks.answer``) the person's answer a 2026-07-28 retry carries on
    its ask, so the engine takes it when the call fires again.

    Raises:
        RoundRefused: the ask is unknown, expired or answered already (a replayed retry).
    """
    try:
        ask_id, answer = answered_round(state, responses, by)
        await anyio.to_thread.run_sync(asks.answer, store, ask_id, answer)
    except (ValueError, UnknownAsk, AskExpired, AskAnswered) as exc:
        raise RoundRefused(f"the approval in this retry cannot be taken: {exc}; call again "
                           "without requestState to be asked anew") from None


class RoundRefused(BadRequest):
    """A retry's approval that cannot be taken (unknown, expired, answered already)."""


class RoundGuard:
    """Middleware outside the SDK's ``RequestStateBoundary``: a retry whose ``requestState``
    the boundary refuses (forged, moved to other arguments, expired) is an event-log record
    (``kind: ask_refused``) before the client gets the SDK's error; nothing was approved."""

    def __init__(self, store: Callable[[], StateStore]) -> None:
        self._store = store

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
                       ) -> HandlerResult:
        try:
            return await call_next(ctx)
        except MCPError as exc:
            if exc.error.data == {"reason": "invalid_request_state"}:
                await anyio.to_thread.run_sync(self._record, ctx)
            raise

    def _record(self, ctx: ServerRequestContext[Any, Any]) -> None:
        params = ctx.params or {}
        arguments = params.get("arguments")
        inner = arguments.get("tool_name") if isinstance(arguments, dict) else None
        try:
            self._store().append("events", {
                "ts": now(), "kind": "ask_refused", "method": ctx.method,
                "tool": params.get("name"), "tool_name": inner,
                "reason": "a retry's requestState was refused (forged, moved to other "
                          "arguments, or expired); nothing was approved"})
        except Exception as exc:  # the refusal stands without its record
            logger.warning("ask_refused not logged: %s", named(exc))
