"""A shared store behind a bad network path (``tests/helpers/tcpproxy.py`` in front of a real
Redis and PostgreSQL): a server that accepts a call and never answers is given up after the
call's deadline (``state/deadline.py``, Redis's socket timeout), counted as lost, and served
again on the first call once the path is back; a pooled connection is never reused across a
black hole."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from mcp_hooks.errors import ConfigError
from mcp_hooks.state.postgres import PostgresStore
from mcp_hooks.state.redis import RedisStore
from tests.helpers.bounded import bounded
from tests.helpers.tcpproxy import Proxy

HOUR = 3600.0


@pytest.fixture(params=["redis", "postgres"])
def behind(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Proxy]]:
    """A store of each kind (the session's server, this test's own prefix or schema),
    reached through a proxy."""
    kind: str = request.param
    url: str = request.getfixturevalue(f"{kind}_url")
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    with Proxy((parts.hostname, parts.port)) as proxy:
        factory = RedisStore if kind == "redis" else PostgresStore
        store = factory(proxy.url(url))
        yield store, proxy
        store.close()


def test_a_store_that_never_answers_is_lost_after_its_deadline_then_served_again(
        behind: tuple[Any, Proxy], capfd: pytest.CaptureFixture[str]) -> None:
    store, proxy = behind
    assert store.increment("stop", "s", ttl=HOUR) == 1
    proxy.blackhole()
    before = proxy.accepted
    # the call returns (counted in memory meanwhile), never waits for good
    assert bounded(lambda: store.increment("stop", "s", ttl=HOUR)) == 1
    assert store.health.lost is not None and "cannot be used" in store.health.lost
    assert "no answer within" in store.health.lost or "Timeout" in store.health.lost
    assert proxy.accepted - before <= 1, "a call that timed out was tried again"
    assert "a counter's increment failed" in capfd.readouterr().err

    proxy.restore()  # the dark connection was dropped: the next call connects again
    assert bounded(store.fault) is None  # what an event that can block asks first
    assert store.increment("stop", "s", ttl=HOUR) == 2  # the store's count: 1 reached it
    assert store.count("stop", "s", ttl=HOUR) == 2


def test_a_store_that_is_slow_but_answers_is_served(behind: tuple[Any, Proxy]) -> None:
    store, proxy = behind
    proxy.lag(0.2)  # below every deadline: slow is not lost
    assert store.increment("stop", "s", ttl=HOUR) == 1
    store.append("events", {"kind": "event", "session_id": "s"})
    assert [r["kind"] for r in store.read("events", "s")] == ["event"]
    assert store.health.lost is None


@pytest.mark.parametrize("factory", [RedisStore, PostgresStore])
@pytest.mark.parametrize(("given", "said"), [("abc", "is not a duration"),
                                             ("2h", "over 60 minutes")])
def test_a_timeout_that_is_not_one_is_a_usage_error_naming_it(
        factory: Any, given: str, said: str) -> None:
    scheme = "redis" if factory is RedisStore else "postgresql"
    with pytest.raises(ConfigError, match=said) as failed:
        factory(f"{scheme}://u:pw@127.0.0.1:1/db?timeout={given}")
    assert f"timeout={given!r}" in str(failed.value) and ":pw@" not in str(failed.value)


def test_an_async_hook_s_aid_is_queued_even_right_after_a_timeout(
        behind: tuple[Any, Proxy]) -> None:
    """For a few seconds after a call timed out, the calls an event makes take their fallback
    at once (remote.HOLD); queueing an async hook's aid is not one of them (no event waits on
    it, and held it would be lost): the next event of the session takes it."""
    store, proxy = behind
    proxy.blackhole()
    bounded(lambda: store.increment("stop", "s", ttl=HOUR))  # times out: the store is lost
    proxy.restore()
    store.put("s", [{"aid": "advice"}])  # well within HOLD of the timeout
    assert bounded(store.fault) is None  # what the next event that can block asks first
    assert store.take_all("s") == [{"aid": "advice"}]
