"""Traces: each event an engine fires as an OpenTelemetry span, each sync hook run a child.

``serve --otel`` (and ``proxy --otel``; ``MCP_HOOKS_OTEL=1``, or the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` set: ``Settings.otel``) builds an ``OtelObserver`` with
:func:`observer_for` and hands it to every engine (``engine/observe.py``, the engine's only
view of it). The spans go over OTLP/HTTP (protobuf) to the endpoint the standard variables
name (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, default
``http://localhost:4318``), through the SDK's batch processor: an event only queues its spans,
and a receiver that is down costs the exporter's thread, never an event. ``close`` flushes
what is queued (the door calls it as the server stops, SIGTERM included).

A span per event, named ``event <name>`` (``event before_tool``), with the attributes
``mcp_hooks.event``, ``mcp_hooks.decision``, ``mcp_hooks.blocked_by`` (a deny by a hook),
``mcp_hooks.session``, ``mcp_hooks.replica`` (``state.url.replica_name``: ``host:pid``) and
``mcp_hooks.hook_count``; firing that raised marks the span an error. A child span per sync hook
run, named ``hook <name>``, with ``mcp_hooks.hook.name``, ``.exit_code`` (none when it did not
exit), ``.would`` (audit mode: what it would have done), ``.status`` (``allow``, ``deny``,
``error``, ``timeout``), ``.duration_ms`` and
``.timed_out``; it starts ``duration_ms`` before the hook's end. Async hooks run after the
reply: they are counted, not traced.

This module imports OpenTelemetry only in :func:`observer_for`, when tracing is on; without the
extra, ``on`` is a ``MissingExtraError`` (exit 64) naming the pip command of the ``otel``
extra (``errors.install_command``), ``auto`` a warning on stderr and no traces.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING, Any

from mcp_hooks.errors import MissingExtraError
from mcp_hooks.guard import named
from mcp_hooks.settings import Settings
from mcp_hooks.spec.outcome import Event, HookRun, Outcome
from mcp_hooks.state.url import replica_name

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

SERVICE_NAME = "mcp-hooks"
FLUSH_MS = 3000  # at most this long to send what is queued as the server stops
NEEDS = "OpenTelemetry (opentelemetry-sdk, opentelemetry-exporter-otlp-proto-http)"


MAX_TEXT = 256  # characters of a client's word (the session id) a span keeps


def _said(text: str) -> str:
    """A client's string as an attribute: at most ``MAX_TEXT`` characters, and encodable (a
    lone surrogate would make the exporter drop the whole batch, other events' spans too)."""
    return text[:MAX_TEXT].encode("utf-8", "replace").decode("utf-8")


class OtelObserver:
    """The engine's ``EventObserver`` (``engine/observe.py``) as OpenTelemetry spans."""

    def __init__(self, provider: TracerProvider, replica: str) -> None:
        self.provider = provider
        self.replica = replica
        self._tracer: Tracer = provider.get_tracer("mcp_hooks")
        self._closing = threading.Lock()
        self._closed = False

    def event(self, name: str, event: Event) -> _EventSpan:
        attributes: dict[str, Any] = {"mcp_hooks.event": name, "mcp_hooks.replica": self.replica}
        if event.session_id:
            attributes["mcp_hooks.session"] = _said(event.session_id)
        span = self._tracer.start_span(f"event {name}", attributes=attributes)
        return _EventSpan(self._tracer, span)

    def close(self) -> None:
        """Send what is queued, then stop the exporter, in at most ``FLUSH_MS`` (a receiver
        that is down: the SDK logs it, its retries end); never raises. Only the first call
        does anything."""
        with self._closing:
            if self._closed:
                return
            self._closed = True
        # the SDK's shutdown drains the queue, but may wait 30 s on a receiver that is down:
        # it runs in a thread of its own, given FLUSH_MS (a daemon: it ends with the process)
        stopper = threading.Thread(target=self.provider.shutdown, daemon=True,
                                   name="mcp-hooks-otel-flush")
        stopper.start()
        stopper.join(FLUSH_MS / 1000)

    def flush_on_sigterm(self) -> None:
        """Send the queued spans when SIGTERM stops the process, which then dies of the signal
        as it would have. uvicorn catches SIGTERM while it serves, shuts down gracefully and
        raises the signal again under the handler that was there before it: this one."""
        previous = signal.getsignal(signal.SIGTERM)

        def stop(signum: int, frame: FrameType | None) -> None:
            self.close()
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
            signal.raise_signal(signum)

        signal.signal(signal.SIGTERM, stop)


class _EventSpan:
    """One event's span (``EventTrace``)."""

    __slots__ = ("_context", "_span", "_tracer")

    def __init__(self, tracer: Tracer, span: Span) -> None:
        # lazy: 0 ms (the module is loaded by observer_for, which made this tracer)
        from opentelemetry.trace import set_span_in_context

        self._tracer, self._span = tracer, span
        self._context = set_span_in_context(span)

    def hook_done(self, run: HookRun) -> None:
        end = time.time_ns()
        attributes: dict[str, Any] = {
            "mcp_hooks.hook.name": run.name, "mcp_hooks.hook.status": run.status,
            "mcp_hooks.hook.duration_ms": float(run.duration_ms),
            "mcp_hooks.hook.timed_out": run.status == "timeout"}
        if run.exit_code is not None:
            attributes["mcp_hooks.hook.exit_code"] = run.exit_code
        if run.would is not None:  # audit mode: what it would have done (engine/audit.py)
            attributes["mcp_hooks.hook.would"] = str(run.would.get("decision"))
        child = self._tracer.start_span(
            f"hook {run.name}", context=self._context, attributes=attributes,
            start_time=end - max(0, int(run.duration_ms * 1_000_000)))
        child.end(end_time=end)

    def finish(self, outcome: Outcome | None, error: BaseException | None) -> None:
        span = self._span
        if outcome is not None:
            span.set_attribute("mcp_hooks.decision", outcome.decision)
            span.set_attribute("mcp_hooks.hook_count", len(outcome.hooks))
            if outcome.blocked_by:
                span.set_attribute("mcp_hooks.blocked_by", outcome.blocked_by)
        if error is not None:
            # lazy: 0 ms (the module is loaded by observer_for, which made this span)
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, named(error)))
        span.end()


def observer_for(settings: Settings) -> OtelObserver | None:
    """The observer ``settings.otel`` asks for, or None (``off``; ``auto`` without the extra,
    after a warning on stderr).

    Raises:
        MissingExtraError: ``on`` (``--otel``, ``MCP_HOOKS_OTEL=1``) and the extra ``otel``
            is not installed (exit 64, naming the pip command of the ``otel`` extra).
    """
    if settings.otel == "off":
        return None
    try:
        # lazy: 98 ms (python -X importtime), and the extra may not be installed
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource  # lazy: 4 ms, tracing only
        from opentelemetry.sdk.trace import TracerProvider  # lazy: 13 ms, tracing only
        from opentelemetry.sdk.trace.export import BatchSpanProcessor  # lazy: 1 ms, tracing only
    except ModuleNotFoundError as exc:
        missing = MissingExtraError("tracing (--otel, MCP_HOOKS_OTEL=1)", exc, "otel", NEEDS)
        if settings.otel == "on":
            raise missing from exc
        print(f"mcp-hooks: OTEL_EXPORTER_OTLP_ENDPOINT is set, but no traces are sent: "
              f"{missing} (MCP_HOOKS_OTEL=0 silences this)", file=sys.stderr)
        return None
    replica = replica_name()
    resource = Resource.create({"service.instance.id": replica})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))  # no OTEL_SERVICE_NAME
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)  # close() flushes
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return OtelObserver(provider, replica)


def close_observer(observer: OtelObserver | None) -> None:
    """``observer.close()``, for a door that may have none."""
    if observer is not None:
        observer.close()


__all__ = ["OtelObserver", "close_observer", "observer_for"]
