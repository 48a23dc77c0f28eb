"""A hook's ask on a proxied ``tools/call``: the client behind ``mcp-hooks proxy`` is shown an
elicitation form (``server/approval.py``); a real upstream (tests/helpers/upstream_server.py)
writes a file only when the call reaches it, so the test sees what the upstream received.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.elicit import Person, never
from tests.proxy.test_proxy import proxied, text_of, upstream
from tests.proxy.test_proxy_http import http_client

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
