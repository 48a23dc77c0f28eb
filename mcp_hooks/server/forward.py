"""The forward path's server side: its HTTP endpoints and its MCP tool.

Each hands a host's call to ``hosts/forward.answer_payload`` (the bridge's answer over the
server's warm engine) or fires an event at that engine:

- ``bridge_routes(engine_for, token)``: ``POST /hooks/bridge/{host}?event=<HostEvent>``
  takes the host's payload as the body and returns the host's stdout JSON (empty body for a
  plain allow). It exists only when the server has a token. A request signed as forward protocol
  v2 (``forward_auth``: the client proves it holds the token without sending it) is checked
  against the time and the nonces already seen before its body is read, then its body (at most
  ``forward_http.MAX_REQUEST_BYTES``, else ``413``) against that MAC, and its nonce claimed (in
  the shared state store too, with ``--state`` on Redis or PostgreSQL, so no replica answers it
  twice: on the store's asyncio lane, ``app.claim_on``); its answer is signed over the request
  (``X-MCP-Hooks-Signature``), so the forward script and ``fire --server`` believe nothing but
  the real server's answer to what they asked. A request without ``X-MCP-Hooks-Auth`` must carry
  ``Authorization: Bearer <token>`` (Claude Code's own ``http`` hooks, which cannot sign;
  checked before the body is read, a body over the cap answered with the host's deny) and gets
  an unsigned answer.
  A call mcp-hooks cannot decide (an unreadable payload, anything the engine raises: each
  endpoint is its door's one guard, ``guard.py``)
  gets the same fault answer as the bridge (``Host.fault_reply``): a deny in the host's JSON
  form, with status 200. An answer that needs an exit code (the universal exit-2 block, a
  warning with exit 1) and a work dir the server does not serve get ``422`` with the reason,
  so the forward script falls back to the local bridge, which answers with the exit code.
  ``install --via server`` writes a command that uses it, ``install claude-code --via http``
  a Claude Code ``http`` hook.
- ``POST /hooks/fire`` (mounted with the bridge endpoint; v2 signed requests only): the
  body is an ``Event``'s fields as JSON, the answer ``Outcome.to_json()``, so ``mcp-hooks
  fire --server URL`` gets the decision of the server's warm engine (persistent hooks stay
  resident there). A malformed body is ``400`` naming the field; a work dir the server does
  not serve, or user or project hooks folders other than the ones the caller names
  (``X-MCP-Hooks-User-Dir``, ``X-MCP-Hooks-Project-Dir``, percent-encoded), is ``422``, so
  the caller runs the event itself; an engine failure is the server's fault outcome.
- ``bridge_hook``: an MCP tool whose text result is Claude Code's hook JSON, for Claude
  Code's ``mcp_tool`` hooks (``install claude-code --via mcp``). Claude Code substitutes
  ``${field}`` from its hook input into the tool's string arguments; the tool rebuilds the
  hook input from them (see ``mcp_tool_payload``).

Both take ``engine_for(work_dir)`` (``hosts/forward.EngineFor``). The server module wires
them; this module imports the MCP SDK and Starlette only inside the functions that build
routes.
"""

from __future__ import annotations

import hmac
import inspect
import json
import os
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote

from mcp_hooks.dashboard.body import read_capped
from mcp_hooks.errors import ConfigError, InvalidEventError
from mcp_hooks.guard import named, passes_through
from mcp_hooks.hosts import UnknownHostError, get_host
from mcp_hooks.hosts.answering import load_payload, unreadable
from mcp_hooks.hosts.forward import (
    BRIDGE_PATH,
    FIRE_PATH,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    EngineFor,
    answer_payload,
    bridge_hook,
)
from mcp_hooks.hosts.forward_auth import (
    AUTH_HEADER,
    NONCE_HEADER,
    NONCE_TTL_S,
    PROJECT_DIR_HEADER,
    REPLAYED,
    SHARED_NONCE,
    SIGNATURE_HEADER,
    USER_DIR_HEADER,
    RequestVerifier,
    answer_signature,
)
from mcp_hooks.hosts.forward_http import MAX_REQUEST_BYTES
from mcp_hooks.server.fire_ask import fire_approver
from mcp_hooks.spec.events import canonical_event
from mcp_hooks.spec.outcome import Event, fault_outcome

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from mcp_hooks.engine.engine import Engine
    from mcp_hooks.spec.outcome import OnFault, Outcome


class Claim(Protocol):
    """A shared state store's ``claim``, awaited (``app.py``: on the store's asyncio lane,
    as an engine's calls are): True for the first claim of a name within ``ttl``."""

    def __call__(self, name: str, *, ttl: float) -> Awaitable[bool]: ...


def request_target(request: Request) -> str:
    """The request target as the client sent it: raw path, and ``?`` and the raw query when
    there is one (what a v2 request MAC covers)."""
    scope = request.scope
    raw = scope.get("raw_path")
    path = (raw.decode("latin-1").partition("?")[0] if isinstance(raw, bytes)
            else scope.get("path", ""))
    query = scope.get("query_string", b"")
    return path + ("?" + query.decode("latin-1") if query else "")


class _Door:
    """One forwarding request's authentication, and its answers signed accordingly."""

    def __init__(self, token: str, mac: str | None, nonce: str) -> None:
        self.token, self.mac, self.nonce = token, mac, nonce

    def answer(self, status: int, body: bytes | str,
               media_type: str = "text/plain; charset=utf-8") -> Response:
        """The response, signed over the request when it was a v2 one."""
        # lazy: 150 ms of cold `fire` and `bridge` (starlette); only the server answers
        from starlette.responses import Response

        content = body.encode("utf-8", "backslashreplace") if isinstance(body, str) else body
        headers = ({SIGNATURE_HEADER: answer_signature(self.token, self.nonce, self.mac,
                                                       status, content)}
                   if self.mac is not None else {})
        return Response(content, status_code=status, media_type=media_type, headers=headers)


def _refused(why: str, status: int = 401) -> Response:
    # lazy: 150 ms of cold `fire` and `bridge` (starlette); only the server answers
    from starlette.responses import PlainTextResponse

    return PlainTextResponse(f"{why}\n", status_code=status)


TOO_LARGE = (f"the request body is over the cap of {MAX_REQUEST_BYTES} bytes "
             f"({MAX_REQUEST_BYTES >> 20} MiB) this server reads")


async def _door(request: Request, token: str, verifier: RequestVerifier, *, bearer: bool,
                claim: Claim | None) -> tuple[_Door, bytes | None] | Response:
    """``(door, body)`` of an authenticated request, or the refusal to answer.

    A v2 request (``X-MCP-Hooks-Auth``; every request when ``bearer`` is not allowed) is
    refused on its headers before its body is read (``RequestVerifier.early``), its body
    read up to ``MAX_REQUEST_BYTES`` (``413`` past it), then its MAC checked and its nonce
    claimed, in ``claim`` (the shared store) when there is one; its answers are signed.
    Else the bearer token is checked before the body is read; its body is None when over
    the cap (the endpoint answers the host's fault deny), and its answers are unsigned.
    """
    if AUTH_HEADER.lower() not in request.headers and bearer:
        given = request.headers.get("authorization", "").encode("latin-1")  # the bytes sent
        if not hmac.compare_digest(given, f"Bearer {token}".encode()):
            return _refused("missing or wrong bearer token (or sign the request: "
                            f"{AUTH_HEADER}, forward protocol v2)")
        return _Door(token, None, ""), await read_capped(request, MAX_REQUEST_BYTES)
    why = verifier.early(request.headers)
    if why is not None:
        return _refused(why)
    body = await read_capped(request, MAX_REQUEST_BYTES)
    if body is None:
        return _refused(TOO_LARGE, 413)
    checked = verifier.check(request.method, request_target(request), request.headers, body)
    if checked.mac is None:
        return _refused(checked.why)
    nonce = request.headers[NONCE_HEADER.lower()]
    door = _Door(token, checked.mac, nonce)
    if claim is not None:
        try:
            first = await claim(SHARED_NONCE + nonce, ttl=NONCE_TTL_S)
        except Exception as exc:  # StateUnavailable: never guess that a nonce is fresh
            return door.answer(503, f"the replay guard cannot reach the state store ({exc}); "
                               "nothing was fired\n")
        if not first:
            return _refused(REPLAYED)
    return door, body


def bridge_routes(engine_for: EngineFor, token: str | None, on_fault: OnFault = "block",
                  claim: Claim | None = None) -> list[Route]:
    """The forwarding endpoints (``/hooks/bridge/<host>`` and ``/hooks/fire``), to mount
    beside ``/mcp``; empty without a token. They share one replay guard. ``on_fault``: the
    server's setting (``serve --on-fault``, else ``MCP_HOOKS_ON_FAULT``), for the faults the
    endpoints answer themselves (the engine has its own, the same). ``claim``: the shared
    state store's ``claim`` (``--state`` on Redis or PostgreSQL), so that a nonce accepted
    by one replica is refused by every other; None: this process's memory only."""
    # lazy: 170 ms of cold `fire` and `bridge` (starlette); only the server routes
    from starlette.routing import Route

    if not token:
        return []
    verifier = RequestVerifier(token, shared=claim is not None)

    async def endpoint(request: Request) -> Response:
        opened = await _door(request, token, verifier, bearer=True, claim=claim)
        if not isinstance(opened, tuple):
            return opened
        door, body = opened
        try:
            host = get_host(request.path_params["host"])
        except UnknownHostError as exc:
            return door.answer(404, f"{exc}\n")
        event = request.query_params.get("event")
        try:
            if body is None:
                raise ValueError(TOO_LARGE)
            payload = load_payload(body)
        except Exception as exc:
            reply = host.fault_reply(unreadable(host, exc), host.known_event(event, None),
                                     on_fault)
        else:
            reply = await answer_payload(host, payload, event, engine_for, on_fault)
        if reply.exit_code != 0:
            return door.answer(422, reply.stderr)
        return door.answer(200, reply.stdout, "application/json")

    return [Route(BRIDGE_PATH, endpoint, methods=["POST"]),
            fire_route(engine_for, token, verifier, on_fault, claim)]


def read_fire_body(body: bytes) -> Event:
    """The ``Event`` a ``/hooks/fire`` body describes.

    Raises:
        InvalidEventError: not a JSON object, or a field unknown or of the wrong type (named).
        UnknownEventError: ``event_type`` is not in the catalogue.
    """
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise InvalidEventError("body", f"not JSON ({exc}); send the Event fields as a JSON "
                                "object") from None
    if not isinstance(data, dict):
        raise InvalidEventError("body", "must be a JSON object of Event fields (event_type, "
                                "tool_name, tool_input, ...)")
    event = Event.create(**data)
    canonical_event(event.event_type)
    return event


def _other_hooks(engine: Engine, request: Request) -> str | None:
    """Why this engine would load other hooks than the caller names in its headers, or None."""
    registry = engine.registry
    for header, ours, what in ((USER_DIR_HEADER, registry.user_dir, "user"),
                               (PROJECT_DIR_HEADER, registry.project_dir, "project")):
        given = request.headers.get(header)
        if not given:  # absent, or empty: the same in the request's MAC
            continue
        theirs = os.path.realpath(unquote(given))
        if ours is None or os.path.realpath(ours) != theirs:
            return f"this server runs the {what} hooks of {ours}, not those of {theirs}"
    return None


def fire_route(engine_for: EngineFor, token: str,
               verifier: RequestVerifier | None = None, on_fault: OnFault = "block",
               claim: Claim | None = None) -> Route:
    """``POST /hooks/fire``: one event fired at the server's engine, answered with the
    outcome's JSON; v2 signed requests only (``verifier``: the replay guard to share;
    ``claim`` as for ``bridge_routes``). The query says how a hook's ask reaches a person
    (``fire_ask.py``: out of band by default, ``?ask=now``, ``?ask=native&channel=...``)."""
    # lazy: 170 ms of cold `fire` and `bridge` (starlette); only the server routes
    from starlette.routing import Route

    guard = verifier or RequestVerifier(token, shared=claim is not None)

    async def endpoint(request: Request) -> Response:
        opened = await _door(request, token, guard, bearer=False, claim=claim)
        if not isinstance(opened, tuple):
            return opened
        door, body = opened
        if body is None:  # not reached: a v2 request over the cap is refused in _door
            return door.answer(413, f"{TOO_LARGE}\n")
        try:
            event = read_fire_body(body)
            approve = fire_approver(request.query_params)  # a hook's ask: fire_ask.py
        except ConfigError as exc:
            return door.answer(400, f"{exc}\n")
        try:
            engine = engine_for(event.work_dir)
            if inspect.isawaitable(engine):
                engine = await engine
        except Exception as exc:
            return door.answer(422, f"this server does not answer for that folder: {exc}\n")
        other = _other_hooks(engine, request)
        if other:
            return door.answer(422, f"{other}\n")
        outcome: Outcome
        try:  # the endpoint's one guard: the engine under it raises (``guard.py``)
            outcome = await engine.fire(event, approve=approve)
        except BaseException as exc:  # ours: a deny saying what broke, never a silent allow
            if passes_through(exc):  # the request was cancelled, or the server stops
                raise
            outcome = fault_outcome(canonical_event(event.event_type),
                                    f"the server failed: {named(exc)}", on_fault=on_fault)
        return door.answer(200, outcome.to_json(), "application/json")

    return Route(FIRE_PATH, endpoint, methods=["POST"])


# -- the MCP tool for Claude Code mcp_tool hooks ------------------------------------------


def register_bridge_tool(server: Any, engine_for: EngineFor,
                         on_fault: OnFault = "block") -> None:
    """Add the ``bridge_hook`` tool to a high-level ``MCPServer`` (``on_fault``: the
    server's setting, as for ``bridge_routes``)."""
    # lazy: 2,200 ms (the MCP SDK) of cold `fire` and `bridge`; only the server
    from mcp.server.mcpserver.exceptions import ToolError

    async def bridge_hook_tool(
        hook_event_name: str,
        host: str = "claude-code",
        session_id: str | None = None,
        cwd: str | None = None,
        tool_name: str | None = None,
        tool_input: Any = None,
        tool_use_id: str | None = None,
        tool_response: Any = None,
        error: Any = None,
        stop_hook_active: Any = None,
        last_assistant_message: str | None = None,
        prompt: str | None = None,
        payload: Any = None,
        input_command: str | None = None,
        input_description: str | None = None,
        input_file_path: str | None = None,
        input_content: str | None = None,
        input_old_string: str | None = None,
        input_new_string: str | None = None,
        input_path: str | None = None,
        input_pattern: str | None = None,
        input_url: str | None = None,
        input_query: str | None = None,
        input_prompt: str | None = None,
    ) -> str:
        arguments = dict(locals())
        text, is_error = await bridge_hook(engine_for, arguments, on_fault)
        if is_error:
            raise ToolError(text)
        return text

    server.add_tool(bridge_hook_tool, name=TOOL_NAME, description=TOOL_DESCRIPTION,
                    structured_output=False)


__all__ = ["Claim", "bridge_routes", "fire_route", "read_fire_body",
           "register_bridge_tool", "request_target"]
