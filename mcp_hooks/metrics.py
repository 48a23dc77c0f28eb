"""Prometheus metrics: ``GET /metrics`` on ``serve``, ``proxy`` and ``dashboard``.

``--metrics`` (off unless asked for) builds a :class:`Metrics` with :func:`metrics_for`; it is
the engine's observer (``engine/observe.py``) and counts, in its own ``CollectorRegistry``
(never the process-global one):

- ``mcp_hooks_events_total{event,door,decision}``: events decided (``door``: ``serve`` or
  ``proxy``; ``decision``: ``allow``, ``deny``, or ``error`` when firing raised);
- ``mcp_hooks_hook_runs_total{hook,result}``: sync hook runs by their status (``allow``,
  ``deny``, ``error``, ``timeout``, ...);
- ``mcp_hooks_hook_duration_seconds{hook}`` and ``mcp_hooks_event_latency_seconds{event}``:
  histograms;
- ``mcp_hooks_fail_open_total{hook}``: events allowed although a hook of theirs failed (error
  or timeout), counted apart;
- ``mcp_hooks_asks_pending``, ``mcp_hooks_store_errors``, ``mcp_hooks_spooled_records``:
  read when scraped, from the callables given (``read_from``; none: 0).

``together(otel, metrics)`` gives an engine both observers.

``render()`` is the text exposition format. The observer only increments counters on the
event's path (no I/O, no lock beyond prometheus-client's own). prometheus-client is an extra
(``mcp-hooks[metrics]``): without it, ``metrics_for(True)`` is a ``MissingExtraError`` naming
the pip command.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_hooks.engine.observe import EventObserver, EventTrace
from mcp_hooks.errors import MissingExtraError
from mcp_hooks.spec.outcome import Event, HookRun, Outcome

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

METRICS_PATH = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
FAILED = ("error", "timeout")
NEEDS = "prometheus-client"
Reading = Callable[[], float]


class _Trace:
    """One observed event."""

    __slots__ = ("_failed", "_metrics", "_name", "_start")

    def __init__(self, metrics: Metrics, name: str) -> None:
        self._metrics, self._name = metrics, name
        self._start = time.perf_counter()
        self._failed: list[str] = []

    def hook_done(self, run: HookRun) -> None:
        m = self._metrics
        m.hook_runs.labels(run.name, run.status).inc()
        m.hook_duration.labels(run.name).observe(max(0.0, run.duration_ms) / 1000)
        if run.status in FAILED:
            self._failed.append(run.name)

    def finish(self, outcome: Outcome | None, error: BaseException | None) -> None:
        m = self._metrics
        decision = "error" if outcome is None else outcome.decision
        m.events.labels(self._name, m.door, decision).inc()
        m.latency.labels(self._name).observe(time.perf_counter() - self._start)
        if outcome is not None and not outcome.denied:
            for name in self._failed:
                m.fail_open.labels(name).inc()


class Metrics:
    """The counters of one process, and the engine's observer that feeds them."""

    def __init__(self, door: str, prometheus: Any) -> None:
        self.door = door
        self._prometheus = prometheus
        self.registry: CollectorRegistry = prometheus.CollectorRegistry()
        r = self.registry
        self.events = prometheus.Counter("mcp_hooks_events", "Events decided",
                                         ["event", "door", "decision"], registry=r)
        self.hook_runs = prometheus.Counter("mcp_hooks_hook_runs", "Sync hook runs",
                                            ["hook", "result"], registry=r)
        self.hook_duration = prometheus.Histogram(
            "mcp_hooks_hook_duration_seconds", "How long a sync hook ran", ["hook"], registry=r)
        self.latency = prometheus.Histogram(
            "mcp_hooks_event_latency_seconds", "How long an event took to decide", ["event"],
            registry=r)
        self.fail_open = prometheus.Counter(
            "mcp_hooks_fail_open", "Events allowed although a hook of theirs failed",
            ["hook"], registry=r)
        self._gauges: dict[str, Any] = {
            name: prometheus.Gauge(name, text, registry=r) for name, text in (
                ("mcp_hooks_asks_pending", "Asks and block/prompt signals not answered yet"),
                ("mcp_hooks_store_errors", "Calls of the shared store that failed"),
                ("mcp_hooks_spooled_records", "Records spooled while the store was lost"))}

    def read_from(self, name: str, reading: Reading) -> None:
        """Let gauge ``name`` (``mcp_hooks_asks_pending``, ...) read ``reading()`` when
        scraped (a reading that raises counts as -1)."""
        def safe() -> float:
            try:
                return float(reading())
            except Exception:  # a scrape must answer
                return -1.0
        self._gauges[name].set_function(safe)

    def event(self, name: str, event: Event) -> _Trace:
        """The engine's ``EventObserver.event``."""
        return _Trace(self, name)

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        data: bytes = self._prometheus.generate_latest(self.registry)
        return data


class _Both:
    """Two events' traces told the same things."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: EventTrace, second: EventTrace) -> None:
        self._first, self._second = first, second

    def hook_done(self, run: HookRun) -> None:
        self._first.hook_done(run)
        self._second.hook_done(run)

    def finish(self, outcome: Outcome | None, error: BaseException | None) -> None:
        self._first.finish(outcome, error)
        self._second.finish(outcome, error)


class Observers:
    """Two observers as one (``--otel`` and ``--metrics`` together)."""

    def __init__(self, first: EventObserver, second: EventObserver) -> None:
        self._first, self._second = first, second

    def event(self, name: str, event: Event) -> EventTrace:
        return _Both(self._first.event(name, event), self._second.event(name, event))


def together(first: EventObserver | None, second: EventObserver | None
             ) -> EventObserver | None:
    """The observer an engine gets for ``first`` and ``second`` (either may be None)."""
    if first is None or second is None:
        return first if second is None else second
    return Observers(first, second)


def metrics_routes(metrics: Metrics | None) -> list[Any]:
    """``GET /metrics`` as a Starlette route (none when ``metrics`` is None), for ``serve``
    and ``proxy``, whose bearer-token middleware guards it."""
    if metrics is None:
        return []
    # lazy: 340 ms (starlette) of cold start for the commands that build no HTTP app
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request  # lazy: 0 ms more (with the line above)
    from starlette.responses import Response  # lazy: 0 ms more (with the line above)
    from starlette.routing import Route  # lazy: 0 ms more (with the line above)

    async def scrape(request: Request) -> Response:
        data = await run_in_threadpool(metrics.render)
        return Response(data, media_type=CONTENT_TYPE, headers={"Cache-Control": "no-store"})

    return [Route(METRICS_PATH, scrape, methods=["GET"])]


def metrics_for(on: bool, door: str) -> Metrics | None:
    """A :class:`Metrics` for ``door`` when ``on`` (``--metrics``), else None.

    Raises:
        MissingExtraError: ``on`` and prometheus-client is not installed (exit 64, naming the
            pip command of the ``metrics`` extra).
    """
    if not on:
        return None
    try:
        # lazy: 25 ms (python -X importtime), and the extra may not be installed
        import prometheus_client
    except ModuleNotFoundError as exc:
        raise MissingExtraError("metrics (--metrics)", exc, "metrics", NEEDS) from None
    return Metrics(door, prometheus_client)


__all__ = ["CONTENT_TYPE", "METRICS_PATH", "Metrics", "Observers", "metrics_for",
           "metrics_routes", "together"]
