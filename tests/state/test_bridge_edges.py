"""The asyncio store path's edges (``state/bridge.py``, ``engine/offloop.py``'s
``LaneCaller``) against a real Redis: sixteen sessions at once, each answered with its own
value; an error of any kind (a ``BaseException`` too) raised by the store's code comes out as
itself, and the lane still serves the next call; the event's task cancelled while its call
waits on the store leaves the lane usable; a wait outside ``bridge.run`` names the fix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from mcp_hooks.engine.offloop import LaneCaller
from mcp_hooks.state import bridge
from mcp_hooks.state.url import close_store, store_for
from tests.helpers.servers import redis_service, redis_url  # noqa: F401 - fixtures

HANG = 60.0  # seconds: only a hang gets there
TTL = 600.0


class OwnBaseException(BaseException):
    """A store callback's own ``BaseException`` subclass (not an ``Exception``)."""


@pytest.fixture
def store(redis_url: str) -> Any:  # noqa: F811 - fixture
    opened = store_for(redis_url, None, "edges")
    yield opened
    close_store(opened)


@pytest.mark.anyio
async def test_sixteen_sessions_at_once_each_get_their_own_answer(store: Any) -> None:
    caller = LaneCaller(store)
    answers: dict[str, list[int]] = {}

    async def session(name: str) -> None:
        for _ in range(5):
            count = await caller(lambda: store.increment("edges", name, ttl=TTL), name)
            answers.setdefault(name, []).append(count)

    try:
        with anyio.fail_after(HANG):
            async with anyio.create_task_group() as tg:
                for i in range(16):
                    tg.start_soon(session, f"s{i}")
        assert caller._lane is not None  # the calls ran on the asyncio client (bridge.run)
    finally:
        await caller.aclose()
    assert answers == {f"s{i}": [1, 2, 3, 4, 5] for i in range(16)}


def _raising(error: BaseException, store: Any) -> Callable[[], Any]:
    def work() -> Any:
        store.count("edges", "before-raise", ttl=TTL)  # a real wait on the store first
        raise error
    return work


@pytest.mark.anyio
@pytest.mark.parametrize("error", [ValueError("store code broke"), KeyboardInterrupt(),
                                   OwnBaseException("its own"), SystemExit(3)],
                         ids=["ValueError", "KeyboardInterrupt", "own-BaseException",
                              "SystemExit"])
async def test_an_error_of_the_store_s_code_comes_out_as_itself(store: Any,
                                                                error: BaseException) -> None:
    caller = LaneCaller(store)
    try:
        with anyio.fail_after(HANG):
            with pytest.raises(type(error)) as raised:
                await caller(_raising(error, store), "raiser")
            assert raised.value is error
            # the lane serves the next call (the greenlet that raised is gone, not stuck)
            assert await caller(lambda: store.increment("edges", "after", ttl=TTL),
                                "after") == 1
    finally:
        await caller.aclose()


@pytest.mark.anyio
async def test_a_call_cancelled_while_it_waits_leaves_the_lane_usable(store: Any) -> None:
    caller = LaneCaller(store)
    started = anyio.Event()

    def slow() -> Any:
        started.set()
        bridge.wait(anyio.sleep(HANG))  # waits on the loop, as a slow store reply would
        return "never"

    try:
        with anyio.fail_after(HANG):
            async with anyio.create_task_group() as tg:
                async def run_slow() -> None:
                    await caller(slow, "slow")
                tg.start_soon(run_slow)
                await started.wait()
                tg.cancel_scope.cancel()  # the event's task is cancelled mid-wait
            assert await caller(lambda: store.increment("edges", "next", ttl=TTL),
                                "next") == 1
    finally:
        await caller.aclose()


def test_a_wait_outside_the_bridge_names_the_fix() -> None:
    async def nothing() -> None:
        return None

    step = nothing()
    try:
        with pytest.raises(RuntimeError, match=r"outside state\.bridge\.run"):
            bridge.wait(step)
    finally:
        step.close()
