"""What the shared backends (``state/redis.py``, ``state/postgres.py``) do beyond the contract:
a store that cannot be reached or is lost mid-use (the URL named, its password never), a
missing extra, the records' ``replica``, expiry of queued aid, key prefixes that keep two
deployments apart on one Redis, and a schema migrated once by racing processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mcp_hooks.errors import MissingExtraError, install_command
from mcp_hooks.state.postgres import PostgresStore, versions
from mcp_hooks.state.redis import RedisStore
from mcp_hooks.state.remote import Ttls, redact
from mcp_hooks.state.store import StateStore, StateUnavailable
from tests.helpers import servers

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cret-Pa55"
HOUR = 3600.0
Factory = Callable[..., StateStore]


def _stores(redis_url: str, postgres_url: str) -> dict[str, tuple[Factory, str]]:
    return {"redis": (RedisStore, redis_url), "postgres": (PostgresStore, postgres_url)}


def test_redact_hides_only_the_password() -> None:
    assert redact(f"redis://:{SECRET}@10.0.0.5:6380/2?prefix=a:") \
        == "redis://:***@10.0.0.5:6380/2?prefix=a:"
    assert redact(f"postgresql://app:{SECRET}@db.internal/hooks") \
        == "postgresql://app:***@db.internal/hooks"
    assert redact("postgresql://app@db/hooks") == "postgresql://app@db/hooks"
    assert redact(f"redis://10.0.0.5/0?password={SECRET}&prefix=a") \
        == "redis://10.0.0.5/0?password=***&prefix=a"


def test_a_redis_that_accepts_but_never_answers_is_given_up_not_waited_on() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        with pytest.raises(StateUnavailable, match="Timeout") as failed:
            RedisStore(f"redis://:{SECRET}@127.0.0.1:{port}/0")  # TIMEOUT (2 s), not forever
    assert SECRET not in str(failed.value)


def test_postgres_keeps_the_urls_options_and_adds_a_statement_timeout(
        postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    with store._pool.connection() as conn:
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "5s"
        assert conn.execute("SELECT current_schema()").fetchone()[0] \
            == postgres_url.rsplit("%3D", 1)[1]
    store.close()


@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_a_store_nobody_listens_on_names_the_url_and_the_fix_not_the_password(
        kind: str) -> None:
    port = servers.free_port()  # nothing listens there
    url = {"redis": f"redis://:{SECRET}@127.0.0.1:{port}/0",
           "postgres": f"postgresql://app:{SECRET}@127.0.0.1:{port}/hooks"}[kind]
    factory: Factory = RedisStore if kind == "redis" else PostgresStore
    with pytest.raises(StateUnavailable) as failed:
        factory(url)
    message = str(failed.value)
    assert SECRET not in message
    assert redact(url) in message and f"127.0.0.1:{port}" in message
    assert "Start it, or point --state (MCP_HOOKS_STATE)" in message


def test_a_wrong_postgres_password_is_named_without_either_password(
        postgres_service: servers.Server | None, postgres_url: str) -> None:
    assert postgres_service is not None
    wrong = postgres_url.replace(postgres_service.password, SECRET)
    with pytest.raises(StateUnavailable, match="password authentication failed") as failed:
        PostgresStore(wrong)
    assert SECRET not in str(failed.value) and postgres_service.password not in str(failed.value)
    assert "refused these credentials" in str(failed.value)
    assert "Start it" not in str(failed.value)  # it runs: starting it is not the fix


def test_a_wrong_redis_password_is_refused_without_either_password(
        redis_service: servers.Server | None, redis_url: str) -> None:
    assert redis_service is not None
    with pytest.raises(StateUnavailable) as failed:
        RedisStore(redis_url.replace(redis_service.password, SECRET))
    assert SECRET not in str(failed.value) and redis_service.password not in str(failed.value)
    assert "redis://:***@127.0.0.1" in str(failed.value)
    assert "refused these credentials" in str(failed.value)
    assert "Start it" not in str(failed.value)


@pytest.mark.parametrize(("module", "factory", "url"), [
    ("redis", RedisStore, "redis://127.0.0.1:1/0"),
    ("psycopg", PostgresStore, "postgresql://127.0.0.1:1/x"),
])
def test_a_missing_client_names_the_extra_to_install(
        monkeypatch: pytest.MonkeyPatch, module: str, factory: Factory, url: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails: not installed
    extra = "redis" if module == "redis" else "postgres"
    with pytest.raises(MissingExtraError) as missing:
        factory(url)
    assert install_command(extra) in str(missing.value) and f"[{extra}]" in str(missing.value)


@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_a_store_lost_mid_use_counts_from_zero_loses_writes_quietly_and_refuses_answers(
        kind: str, capfd: pytest.CaptureFixture[str]) -> None:
    start = servers.redis_server if kind == "redis" else servers.postgres_server
    factory: Factory = RedisStore if kind == "redis" else PostgresStore
    with start() as server:
        store: Any = factory(server.url)
        assert store.increment("stop", "s", ttl=HOUR) == 1
        store.append("signals", {"kind": "signal", "signal_id": "x", "session_id": "s"})
    # the server is gone: the never-raising operations degrade as the contract says
    assert store.increment("stop", "s", ttl=HOUR) == 1  # counted from 0 in memory meanwhile
    assert store.count("stop", "s", ttl=HOUR) == 1
    assert store.increment("stop", "s", ttl=HOUR) == 2  # so the loop guard still reaches its cap
    store.reset("stop", "s")
    assert store.count("stop", "s", ttl=HOUR) == 0
    store.append("events", {"kind": "event", "session_id": "s"})
    store.put("s", [{"n": 1}])
    assert store.take_all("s") == []
    with pytest.raises(StateUnavailable, match="answer again once the store is back"):
        store.answer_once("x", "acknowledge", lambda sent: {"action": "acknowledge"})
    with pytest.raises(StateUnavailable):
        list(store.read("events"))
    err = capfd.readouterr().err
    assert err.count("mcp-hooks: state store") == 1  # reported once, not once per write
    assert server.password not in err and "***" in err
    store.close()


@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_records_carry_the_replica_that_wrote_them(
        kind: str, redis_url: str, postgres_url: str) -> None:
    factory, url = _stores(redis_url, postgres_url)[kind]
    a, b = factory(url, replica="a:1"), factory(url, replica="b:2")
    a.append("events", {"kind": "event", "session_id": "s"})
    a.append("signals", {"kind": "signal", "signal_id": "sig", "session_id": "s"})
    answer = b.answer_once("sig", "acknowledge",
                           lambda sent: {"kind": "response", "action": "acknowledge",
                                         "signal_id": "sig", "session_id": "s"})
    assert answer["replica"] == "b:2"
    assert [r["replica"] for r in b.read("events", "s")] == ["a:1"]
    assert [r["replica"] for r in a.read("signals", "s")] == ["a:1", "b:2"]


@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_queued_aid_expires_after_its_ttl(kind: str, redis_url: str, postgres_url: str) -> None:
    factory, url = _stores(redis_url, postgres_url)[kind]
    store = factory(url, ttls=Ttls(queue=0.3))
    store.put("s", [{"n": 1}])
    time.sleep(1.2)
    assert store.take_all("s") == []
    store.put("s", [{"n": 2}])
    assert store.take_all("s") == [{"n": 2}]


def test_two_prefixes_on_one_redis_share_nothing(redis_url: str) -> None:
    base = redis_url.split("?")[0]
    one, two = RedisStore(f"{base}?prefix=one:"), RedisStore(f"{base}?prefix=two:")
    for store in (one, two):
        store.reset("stop")
    one.increment("stop", "s", ttl=HOUR)
    one.put("s", [{"n": 1}])
    assert two.count("stop", "s", ttl=HOUR) == 0
    assert two.take_all("s") == []
    two.reset("stop")
    assert one.count("stop", "s", ttl=HOUR) == 1


def test_eight_stores_starting_together_migrate_the_schema_once(postgres_url: str) -> None:
    failures: list[BaseException] = []

    def start() -> None:
        try:
            PostgresStore(postgres_url).close()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT version FROM mcp_hooks_migrations ORDER BY version"
                            ).fetchall()
    assert [r[0] for r in rows] == sorted(versions())


@pytest.mark.parametrize(("ci", "outcome"), [("", "1 skipped"), ("true", "1 failed")])
def test_a_missing_server_skips_with_the_reason_but_fails_under_ci(
        tmp_path: Path, ci: str, outcome: str) -> None:
    test = tmp_path / "test_missing.py"
    test.write_text("from tests.helpers import servers\n\n"
                    "def test_needs_a_server():\n"
                    "    servers._missing('redis-server is not installed (apt-get ...)')\n")
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:randomly",
                          "-p", "no:cacheprovider", str(test)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert outcome in run.stdout, run.stdout + run.stderr
    assert "redis-server is not installed (apt-get ...)" in run.stdout
    if ci:
        assert "CI must run the state backends' tests" in run.stdout


def test_a_migration_missing_below_a_later_one_is_applied_when_it_comes(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Migration 5 (the asks) applied on a database without 4 (another branch's): a later
    release that brings 4 applies it then, though 5 is above it."""
    from mcp_hooks.state import postgres

    gaps = sorted(set(range(1, max(versions()))) - set(versions()))
    if not gaps:
        pytest.skip("no version is missing below the highest one now")
    PostgresStore(postgres_url).close()
    monkeypatch.setitem(postgres.NUMBERED, gaps[0], "CREATE TABLE late_four (x int)")
    PostgresStore(postgres_url).close()
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT version FROM mcp_hooks_migrations ORDER BY version"
                            ).fetchall()
        assert gaps[0] in [r[0] for r in rows]
        conn.execute("SELECT x FROM late_four")
