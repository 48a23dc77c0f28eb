"""The MCP server's four tools: ``fire_hook_event``, ``respond_to_signal``, ``list_hooks``,
``get_hook``, over a ``HookService`` (``hook_tools``); ``server.app`` serves them.

Each tool's arguments are described in ``prompts``. A hook's ask goes to the client
(``approval``): the form now, or a 2026-07-28 client's ``input_required`` round.

Bad requests (unknown event, malformed arguments, a hook name that is unknown or looks like a
path, a ``work_dir`` outside the roots: the service's ``ConfigError`` kinds) and hooks that cannot
be listed (``ServiceUnavailable``) are tool errors (``isError``) whose text says what is wrong;
a hook that crashes is an ``Outcome`` entry, never a server failure.

Fail closed: what the server cannot process although the request is well formed (more than
``MAX_PAYLOAD_BYTES`` of event data, nesting deeper than the engine reads, a hook folder that
cannot be loaded, any ``BaseException`` raised from below but a cancellation:
``guard.passes_through``; ``fire_hook_event`` is this door's one guard, the service and the
engine under it raise) is answered by
``outcome.fault_outcome`` under the service's ``on_fault`` policy: for an event that can block,
a deny whose reason says what broke (``blocked_by: "mcp-hooks"``), never a crash and never a
silent allow. The server keeps answering its other clients.

Signals: each outcome's ``signals`` (``signals.py``) are in the signal log beside the event
log; ``respond_to_signal`` records the agent's answer there (``signallog.respond``, the
service's state store's answer-once: an action of another intensity, an unknown or already
answered signal is a tool error saying so). A server
run with ``--no-log`` keeps no signal log, so its signals cannot be answered (a tool error).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import cached_property
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from mcp_hooks.errors import InvalidEventError, MCPHooksError
from mcp_hooks.guard import named, passes_through
from mcp_hooks.server import prompts
from mcp_hooks.server.approval import door_approver, input_required, take_round
from mcp_hooks.server.results import (
    HookDocument,
    HookListing,
    SignalResponse,
    document,
    listing,
    portable_schema,
    simplify_schema,
)
from mcp_hooks.service import (
    BadRequest,
    HookService,
    ServiceUnavailable,
    check_hook_name,
    find_hook,
    read_hook,
)
from mcp_hooks.spec import matching
from mcp_hooks.spec.events import canonical_event
from mcp_hooks.spec.outcome import Event, HookRun, Outcome
from mcp_hooks.spec.toolcall import answered, caller_tool
from mcp_hooks.spec.vocabulary import MCP_CLIENTS
from mcp_hooks.state.signallog import respond
from mcp_hooks.state.store import StateUnavailable, UnknownSignal

logger = logging.getLogger("mcp_hooks.server")

MAX_PAYLOAD_BYTES = 1 << 20  # JSON bytes of tool_input, tool_output, error, payload, context

FIRE = prompts.FIRE_ARGS
LIST = prompts.LIST_ARGS
GET = prompts.GET_ARGS
RESPOND = prompts.RESPOND_ARGS

_ToolFunction = Callable[..., Awaitable[Any]]


def hook_tools(service: HookService) -> list[Tool]:
    """The four tools over ``service``, with their titles, descriptions and annotations."""
    acting = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                             idempotent_hint=False, open_world_hint=False)
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    return [
        _Tool.from_function(
            _fire_tool(service), title=prompts.FIRE_TITLE,
            description=prompts.FIRE_DESCRIPTION, annotations=acting,
        ),
        _Tool.from_function(
            _respond_tool(service), title=prompts.RESPOND_TITLE,
            description=prompts.RESPOND_DESCRIPTION, annotations=acting,
        ),
        _Tool.from_function(_list_tool(service), title=prompts.LIST_TITLE,
                            description=prompts.LIST_DESCRIPTION, annotations=read_only),
        _Tool.from_function(_get_tool(service), title=prompts.GET_TITLE,
                            description=prompts.GET_DESCRIPTION, annotations=read_only),
    ]


def _fire_tool(service: HookService) -> _ToolFunction:
    """``fire_hook_event``: one event through the hooks; this door's one guard."""

    async def fire_hook_event(
        event_type: Annotated[str, Field(description=FIRE["event_type"])],
        ctx: Context[Any, Any],
        session_id: Annotated[str | None, Field(description=FIRE["session_id"])] = None,
        work_dir: Annotated[str | None, Field(description=FIRE["work_dir"])] = None,
        tool_name: Annotated[str | None, Field(description=FIRE["tool_name"])] = None,
        tool_input: Annotated[dict[str, Any] | None, Field(
            description=FIRE["tool_input"])] = None,
        tool_use_id: Annotated[str | None, Field(description=FIRE["tool_use_id"])] = None,
        tool_output: Annotated[Any, Field(description=FIRE["tool_output"])] = None,
        error: Annotated[Any, Field(description=FIRE["error"])] = None,
        payload: Annotated[dict[str, Any] | None, Field(description=FIRE["payload"])] = None,
        context: Annotated[dict[str, Any] | None, Field(description=FIRE["context"])] = None,
    ) -> Annotated[CallToolResult, Outcome] | InputRequiredResult:
        name = canonical_event(event_type)  # UnknownEventError: a tool error
        try:  # this door's one guard (``guard.py``): nothing under it catches for it
            fault = _unprocessable((tool_input, tool_output, error, payload, context))
            if fault is not None:
                return _fired(service.fault(name, fault))
            # one vocabulary: Bash -> Shell, file_path -> path (vocabulary.MCP_CLIENTS); the
            # caller's own name and input under payload.host, a rewrite back in its keys
            call = None if tool_name is None else caller_tool(MCP_CLIENTS, tool_name,
                                                              tool_input or {})
            if call is not None and call.host is not None:
                tool_name, tool_input = call.tool_name, call.tool_input
                payload = call.payload(payload)
            event = Event.create(
                event_type=event_type, session_id=session_id, work_dir=work_dir,
                tool_name=tool_name, tool_input=tool_input, tool_use_id=tool_use_id,
                tool_output=tool_output, error=error, payload=payload or {},
                context=context or {},
            )
            outcome = await _fire_asking(service, ctx, event)  # a person, if a hook asks
            if isinstance(outcome, InputRequiredResult):
                return outcome  # the approval form, as the 2026-07-28 client's round
            # a rewrite in the caller's keys; a tool event with no tool name, a warning
            return _fired(answered(name, outcome, call, service.on_fault, tool_name))
        except _MISTAKES:  # the caller's (a malformed field, a work_dir outside the roots)
            raise
        except BaseException as exc:  # ours, an oracle's SystemExit...: a fault, never a crash
            if passes_through(exc):  # the request was cancelled, or the server stops
                raise
            logger.error("fire_hook_event failed on a %s event", name, exc_info=exc)
            return _fired(service.fault(name, f"the server failed: {named(exc)}"))

    return fire_hook_event


def _respond_tool(service: HookService) -> _ToolFunction:
    """``respond_to_signal``: the agent's answer to a signal, recorded once."""

    async def respond_to_signal(
        signal_id: Annotated[str, Field(description=RESPOND["signal_id"])],
        action: Annotated[str, Field(description=RESPOND["action"])],
        details: Annotated[dict[str, Any] | None, Field(description=RESPOND["details"])] = None,
        session_id: Annotated[str | None, Field(description=RESPOND["session_id"])] = None,
    ) -> SignalResponse:
        if service.log is None:
            raise BadRequest("this server keeps no log (--no-log), so it has no signal to "
                             "answer; serve it with a log to answer signals")
        # the look-up reads the store: off the event loop, other clients go on
        try:
            line = await anyio.to_thread.run_sync(
                lambda: respond(service.store, signal_id, action, details,
                                session_id=session_id))
        except UnknownSignal:  # its text names the server's log file or store: not for them
            raise BadRequest(f"no signal {signal_id!r} is known to this server (never sent, "
                             "expired, or too old to be read); give the header.id of a signal "
                             "that fire_hook_event returned") from None
        except StateUnavailable:
            logger.exception("respond_to_signal: the state store cannot be used")
            raise ServiceUnavailable("the server cannot reach its state now; nothing was "
                                     "recorded: answer the signal again later") from None
        return SignalResponse(signal_id=signal_id, consumed_at=line["timestamp"],
                              action=action, intensity=line["intensity"],
                              source=line["source"], hook=line["hook"],
                              consumed=True, details=details)

    return respond_to_signal


def _list_tool(service: HookService) -> _ToolFunction:
    """``list_hooks``: the hooks of a project, by event and tool."""

    async def list_hooks(
        event_type: Annotated[str | None, Field(description=LIST["event_type"])] = None,
        tool_name: Annotated[str | None, Field(description=LIST["tool_name"])] = None,
        work_dir: Annotated[str | None, Field(description=LIST["work_dir"])] = None,
    ) -> HookListing:
        event = canonical_event(event_type) if event_type is not None else None
        if tool_name is not None:  # the name hooks see (Bash -> Shell)
            tool_name = caller_tool(MCP_CLIENTS, tool_name, {}).tool_name
        return listing(await service.registry_for(work_dir), event, tool_name)

    return list_hooks


def _get_tool(service: HookService) -> _ToolFunction:
    """``get_hook``: one hook's whole HOOK.md and its trust."""

    async def get_hook(
        name: Annotated[str, Field(description=GET["name"])],
        work_dir: Annotated[str | None, Field(description=GET["work_dir"])] = None,
    ) -> HookDocument:
        check_hook_name(name)
        registry = await service.registry_for(work_dir)
        hook = find_hook(registry, name)
        return document(registry, hook, read_hook(hook))

    return get_hook


# the caller's mistakes, answered as tool errors; any other exception is a fault of ours
_MISTAKES = (BadRequest, InvalidEventError)


def _unprocessable(values: Sequence[Any]) -> str | None:
    """Why event data the client sent is more than the server processes, or None.

    More than ``MAX_PAYLOAD_BYTES`` of JSON is well formed, but not something the server will
    hand on: a fault (a deny for an event that can block), with the fix in the reason. Data
    nested deeper than the engine reads is the engine's to judge (a fault only when a hook
    would have seen it); only its strings are counted here.
    """
    size = 0
    for value in values:
        if value is None:
            continue
        if matching.larger_than(value, MAX_PAYLOAD_BYTES - size):  # cheap, before encoding
            size = MAX_PAYLOAD_BYTES + 1
        elif matching.depth(value) <= matching.MAX_DEPTH:
            text = json.dumps(value, ensure_ascii=False, default=str)
            size += len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_PAYLOAD_BYTES:
            return (f"the event carries more than {MAX_PAYLOAD_BYTES} bytes (1 MiB) of JSON "
                    "data, the limit: send a summary or a file path instead of whole contents")
    return None


def _fired(outcome: Outcome) -> CallToolResult:
    """The tool result of an outcome: compact JSON text beside the structured copy (every
    byte is parsed by the client).

    Lone surrogates (valid in JSON, not in UTF-8; a hook's ``modified_input`` may hold one)
    cannot be written as UTF-8: the text then escapes them (``\\udcff``, ASCII JSON that
    round-trips) and the structured copy has U+FFFD in their place, so the reply can always
    be sent.
    """
    data = outcome.as_dict()
    text = outcome.to_json()
    try:
        text.encode()
    except UnicodeEncodeError:
        data = json.loads(text.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
        text = json.dumps(outcome.as_dict(), default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=data)


def _describe_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        got = err.get("input")
        kind = type(got).__name__ if got is not None else "null"
        if err["type"] == "missing":
            parts.append(f"{where}: required")
        else:
            parts.append(f"{where}: {err['msg'].lower()} (got {kind})")
    return "invalid arguments: " + "; ".join(parts)


class _Tool(Tool):
    """A tool whose argument errors read as one line naming the field, not a pydantic dump,
    whose errors of ours (``BadRequest``, ``ServiceUnavailable``, an unknown event) read as
    their message, and whose schemas are portable (``results.portable_schema``: what the MCP
    Inspector's ``--strict`` checks) and, for the output, simplified (clients validate every
    result against it)."""

    @classmethod
    def from_function(cls, *args: Any, **kwargs: Any) -> Tool:
        tool = super().from_function(*args, **kwargs)
        tool.parameters = portable_schema(tool.parameters)
        return tool

    @cached_property
    def output_schema(self) -> dict[str, Any] | None:
        schema = self.fn_metadata.output_schema
        return None if schema is None else simplify_schema(schema)

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_describe_validation(exc.__cause__)) from None
            if isinstance(exc.__cause__, MCPHooksError):  # ours: written for the caller
                raise ToolError(str(exc.__cause__)) from None
            raise


async def _fire_asking(service: HookService, ctx: Context[Any, Any], event: Event
                       ) -> Outcome | InputRequiredResult:
    """Fire with the client's way to ask a person (``approval``): the form now, or the
    ``input_required`` round of a 2026-07-28 client, whose retry's answer is stored first."""
    approve, deferral = door_approver(ctx.request_context)
    if ctx.request_state is not None:  # the retry of a round: its answer first
        params = ctx.request_context.session.client_params
        await take_round(service.store, ctx.request_state, ctx.input_responses,
                         params.client_info.name if params is not None else "")
    outcome = await service.fire(event, on_hook_done=_Progress(ctx, service, event),
                                 approve=approve)
    if deferral is not None and deferral.request is not None \
            and outcome.ask is not None and not outcome.denied:
        return input_required(deferral.request)
    return outcome


class _Progress:
    """Reports each finished sync hook to a client that asked for progress."""

    def __init__(self, ctx: Context[Any, Any], service: HookService, event: Event) -> None:
        self.ctx = ctx
        self.service = service
        self.event = event
        self.done = 0
        self.total: int | None = None

    async def __call__(self, run: HookRun) -> None:
        self.done += 1
        if self.total is None:
            try:
                registry = (await self.service.engine_for(self.event.work_dir)).registry
                selected = registry.select(canonical_event(self.event.event_type),
                                           self.event.tool_name, self.event.tool_input)
                self.total = max(self.done, sum(1 for h in selected if not h.is_async))
            except Exception:  # a progress count must never fail the event
                self.total = self.done
        message = f"{run.name}: {run.status} ({run.duration_ms:.0f} ms)"
        try:
            await self.ctx.report_progress(self.done, self.total, message)
        except Exception:  # a client gone away must not fail the event
            logger.debug("progress notification not sent", exc_info=True)
