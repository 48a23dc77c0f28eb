"""A Redis or PostgreSQL server a test can stop and start again on the same port.

``restartable("redis")`` / ``restartable("postgres")``: a server of its own (never the
session's shared one: it goes away mid-test), started by ``tests/helpers/servers.py``, with
``stop()`` (the process ends: every connection is refused) and ``start()`` (on the same port
and password; Redis starts empty, PostgreSQL keeps its data folder).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from tests.helpers.servers import (
    START_TIMEOUT,
    Server,
    ServerMissing,
    _missing,
    fresh_postgres_url,
    fresh_redis_url,
    postgres_bin,
    postgres_server,
    redis_server,
)


@dataclass
class Restartable:
    kind: str
    server: Server
    url: str
    _redis: subprocess.Popen[bytes] | None = field(default=None)

    def stop(self) -> None:
        if self.kind == "redis":
            _shutdown(self.server.url, self.server.port)
            return
        self._pg_ctl("stop", "-m", "fast")

    def start(self) -> None:
        if self.kind == "redis":
            binary = shutil.which("redis-server") or "/usr/bin/redis-server"
            self._redis = subprocess.Popen(
                [binary, "--port", str(self.server.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--requirepass", self.server.password,
                 "--daemonize", "no", "--logfile", str(self.server.log.with_suffix(".2.log"))],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _wait_port(self.server.port)
            return
        folder = self.server.log.parent
        options = (f"-p {self.server.port} -k {folder} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c max_connections=200")
        self._pg_ctl("start", "-l", str(self.server.log), "-o", options,
                     "-t", str(int(START_TIMEOUT)))

    def _pg_ctl(self, *args: str) -> None:
        user = "postgres" if os.geteuid() == 0 else None
        subprocess.run([str(postgres_bin() / "pg_ctl"), "-D", str(self.server.log.parent /
                                                                   "data"), "-w", *args],
                       check=True, user=user, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=START_TIMEOUT)

    def close(self) -> None:
        if self._redis is not None and self._redis.poll() is None:
            self._redis.kill()
            self._redis.wait()


def _shutdown(url: str, port: int) -> None:
    """Stop the Redis at ``url`` (``SHUTDOWN NOSAVE``: the server ends) and wait until the
    port refuses connections."""
    import redis

    with contextlib.suppress(redis.ConnectionError):  # it goes away before it answers
        redis.Redis.from_url(url.partition("?")[0]).shutdown(nosave=True)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if not _listening(port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"redis-server on port {port} did not stop")


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _wait_port(port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if _listening(port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


@contextlib.contextmanager
def restartable(kind: str) -> Iterator[Restartable]:
    """A fresh server of ``kind`` (``redis`` or ``postgres``) this test may stop and start."""
    try:
        context = redis_server() if kind == "redis" else postgres_server()
        with context as server:
            url = fresh_redis_url(server) if kind == "redis" else fresh_postgres_url(server)
            store = Restartable(kind, server, url)
            try:
                yield store
            finally:
                store.close()
    except ServerMissing as exc:
        _missing(str(exc))


__all__ = ["Restartable", "restartable"]
