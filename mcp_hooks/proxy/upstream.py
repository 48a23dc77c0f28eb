"""The proxy's connections to its upstream MCP servers: start, list, call, watch, restart.

Each ``Upstream`` owns one connection, kept by a task of the proxy's task group so that
requests from every downstream session share it. Its states::

    stopped ──start()──► starting ──► ready ──(process exits / connection drops)──► dead
                             │                                                      │
                             └──(cannot start in time)──► failed ◄──(restart fails)─┘

Every change of state is logged (stderr, and the event log as ``kind: proxy_upstream``,
``starting`` included). A call to a ``failed`` or ``dead`` upstream starts it again, unless
the backoff since the last failure has not run out (the first restart is immediate, then 1,
2, 4 ... 30 s). Every request is bounded by the upstream's timeout, start-up included: the
proxy never hangs.

Transports: stdio upstreams are spawned by ``upstream_stdio.stdio_upstream`` (raw ``tools/call``
requests, exit status and stderr in errors), or by the SDK's ``stdio_client`` with
``fast_stdio=False`` (``MCP_HOOKS_PROXY_STDIO=sdk``) and on Windows; HTTP and SSE by the SDK,
plain ``tools/call`` of a 2026-07-28 HTTP upstream POSTed raw (``upstream_http``).
What an upstream asks of the user during a call goes to that call's client (``relay``); what
it lists, and how a change of it is heard, is ``listing``.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from typing import IO, Any, Literal, TextIO, TypeVar, cast

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_hooks.errors import RunError
from mcp_hooks.proxy.config import UpstreamSpec
from mcp_hooks.proxy.listing import (
    ALL_KINDS,
    Kind,
    Listing,
    fetch_listing,
    listen_for_changes,
    notified_kinds,
)
from mcp_hooks.proxy.relay import Peer, Relay
from mcp_hooks.proxy.upstream_http import raw_call, raw_channel
from mcp_hooks.proxy.upstream_stdio import Run, StderrTail, exited, start_error, stdio_upstream
from mcp_hooks.proxy.watched import WatchedReadStream
from mcp_hooks.server.sdk_compat import TransportStreams, create_mcp_http_client
from mcp_hooks.state.eventlog import EventLog

logger = logging.getLogger("mcp_hooks.proxy")

DEFAULT_TIMEOUT = 60.0  # seconds per upstream request
DEFAULT_STARTUP_TIMEOUT = 30.0  # seconds for one upstream to start and list what it has
BACKOFF_MAX = 30.0

State = Literal["stopped", "starting", "ready", "failed", "dead"]
_T = TypeVar("_T")


class UpstreamError(RunError):
    """An upstream could not serve a request (down, timed out, died meanwhile); the message,
    written for the agent, names the upstream and says what happened."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups, or ``exc`` itself."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, (list, tuple)):
        for item in inner:
            yield from _leaves(item)
    else:
        yield exc


def _only_cancelled(exc: BaseException) -> bool:
    """``exc`` is a cancellation (or a group of nothing else), to be raised on as it is."""
    return not isinstance(exc, Exception) and all(
        not isinstance(e, Exception) for e in _leaves(exc))


def backoff(failures: int) -> float:
    """Seconds before the next start after ``failures`` consecutive failures: the first
    restart is immediate, then 1, 2, 4 ... up to ``BACKOFF_MAX``."""
    if failures <= 1:
        return 0.0
    return min(BACKOFF_MAX, 2.0 ** (failures - 2))


# -- the upstream ----------------------------------------------------------------------------

OnChange = Callable[["Upstream", set[Kind]], Awaitable[None]]


class Upstream:
    """One upstream server: its connection, state, listing and restarts.

    Args:
        spec: how to reach the server.
        timeout: seconds one request may take (the spec's own ``timeout`` wins).
        startup_timeout: seconds a start (spawn or connect, handshake, listing) may take.
        on_change: awaited when the upstream's listing changed (list-changed, restart).
        log: the event log, for state changes.
        fast_stdio, fast_http: raw ``tools/call`` on a stdio server (the proxy's transport,
            exit status and stderr in errors) / a 2026-07-28 HTTP one (``upstream_http``).
    """

    def __init__(
        self,
        spec: UpstreamSpec,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        on_change: OnChange | None = None,
        log: EventLog | None = None,
        fast_stdio: bool = True,
        fast_http: bool = True,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.timeout = spec.timeout or timeout
        self.startup_timeout = startup_timeout
        self.state: State = "stopped"
        self.last_error: str | None = None
        self.starts = 0
        self.failures = 0
        self.next_attempt = 0.0
        self.since = now_iso()
        self.listing = Listing()
        self.protocol_version: str | None = None
        self.server_info: types.Implementation | None = None
        self.instructions: str | None = None
        self.capabilities: types.ServerCapabilities | None = None
        self._on_change = on_change
        self._log = log
        self._client: Client | None = None
        self._run_state: Run | None = None
        self._attempt = anyio.Event()
        self._attempt.set()
        self._stop = anyio.Event()
        self._tg: TaskGroup | None = None
        self._stderr = StderrTail(spec.name) if spec.transport == "stdio" else None
        # The handshake era: stdio servers speak the 2025 handshake (every SDK serves it, and
        # the raw fast path speaks it); a server that refuses it is retried with "auto".
        self._mode = "legacy" if spec.transport == "stdio" else "auto"
        self._fast_stdio, self._fast_http = fast_stdio and sys.platform != "win32", fast_http
        self.relay = Relay(spec.name, self.timeout)

    # -- lifecycle ------------------------------------------------------------------------

    def bind(self, tg: TaskGroup) -> None:
        """Run connections in ``tg`` (the proxy's task group)."""
        self._tg = tg

    def start(self) -> anyio.Event:
        """Start connecting (if not already); the event is set when the attempt settles."""
        if self.state in ("starting", "ready"):
            return self._attempt
        if self._tg is None:
            raise RuntimeError("an Upstream must be bound to a task group before it starts")
        self.starts += 1
        self._set_state("starting")
        self._attempt = anyio.Event()
        self._stop = anyio.Event()
        self._tg.start_soon(self._run, self._attempt, self._stop)
        return self._attempt

    def stop(self) -> None:
        self._stop.set()

    def _set_state(self, state: State, error: str | None = None) -> None:
        self.state = state
        self.since = now_iso()
        if error is not None:
            self.last_error = error
        if state in ("failed", "dead"):
            logger.warning("upstream %s is %s: %s", self.name, state, error)
        else:
            logger.info("upstream %s is %s", self.name, state)
        if self._log is not None:
            self._log.append({
                "ts": self.since, "kind": "proxy_upstream", "upstream": self.name,
                "state": state, "error": error if state in ("failed", "dead") else None,
                "target": self.spec.describe(), "starts": self.starts,
            })

    @asynccontextmanager
    async def _transport(
        self, run: Run, errlog: IO[str] | None
    ) -> AsyncIterator[TransportStreams]:
        spec = self.spec
        if spec.transport == "stdio" and self._fast_stdio:
            async with stdio_upstream(spec, run, errlog) as streams:
                yield streams
        elif spec.transport == "stdio":
            params = StdioServerParameters(command=spec.command or "", args=list(spec.args),
                                           env={**os.environ, **spec.env}, cwd=spec.cwd)
            log = cast(TextIO, errlog) if errlog is not None else sys.stderr
            async with stdio_client(params, errlog=log) as (read, write):
                yield WatchedReadStream(read, run.closed), write
        elif spec.transport == "http":
            async with create_mcp_http_client(headers=spec.headers or None) as http, \
                    streamable_http_client(spec.url or "", http_client=http) as (read, write), \
                    raw_channel(http, spec, run, self._fast_http):
                yield WatchedReadStream(read, run.closed), write
        else:
            async with sse_client(spec.url or "", headers=spec.headers or None) as (read, write):
                yield WatchedReadStream(read, run.closed), write

    async def _run(self, attempt: anyio.Event, stop: anyio.Event) -> None:
        error: str | None = None
        run = Run()
        deadline = anyio.current_time() + self.startup_timeout
        try:
            for _ in range(2):
                run = self._run_state = Run()
                if await self._connect_in_its_era(run, deadline, attempt, stop):
                    break
            if not run.ready and not stop.is_set():
                error = (f"did not finish starting (spawn or connect, handshake, listing) "
                         f"within {self.startup_timeout:g} s")
        except BaseException as exc:
            # A group that mixes a cancellation with real errors must not escape: it would
            # take the proxy's task group, and every other upstream, down with it.
            if _only_cancelled(exc):
                raise
            # Once the connection has dropped, errors while tearing it down (an HTTP server
            # that cannot take the session's DELETE) say less than the drop itself.
            if not (run.ready and run.closed.is_set()):
                error = await self._describe(exc, run, starting=not run.ready)
        finally:
            self._client = None
        if stop.is_set():
            self._set_state("stopped")
        else:
            if error is None:
                error = await self._describe_exit(run)
            self.failures += 1
            self.next_attempt = time.monotonic() + backoff(self.failures)
            self._set_state("dead" if run.ready else "failed", error)
        attempt.set()
        run.settled.set()

    async def _connect_in_its_era(
        self, run: Run, deadline: float, attempt: anyio.Event, stop: anyio.Event
    ) -> bool:
        """``_connect``; False when a server of the 2026 era only refused the 2025 handshake:
        the mode is "auto" now, and the caller connects again."""
        try:
            await self._connect(run, deadline, attempt, stop)
        except MCPError as exc:
            if exc.code == types.UNSUPPORTED_PROTOCOL_VERSION and self._mode == "legacy":
                self._mode = "auto"
                return False
            raise
        return True

    async def _connect(
        self, run: Run, deadline: float, attempt: anyio.Event, stop: anyio.Event
    ) -> None:
        """One connection, until it drops or ``stop`` (``run.ready`` says if it got ready)."""
        errlog = self._stderr.open() if self._stderr is not None else None
        try:
            with anyio.CancelScope(deadline=deadline) as scope:
                client = Client(self._transport(run, errlog), mode=self._mode, cache=None,
                                message_handler=self._on_message, sampling_callback=self.relay
                                .sample, elicitation_callback=self.relay.elicit)
                async with client:
                    if errlog is not None:
                        errlog.close()  # the server has its copy; EOF comes when it exits
                        errlog = None
                    listing = await fetch_listing(client, ALL_KINDS, self.listing)
                    scope.deadline = math.inf
                    changed = self.listing.differs(listing)
                    self._client, self.listing, run.ready = client, listing, True
                    self.protocol_version = client.protocol_version
                    self.server_info = client.server_info
                    self.capabilities = client.server_capabilities
                    self.instructions = client.session.instructions
                    self.last_error = None
                    self._set_state("ready")
                    attempt.set()
                    if changed and self._on_change is not None:
                        await self._on_change(self, changed)
                    async with anyio.create_task_group() as tg:
                        async def until(event: anyio.Event) -> None:
                            await event.wait()
                            tg.cancel_scope.cancel()

                        tg.start_soon(until, run.closed)
                        tg.start_soon(until, stop)
                        if self.protocol_version in MODERN_PROTOCOL_VERSIONS:
                            tg.start_soon(listen_for_changes, client, self.name, self.refresh)
                    self._client = None
        finally:
            if errlog is not None:
                errlog.close()

    async def _describe(self, exc: BaseException, run: Run, *, starting: bool) -> str:
        leaves = [e for e in _leaves(exc) if not isinstance(e, anyio.get_cancelled_exc_class())]
        first = leaves[0] if leaves else exc
        if isinstance(first, OSError) and self.spec.transport == "stdio":
            return start_error(first, self.spec)
        if isinstance(first, MCPError) and first.code == types.CONNECTION_CLOSED:
            return await self._describe_exit(run, starting=starting)
        what = f"{type(first).__name__}: {first}" if str(first) else type(first).__name__
        if self.spec.transport != "stdio":
            what = f"cannot talk to {self.spec.url}: {what}"
        return what

    async def _describe_exit(self, run: Run | None, *, starting: bool = False) -> str:
        when = " while starting" if starting else ""
        if self._stderr is None:
            return f"the server closed the connection{when}"
        process = run.process if run is not None else None
        status = ""
        if process is not None:
            await exited(process, 0.5)
            code = process.returncode
            if code is not None:
                status = f" with status {code}" if code >= 0 else f" (killed by signal {-code})"
        await self._stderr.settle()
        text = f"the server process exited{status}{when}"
        tail = self._stderr.tail()
        return f"{text}; its last words on stderr: {tail}" if tail else text

    # -- list changes ---------------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        """Handshake-era change notifications (2026-07-28 ones: ``listen_for_changes``)."""
        kinds = notified_kinds(message)
        if kinds is None:
            return
        if self._tg is not None:
            # Not awaited here: this runs in the session's receive loop, which must stay
            # free to read the answer to the listing that refresh sends.
            self._tg.start_soon(self.refresh, kinds)

    async def refresh(self, kinds: set[Kind]) -> None:
        """List again what changed, and tell the proxy."""
        client = self._client
        if client is None or self.state != "ready":
            return
        try:
            with anyio.fail_after(self.timeout):
                listing = await fetch_listing(client, kinds, self.listing)
        except Exception as exc:
            logger.warning("upstream %s: cannot list %s again: %s", self.name,
                           ", ".join(sorted(kinds)), exc)
            return
        changed = self.listing.differs(listing)
        self.listing = listing
        if changed and self._on_change is not None:
            await self._on_change(self, changed)

    # -- requests -------------------------------------------------------------------------

    async def _ensure(self, deadline: float, what: str) -> Client:
        if self.state == "ready" and self._client is not None:
            return self._client
        if self.state != "starting":
            wait = self.next_attempt - time.monotonic()
            if wait > 0:
                raise UpstreamError(
                    f"upstream {self.name!r} is down ({self.last_error}); {what} was not sent. "
                    f"The proxy starts it again in {math.ceil(wait)} s."
                )
            self.start()
        attempt = self._attempt
        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
            await attempt.wait()
        if self.state == "ready" and self._client is not None:
            return self._client
        if self.state == "starting":
            raise UpstreamError(
                f"upstream {self.name!r} is still starting after {self.timeout:g} s; "
                f"{what} was not sent"
            )
        raise UpstreamError(
            f"upstream {self.name!r} could not start: {self.last_error}; {what} was not sent"
        )

    async def request(self, what: str, send: Callable[[Client], Awaitable[_T]]) -> _T:
        """Send one request (starting the upstream if needed), bounded by the timeout.

        Raises:
            UpstreamError: the upstream is down, did not answer in time, or died meanwhile.
            MCPError: the upstream answered with a protocol error (passed on as it is).
        """
        deadline = anyio.current_time() + self.timeout
        client = await self._ensure(deadline, what)
        run = self._run_state
        try:
            with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                result = await send(client)
        except TimeoutError:
            raise UpstreamError(
                f"upstream {self.name!r} did not answer {what} within {self.timeout:g} s; "
                "the request was cancelled"
            ) from None
        except MCPError as exc:
            if exc.code != types.CONNECTION_CLOSED:
                self.failures = 0  # it answered: it is alive
                raise
            raise UpstreamError(
                f"upstream {self.name!r} failed during {what}: "
                f"{await self._describe_exit(run)}. It is started again on the next call."
            ) from None
        except UpstreamError:
            raise
        except Exception as exc:
            raise UpstreamError(f"upstream {self.name!r} failed during {what}: "
                                f"{type(exc).__name__}: {exc}") from None
        self.failures = 0
        return result

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], progress: ProgressFnT | None = None,
        peer: Peer | None = None,
    ) -> dict[str, Any]:
        """Call a tool; the result in its wire form (``content``, ``structuredContent``,
        ``isError``, ``_meta``). What the upstream asks of the user meanwhile goes to ``peer``.

        Raises:
            UpstreamError: as ``request``.
            MCPError: the upstream's protocol error.
        """
        async def send(client: Client) -> dict[str, Any]:
            run = self._run_state
            if progress is None and run is not None:  # the raw channel (``upstream_http``)
                raw = await raw_call(run.channel, client, self.protocol_version, tool, arguments)
                if raw is not None:
                    return raw
            typed = await client.call_tool(tool, arguments, progress_callback=progress)
            dumped: dict[str, Any] = typed.model_dump(by_alias=True, mode="json",
                                                      exclude_none=True)
            return dumped

        with self.relay.calling(peer):
            return await self.request(f"tools/call {tool!r}", send)

    def status(self) -> dict[str, Any]:
        """This upstream's entry in ``hooks://proxy/status``."""
        retry = self.next_attempt - time.monotonic()
        down = self.state in ("failed", "dead")
        return {
            "name": self.name,
            "transport": self.spec.transport,
            "target": self.spec.describe(),
            "state": self.state,
            "since": self.since,
            "last_error": self.last_error,
            "starts": self.starts,
            "consecutive_failures": self.failures,
            "next_start_in_seconds": round(retry, 1) if down and retry > 0 else 0,
            "timeout_seconds": self.timeout,
            "protocol_version": self.protocol_version,
            "server": self.server_info.name if self.server_info else None,
            "tools": [t.name for t in self.listing.tools],
            "resources": len(self.listing.resources),
            "resource_templates": len(self.listing.templates),
            "prompts": [p.name for p in self.listing.prompts],
        }
