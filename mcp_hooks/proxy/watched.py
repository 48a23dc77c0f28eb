"""An HTTP or SSE transport's read stream, watched: it sets an event when it ends, so the
proxy notices a dropped upstream at once, not at its next call."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import anyio


class WatchedReadStream:
    """An HTTP/SSE transport's read stream that sets ``closed`` when it ends, so the proxy
    notices a dropped upstream at once, not at its next call."""

    def __init__(self, inner: Any, closed: anyio.Event) -> None:
        self._inner = inner
        self._closed = closed

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._closed.set()
            raise

    def __aiter__(self) -> WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except (StopAsyncIteration, anyio.ClosedResourceError):
            self._closed.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedReadStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self._closed.set()
        await self._inner.aclose()
        return None
