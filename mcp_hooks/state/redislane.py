"""The Redis store's asyncio side (``lane.Lane``): a ``redis.asyncio`` client made on the
serving loop with the sync client's URL and options, the same Lua scripts, and a face of it
that ``redis.py``'s sync code calls as it calls the sync client (``bridge.wait`` on each
reply). Made by ``RedisStore.lane``, closed with the engine that made it.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Any

from mcp_hooks.state.bridge import wait
from mcp_hooks.state.lane import Lane
from mcp_hooks.state.redislua import SCRIPTS
from mcp_hooks.state.remote import require


class RedisLane(Lane):
    """``store``'s asyncio client on the running loop (``url`` and ``options`` as the sync
    client's)."""

    def __init__(self, store: object, url: str, options: dict[str, Any]) -> None:
        super().__init__(store)
        asyncio_redis = require("redis.asyncio", "redis", "the redis client",
                                "the Redis state store")
        self.client: Any = asyncio_redis.Redis.from_url(url, **options, **_checked())
        self._scripts = {text: self.client.register_script(text) for text in SCRIPTS}
        self.redis = _Face(self.client)

    def eval(self, script: str, keys: list[Any], args: list[Any]) -> Any:
        return wait(self._scripts[script](keys=keys, args=args))

    async def aclose(self) -> None:
        await self.client.aclose()


class _Face:
    """The asyncio client as ``redis.py`` calls the sync one: each command's reply waited
    for (``bridge.wait``)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        command = getattr(self._client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return wait(command(*args, **kwargs))
        return call

    def pipeline(self, transaction: bool = True) -> _Pipe:
        return _Pipe(self._client.pipeline(transaction=transaction))

    def scan_iter(self, **options: Any) -> Iterator[Any]:
        return iter(wait(_collect(self._client.scan_iter(**options))))


class _Pipe:
    """An asyncio pipeline as ``with client.pipeline() as pipe`` uses a sync one: commands
    queued as they are called, ``execute`` waited for."""

    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe

    def __enter__(self) -> _Pipe:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        wait(self._pipe.reset())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)  # a queued command answers the pipeline itself

    def execute(self) -> Any:
        return wait(self._pipe.execute())


def _checked() -> dict[str, Any]:
    """The option that keeps redis.asyncio's check of a pooled connection before each use
    (one the server closed, a restart, is replaced, not used): redis 7+ skips that check
    while it listens for a managed server's maintenance notices, on by default ("auto")."""
    try:
        notices = importlib.import_module("redis.maint_notifications")
    except ImportError:  # an older redis: no notices, the check always made
        return {}
    return {"maint_notifications_config": notices.MaintNotificationsConfig(enabled=False)}


async def _collect(found: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in found]


__all__ = ["RedisLane"]
