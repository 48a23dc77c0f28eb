"""The stdio transport to an upstream server: spawn it, carry two conversations, stop it.

``stdio_upstream`` spawns a stdio MCP server in a session of its own and connects the SDK's
client session to it. Beside the session's traffic the pipe carries the proxy's raw
``tools/call`` requests (``RawChannel``): written and read with ``wire`` (the codec the
downstream transport uses too), they skip the SDK's per-message model validation on the
hot path. Lines from the server are parsed once: an answer to a raw request goes to its
caller, everything else to the SDK session.

Contracts:

- Ids: raw requests are numbered ``mcp-hooks-N`` (strings); the SDK numbers its own
  (integers), so an answer belongs to exactly one of them.
- The end: when the server's stdout ends, ``Run.closed`` is set and every waiting raw
  request fails with ``CONNECTION_CLOSED``; a caller that gives up sends
  ``notifications/cancelled``.
- Stopping: leaving the block closes stdin, waits ``STOP_GRACE``, then SIGTERM and, after
  another grace, SIGKILL to the server's whole process group.
- Odd lines: a line that is not JSON is logged and skipped; an answer nested too deep to
  parse fails its caller (its id is still read); a request the session cannot encode fails
  for its caller, with a reason, and is never sent.
- Stderr: a thread per run forwards it to ours, each line tagged, and keeps the last lines
  (``StderrTail``) for error messages, with the exit status (``Run.process``).

``MCP_HOOKS_PROXY_STDIO=sdk`` (``ProxySettings.fast_stdio``) connects with the SDK's
``stdio_client`` instead (no raw channel); ``bench/bench_proxy.py`` compares the two.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcp_hooks.proxy.config import UpstreamSpec
from mcp_hooks.server import wire
from mcp_hooks.server.sdk_compat import TransportStreams

logger = logging.getLogger("mcp_hooks.proxy")

# Seconds a server gets to exit after its stdin closes, then after SIGTERM (then SIGKILL).
# Short, because hosts give the proxy itself 2 s after closing its stdin before they kill it,
# and a killed proxy could not stop its upstreams.
STOP_GRACE = 0.5
_STDERR_LINES = 20
_RAW_ID_PREFIX = "mcp-hooks-"



class StderrTail:
    """Forwards a stdio upstream's stderr to ours, each line tagged with its name, and keeps
    the last lines for error messages. A thread per run reads the pipe until the server and
    everything it started have closed it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: deque[str] = deque(maxlen=_STDERR_LINES)
        self._eof = threading.Event()
        self._eof.set()

    def open(self) -> IO[str]:
        """A new pipe for the next run; the caller hands the write end to the process."""
        read_fd, write_fd = os.pipe()
        self.lines.clear()
        eof = self._eof = threading.Event()
        threading.Thread(
            target=self._pump, args=(read_fd, eof), daemon=True, name=f"stderr-{self.name}"
        ).start()
        return os.fdopen(write_fd, "w")

    def _pump(self, fd: int, eof: threading.Event) -> None:
        try:
            with os.fdopen(fd, "rb") as pipe:
                for raw in pipe:
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    self.lines.append(line)
                    with suppress(OSError, ValueError):
                        sys.stderr.write(f"[{self.name}] {line}\n")
                        sys.stderr.flush()
        finally:
            eof.set()

    async def settle(self, timeout: float = 0.5) -> None:
        """Wait (briefly) until the pipe is drained, so the tail holds the last words."""
        deadline = time.monotonic() + timeout
        while not self._eof.is_set() and time.monotonic() < deadline:
            await anyio.sleep(0.01)

    def tail(self, lines: int = 5, limit: int = 800) -> str:
        text = "\n".join(list(self.lines)[-lines:]).strip()
        return text if len(text) <= limit else "..." + text[-limit:]


class RawChannel:
    """JSON-RPC requests the proxy writes itself on an upstream's stdin, beside the SDK
    session's traffic. Their ids are strings ``mcp-hooks-N`` (the SDK numbers its own), and
    their answers are taken off the pipe before the SDK session sees them."""

    def __init__(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        self._write = write
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self.closed = False

    def owns(self, message: dict[str, Any]) -> bool:
        rid = message.get("id")
        return isinstance(rid, str) and rid in self._pending

    def deliver(self, message: dict[str, Any]) -> None:
        future = self._pending.pop(message["id"], None)
        if future is not None and not future.done():
            future.set_result(message)

    def close(self) -> None:
        """The pipe ended: every waiting request fails with ``CONNECTION_CLOSED``."""
        self.closed = True
        closed = {"error": {"code": types.CONNECTION_CLOSED, "message": "Connection closed"}}
        for future in self._pending.values():
            if not future.done():
                future.set_result(closed)
        self._pending.clear()

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send one request and wait for its result (cancel the caller to give up).

        Raises:
            MCPError: the upstream answered with an error, or the connection closed.
        """
        if self.closed:
            raise MCPError(types.CONNECTION_CLOSED, "Connection closed")
        rid = f"{_RAW_ID_PREFIX}{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        try:
            data = wire.encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        except (RecursionError, ValueError):
            self._pending.pop(rid, None)
            raise MCPError(types.INVALID_PARAMS, "the arguments nest too deep to be sent "
                           "upstream; the request was not sent") from None
        try:
            await self._write(data)
            answer = await future
        except BaseException:
            if not future.done() and not self.closed:
                note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": rid, "reason": "the proxy gave up waiting"}}
                with anyio.CancelScope(shield=True), anyio.move_on_after(1), \
                        suppress(Exception):
                    await self._write(wire.encode(note))
            raise
        finally:
            self._pending.pop(rid, None)
        error = answer.get("error")
        if error is not None:
            if not isinstance(error, dict):
                error = {"code": types.INTERNAL_ERROR, "message": str(error)}
            raise MCPError(int(error.get("code", types.INTERNAL_ERROR)),
                           str(error.get("message", "")), error.get("data"))
        return answer.get("result")


class Channel(Protocol):
    """A connection's raw channel: ``RawChannel`` here, ``upstream_http.HttpChannel``."""

    closed: bool


@dataclass
class Run:
    """One connection attempt: what its transport learned (``process`` and ``channel`` on
    this module's transport and ``upstream_http``'s; ``closed`` and ``settled``, set once the
    upstream's state says how the attempt ended, on every transport)."""

    closed: anyio.Event = field(default_factory=anyio.Event)
    settled: anyio.Event = field(default_factory=anyio.Event)  # its end is in the state
    process: asyncio.subprocess.Process | None = None
    channel: Channel | None = None
    ready: bool = False


def start_error(error: OSError, spec: UpstreamSpec) -> str:
    """Why a stdio server could not be spawned, naming its ``cwd`` or its command."""
    command, cwd = spec.command, spec.cwd
    if cwd and error.filename is not None and os.fspath(error.filename) == cwd:
        return f"cannot start in {cwd!r}: {error.strerror or error}"
    if isinstance(error, FileNotFoundError):
        return f"cannot run {command!r}: no such file or command (is it installed?)"
    if isinstance(error, PermissionError):
        return f"cannot run {command!r}: permission denied"
    return f"cannot run {command!r}: {error.strerror or error}"


def _killpg(pgid: int, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _stop_process(process: asyncio.subprocess.Process) -> None:
    """Close stdin, give the server a grace period, then end its whole process group
    (SIGTERM, a grace period, SIGKILL). The server leads its own group (a new session)."""
    if process.stdin is not None:
        with suppress(Exception):
            process.stdin.close()
    if not await exited(process, STOP_GRACE):
        _killpg(process.pid, signal.SIGTERM)
        if not await exited(process, STOP_GRACE):
            _killpg(process.pid, signal.SIGKILL)
            await exited(process, STOP_GRACE)


async def exited(process: asyncio.subprocess.Process, timeout: float) -> bool:
    """Whether ``process`` has exited within ``timeout`` seconds.

    Polls returncode: ``process.wait()`` also waits for the pipes, which a grandchild may
    hold."""
    deadline = anyio.current_time() + timeout
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(0.01)
    return True


def _too_deep(name: str, rid: str | int | None) -> dict[str, Any] | None:
    """The error that stands for an upstream answer nested too deep to read (None: no id)."""
    logger.warning("upstream %s wrote a message nested too deep to read (id %r)", name, rid)
    if rid is None:
        return None
    return {"jsonrpc": "2.0", "id": rid, "error": {
        "code": types.INTERNAL_ERROR,
        "message": f"upstream {name!r} answered with JSON nested too deep to read"}}


@asynccontextmanager
async def stdio_upstream(
    spec: UpstreamSpec, run: Run, errlog: IO[str] | None
) -> AsyncIterator[TransportStreams]:
    """Spawn a stdio server (in a session of its own) and connect the SDK session to it.

    Lines from the server are parsed once: answers to ``run.channel``'s raw requests go to
    their callers, everything else to the SDK session. When the server's stdout ends,
    ``run.closed`` is set and waiting raw requests fail. Leaving the block stops the server
    (stdin closed, a grace period, then SIGTERM and SIGKILL to its process group).

    The pipes are asyncio streams, written without a lock or a yield (``write`` is atomic
    and ``drain`` only waits when the pipe is full): a raw request costs no extra pass of
    the event loop.
    """
    process = await asyncio.create_subprocess_exec(
        spec.command or "", *spec.args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=errlog if errlog is not None else sys.stderr,
        # The proxy stands in for the host: the server gets the environment the host gave
        # the proxy, plus its own "env".
        env={**os.environ, **spec.env}, cwd=spec.cwd,
        start_new_session=True, limit=wire.LINE_LIMIT,
    )
    run.process = process
    assert process.stdin is not None and process.stdout is not None
    pipes = _ServerPipes(spec.name, process.stdin, process.stdout, run)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pipes.read_lines)
        tg.start_soon(pipes.write_session)
        try:
            yield pipes.from_server, pipes.to_server
        finally:
            with anyio.CancelScope(shield=True):
                await _stop_process(process)
            tg.cancel_scope.cancel()


class _ServerPipes:
    """A spawned server's two pipes as the SDK session's streams, with the raw channel
    (``run.channel``) beside them: each line from the server parsed once, an answer to a raw
    request to its caller, everything else to the session.

    Args:
        name: the upstream's name, for the log and errors.
        stdin, stdout: the server's pipes.
        run: the connection attempt: its ``channel`` is set here, ``closed`` when stdout ends.
    """

    def __init__(self, name: str, stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader,
                 run: Run) -> None:
        self.name = name
        self.stdin = stdin
        self.stdout = stdout
        self.run = run
        self.to_session, self.from_server = \
            anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.to_server, self.from_session = \
            anyio.create_memory_object_stream[SessionMessage](0)
        self.channel = run.channel = RawChannel(self.write)

    async def write(self, data: bytes) -> None:
        if self.stdin.is_closing():
            raise anyio.BrokenResourceError
        self.stdin.write(data)
        await self.stdin.drain()

    async def dispatch(self, line: bytes) -> None:
        try:
            message = wire.decode(line)
        except ValueError:
            logger.warning("upstream %s wrote a line that is not JSON: %.200r", self.name, line)
            return
        except RecursionError:  # valid JSON, nested past Python's parser: its caller fails
            message = _too_deep(self.name, wire.message_id(line))
            if message is None:
                return
        if isinstance(message, dict) and "method" not in message and self.channel.owns(message):
            self.channel.deliver(message)
            return
        try:
            parsed = wire.to_model(message)
        except (ValidationError, RecursionError) as exc:
            if isinstance(exc, ValidationError):
                await self.to_session.send(exc)
            return
        await self.to_session.send(SessionMessage(parsed))

    async def read_lines(self) -> None:
        try:
            async with self.to_session:
                while (line := await wire.read_line(self.stdout, f"upstream {self.name}")) \
                        is not None:
                    if line.strip():
                        await self.dispatch(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            self.run.closed.set()
            self.channel.close()

    async def write_session(self) -> None:
        try:
            async with self.from_session:
                async for session_message in self.from_session:
                    message = session_message.message
                    try:
                        data = wire.encode_model(message)
                    except (RecursionError, ValueError):
                        await self.refuse(message)
                        continue
                    await self.write(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            self.run.closed.set()

    async def refuse(self, message: Any) -> None:
        """A request that cannot be written fails for its caller, with a reason."""
        rid = getattr(message, "id", None)
        if rid is None or not hasattr(message, "method"):
            logger.warning("upstream %s: a message could not be encoded; dropped", self.name)
            return
        error = types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
            code=types.INVALID_PARAMS,
            message="the arguments nest too deep to be sent upstream; the request was not sent"))
        await self.to_session.send(SessionMessage(error))
