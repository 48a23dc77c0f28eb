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
