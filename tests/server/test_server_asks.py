"""The asks over HTTP (``server/asks.py``) and the webhook notifier (``engine/webhook.py``),
with real processes: ``serve --transport http`` replicas on one Redis, a ``fire`` waiting on
an ask, answers over HTTP with and without the token, and a real HTTP listener taking the
webhook's posts."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.servers import redis_service, redis_url  # noqa: F401 - fixtures

ASKS = """cat >/dev/null
echo '{"decision": "ask", "reason": "deletes need a person"}'
"""
TOKEN = "t0ken-for-the-asks-test"
HANG = 60.0  # seconds that stop a hang only


def _fire(user_dir: Path, project: Path, *more: str, env: dict[str, str] | None = None
          ) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--session", "s1",
         "--input", '{"command": "rm -rf build"}', "--user-dir", str(user_dir),
         "--project-dir", str(project), "--json", "--no-server", *more],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "MCP_HOOKS_ASK_TIMEOUT": "90", **(env or {})})


def _call(base: str, path: str, body: dict[str, Any] | None = None,
          token: str | None = TOKEN) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data,
                                     method="GET" if body is None else "POST")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=HANG) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _base(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.fixture
def servers(user_dir: Path, project: Path, redis_url: str  # noqa: F811 - fixture
            ) -> Iterator[list[str]]:
    argv = [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--token", TOKEN,
            "--project-dir", str(project), "--user-dir", str(user_dir), "--state", redis_url]
    with background(argv) as one, background(argv) as two:
        yield [_base(one.url), _base(two.url)]


def _wait_asks(base: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        status, body = _call(base, "/asks")
        assert status == 200, body
        asks: list[dict[str, Any]] = json.loads(body)["asks"]
        if asks:
            return asks
        time.sleep(0.05)
    raise AssertionError("no ask became pending")


def test_an_ask_listed_on_one_replica_is_answered_on_the_other(
        user_dir: Path, project: Path, servers: list[str], redis_url: str  # noqa: F811
) -> None:
    write_hook(user_dir, "asker", script=ASKS)
    waiting = _fire(user_dir, project, "--state", redis_url)
    try:
        asks = _wait_asks(servers[0])
        ask_id = asks[0]["id"]
        assert asks[0]["tool_input"] == {"command": "rm -rf build"}
        assert _call(servers[1], "/asks", token=None)[0] == 401
        assert _call(servers[1], f"/asks/{ask_id}/approve", {}, token="wrong")[0] == 401
        assert _call(servers[1], f"/asks/{ask_id}/refuse", {})[0] == 400  # no reason
        status, body = _call(servers[1], f"/asks/{ask_id}/approve", {"by": "phone"})
        assert status == 200 and json.loads(body)["approved"] == ask_id
        out, err = waiting.communicate(timeout=HANG)
    finally:
        waiting.kill()
        waiting.wait()
    assert waiting.returncode == 0 and json.loads(out)["decision"] == "allow", err
    status, body = _call(servers[0], f"/asks/{ask_id}/refuse", {"reason": "late"})
    assert status == 409 and "already answered" in body
    assert _call(servers[0], "/asks/ask-0000000000/approve", {})[0] == 404


def test_no_token_no_ask_routes(user_dir: Path, project: Path) -> None:
    argv = [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--project-dir",
            str(project), "--user-dir", str(user_dir)]
    with background(argv) as server:
        assert _call(_base(server.url), "/asks", token=None)[0] == 404


class _Listener(http.server.BaseHTTPRequestHandler):
    posts: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length", "0"))
        _Listener.posts.append({"type": self.headers.get("Content-Type"),
                                "body": json.loads(self.rfile.read(size))})
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_the_webhook_gets_each_new_ask(user_dir: Path, project: Path) -> None:
    write_hook(user_dir, "asker", script=ASKS)
    listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Listener)
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    _Listener.posts.clear()
    try:
        url = f"http://127.0.0.1:{listener.server_address[1]}/hook"
        env = {"MCP_HOOKS_ASK_WEBHOOK": url, "MCP_HOOKS_ASK_TIMEOUT": "0"}
        proc = _fire(user_dir, project, env=env)
        out, err = proc.communicate(timeout=HANG)
    finally:
        listener.shutdown()
        listener.server_close()
    assert proc.returncode == 2, err
    ask_id = json.loads(out)["ask"]["id"]
    assert len(_Listener.posts) == 1
    post = _Listener.posts[0]
    assert post["type"] == "application/json"
    assert post["body"]["ask"]["id"] == ask_id
    assert post["body"]["ask"]["tool_input"] == {"command": "rm -rf build"}
    assert f"mcp-hooks approve {ask_id}" in post["body"]["text"]
    assert "deletes need a person" in post["body"]["text"]


def test_a_webhook_that_fails_is_said_and_the_ask_still_waits(
        user_dir: Path, project: Path) -> None:
    write_hook(user_dir, "asker", script=ASKS)
    proc = _fire(user_dir, project, env={"MCP_HOOKS_ASK_WEBHOOK": "http://127.0.0.1:9/none",
                                         "MCP_HOOKS_ASK_TIMEOUT": "0"})
    out, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 2
    assert "MCP_HOOKS_ASK_WEBHOOK" in err and "still waits" in err
    assert json.loads(out)["ask"]["id"]
