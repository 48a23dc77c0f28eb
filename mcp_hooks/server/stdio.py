"""The downstream stdio transport: this process's stdin and stdout served by the event loop.

The SDK's stdio server reads and writes through worker threads (a thread hop for every line
in and two for every line out). The proxy sits on the path of every tool call, so it reads
and writes its pipes on the event loop instead, and lets a fast path take eligible
``tools/call`` requests straight off the wire (``FastPath``): they are parsed once with
``json`` and answered by the proxy itself, while everything else (the handshake, listings,
resources, prompts, anything unusual) goes to the SDK's low-level server as before. Lines are
framed, parsed and written by ``wire``, the codec the upstream channel uses too.

Used only when stdin and stdout are pipes or sockets (how hosts start MCP servers); from a
terminal the SDK's transport is used. ``mcp-hooks serve`` uses it too (without a fast path).
The proxy switches back to the SDK's ``stdio_server`` with ``MCP_HOOKS_PROXY_STDIO=sdk``
(``ProxySettings.fast_stdio``); ``bench/bench_proxy.py`` compares the two. ``stdio_transport``
chooses between them, for ``serve`` and the proxy alike.

Both write to the stdout the door owns (``ownstdout.owned_stdout``: the command line claims it
when ``serve``/``proxy`` start on stdio, before anything else can print; a transport opened
outside it claims it itself): fd 1 and ``sys.stdout`` point at stderr while serving, so a
module, an oracle or a library that prints never lands inside the JSON-RPC stream.

Odd input never stops it, and every request gets an answer: a line that is not JSON, JSON
nested deeper than Python's parser goes (``RecursionError``), or a message that is not
JSON-RPC is answered with a JSON-RPC error carrying the request's ``id`` when one can be read
from the line (``wire.message_id``), else ``id: null``. Lone surrogates (``"\\udcff"``: valid
JSON, not valid UTF-8) are read as they are and written back as escapes; with
``replace_lone_surrogates`` (the proxy) each becomes U+FFFD as it is read, so the hooks gate
exactly what a strict upstream can receive (an SDK server drops a line holding one, unanswered).
"""

from __future__ import annotations

import asyncio
import fcntl
import inspect
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from mcp_hooks.ownstdout import owned_stdout, text_stream
from mcp_hooks.server import wire
from mcp_hooks.server.sdk_compat import TransportStreams

logger = logging.getLogger(__name__)

FastPath = Callable[[dict[str, Any]], Awaitable[dict[str, Any]] | None]
"""Takes a parsed request; returns an awaitable of its whole JSON-RPC response when the proxy
answers it itself, or None to leave it to the SDK server."""


def is_pipe_like(fd: int) -> bool:
    """Whether ``fd`` is a pipe or a socket (not a terminal or a file)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _first_error(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deep"
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with suppress(Exception):
            first = errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "message"
            return f"{where}: {first.get('msg', 'invalid')}"
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _encode(session_message: SessionMessage) -> bytes:
    """A message from the SDK server as one line, whatever it holds: one that cannot be
    written becomes an error answer to the same request."""
    message = session_message.message
    try:
        return wire.encode_model(message)
    except (RecursionError, ValueError):
        rid = getattr(message, "id", None)
        return wire.encode(wire.error_response(
            rid if isinstance(rid, (str, int)) else None, types.INTERNAL_ERROR,
            "the answer to this request could not be encoded as JSON"))


@asynccontextmanager
async def stdio_transport(
    fast: FastPath | None = None, *, replace_lone_surrogates: bool = False,
    event_loop: bool = True,
) -> AsyncIterator[TransportStreams]:
    """This process's stdin and the stdout it owns as an MCP transport: ``stdio_streams``
    when ``event_loop`` and both are pipes or sockets, else the SDK's ``stdio_server``
    (writing to the owned stdout, not to fd 1).

    Args:
        fast: the proxy's fast path (``stdio_streams`` only).
        replace_lone_surrogates: as ``stdio_streams``.
        event_loop: False: always the SDK's transport (``MCP_HOOKS_*_STDIO=sdk``).
    """
    with owned_stdout() as out:
        if event_loop and sys.platform != "win32" and is_pipe_like(0) and _pipe_like(out):
            streams = stdio_streams(fast, replace_lone_surrogates=replace_lone_surrogates)
        else:
            streams = stdio_server(stdout=anyio.wrap_file(text_stream(out)))
        async with streams as pair:
            yield pair


def _pipe_like(stream: Any) -> bool:
    try:
        return is_pipe_like(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False


@asynccontextmanager
async def stdio_streams(
    fast: FastPath | None = None, *, replace_lone_surrogates: bool = False
) -> AsyncIterator[TransportStreams]:
    """Serve MCP on this process's stdin and the stdout it owns, without threads.

    While serving, fd 0 reads the null device (restored on exit) and fd 1 writes to stderr
    (``owned_stdout``), so nothing stray (a print, a child that inherits them) reaches the
    wire.

    Args:
        fast: the proxy's fast path for requests it answers itself, if any.
        replace_lone_surrogates: read each lone surrogate escape as U+FFFD.

    Yields:
        The read and write streams for the SDK server (``Server.run``).
    """
    with owned_stdout() as out:
        async with _streams(out.fileno(), fast, replace_lone_surrogates) as pair:
            yield pair


@asynccontextmanager
async def _streams(
    wire_out: int, fast: FastPath | None, replace_lone_surrogates: bool
) -> AsyncIterator[TransportStreams]:
    loop = asyncio.get_running_loop()
    in_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    out_fd = fcntl.fcntl(wire_out, fcntl.F_DUPFD_CLOEXEC, 3)
    saved_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    reader = asyncio.StreamReader(limit=wire.LINE_LIMIT, loop=loop)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(in_fd, "rb", 0))
    write_transport, write_protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop=loop), os.fdopen(out_fd, "wb", 0))
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    pipes = _Pipes(reader, writer, fast, replace_lone_surrogates)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pipes.read_lines, tg)
            tg.start_soon(pipes.write_lines)
            try:
                yield pipes.from_client, pipes.to_client
            finally:
                tg.cancel_scope.cancel()
    finally:
        read_transport.close()
        write_transport.close()
        os.dup2(saved_in, 0)
        os.close(saved_in)


class _Pipes:
    """The client's lines in (each to the fast path or the SDK server, or answered with its
    error) and the SDK server's messages out, over the two event-loop pipes of ``_streams``.

    Args:
        reader, writer: the duplicated stdin and the owned stdout, on the event loop.
        fast: the proxy's fast path, if any.
        replace_lone_surrogates: read each lone surrogate escape as U+FFFD.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 fast: FastPath | None, replace_lone_surrogates: bool) -> None:
        self.reader = reader
        self.writer = writer
        self.fast = fast
        self.replace_lone_surrogates = replace_lone_surrogates
        self.to_server, self.from_client = \
            anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.to_client, self.from_server = anyio.create_memory_object_stream[SessionMessage](0)
        # the fast path's requests being answered, by id (a cancellation finds its scope)
        self.in_flight: dict[Any, anyio.CancelScope] = {}

    async def reply(self, message: dict[str, Any]) -> None:
        with suppress(ConnectionError, OSError):
            await self.write(wire.encode_answer(message))

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def answer(self, rid: Any, scope: anyio.CancelScope,
                     response: Awaitable[dict[str, Any]]) -> None:
        with scope:
            try:
                message = await response
            except Exception:
                logger.exception("the proxy failed to answer request %r", rid)
                message = {"jsonrpc": "2.0", "id": rid, "error": {
                    "code": types.INTERNAL_ERROR, "message": "Internal error in mcp-hooks proxy"}}
            finally:
                self.in_flight.pop(rid, None)
            await self.reply(message)
        if scope.cancelled_caught and inspect.iscoroutine(response):
            response.close()  # cancelled before it ever ran: no "never awaited" warning

    def cancelled(self, message: dict[str, Any]) -> bool:
        params = message.get("params")
        rid = params.get("requestId") if isinstance(params, dict) else None
        scope = self.in_flight.get(rid) if isinstance(rid, (str, int)) else None
        if scope is None:
            return False
        scope.cancel()
        return True

    async def fast_answered(self, fast: FastPath, raw: dict[str, Any],
                            tg: anyio.abc.TaskGroup) -> bool:
        """Whether the fast path took the message: a cancellation it knows, or a request it
        answers (in its own task); else the SDK server gets it."""
        if raw.get("method") == "notifications/cancelled" and self.cancelled(raw):
            return True
        try:
            response = fast(raw)
        except Exception:
            logger.exception("the fast path failed; the SDK server answers")
            response = None
        if response is None:
            return False
        rid = raw.get("id")
        # Registered before the task starts, so a cancellation that follows
        # at once still finds it.
        scope = self.in_flight[rid] = anyio.CancelScope()
        tg.start_soon(self.answer, rid, scope, response)
        return True

    async def admitted(self, raw: Any, line: bytes) -> types.JSONRPCMessage | None:
        """The message as the SDK's model, or None: an invalid request answered with its
        error, or a message that is not JSON-RPC dropped (logged)."""
        if isinstance(raw, dict) and "id" in raw and "method" in raw and (
                isinstance(raw["id"], bool) or not isinstance(raw["id"], (str, int))):
            # it would pass as a notification and never be answered
            await self.reply(wire.error_response(None, types.INVALID_REQUEST, "Invalid request: "
                                            "the id must be a string or an integer"))
            return None
        try:
            return wire.to_model(raw)
        except (ValueError, RecursionError) as exc:
            if isinstance(raw, dict) and "method" in raw and "id" in raw:
                rid = raw["id"]
                await self.reply(wire.error_response(
                    rid if isinstance(rid, (str, int)) else None,
                    types.INVALID_REQUEST, f"Invalid request: {_first_error(exc)}"))
            else:
                logger.warning("dropped a message that is not JSON-RPC: %.200r", line)
            return None

    async def read_lines(self, tg: anyio.abc.TaskGroup) -> None:
        async with self.to_server:
            while True:
                line = await wire.read_line(self.reader, "stdin")
                if line is None:
                    return
                if not line.strip():
                    continue
                try:
                    raw = wire.decode(line)
                except (ValueError, RecursionError) as exc:
                    await self.reply(wire.unreadable(line, exc))
                    continue
                if self.replace_lone_surrogates and wire.has_lone_surrogate_escape(line):
                    raw = wire.without_lone_surrogates(raw)
                if (self.fast is not None and isinstance(raw, dict)
                        and await self.fast_answered(self.fast, raw, tg)):
                    continue
                message = await self.admitted(raw, line)
                if message is not None:
                    await self.to_server.send(SessionMessage(message))

    async def write_lines(self) -> None:
        async with self.from_server:
            async for session_message in self.from_server:
                try:
                    await self.write(_encode(session_message))
                except (ConnectionError, OSError):
                    return
