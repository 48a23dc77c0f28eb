"""``mcp-hooks serve --transport http`` for the forward path: ``served`` (its base URL),
``install_forward`` (a host's config pointing at the forward script), a host's recorded
payload (``payload``) and ``fake_listener``, a program on the port that is not the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import mcp_hooks
from tests.helpers.background import background

TOKEN = "correct-horse-battery-staple"


# run the server from the same source tree as this test process
SOURCE = str(Path(mcp_hooks.__file__).resolve().parent.parent)


def payload(host: str, name: str, project: Path) -> str:
    return (FIXTURES / host / f"{name}.json").read_text().replace("$PROJECT", str(project))


@contextmanager
def served(project: Path, user_dir: Path, log: Path, *extra: str) -> Iterator[str]:
    argv = [sys.executable, "-m", "mcp_hooks.cli", "serve", "--transport", "http", "--port",
            "0", "--project-dir", str(project), "--user-dir", str(user_dir), "--log", str(log),
            *extra]
    with background(argv, announce=r"serving \w+ at (http://\S+)/mcp",
                    env={**os.environ, "PYTHONPATH": SOURCE}, timeout=30) as server:
        yield server.url


def install_forward(base: str, project: Path, config: Path, token: str = TOKEN) -> str:
    subprocess.run(
        [sys.executable, "-m", "mcp_hooks.cli", "install", "claude-code", "--via", "server",
         "--url", base, "--token", token, "--event", "PreToolUse", "--config", str(config)],
        check=True, capture_output=True, cwd=project, env={**os.environ, "PYTHONPATH": SOURCE},
    )
    command: str = json.loads(config.read_text())["hooks"]["PreToolUse"][0]["hooks"][0][
        "command"]
    return command


@contextmanager
def fake_listener(body: bytes, headers: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on a port that answers every POST with ``body`` (say, "allow")."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's name
            seen.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


FIXTURES = Path(__file__).parents[1] / "fixtures" / "hosts"
