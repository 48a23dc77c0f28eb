"""The proxy's start: it serves at once, and its upstreams join as they come up.

What a caller may rely on:

- ``Startup.begin`` starts every upstream in the background and returns at once, so the proxy
  answers ``initialize`` without waiting for any upstream (hosts bound the handshake, some
  at 10 s, and an ``npx``/``uvx`` server on a cold cache takes longer than that).
- Before every listing, the upstreams that never came up are retried in the background (once
  their backoff has run out).
- **The listing window.** A listing (``tools/list``, ``prompts/list``, ``resources/list``,
  templates) in the first ``window`` seconds after ``begin`` waits for the upstreams still in
  their first start, until each is up or has failed, or the window closes: a host that lists
  once after ``initialize`` and ignores list-changed notices still sees every upstream that
  starts in time. After the window, and for the upstreams slower than it, a listing answers
  at once with the upstreams that are up; the others join later, announced to every client
  with ``notifications/*/list_changed`` (``Proxy.notify_changed``).
- **Calls wait for a start.** A request naming something no upstream lists yet (a tool, a
  prompt, a resource) while upstreams are starting waits (``await_known``) until one lists it
  or none is starting any more, at most ``startup_timeout``; then it is answered as usual (an
  unknown name stays unknown). A call to a listed tool of an upstream that is (re)starting
  waits in ``Upstream.request``, bounded by the call's timeout and the start's own bound.
- When the window closes with upstreams still starting, one warning each goes to stderr, and
  another when such an upstream is up at last. Throughout, ``hooks://proxy/status`` and the
  event log (``kind: proxy_upstream``) say which upstreams are ``starting`` (since when),
  ``ready`` or ``failed`` (with the reason).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence

import anyio
from anyio.abc import TaskGroup

from mcp_hooks.proxy.upstream import DEFAULT_STARTUP_TIMEOUT, Upstream

logger = logging.getLogger("mcp_hooks.proxy")

LISTING_WINDOW = 5.0  # seconds a listing may wait for upstreams in their first start


async def first_of(events: Sequence[anyio.Event]) -> None:
    """Return as soon as one of ``events`` is set."""
    async with anyio.create_task_group() as tg:
        async def one(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(one, event)


def _settled(upstream: Upstream) -> anyio.Event:
    # start() on a starting upstream changes nothing: it returns its attempt's event.
    return upstream.start()


class Startup:
    """When the proxy's requests wait for its upstreams (see the module's docstring).

    Args:
        upstreams: the proxy's upstreams (bound to a task group before ``begin``).
        window: seconds after ``begin`` during which listings wait for first starts.
        startup_timeout: the most a request waits for a name to appear.
    """

    def __init__(
        self,
        upstreams: Sequence[Upstream],
        *,
        window: float = LISTING_WINDOW,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    ) -> None:
        self.upstreams = list(upstreams)
        self.window = window
        self.startup_timeout = startup_timeout
        self.window_end = -math.inf  # before begin(): listings never wait
        self._rebuilt = anyio.Event()

    def begin(self, tg: TaskGroup | None = None) -> None:
        """Start every upstream (in the background) and open the listing window; ``tg`` runs
        the warnings about upstreams still starting when it closes."""
        for upstream in self.upstreams:
            upstream.start()
        self.window_end = anyio.current_time() + self.window
        if tg is not None:
            tg.start_soon(self._warn_late)

    def starting(self, *, first: bool = False) -> list[Upstream]:
        """The upstreams still starting (``first``: in their first start only)."""
        return [u for u in self.upstreams
                if u.state == "starting" and (u.starts <= 1 or not first)]

    def rebuilt(self) -> None:
        """The catalog was rebuilt: wake the requests waiting for a name."""
        self._rebuilt.set()
        self._rebuilt = anyio.Event()

    async def before_listing(self) -> None:
        """Retry, in the background, the upstreams that never came up (once their backoff ran
        out; dead ones that listed tools start again on their next call); then, inside the
        listing window, wait for the upstreams in their first start."""
        now = time.monotonic()
        for upstream in self.upstreams:
            if upstream.state == "failed" and not upstream.listing.tools \
                    and upstream.next_attempt <= now:
                upstream.start()
        with anyio.move_on_at(self.window_end):
            for upstream in self.starting(first=True):
                await _settled(upstream).wait()

    async def await_known(self, known: Callable[[], bool]) -> None:
        """Wait until ``known()`` holds or no upstream is starting (at most
        ``startup_timeout``)."""
        with anyio.move_on_after(self.startup_timeout):
            while not known():
                starting = self.starting()
                if not starting:
                    return
                await first_of([self._rebuilt, *(_settled(u) for u in starting)])

    async def _warn_late(self) -> None:
        await anyio.sleep_until(self.window_end)
        late = self.starting()
        for upstream in late:
            logger.warning("upstream %s is still starting (since %s); the proxy serves the "
                           "others, and its tools join with a list-changed notification "
                           "when it is up (see hooks://proxy/status)", upstream.name,
                           upstream.since)
        for upstream in late:
            await _settled(upstream).wait()
            if upstream.state == "ready":
                logger.warning("upstream %s is up: its tools have joined", upstream.name)
