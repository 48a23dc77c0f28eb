"""Bridge calls answered by a running server: the token-protected HTTP endpoint and the
``bridge_hook`` MCP tool for Claude Code ``mcp_tool`` hooks, over the server's real
``HookService`` engines, through a real ASGI client and a real MCP client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, types
from starlette.applications import Starlette

from mcp_hooks.hosts.forward import mcp_tool_payload
from mcp_hooks.server import build_server
from mcp_hooks.server.forward import bridge_routes, register_bridge_tool
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from tests.conftest import write_hook

pytestmark = pytest.mark.anyio

TOKEN = "correct-horse-battery-staple"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "hosts"


def fixture(host: str, name: str, project: Path) -> dict[str, Any]:
    text = (FIXTURES / host / f"{name}.json").read_text().replace("$PROJECT", str(project))
    data: dict[str, Any] = json.loads(text)
    return data


@pytest.fixture
async def service(project: Path, user_dir: Path, project_hooks: Path,
                  tmp_path: Path) -> AsyncIterator[HookService]:
    write_hook(project_hooks, "deny-rm", script='echo "no rm -rf here" >&2\nexit 2\n',
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    write_hook(project_hooks, "gate", trigger="before_stop",
               script='echo "run the tests first" >&2\nexit 2\n')
    async with HookService(Settings.from_env(project_dir=project, user_dir=user_dir,
                                    log=tmp_path / "events.jsonl"), watch_interval=0.05) as svc:
        yield svc


@pytest.fixture
async def http(service: HookService) -> AsyncIterator[httpx2.AsyncClient]:
    app = Starlette(routes=bridge_routes(service.engine_for, TOKEN))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                  base_url="http://127.0.0.1") as client:
        yield client


AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def test_endpoint_answers_in_the_hosts_form(http: httpx2.AsyncClient,
                                                  project: Path) -> None:
    payload = fixture("claude-code", "PreToolUse.rm", project)
    response = await http.post("/hooks/bridge/claude-code", json=payload, headers=AUTH)
    assert response.status_code == 200
    assert response.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert response.json()["hookSpecificOutput"]["permissionDecisionReason"] == "no rm -rf here"
    allowed = await http.post("/hooks/bridge/claude-code", headers=AUTH,
                              json=fixture("claude-code", "PreToolUse.bash", project))
    assert allowed.status_code == 200 and allowed.content == b""
    copilot = await http.post("/hooks/bridge/copilot-cli?event=preToolUse", headers=AUTH,
                              json=fixture("copilot-cli", "preToolUse.bash", project))
    assert copilot.json()["permissionDecision"] == "deny"


async def test_endpoint_requires_the_token(http: httpx2.AsyncClient, project: Path) -> None:
    payload = fixture("claude-code", "PreToolUse.rm", project)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        response = await http.post("/hooks/bridge/claude-code", json=payload, headers=headers)
        assert response.status_code == 401


async def test_endpoint_is_absent_without_a_token(service: HookService) -> None:
    assert bridge_routes(service.engine_for, None) == []
    assert bridge_routes(service.engine_for, "") == []


async def test_endpoint_rejects_what_it_cannot_answer(http: httpx2.AsyncClient,
                                                      project: Path) -> None:
    # no event known: the universal block needs exit 2, so the local bridge must answer
    bad = await http.post("/hooks/bridge/claude-code", content=b"not json", headers=AUTH)
    assert bad.status_code == 422 and "not JSON" in bad.text and "blocked" in bad.text
    unknown = await http.post("/hooks/bridge/vim", json={}, headers=AUTH)
    assert unknown.status_code == 404
    # Copilot CLI blocks in JSON only: the server answers the deny itself
    no_event = await http.post("/hooks/bridge/copilot-cli", headers=AUTH,
                               json=fixture("copilot-cli", "preToolUse.bash", project))
    assert no_event.status_code == 200
    assert no_event.json()["permissionDecision"] == "deny"
    assert "no event name" in no_event.json()["permissionDecisionReason"]
    # the event known: a deny in the host's form, whatever the body
    for body in (b"not json", b"[1]", b'{"tool_name": "Bash", "tool_input": "rm -rf /"}'):
        denied = await http.post("/hooks/bridge/claude-code?event=PreToolUse", content=body,
                                 headers=AUTH)
        assert denied.status_code == 200
        assert denied.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    outside = fixture("claude-code", "PreToolUse.rm", project)
    outside["cwd"] = "/"
    response = await http.post("/hooks/bridge/claude-code", json=outside, headers=AUTH)
    assert response.status_code == 422 and "outside the folders" in response.text


async def test_the_servers_loop_guard_counts_stop_blocks(http: httpx2.AsyncClient,
                                                         project: Path) -> None:
    first = await http.post("/hooks/bridge/codex", headers=AUTH,
                            json=fixture("codex", "Stop", project))
    assert first.json() == {"decision": "block", "reason": "run the tests first"}
    again = fixture("codex", "Stop", project)
    again["stop_hook_active"] = True
    reasons = []
    for _ in range(9):
        response = await http.post("/hooks/bridge/codex", headers=AUTH, json=again)
        reasons.append(response.json().get("decision"))
    assert reasons[:7] == ["block"] * 7
    assert reasons[7] is None  # the 8-block cap: Codex itself has none


async def test_a_signed_request_gets_an_answer_signed_over_it(http: httpx2.AsyncClient,
                                                              project: Path) -> None:
    from mcp_hooks.hosts.forward_auth import answer_problem, sign_request

    body = json.dumps(fixture("claude-code", "PreToolUse.rm", project)).encode()
    target = "/hooks/bridge/claude-code?event=PreToolUse"
    signed = sign_request(TOKEN, target, body)
    response = await http.post(target, content=body, headers=signed.headers)
    assert response.status_code == 200
    assert response.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    answer = (response.status_code, dict(response.headers), response.content)
    assert answer_problem(TOKEN, signed, *answer) is None
    other = sign_request(TOKEN, target, body)  # the same answer, for another request: no
    assert answer_problem(TOKEN, other, *answer) is not None
    assert answer_problem("another-token", signed, *answer) is not None
    # a 4xx after the check passed is signed too
    unknown = sign_request(TOKEN, "/hooks/bridge/vim", b"{}")
    response = await http.post("/hooks/bridge/vim", content=b"{}", headers=unknown.headers)
    assert response.status_code == 404
    assert answer_problem(TOKEN, unknown, 404, dict(response.headers), response.content) is None
    # Claude Code's own http hooks: the bearer, unsigned
    bearer = await http.post(target, content=body, headers=AUTH)
    assert bearer.status_code == 200 and "x-mcp-hooks-signature" not in bearer.headers


async def test_fire_takes_signed_requests_only(http: httpx2.AsyncClient, project: Path) -> None:
    from mcp_hooks.hosts.forward_auth import answer_problem, sign_request

    body = json.dumps({"event_type": "before_tool", "tool_name": "Shell",
                       "tool_input": {"command": "rm -rf /"}, "work_dir": str(project)}).encode()
    refused = await http.post("/hooks/fire", content=body, headers=AUTH)
    assert refused.status_code == 401 and "X-MCP-Hooks-Auth" in refused.text
    signed = sign_request(TOKEN, "/hooks/fire", body)
    response = await http.post("/hooks/fire", content=body, headers=signed.headers)
    assert response.status_code == 200 and response.json()["decision"] == "deny"
    assert answer_problem(TOKEN, signed, 200, dict(response.headers), response.content) is None


def test_the_verifier_checks_in_order_and_remembers_nonces() -> None:
    from mcp_hooks.hosts.forward_auth import RequestVerifier, sign_request

    now = [1_700_000_000.0]
    verifier = RequestVerifier(TOKEN, clock=lambda: now[0], max_nonces=2)

    def check(signed: Any, body: bytes = b"{}", target: str = "/hooks/fire") -> str:
        headers = {k.lower(): v for k, v in signed.headers.items()}
        checked = verifier.check("POST", target, headers, body)
        return "ok" if checked.mac == signed.mac else checked.why

    first = sign_request(TOKEN, "/hooks/fire", b"{}", now=now[0])
    assert check(first) == "ok"
    assert check(first).startswith("replayed nonce")
    assert check(sign_request(TOKEN, "/hooks/fire", b"{}", now=now[0] - 301)).startswith(
        "clock skew")
    assert check(sign_request(TOKEN, "/hooks/fire", b"{}", now=now[0] + 301)).startswith(
        "clock skew")
    assert check(sign_request(TOKEN, "/hooks/fire", b"{}", now=now[0] - 300)) == "ok"
    assert "another token" in check(sign_request("guess", "/hooks/fire", b"{}", now=now[0]))
    assert "another token" in check(sign_request(TOKEN, "/hooks/fire", b"{}", now=now[0]),
                                    body=b"[]")
    assert "another token" in check(sign_request(TOKEN, "/hooks/fire", b"{}", now=now[0]),
                                    target="/hooks/fire?x=1")
    assert "full" in check(sign_request(TOKEN, "/hooks/fire", b"{}", now=now[0]))
    now[0] += 601  # the two remembered nonces expire; their requests are too old anyway
    assert check(first).startswith("clock skew")
    assert check(sign_request(TOKEN, "/hooks/fire", b"{}", now=now[0])) == "ok"
    malformed = sign_request(TOKEN, "/hooks/fire", b"{}", now=now[0], nonce="N" * 32)
    assert check(malformed).startswith("not a v2 signed request")


def test_the_transport_lets_signed_forwarding_requests_through() -> None:
    from mcp_hooks.hosts.forward import FIRE_PATH, FORWARD_PATH
    from mcp_hooks.hosts.forward_auth import AUTH_HEADER
    from mcp_hooks.server.transport import (
        SELF_AUTHENTICATED_HEADER,
        SELF_AUTHENTICATED_PATH,
        SELF_AUTHENTICATED_PREFIX,
    )

    assert AUTH_HEADER.lower().encode() == SELF_AUTHENTICATED_HEADER
    assert (SELF_AUTHENTICATED_PATH, SELF_AUTHENTICATED_PREFIX) == (FIRE_PATH, FORWARD_PATH)


# -- the bridge_hook MCP tool (Claude Code mcp_tool hooks) ----------------------------------


@pytest.fixture
async def mcp_client(service: HookService) -> AsyncIterator[Client]:
    server = build_server(service)
    register_bridge_tool(server, service.engine_for)
    async with Client(server) as client:
        yield client


def _text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def test_bridge_hook_tool_answers_with_claude_codes_hook_json(mcp_client: Client,
                                                                    project: Path) -> None:
    arguments = {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(project),
                 "tool_name": "Bash", "tool_input": json.dumps({"command": "rm -rf /tmp/x"}),
                 "tool_use_id": "toolu_1"}
    result = await mcp_client.call_tool("bridge_hook", arguments)
    assert not result.is_error
    answer = json.loads(_text(result))
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


async def test_bridge_hook_tool_rebuilds_tool_input_from_leaves(mcp_client: Client,
                                                                project: Path) -> None:
    arguments = {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(project),
                 "tool_name": "Bash", "tool_input": "[object Object]",
                 "input_command": "rm -rf build", "input_file_path": "", "input_url": ""}
    result = await mcp_client.call_tool("bridge_hook", arguments)
    assert json.loads(_text(result))["hookSpecificOutput"]["permissionDecision"] == "deny"
    allowed = await mcp_client.call_tool("bridge_hook", {**arguments, "input_command": "ls"})
    assert not allowed.is_error and _text(allowed) == ""


async def test_bridge_hook_tool_stop_gate_and_errors(mcp_client: Client, project: Path) -> None:
    stop = await mcp_client.call_tool("bridge_hook", {
        "hook_event_name": "Stop", "session_id": "s2", "cwd": str(project),
        "stop_hook_active": "false", "last_assistant_message": "Done."})
    assert json.loads(_text(stop)) == {"decision": "block", "reason": "run the tests first"}
    bad = await mcp_client.call_tool("bridge_hook", {"hook_event_name": "Elicitation"})
    assert bad.is_error and "not bridged" in _text(bad)


def test_mcp_tool_payload_parses_substituted_values() -> None:
    host, payload = mcp_tool_payload({
        "host": "claude-code", "hook_event_name": "Stop", "session_id": "s",
        "stop_hook_active": "true", "last_assistant_message": "", "tool_use_id": None,
        "payload": '{"transcript_path": "/t.jsonl"}'})
    assert host == "claude-code"
    assert payload == {"transcript_path": "/t.jsonl", "hook_event_name": "Stop",
                       "session_id": "s", "stop_hook_active": True}
    _, payload = mcp_tool_payload({"hook_event_name": "PreToolUse", "tool_name": "Write",
                                   "tool_input": {"file_path": "/a", "content": "x"},
                                   "input_file_path": "/ignored"})
    assert payload["tool_input"] == {"file_path": "/a", "content": "x"}


def _script_functions() -> dict[str, Any]:
    """The forward script's functions, loaded without running its main."""
    from mcp_hooks.hosts.forward_script import body_text

    namespace: dict[str, Any] = {"HEADER": "/nonexistent", "BRIDGE": ["true"],
                                 "DEFAULT_TIMEOUT": 5.0}  # the script's settings
    exec(compile(body_text().replace("finish(main())", ""), "forward", "exec"), namespace)
    return namespace


# The protocol's test vector (FORWARD-V2.md; the Java client's tests carry the same values),
# checked against openssl by hand:
#   printf 'mcp-hooks/2 request\nPOST\n/hooks/fire\n<nonce>\n1700000000\n\n\n<sha256 hex
#   of body>' | openssl dgst -sha256 -hmac s3cret-token
VECTOR = {
    "token": "s3cret-token", "method": "POST", "path": "/hooks/fire",
    "nonce": "00112233445566778899aabbccddeeff", "time": "1700000000", "user_dir": "",
    "project_dir": "", "body": b'{"event_type":"before_tool"}',
    "body_sha256": "435c977633e90144de34612515408e063ccb95fa9e6244b6ab358187f4090938",
    "request_mac": "a9c878b8f0f0c42ae4d25402141ee471d9155379859cdd144b490c1a8451d37e",
    "answer_status": 200, "answer_body": b'{"decision":"allow"}',
    "answer_signature":
        "v2=121c750827ae12c483c621c5ce74aa4cde77a4accbcc2df178217c3a32a0f97d",
}


def test_the_protocol_test_vector() -> None:
    import hashlib

    from mcp_hooks.hosts.forward_auth import answer_signature, request_mac

    v = VECTOR
    assert hashlib.sha256(v["body"]).hexdigest() == v["body_sha256"]
    args = (v["token"], v["method"], v["path"], v["nonce"], v["time"], v["user_dir"],
            v["project_dir"], v["body"])
    assert request_mac(*args) == v["request_mac"]
    assert answer_signature(v["token"], v["nonce"], v["request_mac"], v["answer_status"],
                            v["answer_body"]) == v["answer_signature"]
    script = _script_functions()  # the forward script's hand-written HMAC, the same values
    assert script["request_mac"](*args) == v["request_mac"]
    assert script["answer_signature"](v["token"], v["nonce"], v["request_mac"],
                                      v["answer_status"], v["answer_body"]) \
        == v["answer_signature"]


@pytest.mark.parametrize("token", ["t", "k" * 64, "k" * 65, "é" * 50])
@pytest.mark.parametrize("body", [b"", b'{"decision": "allow"}', b"\n\xff\x00"])
def test_the_scripts_own_hmac_is_the_servers(token: str, body: bytes) -> None:
    """Short, block-size, longer-than-a-block (hashed first) and non-ASCII tokens."""
    from mcp_hooks.hosts.forward_auth import answer_signature, request_mac

    script = _script_functions()
    nonce = "ab" * 16
    args = (token, "POST", "/hooks/bridge/codex?event=PreToolUse", nonce, "1700000000",
            "%2Fu", "", body)
    mac = request_mac(*args)
    assert script["request_mac"](*args) == mac
    for status in (200, 422):
        assert script["answer_signature"](token, nonce, mac, status, body) \
            == answer_signature(token, nonce, mac, status, body)
    assert answer_signature(token, nonce, mac, 200, body) != answer_signature(
        token, nonce, mac, 422, body)
    signed = answer_signature(token, nonce, mac, 200, body)
    assert script["same"](signed, answer_signature(token, nonce, mac, 200, body))
    assert not script["same"](signed, answer_signature(token + "x", nonce, mac, 200, body))


def test_the_script_splits_and_encodes_urls_by_hand() -> None:
    script = _script_functions()
    assert script["split_url"]("http://127.0.0.1:8377/mcp") == ("http", "127.0.0.1", 8377,
                                                                 "/mcp")
    assert script["split_url"]("http://[::1]:9/") == ("http", "::1", 9, "/")
    assert script["split_url"]("https://user:pw@example.com") == ("https", "example.com",
                                                                  443, "")
    assert script["pct"]("PreToolUse") == "PreToolUse"
    assert script["pct"]("a b/é?&") == "a%20b%2F%C3%A9%3F%26"


async def test_a_forwarded_ask_is_the_hosts_own_or_the_fallback_at_once(
        http: httpx2.AsyncClient, project: Path, project_hooks: Path) -> None:
    """Through ``serve``: Claude Code gets its own ask; Gemini CLI (no ask) the deny naming
    the ask at once (the forward client would give up on a wait), and the same call passes
    once approved."""
    from mcp_hooks.spec.asking import AskAnswer
    from mcp_hooks.state.asks import answer
    from mcp_hooks.state.files import FileStore

    write_hook(project_hooks, "asker", extra="priority: 900\nmatcher:\n  tool: Shell\n",
               script="""cat >/dev/null\necho '{"decision": "ask", "reason": "a person"}'\n""")
    claude = await http.post("/hooks/bridge/claude-code", headers=AUTH,
                             json=fixture("claude-code", "PreToolUse.bash", project))
    assert claude.json()["hookSpecificOutput"]["permissionDecision"] == "ask"
    gemini_call = fixture("gemini-cli", "BeforeTool.shell", project)
    gemini = await http.post("/hooks/bridge/gemini-cli", headers=AUTH, json=gemini_call)
    assert gemini.json()["decision"] == "deny"
    store = FileStore()
    ask_id = next(a.id for a in store.pending_asks() if a.tool_name == "Shell"
                  and a.id in gemini.json()["reason"])
    answer(store, ask_id, AskAnswer(True, channel="test"))
    again = await http.post("/hooks/bridge/gemini-cli", headers=AUTH, json=gemini_call)
    assert again.status_code == 200 and "deny" not in again.text
