"""Replicas of ``mcp-hooks serve`` as subprocesses: ``serve_argv``, ``serving`` (waits for
its announced URL) and ``wait_for`` a condition, bounded only to stop a hang."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import MCP_HOOKS
from tests.helpers.background import Background, background

ANNOUNCE = re.compile(r"serving \w+ at (\S+)")


HANG = 120.0  # seconds: only to stop a hang, far from the expected time


def serve_argv(project: Path, user_dir: Path, *more: str) -> list[str]:
    return [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--project-dir",
            str(project), "--user-dir", str(user_dir), *more]


@contextmanager
def serving(argv: list[str], env: dict[str, str] | None = None
            ) -> Iterator[tuple[Background, list[str]]]:
    """A server started by ``argv``, with its URL and the stderr lines it printed before it
    announced it (``background`` drops those)."""
    with background(argv, announce=None, env=env, capture_stdout=True) as server:
        before: list[str] = []
        while not server.url:
            line = server.lines.get(timeout=HANG)
            if not line:
                raise AssertionError("the server exited before serving:\n" + "".join(before))
            found = ANNOUNCE.search(line)
            if found:
                server.url = found.group(1)
            else:
                before.append(line)
        yield server, before


def wait_for(what: str, check: Any) -> Any:
    """Poll ``check`` until it gives something truthy (``HANG`` only stops a hang)."""
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"never saw {what}")
