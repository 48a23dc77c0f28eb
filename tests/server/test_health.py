"""``GET /healthz`` and ``GET /readyz`` (``server/health.py``) on a real ``mcp-hooks serve
--transport http`` with a token, and on ``mcp-hooks proxy``: answered without the token, one
word and nothing else; ``/readyz`` follows a real Redis stopped and started under the server.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx2

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.replicas import serve_argv, serving, wait_for
from tests.helpers.restartable import restartable

HANG = 120.0  # seconds: only to stop a hang
TOKEN = "health-token"


def base(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def probe(url: str, path: str, method: str = "GET") -> tuple[int, str]:
    answer = httpx2.request(method, base(url) + path, timeout=HANG)
    assert answer.headers.get("cache-control") == "no-store" or answer.status_code == 401
    return answer.status_code, answer.text


def test_the_probes_need_no_token_and_say_one_word(project: Path, user_dir: Path) -> None:
    write_hook(user_dir, "no-rm", script="cat >/dev/null\nexit 0\n")
    env = {"MCP_HOOKS_TOKEN": TOKEN}
    with serving(serve_argv(project, user_dir, "--no-log"), env={**os.environ, **env}) as (srv, _):
        assert probe(srv.url, "/healthz") == (200, "ok\n")
        assert probe(srv.url, "/readyz") == (200, "ready\n")
        assert probe(srv.url, "/readyz", "HEAD")[0] == 200
        assert probe(srv.url, "/readyz", "POST")[0] == 401  # only GET and HEAD are probes
        assert probe(srv.url, "/healthz/x")[0] == 401  # the paths exactly
        assert probe(srv.url, "/mcp")[0] == 401  # the rest still needs the token


def test_readiness_follows_the_store(project: Path, user_dir: Path) -> None:
    """Ready with the store, ``503 not ready`` (the reason only in the server's log) while a
    real Redis is stopped, ready again once it is back, with no restart."""
    write_hook(user_dir, "no-rm", script="cat >/dev/null\nexit 0\n")
    with restartable("redis") as store, serving(
            serve_argv(project, user_dir, "--state", store.url, "--token", TOKEN),
            env=dict(os.environ)) as (srv, _):
        assert probe(srv.url, "/readyz") == (200, "ready\n")
        store.stop()
        assert probe(srv.url, "/readyz") == (503, "not ready\n")
        assert probe(srv.url, "/healthz") == (200, "ok\n")  # alive all the same
        store.start()
        wait_for("ready again", lambda: probe(srv.url, "/readyz") == (200, "ready\n"))
    password = urlsplit(store.url).password
    assert password is None or password not in "".join(srv.lines.queue)


def test_the_proxy_answers_the_probes(project: Path, user_dir: Path, tmp_path: Path) -> None:
    upstream = tmp_path / "upstream.py"
    upstream.write_text("from mcp.server import MCPServer\n"
                        "server = MCPServer('up')\n"
                        "@server.tool()\ndef ping() -> str:\n    return 'pong'\n"
                        "server.run()\n", encoding="utf-8")
    argv = [MCP_HOOKS, "proxy", "--transport", "http", "--port", "0", "--token", TOKEN,
            "--user-dir", str(user_dir), "--project-dir", str(project), "--no-log",
            "--upstream", f"up={shlex.join([sys.executable, str(upstream)])}"]
    with serving(argv, env=dict(os.environ)) as (srv, _):
        assert probe(srv.url, "/healthz") == (200, "ok\n")
        assert probe(srv.url, "/readyz") == (200, "ready\n")
        assert probe(srv.url, "/mcp")[0] == 401
