"""A hook's ask at ``POST /hooks/fire``, as the request's query says (``server/fire_ask.py``):
the fallback at once (``ask=now``), or the client's framework asks (``ask=native``) and a
call it confirmed is approved (``confirmed=ID``) for exactly that call. Through the real
endpoint on a real ``HookService``, signed as the forward clients sign (the Java client's
end of it: java/agentscope's ``MiddlewareAskTest``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from starlette.applications import Starlette

from mcp_hooks.hosts.forward_auth import sign_request
from mcp_hooks.server.fire_ask import fire_approver
from mcp_hooks.server.forward import bridge_routes
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from tests.conftest import write_hook

pytestmark = pytest.mark.anyio

TOKEN = "fire-ask-token"
ASKER = """cat >/dev/null\necho '{"decision": "ask", "reason": "deploys need a person"}'\n"""


@pytest.fixture
async def http(project: Path, user_dir: Path, project_hooks: Path,
               tmp_path: Path) -> AsyncIterator[httpx2.AsyncClient]:
    # a wait out of band would outlast the test's guard: only an answer at once passes
    write_hook(project_hooks, "asker", script=ASKER,
               extra="matcher:\n  tool: Shell\n  pattern: deploy\nmetadata:\n"
                     "  ask_timeout: 600\n")
    write_hook(project_hooks, "stop-asker", trigger="before_stop", script=ASKER,
               extra="metadata:\n  ask_timeout: 600\n")
    settings = Settings.from_env(project_dir=project, user_dir=user_dir,
                                 log=tmp_path / "events.jsonl")
    async with HookService(settings, watch_interval=0.05) as service:
        app = Starlette(routes=bridge_routes(service.engine_for, TOKEN))
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                      base_url="http://127.0.0.1",
                                      timeout=120) as client:  # a guard against a hang only
            yield client


async def fire(http: httpx2.AsyncClient, query: str, project: Path,
               command: str = "deploy prod", event: str = "before_tool") -> httpx2.Response:
    fields: dict[str, Any] = {"event_type": event, "session_id": "s-1",
                              "work_dir": str(project)}
    if event == "before_tool":
        fields |= {"tool_name": "Shell", "tool_input": {"command": command}}
    body = json.dumps(fields).encode()
    target = "/hooks/fire" + (f"?{query}" if query else "")
    return await http.post(target, content=body,
                           headers=sign_request(TOKEN, target, body).headers)


def logged(tmp_path: Path, kind: str) -> list[dict[str, Any]]:
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("kind") == kind]


async def test_ask_now_is_the_deny_naming_the_pending_ask_at_once(
        http: httpx2.AsyncClient, project: Path) -> None:
    answer = (await fire(http, "ask=now", project)).json()
    assert answer["decision"] == "deny" and answer["ask"] is not None
    assert f"mcp-hooks approve {answer['ask']['id']}" in answer["reason"]


async def test_native_defers_a_tool_calls_ask_and_approves_exactly_the_confirmed_call(
        http: httpx2.AsyncClient, project: Path, tmp_path: Path) -> None:
    native = "ask=native&channel=agentscope-java"
    asked = (await fire(http, native, project)).json()
    assert asked["decision"] == "allow", asked  # deferred: the framework asks the person
    ask_id = asked["ask"]["id"]
    assert asked["ask"]["tool_input"] == {"command": "deploy prod"}
    # a confirmation of another call (the input changed) is not this ask's: asked anew
    other = (await fire(http, f"{native}&confirmed={ask_id}", project, "deploy staging")).json()
    assert other["ask"] is not None and other["ask"]["id"] != ask_id
    confirmed = (await fire(http, f"{native}&confirmed={ask_id}", project)).json()
    assert confirmed["decision"] == "allow" and confirmed["ask"] is None, confirmed
    answers = [(r["ask_id"], r["approved"]) for r in logged(tmp_path, "ask_answer")
               if r["channel"] == "agentscope-java"]  # (the deferrals: channel "host")
    assert answers == [(ask_id, True)]
    # one confirmation, one run: the same call again is asked again
    again = (await fire(http, f"{native}&confirmed={ask_id}", project)).json()
    assert again["ask"] is not None and again["ask"]["id"] != ask_id


async def test_native_answers_a_stops_ask_with_the_fallback_at_once(
        http: httpx2.AsyncClient, project: Path) -> None:
    answer = (await fire(http, "ask=native&channel=agentscope-java", project,
                         event="before_stop")).json()
    assert answer["decision"] == "deny" and answer["ask"]["id"] in answer["reason"]


@pytest.mark.parametrize(("query", "said"), [
    ("ask=maybe", "use ask=now or ask=native"),
    ("ask=native", "needs channel=NAME"),
    ("ask=native&channel=Agent%20Scope", "needs channel=NAME"),
    ("ask=native&channel=x&confirmed=42", "not an ask id"),
    ("channel=x", "needs ask=native"),
    ("ask=now&confirmed=ask-0123456789", "goes with ask=native"),
])
async def test_a_wrong_query_is_a_signed_400_naming_it(http: httpx2.AsyncClient, project: Path,
                                                       query: str, said: str) -> None:
    response = await fire(http, query, project)
    assert response.status_code == 400 and said in response.text, response.text


def test_no_query_waits_out_of_band() -> None:
    assert fire_approver({}) is None
