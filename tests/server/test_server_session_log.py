"""The session-summary hook sees the whole session on a shared store, and never its URL.

Two real ``serve --state`` replicas (each its own state folder and log file, as on machines of
their own) on the Redis or PostgreSQL of ``tests/helpers/servers.py``; the bundled
session-summary hook installed as a user hook; the session's events fired on both replicas,
its end on one of them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from mcp import Client

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.mcp_calls import fire
from tests.helpers.servers import (  # noqa: F401 - fixtures
    postgres_service,
    postgres_url,
    redis_service,
    redis_url,
)

pytestmark = pytest.mark.anyio

BUNDLED = Path(__file__).resolve().parents[2] / "hooks" / "session-summary"


@pytest.fixture(params=["redis", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


def password_of(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


async def test_session_summary_counts_every_replica_events(
        url: str, project: Path, user_dir: Path, tmp_path: Path) -> None:
    shutil.copytree(BUNDLED, user_dir / "session-summary")
    dump = tmp_path / "hook-env.txt"
    write_hook(user_dir, "env-dump", trigger="post-session",
               script=f"cat >/dev/null\nenv > '{dump}'\n")
    write_hook(user_dir, "no-rm", extra="matcher:\n  tool: Shell\n  pattern: rm\n",
               script="cat >/dev/null\necho 'rm refused' >&2\nexit 2\n")
    states = [tmp_path / "state-0", tmp_path / "state-1"]
    common = [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--stateless",
              "--project-dir", str(project), "--user-dir", str(user_dir)]
    # replica 0 is told the store in MCP_HOOKS_STATE, replica 1 with --state (and the same
    # URL sits in another variable of its environment): no hook may see it either way
    with background([*common, "--log", str(tmp_path / "events-0.jsonl")],
                    env={**os.environ, "XDG_STATE_HOME": str(states[0]),
                         "MCP_HOOKS_STATE": url},
                    capture_stdout=True, timeout=120) as zero, \
            background([*common, "--log", str(tmp_path / "events-1.jsonl"), "--state", url],
                       env={**os.environ, "XDG_STATE_HOME": str(states[1]),
                            "MY_DATABASE_URL": url},
                       capture_stdout=True, timeout=120) as one:
        async with Client(zero.url) as a, Client(one.url) as b:
            denied = await fire(a, event_type="before_tool", tool_name="Shell",
                                tool_input={"command": "rm -rf /"}, session_id="s-sum")
            assert denied["decision"] == "deny"
            await fire(b, event_type="before_tool", tool_name="Shell",
                       tool_input={"command": "ls"}, session_id="s-sum")
            await fire(b, event_type="before_tool", tool_name="WriteFile",
                       tool_input={"path": "a.md"}, session_id="s-sum")
            await fire(a, event_type="before_tool", tool_name="Shell",
                       tool_input={"command": "ls"}, session_id="another")
            ended = await fire(b, event_type="session_end", session_id="s-sum",
                               payload={"duration_seconds": 9, "total_steps": 3,
                                        "exit_reason": "user_exit"})
    (context,) = ended["additional_context"]
    assert "3 tool calls checked, 1 denied" in context, context
    text = (states[1] / "mcp-hooks" / "sessions" / "s-sum.md").read_text()
    assert "events logged: 3" in text and "- Shell: 2" in text and "- WriteFile: 1" in text
    assert "no-rm: rm refused" in text
    env = dump.read_text()
    assert password_of(url) not in env
    assert "MCP_HOOKS_STATE=" not in env and "MY_DATABASE_URL=" not in env
