"""``state/url.py``: a store from its URL, each scheme to its backend, anything else refused
with the schemes named and no password shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_hooks.errors import ConfigError
from mcp_hooks.state.files import FileStore
from mcp_hooks.state.postgres import PostgresStore
from mcp_hooks.state.redis import RedisStore
from mcp_hooks.state.url import open_store, scheme


def test_each_scheme_opens_its_backend(redis_url: str, postgres_url: str,
                                       tmp_path: Path) -> None:
    assert isinstance(open_store("file:", root=tmp_path), FileStore)
    redis = open_store(redis_url, replica="r1")
    assert isinstance(redis, RedisStore) and redis.replica == "r1"
    postgres = open_store(postgres_url.replace("postgresql://", "postgres://", 1))
    assert isinstance(postgres, PostgresStore)
    redis.append("events", {"kind": "event", "session_id": "s"})
    assert [r["replica"] for r in redis.read("events", "s")] == ["r1"]
    postgres.close()
    redis.close()


@pytest.mark.parametrize("url", ["mysql://u:hunter22@db/x", "localhost:6379", "", "sqlite:x"])
def test_any_other_url_is_refused_naming_the_schemes(url: str) -> None:
    with pytest.raises(ConfigError, match="give file:, redis://") as refused:
        scheme(url)
    assert "hunter22" not in str(refused.value)


def test_ttls_come_from_the_url_and_reach_the_records(redis_url: str, postgres_url: str) -> None:
    sep = "&" if "?" in redis_url else "?"
    redis = open_store(f"{redis_url}{sep}event_ttl=2h&queue_ttl=90&signal_ttl=7d", replica="r")
    postgres = open_store(f"{postgres_url}{'&' if '?' in postgres_url else '?'}event_ttl=1d")
    try:
        assert isinstance(redis, RedisStore) and isinstance(postgres, PostgresStore)
        assert (redis.ttls.event, redis.ttls.queue, redis.ttls.signal) == (7200, 90, 7 * 86400)
        assert postgres.ttls.event == 86400 and postgres.ttls.queue == 86400  # the default
        redis.append("events", {"kind": "event", "session_id": "ttl"})
        stream = redis._stream("events", "ttl")  # the session's stream expires after event_ttl
        assert 7_000_000 < redis._redis.pttl(stream) <= 7_200_000
    finally:
        redis.close()
        postgres.close()


@pytest.mark.parametrize("value", ["soon", "-5", "0", "3w", "", "inf"])
def test_a_ttl_that_is_not_a_duration_is_refused_naming_it(value: str) -> None:
    with pytest.raises(ConfigError, match=r"event_ttl=.* is not a duration; give seconds") as bad:
        open_store(f"redis://:hunter22@127.0.0.1:1/0?event_ttl={value}")
    assert "hunter22" not in str(bad.value)
