"""A hook's ask through ``fire_hook_event``: the MCP client's own way to ask a person
(``server/approval.py``): an elicitation form, answered by the SDK client's handler
(tests/helpers/elicit.py), in memory and over streamable HTTP (``mcp-hooks serve``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_hooks.errors import ConfigError
from mcp_hooks.server import build_server
from mcp_hooks.server.approval import FORM, ROUND_KEY
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from mcp_hooks.spec.asking import AskAnswer
from mcp_hooks.state.asks import answer
from tests.conftest import write_hook
from tests.helpers.elicit import Person, never
from tests.helpers.transports import TOKEN, served

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
    data: dict[str, Any] | None = result.structured_content
    assert data is not None
    return data


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
    """A client without elicitation (either era): the ask waits out of band for its timeout,
    then the fallback (deny) says how to approve it."""
    async with Client(build_server(service), mode=mode) as client:
        outcome = await fired(client)
    assert outcome["decision"] == "deny", outcome
    assert "mcp-hooks approve" in outcome["reason"], outcome


# -- 2026-07-28: input_required --------------------------------------------------------------


@pytest.mark.parametrize(("action", "content", "decision"), [
    ("accept", {"approve": True}, "allow"),
    ("accept", {"approve": False, "reason": "not today"}, "deny"),
    ("decline", None, "deny"),
    ("cancel", None, "deny"),
])
async def test_a_2026_client_answers_input_required(
    service: HookService, tmp_path: Path, action: str, content: dict[str, Any] | None,
    decision: str,
) -> None:
    """The SDK client drives the round itself: the form goes to its elicitation handler, the
    call is retried with the answer."""
    person = Person(action, content)
    async with Client(build_server(service), elicitation_callback=person.elicit) as client:
        assert client.protocol_version == "2026-07-28"
        outcome = await fired(client)
    assert outcome["decision"] == decision, outcome
    [form] = person.forms
    assert isinstance(form, types.ElicitRequestFormParams) and form.requested_schema == FORM
    answers = [r for r in log_kinds(tmp_path) if r["kind"] == "ask_answer"
               and r["channel"] == "elicitation"]
    assert [a["approved"] for a in answers] == [decision == "allow"], answers


async def _first_round(client: Client) -> types.InputRequiredResult:
    first = await client.session.call_tool("fire_hook_event", CALL, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    assert first.request_state and first.input_requests
    assert ROUND_KEY in first.input_requests
    return first


APPROVED: types.InputResponses = {
    ROUND_KEY: types.ElicitResult(action="accept", content={"approve": True})}


async def test_a_forged_request_state_is_refused(service: HookService, tmp_path: Path
                                                 ) -> None:
    async with Client(build_server(service), elicitation_callback=Person().elicit) as client:
        first = await _first_round(client)
        assert first.request_state is not None
        ours = json.dumps({"ask": "ask-0000000000", "binding": "0" * 64})
        for forged in (ours, first.request_state[:-4] + "AAAA"):
            with pytest.raises(MCPError) as refused:
                await client.session.call_tool("fire_hook_event", CALL, request_state=forged,
                                               input_responses=APPROVED,
                                               allow_input_required=True)
            assert "requestState" in refused.value.error.message
        # the ask is still pending, nothing was approved; each refusal is in the log
        assert service.store.pending_asks()
    refused_lines = [r for r in log_kinds(tmp_path) if r["kind"] == "ask_refused"]
    assert len(refused_lines) == 2 and refused_lines[0]["tool_name"] == "Bash", refused_lines


async def test_a_state_moved_to_other_arguments_is_refused(service: HookService) -> None:
    async with Client(build_server(service), elicitation_callback=Person().elicit) as client:
        first = await _first_round(client)
        other = {**CALL, "tool_input": {"command": "rm -rf /"}}
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool("fire_hook_event", other,
                                           request_state=first.request_state,
                                           input_responses=APPROVED, allow_input_required=True)
        assert "requestState" in refused.value.error.message


async def test_a_replayed_approval_is_refused(service: HookService) -> None:
    async with Client(build_server(service), elicitation_callback=Person().elicit) as client:
        first = await _first_round(client)
        state = first.request_state
        done = await client.session.call_tool("fire_hook_event", CALL, request_state=state,
                                              input_responses=APPROVED,
                                              allow_input_required=True)
        assert isinstance(done, types.CallToolResult) and not done.is_error
        assert done.structured_content is not None
        assert done.structured_content["decision"] == "allow"
        again = await client.session.call_tool("fire_hook_event", CALL, request_state=state,
                                               input_responses=APPROVED,
                                               allow_input_required=True)
        assert isinstance(again, types.CallToolResult) and again.is_error
        assert "already answered" in again.content[0].model_dump()["text"], again


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


async def test_a_person_who_never_answers_holds_the_call_no_longer_than_the_ask_timeout(
    service: HookService, tmp_path: Path
) -> None:
    """The form stays open; the engine's ask timeout (1 s here) ends the wait: the fallback,
    and the ask stays pending for an out-of-band answer."""
    async with Client(build_server(service), mode="legacy", elicitation_callback=never
                      ) as client:
        with anyio.fail_after(60):  # a hang stops here; the ask timeout is far sooner
            outcome = await fired(client)
    assert outcome["decision"] == "deny", outcome
    assert "mcp-hooks approve" in outcome["reason"], outcome
    assert [r["kind"] for r in log_kinds(tmp_path)][-1] == "ask_timeout"


@pytest.mark.parametrize("approve", [True, False])
async def test_an_out_of_band_answer_wins_while_the_form_is_open(
        project: Path, user_dir: Path, tmp_path: Path, approve: bool) -> None:
    """The client shows the form and nobody answers it, while a person answers the ask out
    of band (``mcp-hooks approve``'s path, ``asks.answer``): that answer decides the call at
    once (the form is given up), not the ask timeout (600 s here)."""
    write_hook(user_dir, "patient-asker", script=ASKS,
               extra="matcher:\n  tool: Shell\nmetadata:\n  ask_timeout: 600\n")
    settings = Settings.from_env(project_dir=project, user_dir=user_dir,
                                 log=tmp_path / "events.jsonl")
    opened = anyio.Event()

    async def form_left_open(context: Any, params: types.ElicitRequestParams
                             ) -> types.ElicitResult:
        opened.set()
        return await never(context, params)

    got: dict[str, Any] = {}
    async with HookService(settings) as svc, Client(
            build_server(svc), mode="legacy", elicitation_callback=form_left_open) as client:
        with anyio.fail_after(60):  # a hang stops here; the answer is out of band at once
            async with anyio.create_task_group() as tg:
                async def call() -> None:
                    got.update(await fired(client))

                tg.start_soon(call)
                await opened.wait()
                [waiting] = await anyio.to_thread.run_sync(svc.store.pending_asks)
                given = AskAnswer(approve, "" if approve else "not on a Friday", "ann", "cli")
                await anyio.to_thread.run_sync(answer, svc.store, waiting.id, given)
    assert got["decision"] == ("allow" if approve else "deny"), got
    if not approve:
        assert "not on a Friday" in got["reason"]
    answers = [r for r in log_kinds(tmp_path) if r["kind"] == "ask_answer"]
    assert [(a["channel"], a["by"]) for a in answers] == [("cli", "ann")]



@pytest.mark.parametrize("key", ["ask_key", "trust_key", None])
async def test_a_retry_on_another_replica_is_honoured_with_a_shared_key(
        project: Path, user_dir: Path, tmp_path: Path, asker: Path, key: str | None) -> None:
    """Two replicas (two servers, one store): the client gets the form from the first and
    retries with the person's answer on the second. With a shared MCP_HOOKS_ASK_KEY (or the
    fleet's trust key, from which one is derived) the second takes the approval; with each
    process's own key it refuses the state, and nothing is approved."""
    shared = {key: "k" * 32} if key else {}

    def replica() -> HookService:
        return HookService(Settings.from_env(project_dir=project, user_dir=user_dir,
                                             log=tmp_path / "events.jsonl", **shared))

    async with replica() as one, replica() as two, \
            Client(build_server(one), elicitation_callback=Person().elicit) as first, \
            Client(build_server(two), elicitation_callback=Person().elicit) as second:
        round_one = await _first_round(first)
        if key is None:
            with pytest.raises(MCPError) as refused:
                await second.session.call_tool(
                    "fire_hook_event", CALL, request_state=round_one.request_state,
                    input_responses=APPROVED, allow_input_required=True)
            assert "requestState" in refused.value.error.message
            assert two.store.pending_asks()  # still waiting: nothing was approved
            return
        done = await second.session.call_tool(
            "fire_hook_event", CALL, request_state=round_one.request_state,
            input_responses=APPROVED, allow_input_required=True)
        assert isinstance(done, types.CallToolResult) and not done.is_error, done
        assert done.structured_content is not None
        assert done.structured_content["decision"] == "allow"


def test_a_short_ask_key_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"MCP_HOOKS_ASK_KEY.*16 characters"):
        Settings.from_env({"MCP_HOOKS_ASK_KEY": "short"})
