"""Real Redis and PostgreSQL servers for the state backends' tests and benchmarks.

Each is started from the Debian packages (``redis-server``; ``initdb`` + ``pg_ctl`` from
``/usr/lib/postgresql/*/bin``) into a fresh temporary folder, listening on a free loopback
port the kernel picked (tried again on another port when a process beside us took it first),
with a random password, and stopped when its owner is done. Nothing here is shared between
processes: under pytest-xdist each worker starts its own, and a second ``make test`` beside
this one starts its own too. Tests share one server per worker and stay apart by a fresh key
prefix (Redis) or a fresh schema (PostgreSQL) each.

:func:`redis_server` and :func:`postgres_server` are context managers usable outside pytest
(``bench/bench_store.py``); they raise :class:`ServerMissing` when the binaries are not
installed, which the fixtures turn into a skip saying why, or a failure under ``CI=true``
(``.ci/run`` installs both: CI never skips them).
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

# imported now, before a test's home guard is up (psycopg's import reads the home folder
# through sysconfig); None where the dev extras are not installed
try:
    import psycopg
except ImportError:  # pragma: no cover - the dev extras install it
    psycopg = None  # type: ignore[assignment]
try:
    import redis
except ImportError:  # pragma: no cover
    redis = None  # type: ignore[assignment]

INSTALL = "apt-get install -y redis-server postgresql"  # what .ci/run runs when one is missing
START_TIMEOUT = 120.0  # seconds a server may take to start on a loaded machine (stops a hang)
ATTEMPTS = 5  # ports tried when another process takes the one we picked


class ServerMissing(Exception):
    """The server's binaries are not installed here (the message says how to install them)."""


@dataclass(frozen=True)
class Server:
    """A running server: its URL (with the password), and the parts of it."""

    url: str
    host: str
    port: int
    password: str
    log: Path


def free_port() -> int:
    """A loopback TCP port the kernel had free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_line(proc: subprocess.Popen[bytes], log: Path, ready: str) -> bool:
    """True once ``ready`` is in ``log``; False when the process ended first."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError):
            if ready in log.read_text(errors="replace"):
                return True
        if proc.poll() is not None:
            return False
        time.sleep(0.02)
    proc.kill()
    raise RuntimeError(f"{proc.args!r} did not start within {START_TIMEOUT:.0f} s; see {log}")


@contextlib.contextmanager
def redis_server(*, password: bool = True) -> Iterator[Server]:
    """A ``redis-server`` on a free loopback port, with a password (``password=False``: none,
    open to anyone who reaches it, as a careless deploy leaves it) and no persistence."""
    binary = shutil.which("redis-server") or next(
        (p for p in ("/usr/bin/redis-server", "/usr/sbin/redis-server") if os.access(p, os.X_OK)),
        None)
    if binary is None:
        raise ServerMissing(f"redis-server is not installed ({INSTALL})")
    folder = Path(tempfile.mkdtemp(prefix="mcp-hooks-redis-"))
    secret = secrets.token_hex(12) if password else ""
    try:
        for attempt in range(ATTEMPTS):
            port = free_port()
            log = folder / f"redis-{attempt}.log"
            proc = subprocess.Popen(
                [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(folder), "--logfile", str(log),
                 *(["--requirepass", secret] if secret else []), "--daemonize", "no"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                if _wait_for_line(proc, log, "Ready to accept connections"):
                    auth = f":{secret}@" if secret else ""
                    yield Server(f"redis://{auth}127.0.0.1:{port}/0", "127.0.0.1", port,
                                 secret, log)
                    return
            finally:
                if proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
        raise RuntimeError(f"redis-server did not start on any of {ATTEMPTS} ports; see {folder}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def postgres_bin() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb and pg_ctl."""
    found = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin")
             if os.access(Path(p) / "initdb", os.X_OK) and os.access(Path(p) / "pg_ctl", os.X_OK)]
    if not found:
        raise ServerMissing(f"PostgreSQL is not installed: no /usr/lib/postgresql/*/bin/initdb "
                            f"({INSTALL})")
    return max(found, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)


@contextlib.contextmanager
def postgres_server() -> Iterator[Server]:
    """A PostgreSQL cluster made by ``initdb`` in a temporary folder, started by ``pg_ctl`` on
    a free loopback port; user ``mcphooks`` with a random password (scram-sha-256), database
    ``mcphooks``. As root, initdb and the server run as the ``postgres`` user (PostgreSQL
    refuses root)."""
    bindir = postgres_bin()
    user: str | None = None
    if os.geteuid() == 0:
        try:
            import pwd
            pwd.getpwnam("postgres")
        except KeyError as exc:
            raise ServerMissing("running as root and there is no 'postgres' user to run "
                                "PostgreSQL as (initdb refuses root)") from exc
        user = "postgres"
    # as root, the folder must be reachable by postgres: a fresh one right under the system temp
    folder = Path(tempfile.mkdtemp(prefix="mcp-hooks-pg-", dir="/tmp" if user else None))
    password = secrets.token_hex(12)
    data = folder / "data"
    try:
        if user:
            shutil.chown(folder, user)
        pwfile = folder / "pw"
        pwfile.write_text(password + "\n")
        if user:
            shutil.chown(pwfile, user)
        subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", "mcphooks", "--pwfile", str(pwfile),
             "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--no-sync",
             "--locale=C"],
            check=True, user=user, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, timeout=START_TIMEOUT)
        for attempt in range(ATTEMPTS):
            port = free_port()
            log = folder / f"pg-{attempt}.log"
            options = (f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                       f"-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
            started = subprocess.run(
                [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w",
                 "-t", str(int(START_TIMEOUT)), "start"],
                user=user, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, timeout=START_TIMEOUT + 30)
            if started.returncode != 0:
                continue  # the port was taken between free_port() and the bind: another one
            try:
                _create_database(bindir, folder, port, user)
                yield Server(f"postgresql://mcphooks:{quote(password, safe='')}@127.0.0.1:{port}"
                             f"/mcphooks", "127.0.0.1", port, password, log)
                return
            finally:
                subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                                "-w", "stop"], user=user, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=START_TIMEOUT)
        raise RuntimeError(f"PostgreSQL did not start on any of {ATTEMPTS} ports; see {folder}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _create_database(bindir: Path, sockets: Path, port: int, user: str | None) -> None:
    psql = bindir / "psql"
    if not os.access(psql, os.X_OK):
        psql = Path(shutil.which("psql") or "psql")
    subprocess.run([str(psql), "-h", str(sockets), "-p", str(port), "-U", "mcphooks", "-d",
                    "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c", "CREATE DATABASE mcphooks"],
                   check=True, user=user, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=START_TIMEOUT)


def fresh_redis_url(server: Server) -> str:
    """The server's URL with a key prefix no other test uses."""
    return f"{server.url}?prefix=t{secrets.token_hex(6)}:"


def fresh_postgres_url(server: Server) -> str:
    """The server's URL with a search path set to a fresh schema (created here) no other test
    uses, so each test's tables start empty."""
    schema = f"t{secrets.token_hex(6)}"
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{server.url}?options=-csearch_path%3D{schema}"


# -- pytest fixtures (tests/state/conftest.py imports them) ----------------------------------

def _missing(reason: str) -> None:
    """Skip saying why; under CI=true fail instead (.ci/run installs both servers)."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason}; CI must run the state backends' tests", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def redis_service() -> Iterator[Server | None]:
    """One ``redis-server`` per test process (None when it is not installed)."""
    try:
        with redis_server() as server:
            yield server
    except ServerMissing as exc:
        _MISSING["redis"] = str(exc)
        yield None


@pytest.fixture(scope="session")
def postgres_service() -> Iterator[Server | None]:
    """One PostgreSQL cluster per test process (None when it is not installed)."""
    try:
        with postgres_server() as server:
            yield server
    except ServerMissing as exc:
        _MISSING["postgres"] = str(exc)
        yield None


_MISSING: dict[str, str] = {}


@pytest.fixture
def redis_url(redis_service: Server | None) -> str:
    """A Redis URL with this test's own key prefix."""
    if redis_service is None:
        _missing(_MISSING.get("redis", "redis-server is not installed"))
    assert redis_service is not None
    return fresh_redis_url(redis_service)


@pytest.fixture
def postgres_url(postgres_service: Server | None) -> str:
    """A PostgreSQL URL whose search path is this test's own fresh schema."""
    if postgres_service is None:
        _missing(_MISSING.get("postgres", "PostgreSQL is not installed"))
    assert postgres_service is not None
    return fresh_postgres_url(postgres_service)
