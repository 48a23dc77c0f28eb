"""What an upstream asks of the user, passed on to the client whose ``tools/call`` it serves
(and its progress, ``progress_forwarder``).

An upstream server may ask, while it runs a tool, for a person's input (``elicitation/create``,
form or URL mode) or for a completion of the client's model (``sampling/createMessage``). The
proxy's connection to each upstream declares both capabilities; ``Relay`` (one per upstream)
hands each such request to the downstream client of the call it belongs to (a ``Peer``) and
its answer, or its error, back to the upstream.

Which call: a handshake-era request from a server does not name the request it belongs to,
so the relay picks the downstream client among the calls in flight to that upstream: exactly
one client must have a call there (a request is never shown to a person who did not make the
call); with two clients' calls in flight, the upstream gets an error saying so.

The answer the upstream gets is the client's own (its result or its error) or, when the proxy
cannot ask, an MCP error that says why:

- the client did not declare the capability (``elicitation`` with the request's mode,
  ``sampling``, ``sampling.tools`` for a request with tools): ``METHOD_NOT_FOUND``;
- the client speaks 2026-07-28, where a server cannot send it requests during a call (the
  proxy does not turn an upstream's request into an ``input_required`` result):
  ``METHOD_NOT_FOUND``;
- no call in flight, or two clients': ``INVALID_REQUEST``;
- the client went away, its call ended, or it did not answer within the upstream's timeout:
  ``INTERNAL_ERROR``. A relayed request never outlives the call it belongs to.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from mcp_hooks.guard import named, passes_through
from mcp_hooks.server.approval import (
    Deferral,
    Send,
    deferral_for,
    elicitation_approver,
    input_required,
    request_sender,
)
from mcp_hooks.spec.asking import Approver
from mcp_hooks.spec.outcome import Outcome

logger = logging.getLogger("mcp_hooks.proxy")

_R = TypeVar("_R", bound=BaseModel)


@dataclass(eq=False)
class Peer:
    """The downstream client of one ``tools/call``: what it declared, how to ask it.

    Attributes:
        key: the client's session id (two calls of one client share it).
        client: its name, for messages.
        capabilities: what it declared (None: nothing).
        send: sends it a request tied to the call (None: it cannot be sent requests).
        why_not: why ``send`` is None, for the upstream's error.
    """

    key: str
    client: str | None
    capabilities: types.ClientCapabilities | None
    send: Send | None
    why_not: str = ""
    deferral: Deferral | None = None
    scopes: set[anyio.CancelScope] = field(default_factory=set)

    def name(self) -> str:
        return f"the client {self.client!r}" if self.client else "the client"

    def approver(self) -> Approver:
        """Its way to ask a person when a hook asks (``server.approval``): the form now, or
        the ask deferred to an ``input_required`` round (``deferral``)."""
        if self.deferral is not None:
            return self.deferral
        return elicitation_approver(self.send, self.capabilities, self.client)

    def round(self, outcome: Outcome) -> types.InputRequiredResult | None:
        """The ``input_required`` round that shows the form, when ``outcome`` left an ask
        deferred to it (the chain went on, nothing denied)."""
        deferred = self.deferral.request if self.deferral is not None else None
        if deferred is None or outcome.ask is None or outcome.denied:
            return None
        return input_required(deferred)


def _lacks(peer: Peer, params: types.ElicitRequestParams | types.CreateMessageRequestParams
           ) -> str | None:
    """The capability ``peer`` would need for ``params`` and did not declare, or None."""
    caps = peer.capabilities or types.ClientCapabilities()
    if isinstance(params, types.CreateMessageRequestParams):
        if caps.sampling is None:
            return "sampling"
        if (params.tools is not None or params.tool_choice is not None) \
                and caps.sampling.tools is None:
            return "sampling.tools"
        return None
    if caps.elicitation is None:
        return "elicitation"
    if isinstance(params, types.ElicitRequestURLParams):
        return None if caps.elicitation.url is not None else "elicitation.url"
    # an empty ``elicitation: {}`` is form mode (how 2025-06-18 clients declare it)
    if caps.elicitation.form is None and caps.elicitation.url is not None:
        return "elicitation.form"
    return None


class Relay:
    """One upstream's requests to the user, passed to the client of the call in flight.

    Args:
        upstream: the upstream's name, for messages.
        timeout: seconds a relayed request may wait for the client's answer.
    """

    def __init__(self, upstream: str, timeout: float) -> None:
        self.upstream = upstream
        self.timeout = timeout
        self._calls: list[Peer] = []

    @contextmanager
    def calling(self, peer: Peer | None) -> Iterator[None]:
        """A call of ``peer`` is in flight; when it ends, what was relayed for it ends too."""
        if peer is None:
            yield
            return
        self._calls.append(peer)
        try:
            yield
        finally:
            self._calls.remove(peer)
            for scope in list(peer.scopes):
                scope.cancel()

    def _peer(self, what: str) -> Peer | types.ErrorData:
        clients = {p.key: p for p in self._calls}
        if len(clients) == 1:
            return self._calls[-1]
        why = (f"no tools/call of the proxy is in flight to {self.upstream!r}"
               if not clients else
               f"{len(clients)} clients of the proxy have calls in flight to "
               f"{self.upstream!r}, and the proxy cannot tell which one this {what} is for")
        return types.ErrorData(code=types.INVALID_REQUEST,
                               message=f"mcp-hooks proxy: {what} not passed on: {why}")

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The upstream's ``elicitation/create``: the client's answer, or an error."""
        return await self._relay("elicitation/create", types.ElicitRequest(params=params),
                                 params, types.ElicitResult)

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        """The upstream's ``sampling/createMessage``: the client's answer, or an error."""
        tools = params.tools is not None or params.tool_choice is not None
        result: type[types.CreateMessageResult] | type[types.CreateMessageResultWithTools] = (
            types.CreateMessageResultWithTools if tools else types.CreateMessageResult)
        return await self._relay("sampling/createMessage",
                                 types.CreateMessageRequest(params=params), params, result)

    async def _relay(
        self, what: str, request: Any,
        params: types.ElicitRequestParams | types.CreateMessageRequestParams, result: type[_R],
    ) -> _R | types.ErrorData:
        peer = self._peer(what)
        if isinstance(peer, types.ErrorData):
            return peer
        lacks = _lacks(peer, params)
        if peer.send is None or lacks is not None:
            why = peer.why_not if peer.send is None else f"it did not declare {lacks!r}"
            return types.ErrorData(
                code=types.METHOD_NOT_FOUND,
                message=f"mcp-hooks proxy: {what} not passed on to {peer.name()}: {why}")
        with anyio.CancelScope() as scope:
            peer.scopes.add(scope)
            try:
                with anyio.fail_after(self.timeout):
                    return await peer.send(request, result)
            except MCPError as exc:  # the client's own error, as it gave it
                return exc.error
            except BaseException as exc:
                if passes_through(exc) or (scope.cancel_called and isinstance(
                        exc, anyio.get_cancelled_exc_class())):
                    raise  # the caller's cancellation, or the call ended (below)
                fault = (f"{peer.name()} did not answer within {self.timeout:g} s"
                         if isinstance(exc, TimeoutError) else f"{peer.name()} failed: "
                         f"{named(exc)}")
                logger.warning("upstream %s: %s: %s", self.upstream, what, fault)
                return types.ErrorData(code=types.INTERNAL_ERROR,
                                       message=f"mcp-hooks proxy: {what}: {fault}")
            finally:
                peer.scopes.discard(scope)
        return types.ErrorData(  # the call ended (cancelled, or the client went away)
            code=types.INTERNAL_ERROR,
            message=f"mcp-hooks proxy: {what}: the tools/call it belongs to has ended")


_MODERN = ("it speaks protocol 2026-07-28, where a server cannot send it requests during a "
           "call, and the proxy does not pass them on as input_required results")


def request_peer(ctx: ServerRequestContext[Any, Any], key: str) -> Peer:
    """The client of a ``tools/call`` the SDK server serves: asked on the request's own
    channel (on streamable HTTP, the stream of that POST)."""
    session = ctx.session
    info = session.client_params.client_info if session.client_params else None
    send = request_sender(ctx)
    why = "" if send is not None else (
        _MODERN if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        else "it has no channel the proxy can send a request on")
    return Peer(key, info.name if info else None, session.client_capabilities, send, why,
                deferral_for(ctx))


def connection_peer(connection: Connection, key: str) -> Peer:
    """The client of a ``tools/call`` the stdio fast path serves: asked on its connection."""
    info = connection.client_params.client_info if connection.client_params else None

    async def send(request: Any, result: type[_R]) -> _R:
        return await connection.send_request(request, result_type=result)

    return Peer(key, info.name if info else None, connection.client_capabilities, send)


def modern_peer(key: str) -> Peer:
    """The client of a 2026-07-28 ``tools/call``: it cannot be sent requests."""
    return Peer(key, None, None, None, _MODERN)


def progress_forwarder(ctx: ServerRequestContext[Any, Any]) -> ProgressFnT | None:
    """Pass the upstream's progress during a call on to its client, when it asked for it."""
    meta = ctx.meta
    if not meta or meta.get("progress_token") is None:
        return None
    session = ctx.session

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        await session.report_progress(progress, total, message)

    return forward


def approvers(peer: Peer | None) -> tuple[Approver | None, Approver | None]:
    """A call's approvers: before the call (the form, or the deferral to an ``input_required``
    round) and after it (never a round: the retry would run the tool again; out of band)."""
    if peer is None:
        return None, None
    before = peer.approver()
    return before, (None if peer.deferral is not None else before)


def ask_round(peer: Peer | None, outcome: Outcome) -> dict[str, Any] | None:
    """The ``input_required`` result (wire form) when ``outcome`` left an ask deferred to the
    client's round, else None."""
    asking = peer.round(outcome) if peer is not None else None
    if asking is None:
        return None
    wire: dict[str, Any] = asking.model_dump(by_alias=True, mode="json", exclude_none=True)
    return wire
