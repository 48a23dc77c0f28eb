"""What the engine tells an observer about each event: the hook of tracing, none by default.

The engine knows no tracing library. An ``Engine`` made with ``observer=`` calls
``observer.event(name, event)`` as an event starts, ``trace.hook_done(run)`` after each sync
hook (a HOOK.md script or callable) finishes, and ``trace.finish(outcome, error)`` once, as the
event ends (``error`` set, ``outcome`` None, when firing raised). Without an observer the
engine does one ``is None`` test per event and nothing more.

``mcp_hooks.tracing`` implements it with OpenTelemetry (``serve --otel``). An observer must
not raise or block: it runs on the event's path (OpenTelemetry's batch processor only queues a
span there).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from mcp_hooks.spec.outcome import Event, HookRun, Outcome


class EventTrace(Protocol):
    """One event being observed."""

    def hook_done(self, run: HookRun) -> None:
        """A sync hook of the event finished (``run.duration_ms`` long, ending now)."""

    def finish(self, outcome: Outcome | None, error: BaseException | None) -> None:
        """The event ended: its outcome, or the error firing raised (then ``outcome`` is
        None)."""


class EventObserver(Protocol):
    """Told of every event an engine fires (``Engine(observer=...)``)."""

    def event(self, name: str, event: Event) -> EventTrace:
        """An event starts: ``name`` is its canonical name (``before_tool``, ...)."""


HookDone = Callable[[HookRun], Awaitable[None]]


def reporting(trace: EventTrace, then: HookDone | None) -> HookDone:
    """The engine's ``on_hook_done`` for an observed event: tell ``trace``, then ``then``."""

    async def done(run: HookRun) -> None:
        trace.hook_done(run)
        if then is not None:
            await then(run)

    return done


__all__ = ["EventObserver", "EventTrace", "HookDone", "reporting"]
