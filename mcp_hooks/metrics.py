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

``render()`` is the text exposition format. The observer only adds to plain dicts on the
event's path (no I/O, no lock); a scrape reads them through a collector. prometheus-client
is an extra (``mcp-hooks[metrics]``): without it, ``metrics_for(True)`` is a
``MissingExtraError`` naming the pip command.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from math import inf as INF
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


BOUNDS = (.005, .01, .025, .05, .075, .1, .25, .5, .75, 1.0, 2.5, 5.0, 7.5, 10.0, INF)


class _Histogram:
    """Bucket counts (not cumulative) and the sum, filled on the event's path."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * len(BOUNDS)
        self.total = 0.0


def _count(counts: dict[tuple[str, ...], int], key: tuple[str, ...]) -> None:
    try:
        counts[key] += 1
    except KeyError:
        counts[key] = 1


class _Trace:
    """One observed event."""

    __slots__ = ("_failed", "_metrics", "_name", "_start")

    # no __init__: ``Metrics.event`` sets the slots (a call fewer per event, as counted)
    _metrics: Metrics
    _name: str
    _start: float
    _failed: list[str] | None

    def hook_done(self, run: HookRun) -> None:
        m = self._metrics
        key = (run.name, run.status)
        try:
            m.hook_runs[key] += 1
        except KeyError:
            m.hook_runs[key] = 1
        seconds = run.duration_ms / 1000
        try:
            histogram = m.hook_duration[run.name]
        except KeyError:
            histogram = m.hook_duration[run.name] = _Histogram()
        i = 0
        while seconds > BOUNDS[i]:  # no call: the bench counts calls per event
            i += 1
        histogram.counts[i] += 1
        histogram.total += seconds
        if run.status in FAILED:
            self._failed = [*(self._failed or ()), run.name]

    def finish(self, outcome: Outcome | None, error: BaseException | None) -> None:
        m = self._metrics
        decision = "error" if outcome is None else outcome.decision
        seconds = time.perf_counter() - self._start
        try:
            histogram = m.latency[self._name]
        except KeyError:
            histogram = m.latency[self._name] = _Histogram()
        i = 0
        while seconds > BOUNDS[i]:  # no call: the bench counts calls per event
            i += 1
        histogram.counts[i] += 1
        histogram.total += seconds
        key = (self._name, m.door, decision)
        try:
            m.events[key] += 1
        except KeyError:
            m.events[key] = 1
        if self._failed and decision != "deny" and decision != "error":
            for name in self._failed:
                _count(m.fail_open, (name,))


class _Collector:
    """What a scrape reads: the counts above, as prometheus-client metric families."""

    def __init__(self, metrics: Metrics, core: Any) -> None:
        self._metrics, self._core = metrics, core

    def collect(self) -> Iterator[Any]:
        m, core = self._metrics, self._core
        for name, text, labels, counts in (
                ("mcp_hooks_events", "Events decided", ["event", "door", "decision"],
                 m.events),
                ("mcp_hooks_hook_runs", "Sync hook runs", ["hook", "result"], m.hook_runs),
                ("mcp_hooks_fail_open", "Events allowed although a hook of theirs failed",
                 ["hook"], m.fail_open)):
            family = core.CounterMetricFamily(name, text, labels=labels)
            for key, value in list(counts.items()):
                family.add_metric(list(key), value)
            yield family
        for name, text, label, histograms in (
                ("mcp_hooks_hook_duration_seconds", "How long a sync hook ran", "hook",
                 m.hook_duration),
                ("mcp_hooks_event_latency_seconds", "How long an event took to decide",
                 "event", m.latency)):
            family = core.HistogramMetricFamily(name, text, labels=[label])
            for hist_key, histogram in list(histograms.items()):
                running, buckets = 0, []
                for bound, count in zip(BOUNDS, list(histogram.counts), strict=True):
                    running += count
                    buckets.append(("+Inf" if bound == INF else repr(bound), running))
                family.add_metric([hist_key], buckets, histogram.total)
            yield family


class Metrics:
    """The counts of one process, and the engine's observer that feeds them.

    The event's path only adds to plain dicts (a handful of Python calls per event, as
    ``bench/bench_dashboard.py`` counts them); a scrape turns them into metric families.
    Increments from several threads at once are not locked: a rare lost increment is the
    price of not taking a lock on every event.
    """

    def __init__(self, door: str, prometheus: Any) -> None:
        self.door = door
        self._prometheus = prometheus
        self.events: dict[tuple[str, ...], int] = {}
        self.hook_runs: dict[tuple[str, ...], int] = {}
        self.fail_open: dict[tuple[str, ...], int] = {}
        self.hook_duration: dict[str, _Histogram] = {}
        self.latency: dict[str, _Histogram] = {}
        self.registry: CollectorRegistry = prometheus.CollectorRegistry()
        r = self.registry
        r.register(_Collector(self, prometheus.core))
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
        trace = _Trace()
        trace._metrics, trace._name, trace._failed = self, name, None
        trace._start = time.perf_counter()
        return trace

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
        import prometheus_client.core  # lazy: 0 ms more (imported by the line above)
    except ModuleNotFoundError as exc:
        raise MissingExtraError("metrics (--metrics)", exc, "metrics", NEEDS) from None
    return Metrics(door, prometheus_client)


__all__ = ["CONTENT_TYPE", "METRICS_PATH", "Metrics", "Observers", "metrics_for",
           "metrics_routes", "together"]
