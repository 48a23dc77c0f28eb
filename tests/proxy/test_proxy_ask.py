"""A hook's ask on a proxied ``tools/call``: the client behind ``mcp-hooks proxy`` is shown an
elicitation form (``server/approval.py``); a real upstream (tests/helpers/upstream_server.py)
writes a file only when the call reaches it, so the test sees what the upstream received.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from mcp_hooks.server.approval import ROUND_KEY
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.elicit import Person, never
from tests.helpers.http_clients import http_client
from tests.helpers.proxied import proxied, text_of, upstream

pytestmark = pytest.mark.anyio

ASKS = "echo '{\"decision\": \"ask\", \"reason\": \"writing needs a person\"}'\n"
ARGS = {"path": "notes/approved.txt", "content": "exactly these words"}


@pytest.fixture
def root(tmp_path: Path, user_dir: Path) -> Path:
    """The upstream's folder, and a hook that asks before its ``write_file``."""
    write_hook(user_dir, "asker", script=ASKS,
               extra="matcher:\n  tool: write_file\nmetadata:\n  ask_timeout: 1\n")
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


def _upstream(root: Path) -> str:
    return upstream("files", "--tools", "write_file,echo", "--root", str(root))


@pytest.mark.parametrize("env", [{}, {"MCP_HOOKS_PROXY_STDIO": "sdk"}],
                         ids=["fast-path", "sdk-stdio"])
async def test_approved_the_upstream_gets_exactly_the_approved_arguments(
    env: dict[str, str], tmp_path: Path, project: Path, user_dir: Path, root: Path,
) -> None:
    person = Person("accept", {"approve": True})
    async with proxied(tmp_path, project, user_dir, "--upstream", _upstream(root), env=env,
                       mode="legacy", elicitation_callback=person.elicit) as client:
        result = await client.call_tool("write_file", ARGS)
        assert not result.is_error, text_of(result)
        echoed = await client.call_tool("echo", {"text": "not asked"})
        assert text_of(echoed) == "not asked"
    assert (root / ARGS["path"]).read_text() == ARGS["content"]
    [form] = person.forms
    assert "writing needs a person" in form.message
    assert '"content":"exactly these words"' in form.message


@pytest.mark.parametrize(("action", "content"), [
    ("accept", {"approve": False, "reason": "not there"}),
    ("decline", None),
    ("cancel", None),
    ("accept", {"approve": 1}),
])
async def test_refused_the_upstream_never_sees_the_call(
    action: str, content: dict[str, object] | None,
    tmp_path: Path, project: Path, user_dir: Path, root: Path,
) -> None:
    person = Person(action, content)
    async with proxied(tmp_path, project, user_dir, "--upstream", _upstream(root),
                       mode="legacy", elicitation_callback=person.elicit) as client:
        result = await client.call_tool("write_file", ARGS)
    assert result.is_error and "Blocked by hook asker" in text_of(result), text_of(result)
    assert not (root / "notes").exists()
    assert len(person.forms) == 1


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_no_way_to_ask_in_band_falls_back_and_the_upstream_never_sees_it(
    mode: str, tmp_path: Path, project: Path, user_dir: Path, root: Path,
) -> None:
    async with proxied(tmp_path, project, user_dir, "--upstream", _upstream(root),
                       mode=mode) as client:
        result = await client.call_tool("write_file", ARGS)
    assert result.is_error and "mcp-hooks approve" in text_of(result), text_of(result)
    assert not (root / "notes").exists()


async def test_over_streamable_http(
    tmp_path: Path, project: Path, user_dir: Path, root: Path,
) -> None:
    token = "t" * 32
    args = [MCP_HOOKS, "proxy", "--transport", "http", "--port", "0", "--token", token,
            "--upstream", _upstream(root), "--user-dir", str(user_dir),
            "--project-dir", str(project), "--log", str(tmp_path / "events.jsonl")]
    refuse, approve = Person("decline"), Person("accept", {"approve": True})
    with background(args) as proxy:
        async with http_client(proxy.url, "http", token, mode="legacy",
                               elicitation_callback=refuse.elicit) as client:
            assert (await client.call_tool("write_file", ARGS)).is_error
        assert not (root / "notes").exists()
        async with http_client(proxy.url, "http", token, mode="legacy",
                               elicitation_callback=approve.elicit) as client:
            result = await client.call_tool("write_file", ARGS)
            assert not result.is_error, text_of(result)
    assert (root / ARGS["path"]).read_text() == ARGS["content"]


async def test_a_person_who_never_answers_the_call_ends_at_the_ask_timeout(
    tmp_path: Path, project: Path, user_dir: Path, root: Path,
) -> None:
    async with proxied(tmp_path, project, user_dir, "--upstream", _upstream(root),
                       mode="legacy", elicitation_callback=never) as client:
        with anyio.fail_after(60):  # a hang stops here; the ask timeout (1 s) is far sooner
            result = await client.call_tool("write_file", ARGS)
        assert result.is_error and "mcp-hooks approve" in text_of(result), text_of(result)
        assert text_of(await client.call_tool("echo", {"text": "serving"})) == "serving"
    assert not (root / "notes").exists()


# -- 2026-07-28 clients: input_required -----------------------------------------------------


@pytest.mark.parametrize(("action", "content", "written"), [
    ("accept", {"approve": True}, True),
    ("accept", {"approve": False}, False),
    ("decline", None, False),
    ("cancel", None, False),
])
async def test_a_2026_client_answers_input_required(
    action: str, content: dict[str, object] | None, written: bool,
    tmp_path: Path, project: Path, user_dir: Path, root: Path,
) -> None:
    person = Person(action, content)
    async with proxied(tmp_path, project, user_dir, "--upstream", _upstream(root),
                       elicitation_callback=person.elicit) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("write_file", ARGS)
        again = await client.call_tool("echo", {"text": "not asked"})
    assert result.is_error is not written, text_of(result)
    assert text_of(again) == "not asked"
    assert (root / ARGS["path"]).exists() is written
    if written:
        assert (root / ARGS["path"]).read_text() == ARGS["content"]
    assert len(person.forms) == 1


async def test_a_2026_round_cannot_be_forged_moved_or_replayed(
    tmp_path: Path, project: Path, user_dir: Path, root: Path,
) -> None:
    approved: types.InputResponses = {
        ROUND_KEY: types.ElicitResult(action="accept", content={"approve": True})}
    async with proxied(tmp_path, project, user_dir, "--upstream", _upstream(root),
                       elicitation_callback=Person().elicit) as client:
        first = await client.session.call_tool("write_file", ARGS, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult) and first.request_state
        state = first.request_state
        for forged, arguments in ((state[:-4] + "AAAA", ARGS),
                                  (json.dumps({"ask": "ask-0000000000"}), ARGS),
                                  (state, {**ARGS, "path": "elsewhere.txt"})):
            with pytest.raises(MCPError) as refused:
                await client.session.call_tool("write_file", arguments, request_state=forged,
                                               input_responses=approved,
                                               allow_input_required=True)
            assert "requestState" in refused.value.error.message
        assert not any(root.iterdir())  # nothing reached the upstream
        done = await client.session.call_tool("write_file", ARGS, request_state=state,
                                              input_responses=approved,
                                              allow_input_required=True)
        assert isinstance(done, types.CallToolResult) and not done.is_error, done
        (root / ARGS["path"]).unlink()
        replayed = await client.session.call_tool("write_file", ARGS, request_state=state,
                                                  input_responses=approved,
                                                  allow_input_required=True)
        assert isinstance(replayed, types.CallToolResult) and replayed.is_error
        assert "already answered" in text_of(replayed)
    assert not (root / ARGS["path"]).exists()  # the replay never reached the upstream
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    refused = [line for line in lines if line.get("kind") == "ask_refused"]
    assert [r["tool"] for r in refused] == ["write_file"] * 3, refused


async def test_a_client_that_goes_away_with_the_form_open_does_not_take_the_proxy_down(
    tmp_path: Path, project: Path, user_dir: Path, root: Path,
) -> None:
    """An HTTP client disconnects while the ask's form waits for it: its call ends at the ask
    timeout with the fallback (the upstream never sees it); the proxy serves the next client."""
    token = "t" * 32
    shown = anyio.Event()

    async def waits(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        shown.set()
        return await never(context, params)

    args = [MCP_HOOKS, "proxy", "--transport", "http", "--port", "0", "--token", token,
            "--upstream", _upstream(root), "--user-dir", str(user_dir),
            "--project-dir", str(project), "--log", str(tmp_path / "events.jsonl")]
    with background(args) as proxy:
        async with anyio.create_task_group() as tg:
            async def gone() -> None:
                async with http_client(proxy.url, "http", token, mode="legacy",
                                       elicitation_callback=waits) as client:
                    await client.call_tool("write_file", ARGS)

            tg.start_soon(gone)
            with anyio.fail_after(60):
                await shown.wait()
            tg.cancel_scope.cancel()  # the client goes away with the form open
        person = Person("accept", {"approve": True})
        async with http_client(proxy.url, "http", token, mode="legacy",
                               elicitation_callback=person.elicit) as client:
            other = {**ARGS, "path": "second.txt"}
            result = await client.call_tool("write_file", other)
            assert not result.is_error, text_of(result)
        assert proxy.proc.poll() is None
    assert not (root / ARGS["path"]).exists()
    assert (root / "second.txt").read_text() == ARGS["content"]
