"""The gating proxy: every ``tools/call`` to every upstream MCP server passes through the hooks.

::

    host ──MCP──► mcp-hooks proxy ──MCP──► upstream servers (stdio, streamable HTTP, SSE)
                        │
                        └─ Engine: session_start, before_tool, after_tool,
                                   after_tool_failure, session_end

The proxy is a low-level MCP ``Server`` that serves the union of its upstreams' tools,
resources, resource templates and prompts, unchanged (a name two upstreams share gets the
``<server>__`` prefix on both; ``--prefix`` always prefixes). One ``tools/call``:

1. ``before_tool`` fires with ``tool_name`` as the client sees it, ``tool_input``,
   ``tool_use_id``, and ``mcp_server`` / ``mcp_tool`` (the upstream's own names) in the payload.
   A deny answers with an ``isError`` result carrying the hook's reason; the upstream is never
   called. ``modified_input`` is what the upstream receives.
2. The upstream call, bounded by the timeout (the start of a stopped upstream included).
3. Success -> ``after_tool`` with ``tool_output`` = ``{content, structuredContent}``; a hook's
   ``modified_output`` replaces the result, a deny withholds it, and the ``additional_context``
   of both events is appended as one text block. An ``isError`` result, a protocol error or
   an upstream fault -> ``after_tool_failure`` with ``error``; the client sees the upstream's
   error as it was, and the proxy's own faults (timeout, upstream down) as ``isError`` results
   that say what happened.

Faults of the gate itself (a hook in scope that does not load, input nested deeper than
hooks are handed, an exception of ours) are ``engine.fault_outcome`` under ``--on-fault``:
with ``block`` (the default) the call is refused with an ``isError`` result saying what
broke, and the upstream is not called. Hooks never see the proxy's token nor the upstreams'
configured credentials in their environment (``proxy_config.upstream_secrets``).

Upstream faults (``proxy_upstream``): an upstream that fails to start or dies is logged (stderr
and the event log) and shown by the ``hooks://proxy/status`` resource; its tools answer with a
clear error, the others keep working, and it is started again on its next call, with backoff.

Speed: over stdio, ``tools/call`` requests are answered on a fast path (``proxy_stdio``) that
skips the SDK's per-message validation on both sides; the hooks, results and errors are the
same on either path.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_hooks.engine import FAULT_SOURCE, Engine, Event, Outcome, cap_text, fault_outcome
from mcp_hooks.eventlog import EventLog
from mcp_hooks.proxy.config import (
    ProxyConfigError,
    UpstreamSpec,
    collect_upstreams,
    upstream_secrets,
)
from mcp_hooks.proxy.upstream import (
    DEFAULT_STARTUP_TIMEOUT,
    DEFAULT_TIMEOUT,
    Kind,
    Upstream,
    UpstreamError,
    now_iso,
)

logger = logging.getLogger("mcp_hooks.proxy")

STATUS_URI = "hooks://proxy/status"
STARTUP_WAIT = 10.0  # seconds the proxy waits for its upstreams before it starts serving
RESOURCE_NOT_FOUND = -32002
_SESSION_KEY = "mcp_hooks.proxy.session"
_RESULT_KEYS = ("content", "structuredContent", "isError", "_meta")
_FAST_PARAMS = frozenset(("name", "arguments", "_meta"))
_STRUCTURED_SINCE = "2025-06-18"  # the first handshake version with structuredContent


@dataclass(frozen=True)
class ProxySettings:
    """How the proxy treats its upstreams.

    Attributes:
        prefix_all: prefix every tool and prompt ``<server>__``, not only colliding ones.
        timeout: seconds an upstream request may take (a server's own ``timeout`` wins).
        startup_timeout: seconds an upstream may take to start and list what it has.
        startup_wait: seconds to wait for the upstreams before serving; slower ones join
            later with a list-changed notification.
    """

    prefix_all: bool = False
    timeout: float = DEFAULT_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    startup_wait: float = STARTUP_WAIT


# -- downstream sessions -------------------------------------------------------------------


@dataclass
class DownstreamSession:
    """One connected client, from ``session_start`` to ``session_end``."""

    id: str
    transport: str
    client: str | None = None
    client_version: str | None = None
    steps: int = 0
    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=now_iso)
    start_fired: anyio.Event = field(default_factory=anyio.Event)
    ended: bool = False


class _SessionMiddleware:
    """Opens a downstream session at a connection's first request (its ``initialize`` on the
    handshake era) and closes it when the connection closes."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        self.proxy.session_of(ctx)
        return await call_next(ctx)


class _ProxyServer(Server[Any]):
    """The proxy's low-level server: says it sends list-changed notifications on every era."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(
                prompts_changed=True, resources_changed=True, tools_changed=True),
            experimental_capabilities, extensions,
        )


# -- results (wire form: the JSON of a CallToolResult) --------------------------------------


def error_result(text: str) -> dict[str, Any]:
    """An ``isError`` tool result with one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def clean_result(raw: dict[str, Any]) -> dict[str, Any]:
    """An upstream's tool result as the proxy passes it on: the result fields only, without
    the upstream's protocol stamps in ``_meta`` (the proxy stamps its own)."""
    result = {key: raw[key] for key in _RESULT_KEYS if key in raw}
    result.setdefault("content", [])
    meta = result.get("_meta")
    if isinstance(meta, dict) and types.SERVER_INFO_META_KEY in meta:
        rest = {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY}
        if rest:
            result["_meta"] = rest
        else:
            del result["_meta"]
    return result


def tool_output(result: dict[str, Any]) -> dict[str, Any]:
    """The ``tool_output`` hooks see: the result's content blocks and structured content."""
    return {"content": result.get("content", []),
            "structuredContent": result.get("structuredContent")}


def error_text(result: dict[str, Any]) -> str:
    """The text of an ``isError`` result, for ``after_tool_failure``'s ``error``."""
    texts = [block.get("text") for block in result.get("content", [])
             if isinstance(block, dict) and block.get("type") == "text"]
    if texts:
        return "\n".join(str(t) for t in texts)
    return json.dumps(tool_output(result), ensure_ascii=False, default=str)


_BLOCKS: Any = None


def _content_blocks(value: Any) -> list[dict[str, Any]]:
    """``value`` checked as a list of MCP content blocks, in wire form."""
    global _BLOCKS
    if _BLOCKS is None:
        from pydantic import TypeAdapter

        _BLOCKS = TypeAdapter(list[types.ContentBlock])
    blocks = _BLOCKS.validate_python(value, by_alias=True)
    dumped: list[dict[str, Any]] = _BLOCKS.dump_python(blocks, mode="json", by_alias=True,
                                                       exclude_none=True)
    return dumped


def _text(value: Any) -> dict[str, Any]:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return {"type": "text", "text": text}


def apply_modified_output(result: dict[str, Any], modified: Any) -> dict[str, Any]:
    """The result after an ``after_tool`` hook's ``modified_output``.

    - an object with ``content`` and/or ``structuredContent`` (the shape of ``tool_output``)
      replaces those parts: ``content`` must be MCP content blocks (else it is kept as JSON
      text), and a missing ``content`` becomes the JSON text of the structured content;
    - a string replaces the content with that text and drops the structured content;
    - any other JSON value becomes the text content (as JSON), and the structured content
      when it is an object.

    A tool with an ``outputSchema`` needs ``structuredContent`` that fits it, or the client
    will reject the result.
    """
    out: dict[str, Any] = {key: result[key] for key in ("isError", "_meta") if key in result}
    if isinstance(modified, dict) and ("content" in modified or "structuredContent" in modified):
        structured = modified.get("structuredContent")
        if "content" in modified:
            try:
                out["content"] = _content_blocks(modified["content"])
            except ValueError:
                out["content"] = [_text(modified["content"])]
        else:
            out["content"] = [_text(structured)]
        if isinstance(structured, dict):
            out["structuredContent"] = structured
    elif isinstance(modified, str):
        out["content"] = [_text(modified)]
    else:
        out["content"] = [_text(modified)]
        if isinstance(modified, dict):
            out["structuredContent"] = modified
    return out


def _deny_text(outcome: Outcome, tool: str, *, ran: bool) -> str:
    what = "its result was withheld" if ran else "the tool was not run"
    who = "mcp-hooks" if outcome.blocked_by == FAULT_SOURCE else f"hook {outcome.blocked_by}"
    return f"Blocked by {who}: {outcome.reason}\n({tool}: {what})"


# -- the proxy -----------------------------------------------------------------------------


class Proxy:
    """An MCP server in front of upstream MCP servers, gating every tool call with hooks.

    Use as an async context manager inside an entered ``Engine``; ``server`` is the MCP
    server to serve, or to connect a ``Client`` to in memory::

        async with Engine(registry, log=log) as engine, Proxy(specs, engine) as proxy:
            await proxy.start()
            await serve(proxy.server, options)

    Args:
        specs: the upstream servers.
        engine: fires the hooks (entered).
        settings: prefixes and timeouts.
        log: the event log, for upstream state changes.
        transport: how the proxy itself is served (``stdio``, ``http``, ``sse``), for the
            session events.
    """

    def __init__(
        self,
        specs: Sequence[UpstreamSpec],
        engine: Engine,
        settings: ProxySettings | None = None,
        *,
        log: EventLog | None = None,
        transport: str = "stdio",
    ) -> None:
        self.settings = settings or ProxySettings()
        self.engine = engine
        self.transport = transport
        self.upstreams = [
            Upstream(spec, timeout=self.settings.timeout,
                     startup_timeout=self.settings.startup_timeout,
                     on_change=self._upstream_changed, log=log)
            for spec in specs
        ]
        self.sessions: dict[str, DownstreamSession] = {}
        self.shutdown_reason: str | None = None
        self._shared: DownstreamSession | None = None
        self._connections: dict[int, Any] = {}
        self._modern_seen = False
        self._bus = InMemorySubscriptionBus()
        self._tools: list[types.Tool] = []
        self._tool_routes: dict[str, tuple[Upstream, str]] = {}
        self._prompts: list[types.Prompt] = []
        self._prompt_routes: dict[str, tuple[Upstream, str]] = {}
        self._resources: list[types.Resource] = []
        self._resource_routes: dict[str, Upstream] = {}
        self._templates: list[types.ResourceTemplate] = []
        self._template_routes: list[tuple[UriTemplate | None, str, Upstream]] = []
        self._hidden: set[str] = set()
        self._up_tg: TaskGroup | None = None
        self._ev_tg: TaskGroup | None = None
        self._stamp: dict[str, Any] | None = None
        from mcp_hooks import __version__

        self.server = _ProxyServer(
            "mcp-hooks-proxy",
            version=__version__,
            title="mcp-hooks gating proxy",
            instructions=self._instructions(),
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_completion=self._complete,
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        self.server.middleware.append(_SessionMiddleware(self))

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> Proxy:
        # Session events outside, upstream connections inside: cancelling the upstreams at
        # the end must not cancel the session_end hooks that run meanwhile.
        ev_tg = anyio.create_task_group()
        await ev_tg.__aenter__()
        up_tg = anyio.create_task_group()
        await up_tg.__aenter__()
        self._up_tg, self._ev_tg = up_tg, ev_tg
        for upstream in self.upstreams:
            upstream.bind(up_tg)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        reason = self.shutdown_reason or ("error" if exc is not None else "proxy_shutdown")
        for session in list(self.sessions.values()):
            self.close_session(session, reason)
        ev_tg, up_tg = self._ev_tg, self._up_tg
        assert ev_tg is not None and up_tg is not None
        # Upstreams stop while the session_end hooks run: hosts give a proxy about 2 s to
        # exit once they close its stdin.
        for upstream in self.upstreams:
            upstream.stop()
        up_tg.cancel_scope.cancel()
        try:
            await up_tg.__aexit__(None, None, None)
        finally:
            self._up_tg = None
            try:
                await ev_tg.__aexit__(None, None, None)
            finally:
                self._ev_tg = None
        return None

    async def start(self, wait: float | None = None) -> None:
        """Start every upstream and wait (at most ``wait`` s) until each is up or has failed."""
        attempts = [upstream.start() for upstream in self.upstreams]
        with anyio.move_on_after(self.settings.startup_wait if wait is None else wait):
            for attempt in attempts:
                await attempt.wait()
        self.server.instructions = self._instructions()
        for upstream in self.upstreams:
            if upstream.state == "starting":
                logger.warning("upstream %s is still starting; its tools join when it is up",
                               upstream.name)

    def _instructions(self) -> str:
        names = ", ".join(u.name for u in self.upstreams) or "none"
        text = (
            f"This server forwards the tools, resources and prompts of the MCP servers "
            f"{names}. Every tool call passes through the user's HOOK.md hooks first: a call "
            "a hook refuses returns an error that says why; do not retry it unchanged."
        )
        for upstream in self.upstreams:
            if upstream.instructions:
                text += f"\n\n{upstream.name}: {upstream.instructions.strip()}"
        return text

    # -- aggregation ----------------------------------------------------------------------

    def _aggregate(
        self, kind: str, items: list[tuple[Upstream, Sequence[Any]]]
    ) -> tuple[list[Any], dict[str, tuple[Upstream, str]]]:
        counts = Counter(item.name for _, group in items for item in group)
        out: list[Any] = []
        routes: dict[str, tuple[Upstream, str]] = {}
        for upstream, group in items:
            for item in group:
                prefixed = self.settings.prefix_all or counts[item.name] > 1
                exposed = upstream.spec.prefix + item.name if prefixed else item.name
                if exposed in routes:
                    self._warn_hidden(f"{kind} {exposed!r} of {upstream.name} is hidden by the "
                                      f"one of {routes[exposed][0].name}")
                    continue
                routes[exposed] = (upstream, item.name)
                out.append(item if exposed == item.name else
                           item.model_copy(update={"name": exposed}))
        return out, routes

    def _warn_hidden(self, what: str) -> None:
        if what not in self._hidden:
            self._hidden.add(what)
            logger.warning("%s", what)

    def rebuild(self) -> None:
        """Recompute what the proxy serves from its upstreams' listings."""
        self._tools, self._tool_routes = self._aggregate(
            "tool", [(u, u.listing.tools) for u in self.upstreams])
        self._prompts, self._prompt_routes = self._aggregate(
            "prompt", [(u, u.listing.prompts) for u in self.upstreams])
        resources: list[types.Resource] = []
        routes: dict[str, Upstream] = {}
        templates: list[types.ResourceTemplate] = []
        template_routes: list[tuple[UriTemplate | None, str, Upstream]] = []
        for upstream in self.upstreams:
            for resource in upstream.listing.resources:
                if resource.uri in routes or resource.uri == STATUS_URI:
                    self._warn_hidden(f"resource {resource.uri} of {upstream.name} is hidden "
                                      "by an earlier one")
                    continue
                routes[resource.uri] = upstream
                resources.append(resource)
            for template in upstream.listing.templates:
                try:
                    parsed: UriTemplate | None = UriTemplate.parse(template.uri_template)
                except InvalidUriTemplate:
                    parsed = None
                template_routes.append((parsed, template.uri_template, upstream))
                templates.append(template)
        self._resources, self._resource_routes = resources, routes
        self._templates, self._template_routes = templates, template_routes

    async def _upstream_changed(self, upstream: Upstream, kinds: set[Kind]) -> None:
        self.rebuild()
        await self.notify_changed(kinds)

    async def notify_changed(self, kinds: set[Kind]) -> None:
        """Tell every downstream client that can hear it that these lists changed."""
        events: dict[Kind, ServerEvent] = {
            "tools": ToolsListChanged(), "resources": ResourcesListChanged(),
            "prompts": PromptsListChanged(),
        }
        for kind in sorted(kinds):
            await self._bus.publish(events[kind])  # 2026-07-28 clients' listen streams
            for connection in list(self._connections.values()):  # handshake-era sessions
                if kind == "tools":
                    await connection.send_tool_list_changed()
                elif kind == "resources":
                    await connection.send_resource_list_changed()
                else:
                    await connection.send_prompt_list_changed()

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        route = self._tool_routes.get(name)
        if route is None:
            return None
        for tool in route[0].listing.tools:
            if tool.name == route[1]:
                return tool.input_schema
        return None

    def _kick_failed(self) -> None:
        """Retry, in the background, upstreams that never came up (once their backoff ran out);
        dead ones that listed tools start again on their next call."""
        now = time.monotonic()
        for upstream in self.upstreams:
            if upstream.state == "failed" and not upstream.listing.tools \
                    and upstream.next_attempt <= now:
                upstream.start()

    # -- sessions -------------------------------------------------------------------------

    def session_of(self, ctx: ServerRequestContext[Any, Any]) -> DownstreamSession:
        """The downstream session a request belongs to, opened on first sight.

        A handshake-era connection (stdio, SSE, stateful streamable HTTP) is one session from
        its ``initialize`` until it closes. Requests of the 2026-07-28 era carry no session:
        they share one, from the first such request until the proxy stops.
        """
        # The SDK keeps the per-connection object private to the session; it is the only
        # handle on a connection's state and on its closing.
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            session: DownstreamSession | None = connection.state.get(_SESSION_KEY)
            if session is None:
                session = self._open_session(connection.session_id, _client_of(ctx))
                connection.state[_SESSION_KEY] = session
                key = id(connection)
                self._connections[key] = connection

                def closed(session: DownstreamSession = session) -> None:
                    self._connections.pop(key, None)
                    self.close_session(session, self.shutdown_reason or "client_disconnected")

                connection.exit_stack.callback(closed)
            return session
        self._modern_seen = True
        return self._shared_session(_client_of(ctx))

    def _shared_session(self, client: types.Implementation | None) -> DownstreamSession:
        if self._shared is None or self._shared.ended:
            self._shared = self._open_session(None, client)
        return self._shared

    def _open_session(
        self, session_id: str | None, client: types.Implementation | None
    ) -> DownstreamSession:
        session = DownstreamSession(
            id=session_id or f"proxy-{uuid.uuid4().hex[:16]}",
            transport=self.transport,
            client=client.name if client else None,
            client_version=client.version if client else None,
        )
        self.sessions[session.id] = session
        if self._ev_tg is not None:
            self._ev_tg.start_soon(self._fire_session_start, session)
        else:
            session.start_fired.set()
        return session

    def close_session(self, session: DownstreamSession, reason: str) -> None:
        """End a session: ``session_end`` fires in the background with ``reason``."""
        if session.ended:
            return
        session.ended = True
        self.sessions.pop(session.id, None)
        if self._ev_tg is not None:
            self._ev_tg.start_soon(self._fire_session_end, session, reason)

    async def _fire_session_start(self, session: DownstreamSession) -> None:
        try:
            await self._fire(Event.create(
                event_type="session_start", session_id=session.id,
                payload={"args": {
                    "source": "mcp-hooks proxy", "transport": session.transport,
                    "client": session.client, "client_version": session.client_version,
                    "upstreams": [u.name for u in self.upstreams],
                }},
            ))
        finally:
            session.start_fired.set()

    async def _fire_session_end(self, session: DownstreamSession, reason: str) -> None:
        with anyio.move_on_after(5):
            await session.start_fired.wait()
        await self._fire(Event.create(
            event_type="session_end", session_id=session.id,
            payload={
                "duration_seconds": round(time.monotonic() - session.started, 3),
                "total_steps": session.steps,
                "exit_reason": reason,
            },
        ))

    async def _fire(self, event: Event) -> Outcome:
        """Fire an event; a failure of ours is a fault (``fault_outcome`` under the engine's
        policy: a deny for an event that can block), never a crash of the proxy."""
        try:
            return await self.engine.fire(event)
        except Exception as exc:  # an event that cannot fire never takes the proxy down
            logger.error("cannot fire %s: %s", event.event_type, exc)
            return self._fault(event.event_type, exc)

    def _fault(self, event: str, exc: BaseException) -> Outcome:
        return fault_outcome(event, f"the proxy failed: {type(exc).__name__}: "
                             f"{cap_text(str(exc), 300)}", on_fault=self.engine.on_fault)

    # -- the gate -------------------------------------------------------------------------

    async def call_tool(
        self,
        session: DownstreamSession,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressFnT | None = None,
    ) -> dict[str, Any]:
        """One ``tools/call`` through the hooks; the result in wire form.

        Raises:
            MCPError: the upstream answered with a protocol error (after
                ``after_tool_failure``), passed on as it is.
        """
        session.steps += 1
        route = self._tool_routes.get(name)
        if route is None:
            return error_result(f"Unknown tool {name!r}: no upstream server of this proxy has "
                                "it (see tools/list and the resource hooks://proxy/status).")
        upstream, tool = route
        fields: dict[str, Any] = {
            "session_id": session.id, "tool_name": name,
            "tool_use_id": f"proxy-{uuid.uuid4().hex}",
            "payload": {"mcp_server": upstream.name, "mcp_tool": tool},
        }
        try:
            before = await self.engine.fire(Event.create(
                event_type="before_tool", tool_input=arguments, **fields))
        except Exception as exc:
            # The gate itself is broken: fail closed rather than run the tool unchecked.
            logger.exception("the before_tool gate failed on %s", name)
            before = self._fault("before_tool", exc)
        if before.denied:
            return error_result(_deny_text(before, name, ran=False))
        if before.modified_input is not None:
            arguments = before.modified_input

        try:
            result = clean_result(await upstream.call_tool(tool, arguments, progress))
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._fire(Event.create(
                    event_type="after_tool_failure", tool_input=arguments,
                    error="the client cancelled the call", **fields))
            raise
        except UpstreamError as exc:
            await self._fire(Event.create(event_type="after_tool_failure", tool_input=arguments,
                                          error=str(exc), **fields))
            return error_result(str(exc))
        except MCPError as exc:
            await self._fire(Event.create(
                event_type="after_tool_failure", tool_input=arguments,
                error=f"MCP error {exc.error.code}: {exc.error.message}", **fields))
            raise
        if result.get("isError"):
            await self._fire(Event.create(
                event_type="after_tool_failure", tool_input=arguments, error=error_text(result),
                tool_output=tool_output(result), **fields))
            return result

        try:
            after = await self._fire(Event.create(
                event_type="after_tool", tool_input=arguments, tool_output=tool_output(result),
                **fields))
        except Exception as exc:  # the upstream's result cannot be made an event
            after = self._fault("after_tool", exc)
        contexts = list(before.additional_context)
        if after.denied:
            return error_result(_deny_text(after, name, ran=True))
        if after.modified_output is not None:
            result = apply_modified_output(result, after.modified_output)
        contexts += after.additional_context
        if contexts:
            result["content"] = [*result["content"],
                                 {"type": "text", "text": "\n\n".join(contexts)}]
        return result

    def fast_request(self, message: dict[str, Any]) -> Awaitable[dict[str, Any]] | None:
        """The stdio fast path: a ``tools/call`` request the proxy answers itself (as its
        JSON-RPC response), or None to leave the message to the SDK server.

        Taken only for plain calls (no progress token, no 2026 input rounds) to a known tool,
        on a connection whose era the SDK server has already settled: a handshake-era
        connection after ``initialize`` (at a version with structured content), or a
        2026-07-28 request with its envelope, after the SDK has served one.
        """
        rid = message.get("id")
        if message.get("method") != "tools/call" or isinstance(rid, bool) \
                or not isinstance(rid, (str, int)):
            return None
        params = message.get("params")
        if not isinstance(params, dict) or not _FAST_PARAMS.issuperset(params):
            return None
        name, arguments = params.get("name"), params.get("arguments") or {}
        meta = params.get("_meta") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict) \
                or not isinstance(meta, dict) or "progressToken" in meta \
                or name not in self._tool_routes:
            return None
        version = meta.get(types.PROTOCOL_VERSION_META_KEY)
        if version is None:
            if len(self._connections) != 1:
                return None
            connection = next(iter(self._connections.values()))
            session: DownstreamSession | None = connection.state.get(_SESSION_KEY)
            if session is None or not connection.initialize_accepted \
                    or connection.protocol_version < _STRUCTURED_SINCE:
                return None
            modern = False
        elif version in MODERN_PROTOCOL_VERSIONS and self._modern_seen \
                and types.CLIENT_CAPABILITIES_META_KEY in meta and not self._connections:
            session, modern = self._shared_session(None), True
        else:
            return None
        return self._answer(rid, session, name, dict(arguments), modern)

    async def _answer(
        self, rid: Any, session: DownstreamSession, name: str, arguments: dict[str, Any],
        modern: bool,
    ) -> dict[str, Any]:
        try:
            result = await self.call_tool(session, name, arguments)
        except MCPError as exc:
            return {"jsonrpc": "2.0", "id": rid,
                    "error": exc.error.model_dump(mode="json", exclude_none=True)}
        if modern:
            if self._stamp is None:
                self._stamp = self.server.server_info_stamp
            result["resultType"] = "complete"
            meta = result.get("_meta")
            result["_meta"] = {**(meta if isinstance(meta, dict) else {}),
                               types.SERVER_INFO_META_KEY: self._stamp}
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    # -- tools ----------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._kick_failed()
        return types.ListToolsResult(tools=self._tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await self.call_tool(self.session_of(ctx), params.name,
                                      dict(params.arguments or {}), _progress_forwarder(ctx))
        return types.CallToolResult.model_validate(result, by_name=False)

    # -- resources ------------------------------------------------------------------------

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        self._kick_failed()
        status = types.Resource(
            uri=STATUS_URI, name="proxy-status", title="mcp-hooks proxy status",
            description="Each upstream server's state, last error, restarts and tools.",
            mime_type="application/json",
        )
        return types.ListResourcesResult(resources=[*self._resources, status])

    async def _list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=self._templates)

    def _resource_owner(self, uri: str) -> Upstream | None:
        owner = self._resource_routes.get(uri)
        if owner is not None:
            return owner
        for template, _, upstream in self._template_routes:
            if template is not None and template.match(uri) is not None:
                return upstream
        able = [u for u in self.upstreams
                if u.capabilities is not None and u.capabilities.resources is not None]
        return able[0] if len(able) == 1 else None

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri == STATUS_URI:
            return types.ReadResourceResult(contents=[types.TextResourceContents(
                uri=STATUS_URI, mime_type="application/json",
                text=json.dumps(self.status(), indent=2),
            )])
        upstream = self._resource_owner(uri)
        if upstream is None:
            raise MCPError(RESOURCE_NOT_FOUND, f"Unknown resource {uri}: no upstream server "
                           "of this proxy lists it or a template that matches it")
        try:
            result = await upstream.request(f"resources/read {uri}",
                                            lambda client: client.read_resource(uri))
        except UpstreamError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        return result.model_copy(update={"meta": _strip_stamp(result.meta)})

    # -- prompts and completion -----------------------------------------------------------

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        self._kick_failed()
        return types.ListPromptsResult(prompts=self._prompts)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        route = self._prompt_routes.get(params.name)
        if route is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt {params.name!r}")
        upstream, prompt = route
        arguments = params.arguments
        try:
            result = await upstream.request(
                f"prompts/get {prompt!r}", lambda client: client.get_prompt(prompt, arguments))
        except UpstreamError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        return result.model_copy(update={"meta": _strip_stamp(result.meta)})

    async def _complete(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref = params.ref
        upstream: Upstream | None = None
        if isinstance(ref, types.PromptReference):
            route = self._prompt_routes.get(ref.name)
            if route is not None:
                upstream = route[0]
                ref = ref.model_copy(update={"name": route[1]})
        else:
            upstream = next((u for _, text, u in self._template_routes if text == ref.uri), None)
        empty = types.CompleteResult(completion=types.Completion(values=[]))
        if upstream is None or upstream.capabilities is None \
                or upstream.capabilities.completions is None:
            return empty
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context else None
        target = ref
        try:
            return await upstream.request(
                "completion/complete", lambda client: client.complete(target, argument, context))
        except UpstreamError:
            return empty

    # -- status ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """What ``hooks://proxy/status`` shows."""
        registry = self.engine.registry
        return {
            "proxy": {
                "transport": self.transport,
                "prefix_all": self.settings.prefix_all,
                "timeout_seconds": self.settings.timeout,
                "startup_timeout_seconds": self.settings.startup_timeout,
                "tools": len(self._tools),
                "hooks_user_dir": str(registry.user_dir),
                "project_dir": str(registry.project_dir) if registry.project_dir else None,
            },
            "upstreams": [u.status() for u in self.upstreams],
            "sessions": [
                {"id": s.id, "client": s.client, "started_at": s.started_at, "steps": s.steps}
                for s in self.sessions.values()
            ],
        }


def _strip_stamp(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    if not meta or types.SERVER_INFO_META_KEY not in meta:
        return meta
    return {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY} or None


def _client_of(ctx: ServerRequestContext[Any, Any]) -> types.Implementation | None:
    params = ctx.session.client_params
    if params is not None:
        return params.client_info
    if ctx.method == "initialize" and ctx.params:
        info = ctx.params.get("clientInfo")
        if isinstance(info, dict):
            return types.Implementation(name=str(info.get("name", "")),
                                        version=str(info.get("version", "")))
    meta = ctx.params.get("_meta") if ctx.params else None
    if isinstance(meta, dict):
        info = meta.get(types.CLIENT_INFO_META_KEY)
        if isinstance(info, dict):
            return types.Implementation(name=str(info.get("name", "")),
                                        version=str(info.get("version", "")))
    return None


def _progress_forwarder(ctx: ServerRequestContext[Any, Any]) -> ProgressFnT | None:
    """Pass the upstream's progress on, when the client asked for progress."""
    meta = ctx.meta
    if not meta or meta.get("progress_token") is None:
        return None
    session = ctx.session

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        await session.report_progress(progress, total, message)

    return forward


# -- the command ---------------------------------------------------------------------------


async def run_proxy(
    specs: Sequence[UpstreamSpec],
    engine: Engine,
    settings: ProxySettings,
    serve_options: Any,
    *,
    log: EventLog | None = None,
) -> None:
    """Serve the proxy until the client goes (stdio) or the process is told to stop.

    Args:
        specs: the upstream servers.
        engine: the entered engine.
        settings: prefixes and timeouts.
        serve_options: a ``mcp_hooks.transport.ServeOptions``.
        log: the event log, for upstream state changes.
    """
    import signal

    from mcp_hooks import transport
    from mcp_hooks.proxy.stdio import is_pipe_like, stdio_streams

    shutdown = anyio.Event()
    async with anyio.create_task_group() as outer:
        async def on_signal(serving: anyio.CancelScope) -> None:
            # Lives until the proxy is done, so a SIGTERM during the shutdown (a host that
            # lost patience) cannot kill the proxy before it has stopped its upstreams.
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    if proxy.shutdown_reason is None:
                        proxy.shutdown_reason = "proxy_shutdown"
                    shutdown.set()
                    if serve_options.transport == "stdio":
                        serving.cancel()

        async with Proxy(specs, engine, settings, log=log,
                         transport=serve_options.transport) as proxy:
            with anyio.CancelScope() as serving:
                outer.start_soon(on_signal, serving)
                await proxy.start()
                if serve_options.transport == "stdio" and sys.platform != "win32" \
                        and is_pipe_like(0) and is_pipe_like(1):
                    server = proxy.server
                    async with stdio_streams(proxy.fast_request,
                                             replace_lone_surrogates=True) as (read, write):
                        await server.run(read, write, server.create_initialization_options())
                else:
                    await transport.serve(proxy.server, serve_options, shutdown=shutdown)
            if proxy.shutdown_reason is None and serve_options.transport == "stdio":
                proxy.shutdown_reason = "client_disconnected"
        outer.cancel_scope.cancel()


def proxy_command(args: argparse.Namespace) -> int:
    """``mcp-hooks proxy``: serve the upstreams of ``--config`` / ``--upstream``, gated."""
    from mcp_hooks import options, transport

    specs = collect_upstreams(args.config, args.upstream or [])
    for option in ("timeout", "startup_timeout"):
        value = getattr(args, option, None)
        if value is not None and not value > 0:
            raise ProxyConfigError(f"--{option.replace('_', '-')} must be a positive number "
                                   f"of seconds, not {value:g}")
    serve_options = transport.options_from_args(args)
    serve_options.check()
    transport.configure_logging(serve_options.log_level)
    settings = ProxySettings(
        prefix_all=bool(args.prefix),
        timeout=float(getattr(args, "timeout", None) or DEFAULT_TIMEOUT),
        startup_timeout=float(getattr(args, "startup_timeout", None) or DEFAULT_STARTUP_TIMEOUT),
    )
    registry = options.registry(args)  # with --trust-project-hooks
    log = options.event_log(args)
    # No hook may read the proxy's token or an upstream's credentials from its environment.
    secrets = [*([serve_options.token] if serve_options.token else []),
               *upstream_secrets(specs)]

    async def main() -> None:
        async with Engine(registry, log=log, stop_block_cap=options.stop_block_cap(args),
                          on_fault=options.on_fault(args), secrets=secrets) as engine:
            await run_proxy(specs, engine, settings, serve_options, log=log)

    anyio.run(main)
    return 0
