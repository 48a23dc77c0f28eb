"""A hook's ask through ``fire_hook_event``: the MCP client's own way to ask a person
(``server/approval.py``): an elicitation form, answered by the SDK client's handler
(tests/helpers/elicit.py), in memory and over streamable HTTP (``mcp-hooks serve``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_hooks.server import build_server
from mcp_hooks.server.approval import FORM
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from tests.conftest import write_hook
from tests.helpers.elicit import Person
from tests.server.test_server_transports import TOKEN, served

pytestmark = pytest.mark.anyio

ASKS = "echo '{\"decision\": \"ask\", \"reason\": \"deleting needs a person\"}'\n"
CALL = {"event_type": "before_tool", "session_id": "s-1", "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build"}}


@pytest.fixture
def asker(user_dir: Path) -> Path:
    """A hook that asks before any shell command (a short ask timeout: the fallback case
    must not wait the default 120 s)."""
    return write_hook(user_dir, "asker", script=ASKS,
                      extra="matcher:\n  tool: Shell\nmetadata:\n  ask_timeout: 1\n")


@pytest.fixture
async def service(project: Path, user_dir: Path, tmp_path: Path, asker: Path
                  ) -> AsyncIterator[HookService]:
    async with HookService(Settings.from_env(project_dir=project, user_dir=user_dir,
                                             log=tmp_path / "events.jsonl")) as svc:
        yield svc


async def fired(client: Client, **overrides: Any) -> dict[str, Any]:
    result = await client.call_tool("fire_hook_event", {**CALL, **overrides})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def log_kinds(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "events.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [line for line in lines if str(line.get("kind", "")).startswith("ask")]


async def test_approved_in_the_form_the_call_goes_on(service: HookService, tmp_path: Path
                                                     ) -> None:
    person = Person("accept", {"approve": True, "reason": "fine by me"})
    async with Client(build_server(service), mode="legacy",
                      elicitation_callback=person.elicit) as client:
        outcome = await fired(client)
    assert outcome["decision"] == "allow", outcome
    [form] = person.forms
    assert isinstance(form, types.ElicitRequestFormParams)
    assert form.requested_schema == FORM
    assert "deleting needs a person" in form.message
    assert '{"command":"rm -rf build"}' in form.message  # the exact arguments
    answers = [r for r in log_kinds(tmp_path) if r["kind"] == "ask_answer"]
    assert answers and answers[-1]["channel"] == "elicitation", answers


@pytest.mark.parametrize(("action", "content", "says"), [
    ("accept", {"approve": False, "reason": "not today"}, "not today"),
    ("decline", None, "declined"),
    ("cancel", None, "dismissed"),
    ("accept", {"approve": "yes"}, "did not match the approval form"),
    ("accept", {"approve": True, "extra": 1}, "did not match the approval form"),
    ("accept", {}, "'approve' is missing"),
])
async def test_refused_declined_cancelled_or_off_form_is_a_deny(
    service: HookService, action: str, content: dict[str, Any] | None, says: str,
) -> None:
    person = Person(action, content)
    async with Client(build_server(service), mode="legacy",
                      elicitation_callback=person.elicit) as client:
        outcome = await fired(client)
    assert outcome["decision"] == "deny", outcome
    assert says in outcome["reason"], outcome
    assert len(person.forms) == 1


async def test_for_this_session_covers_the_same_call_only(service: HookService) -> None:
    person = Person("accept", {"approve": True, "for_session": True})
    async with Client(build_server(service), mode="legacy",
                      elicitation_callback=person.elicit) as client:
        assert (await fired(client))["decision"] == "allow"
        assert (await fired(client))["decision"] == "allow"
        assert len(person.forms) == 1  # the same call again: not asked again
        person.content = {"approve": False}
        changed = await fired(client, tool_input={"command": "rm -rf src"})
        assert changed["decision"] == "deny"  # another input: its own ask
        assert len(person.forms) == 2


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_no_way_to_ask_in_band_falls_back_out_of_band(
    service: HookService, mode: str
) -> None:
    """A client without elicitation, or on 2026-07-28 (no server-to-client requests during a
    call): the ask waits out of band for its timeout, then the fallback (deny) says how."""
    person = Person("accept", {"approve": True})
    handlers = {"elicitation_callback": person.elicit} if mode == "auto" else {}
    async with Client(build_server(service), mode=mode, **handlers) as client:
        outcome = await fired(client)
    assert outcome["decision"] == "deny", outcome
    assert "mcp-hooks approve" in outcome["reason"], outcome
    assert person.forms == []


async def test_over_streamable_http_through_serve(
    project: Path, user_dir: Path, tmp_path: Path, asker: Path
) -> None:
    args = ["serve", "--project-dir", str(project), "--user-dir", str(user_dir),
            "--log", str(tmp_path / "events.jsonl"), "--transport", "http", "--port", "0",
            "--token", TOKEN]
    approve = Person("accept", {"approve": True})
    refuse = Person("decline")
    with served(args) as server:
        for person, decision in ((approve, "allow"), (refuse, "deny")):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"},
                                          timeout=30) as http, \
                    Client(streamable_http_client(server.url, http_client=http),
                           mode="legacy", elicitation_callback=person.elicit) as client:
                assert (await fired(client))["decision"] == decision
            assert len(person.forms) == 1
