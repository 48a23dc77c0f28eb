"""What an upstream asks of the user during a call reaches the client behind the proxy
(``proxy/relay.py``): a real upstream (tests/helpers/upstream_server.py) whose tool elicits or
samples, ``mcp-hooks proxy`` as a subprocess, the SDK client with handlers in front.

Upstreams over stdio speak the handshake era (server-to-client requests); over streamable
HTTP they speak 2026-07-28 (``input_required`` results the proxy's client answers).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from tests.conftest import MCP_HOOKS
from tests.helpers.background import background
from tests.helpers.elicit import Person, never
from tests.helpers.http_clients import free_port, http_client, wait_listening
from tests.helpers.proxied import (
    UPSTREAM,
    proxied,
    recorder,
    records,
    text_of,
    upstream,
    wait_for,
)

pytestmark = pytest.mark.anyio

ASKING = ("--tools", "ask_user,sample,echo")


@contextmanager
def http_upstream(tmp_path: Path) -> Iterator[Path]:
    """The test upstream over streamable HTTP; yields a proxy config naming it ``remote``."""
    port = free_port()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "remote": {"url": f"http://127.0.0.1:{port}/mcp"}}}))
    server = subprocess.Popen([sys.executable, UPSTREAM, "--name", "remote", *ASKING,
                               "--http", str(port)],
                              stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        wait_listening(port)
        yield config
    finally:
        server.terminate()
        server.wait(timeout=30)


def _upstream_args(kind: str, tmp_path: Path, stack: ExitStack) -> list[str]:
    if kind == "stdio":
        return ["--upstream", upstream("remote", *ASKING)]
    return ["--config", str(stack.enter_context(http_upstream(tmp_path)))]


KINDS = [
    pytest.param("stdio", {}, id="stdio-upstream"),
    pytest.param("stdio", {"MCP_HOOKS_PROXY_STDIO": "sdk"}, id="stdio-upstream-sdk-transports"),
    pytest.param("http", {}, id="http-upstream-2026"),
]


@pytest.mark.parametrize(("kind", "env"), KINDS)
@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
async def test_an_upstreams_form_reaches_the_client_and_its_answer_the_upstream(
    kind: str, env: dict[str, str], action: str,
    tmp_path: Path, project: Path, user_dir: Path,
) -> None:
    person = Person(action, {"answer": "blue", "sure": True})
    with ExitStack() as stack:
        args = _upstream_args(kind, tmp_path, stack)
        async with proxied(tmp_path, project, user_dir, *args, env=env, mode="legacy",
                           elicitation_callback=person.elicit) as client:
            result = await client.call_tool("ask_user", {"question": "Favourite colour?"})
    assert not result.is_error, text_of(result)
    assert [f.message for f in person.forms] == ["Favourite colour?"]
    form = person.forms[0]
    assert isinstance(form, types.ElicitRequestFormParams)
    assert set(form.requested_schema["properties"]) == {"answer", "sure"}
    seen = json.loads(text_of(result))
    assert seen["action"] == action
    assert seen["content"] == ({"answer": "blue", "sure": True} if action == "accept" else None)


@pytest.mark.parametrize(("kind", "env"), KINDS)
async def test_an_upstreams_sampling_request_reaches_the_client(
    kind: str, env: dict[str, str], tmp_path: Path, project: Path, user_dir: Path,
) -> None:
    person = Person()
    with ExitStack() as stack:
        args = _upstream_args(kind, tmp_path, stack)
        async with proxied(tmp_path, project, user_dir, *args, env=env, mode="legacy",
                           sampling_callback=person.sample) as client:
            result = await client.call_tool("sample", {"prompt": "Say something."})
    assert not result.is_error, text_of(result)
    assert text_of(result) == "test-model: the model's words"
    [prompt] = person.prompts
    content = prompt.messages[0].content
    assert isinstance(content, types.TextContent) and content.text == "Say something."


@pytest.mark.parametrize(("kind", "env"), KINDS)
async def test_a_client_without_the_capability_the_upstream_gets_an_error(
    kind: str, env: dict[str, str], tmp_path: Path, project: Path, user_dir: Path,
) -> None:
    with ExitStack() as stack:
        args = _upstream_args(kind, tmp_path, stack)
        async with proxied(tmp_path, project, user_dir, *args, env=env,
                           mode="legacy") as client:
            # the upstream's tool lets the error out: its protocol error, passed on as it is
            with pytest.raises(MCPError) as asked:
                await client.call_tool("ask_user", {"question": "Favourite colour?"})
            with pytest.raises(MCPError) as sampled:
                await client.call_tool("sample", {"prompt": "Say something."})
            echoed = await client.call_tool("echo", {"text": "still serving"})
    assert "not passed on to the client 'mcp': it did not declare 'elicitation'" \
        in asked.value.error.message
    assert "it did not declare 'sampling'" in sampled.value.error.message
    assert text_of(echoed) == "still serving"


async def test_a_call_cancelled_mid_form_ends_the_form_and_the_proxy_serves_on(
    tmp_path: Path, project: Path, user_dir: Path,
) -> None:
    shown = anyio.Event()

    async def waits(context: ClientRequestContext, params: types.ElicitRequestParams
                    ) -> types.ElicitResult:
        shown.set()
        return await never(context, params)

    answer = Person("accept", {"answer": "second", "sure": False})
    handler = {"current": waits}

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams
                     ) -> types.ElicitResult:
        return await handler["current"](context, params)

    async with proxied(tmp_path, project, user_dir, "--upstream", upstream("remote", *ASKING),
                       mode="legacy", elicitation_callback=elicit) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "ask_user", {"question": "Wait for me?"})
            with anyio.fail_after(60):
                await shown.wait()
            tg.cancel_scope.cancel()  # the call is cancelled with the form open
        handler["current"] = answer.elicit
        result = await client.call_tool("ask_user", {"question": "And you?"})
        assert json.loads(text_of(result))["content"]["answer"] == "second"
        assert text_of(await client.call_tool("echo", {"text": "alive"})) == "alive"


async def test_a_client_that_goes_away_mid_form_does_not_take_the_proxy_down(
    tmp_path: Path, project: Path, user_dir: Path, project_hooks: Path,
) -> None:
    """An HTTP client disconnects while the upstream's form waits for it. A disconnection is
    not a cancellation (MCP): its call runs on until the upstream's timeout ends it; the proxy
    serves another client meanwhile, and that client's form once the first call has ended."""
    failures = tmp_path / "failures.jsonl"
    recorder(project_hooks, "see-failures", "after_tool_failure", failures)
    token = "t" * 32
    shown = anyio.Event()

    async def waits(context: ClientRequestContext, params: types.ElicitRequestParams
                    ) -> types.ElicitResult:
        shown.set()
        return await never(context, params)

    args = [MCP_HOOKS, "proxy", "--transport", "http", "--port", "0", "--token", token,
            "--timeout", "3", "--upstream", upstream("remote", *ASKING), "--user-dir",
            str(user_dir), "--project-dir", str(project), "--log", str(tmp_path / "ev.jsonl")]
    with background(args) as proxy:
        async with anyio.create_task_group() as tg:
            async def gone() -> None:
                async with http_client(proxy.url, "http", token, mode="legacy",
                                       elicitation_callback=waits) as client:
                    await client.call_tool("ask_user", {"question": "Wait for me?"})

            tg.start_soon(gone)
            with anyio.fail_after(60):
                await shown.wait()
            tg.cancel_scope.cancel()  # the client goes away with the form open
        person = Person("accept", {"answer": "second", "sure": False})
        async with http_client(proxy.url, "http", token, mode="legacy",
                               elicitation_callback=person.elicit) as client:
            assert text_of(await client.call_tool("echo", {"text": "alive"})) == "alive"
            await wait_for(lambda: any(r.get("tool_name") == "ask_user"
                                       for r in records(failures)), timeout=120)
            result = await client.call_tool("ask_user", {"question": "And you?"})
            assert json.loads(text_of(result))["content"]["answer"] == "second"
        assert proxy.proc.poll() is None
    [failed] = records(failures)
    assert "did not answer" in failed["error"], failed
