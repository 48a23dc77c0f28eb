"""``serving``: ``mcp-hooks serve`` over HTTP on a shared store (Redis or PostgreSQL) that the
test can cut, with an SDK client connected to it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import Client

from tests.conftest import MCP_HOOKS
from tests.helpers.background import background


@asynccontextmanager
async def serving(url: str, project: Path, user_dir: Path, tmp_path: Path,
                  *extra: str) -> AsyncIterator[Client]:
    state = tmp_path / "state"
    with background([MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--stateless",
                     "--project-dir", str(project), "--user-dir", str(user_dir),
                     "--log", str(tmp_path / "events.jsonl"), "--state", url, *extra],
                    env={**os.environ, "XDG_STATE_HOME": str(state)},
                    capture_stdout=True, timeout=120) as server:
        async with Client(server.url) as client:
            yield client
