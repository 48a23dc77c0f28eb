"""``served``: ``mcp-hooks serve`` with the given arguments in the background, and the token
the transport tests use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tests.conftest import MCP_HOOKS
from tests.helpers.background import Background, background

TOKEN = "correct-horse-battery-staple"


@contextmanager
def served(args: list[str], env: dict[str, str] | None = None) -> Iterator[Background]:
    with background([MCP_HOOKS, *args], env=env, capture_stdout=True) as server:
        yield server
