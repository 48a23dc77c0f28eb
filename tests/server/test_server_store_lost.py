"""A shared store lost while ``serve --state`` runs, and found again.

A real ``mcp-hooks serve --transport http --stateless --state redis://...`` (and
``postgresql://...``) with a real MCP client; its store stopped mid-run and started again on
the same port (``tests/helpers/restartable.py``). What the agent sees: an event that can block
is denied with a reason naming the store (without its password); an event that cannot block
goes on; once the store is back the next event is served as before, with no restart, and
every event answered meanwhile is in the store's log exactly once (the spool replayed).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mcp_hooks.state.spool import ID
from mcp_hooks.state.url import open_store
from tests.conftest import write_hook
from tests.helpers.lost_store import serving
from tests.helpers.mcp_calls import fire
from tests.helpers.restartable import restartable

pytestmark = pytest.mark.anyio


def spool_lines(tmp_path: Path) -> int:
    return sum(len(p.read_text().splitlines())
               for p in (tmp_path / "state" / "mcp-hooks" / "spool").glob("*/*.jsonl"))


@pytest.mark.parametrize("kind", ["redis", "postgres"])
async def test_a_lost_store_denies_what_can_block_and_loses_no_log_record(
        kind: str, project: Path, user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "allow-all", trigger="pre-tool-call", script="cat >/dev/null\nexit 0\n")
    with restartable(kind) as store:
        password = urlsplit(store.url).password
        assert password
        async with serving(store.url, project, user_dir, tmp_path) as client:
            first = await fire(client, event_type="before_tool", session_id="before",
                               tool_name="Bash", tool_input={"command": "ls"})
            assert first["decision"] == "allow"

            store.stop()
            answered = []
            for n in range(3):
                denied = await fire(client, event_type="before_tool", session_id=f"lost-{n}",
                                    tool_name="Bash", tool_input={"command": "ls"})
                assert denied["decision"] == "deny", denied
                assert denied["blocked_by"] == "mcp-hooks"
                reason = denied["reason"]
                assert "state store" in reason and "cannot be used" in reason
                assert f"{urlsplit(store.url).hostname}:{store.server.port}" in reason
                assert password not in str(denied)
                ended = await fire(client, event_type="session_end", session_id=f"end-{n}")
                assert ended["decision"] == "allow"  # cannot block: goes on
                answered += [f"lost-{n}", f"end-{n}"]
            assert spool_lines(tmp_path) >= len(answered)

            store.start()  # the same port: serve is not restarted
            back = await fire(client, event_type="before_tool", session_id="back",
                              tool_name="Bash", tool_input={"command": "ls"})
            assert back["decision"] == "allow", back
            assert [h["name"] for h in back["hooks"]] == ["allow-all"]

        reader = open_store(store.url)
        logged = [r for r in reader.read("events") if r.get("kind") == "event"]
        sessions = [r["session_id"] for r in logged]
        for session in [*answered, "back"]:
            assert sessions.count(session) == 1, (session, sessions)
        assert len({r[ID] for r in logged}) == len(logged)
        denied_logged = [r for r in logged if r["session_id"].startswith("lost-")]
        assert all(r["decision"] == "deny" for r in denied_logged)
        assert spool_lines(tmp_path) == 0


async def test_on_fault_warn_lets_events_through_with_the_warning(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "allow-all", trigger="pre-tool-call", script="cat >/dev/null\nexit 0\n")
    with restartable("redis") as store:
        async with serving(store.url, project, user_dir, tmp_path,
                           "--on-fault", "warn") as client:
            store.stop()
            outcome = await fire(client, event_type="before_tool", session_id="w",
                                 tool_name="Bash", tool_input={"command": "ls"})
            assert outcome["decision"] == "allow"
            assert any("state store" in w and "on-fault: warn" in w
                       for w in outcome["warnings"]), outcome
