"""``state/url.py``: a store from its URL, each scheme to its backend, anything else refused
with the schemes named and no password shown."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_hooks.errors import ConfigError
from mcp_hooks.state.files import FileStore
from mcp_hooks.state.postgres import PostgresStore
from mcp_hooks.state.redis import RedisStore
from mcp_hooks.state.remote import redact
from mcp_hooks.state.url import check_port, open_store, scheme


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


@pytest.mark.parametrize("query", ["event_ttl=1e308", "seen_ttl=1e300", "signal_ttl=3651d",
                                   "queue_ttl=0.5"])
def test_a_ttl_out_of_range_is_a_usage_error_at_start(query: str) -> None:
    """1e308 seconds passed as a duration, then overflowed the store's milliseconds (Redis)
    or interval (PostgreSQL) on the first write: a crash, or a log silently dropped."""
    name = query.split("=")[0]
    with pytest.raises(ConfigError, match=rf"{name}=.* is out of range; give a duration from "
                                          r"1s to 3650d"):
        open_store(f"redis://:hunter22@127.0.0.1:1/0?{query}")
    run = subprocess.run(["mcp-hooks", "log", "--state",
                          f"postgresql://u:hunter22@127.0.0.1:1/db?{query}"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 64 and f"{name}=" in run.stderr and "Traceback" not in run.stderr
    assert "hunter22" not in run.stderr


@pytest.mark.parametrize("url", ["redis://:hunter22@127.0.0.1:abc/0",
                                 "postgresql://u:hunter22@127.0.0.1:99999/db",
                                 "rediss://:hunter22@[::1]:0/0"])
def test_a_port_that_is_not_a_port_is_a_usage_error_naming_it(url: str) -> None:
    """A non-numeric port made the redactor raise ValueError: a traceback with the password."""
    assert "hunter22" not in redact(url) and "***" in redact(url)
    run = subprocess.run(["mcp-hooks", "log", "--state", url], capture_output=True, text=True,
                         timeout=120)
    port = url.rsplit(":", 1)[1].split("/")[0]
    assert run.returncode == 64, run.stderr
    assert f"the port {port!r} is not a number from 1 to 65535; fix the URL" in run.stderr
    assert "hunter22" not in run.stderr and "Traceback" not in run.stderr


def test_libpq_several_hosts_are_left_to_libpq() -> None:
    check_port("postgresql://u@host1:5432,host2:5433/db")  # no error: libpq's syntax
