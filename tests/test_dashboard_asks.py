"""The Pending page's asks and buttons, over a real waiting call: a ``mcp-hooks fire`` process
blocked on a hook's ask (file store) is answered through the dashboard's endpoint, and goes
on or is denied; the CSRF, token and one-answer rules; the metrics gauge counts the ask.
(The browser clicking the buttons: tests/e2e/test_dashboard_browser.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mcp_hooks.dashboard.app import DashboardConfig, dashboard_app, pending_count
from mcp_hooks.dashboard.source import Source
from tests.conftest import MCP_HOOKS, write_hook

ASKS = """cat >/dev/null
echo '{"decision": "ask", "reason": "deletes need a person"}'
"""
TOKEN = "dashboard-asks-token-51c2"
HANG = 60.0  # seconds that stop a hang only
BEARER = {"Authorization": f"Bearer {TOKEN}"}
ANSWER = {"X-MCP-Hooks-Answer": "1", "Content-Type": "application/json", **BEARER}


@pytest.fixture
def waiting(user_dir: Path, project: Path, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A ``fire`` waiting for a person's answer to the asker hook's ask."""
    write_hook(user_dir, "asker", script=ASKS)
    proc = subprocess.Popen(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--session", "s1", "--input",
         '{"command": "rm -rf build", "why": "<b>clean</b>"}', "--user-dir", str(user_dir),
         "--project-dir", str(project), "--log", str(tmp_path / "events.jsonl"), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "MCP_HOOKS_ASK_TIMEOUT": "90"})
    try:
        yield proc
    finally:
        proc.kill()
        proc.communicate()


def _client(tmp_path: Path, token: str | None = TOKEN) -> TestClient:
    source = Source("file:", tmp_path / "events.jsonl")
    return TestClient(dashboard_app(DashboardConfig(source, token=token)))


def _asks(client: TestClient, headers: dict[str, str] = BEARER) -> list[dict[str, Any]]:
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        answer = client.get("/api/pending", headers=headers)
        assert answer.status_code == 200, answer.text
        if answer.json()["asks"]:
            return list(answer.json()["asks"])
        time.sleep(0.05)
    raise AssertionError("no ask became pending")


def _outcome(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any]]:
    out, err = proc.communicate(timeout=HANG)
    assert out, err
    return proc.returncode, json.loads(out)


def _answers(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("kind") == "ask_answer"]


@pytest.mark.parametrize("verb", ["approve", "refuse"])
def test_a_button_answers_the_waiting_call(waiting: subprocess.Popen[str], tmp_path: Path,
                                          verb: str) -> None:
    client = _client(tmp_path)
    (ask,) = _asks(client)
    assert ask["tool"] == "Shell" and ask["session"] == "s1" and ask["hook"] == "asker"
    assert json.loads(ask["tool_input"]) == {"command": "rm -rf build", "why": "<b>clean</b>"}
    assert ask["reason"] == "deletes need a person" and ask["expires_in_seconds"] > 0
    body = {"by": "ann"} if verb == "approve" else {"by": "ann", "reason": "use make clean"}
    done = client.post(f"/api/asks/{ask['id']}/{verb}", json=body, headers=ANSWER)
    assert done.status_code == 200, done.text
    code, outcome = _outcome(waiting)
    if verb == "approve":
        assert (code, outcome["decision"]) == (0, "allow"), outcome
    else:
        assert code == 2 and "use make clean" in outcome["reason"], outcome
    (logged,) = _answers(tmp_path)
    assert (logged["channel"], logged["by"], logged["approved"]) == (
        "dashboard", "ann", verb == "approve")
    timeline = client.get("/api/session?id=s1", headers=BEARER).json()["timeline"]
    asks = [(i["what"], i["by"], i["channel"]) for i in timeline if i["kind"] == "ask"]
    assert asks == [("asked a person", "", ""), (
        "approved" if verb == "approve" else "refused", "ann", "dashboard")], timeline
    again = client.post(f"/api/asks/{ask['id']}/approve", json={}, headers=ANSWER)
    assert again.status_code == 409 and "answered" in again.json()["error"]
    assert client.get("/api/pending", headers=BEARER).json()["asks"] == []


def test_another_site_cannot_answer(waiting: subprocess.Popen[str], tmp_path: Path) -> None:
    client = _client(tmp_path)
    (ask,) = _asks(client)
    url = f"/api/asks/{ask['id']}/approve"
    forms = [  # what another site's page can send: a form, a plain fetch, a foreign Origin
        ({**BEARER, "Content-Type": "application/x-www-form-urlencoded"}, "by=mallory"),
        ({**BEARER, "Content-Type": "text/plain"}, "{}"),
        ({**BEARER, "Content-Type": "application/json"}, "{}"),
        ({**ANSWER, "Origin": "https://evil.example"}, "{}"),
        ({**BEARER, "X-MCP-Hooks-Answer": "1", "Content-Type": "text/plain"}, "{}"),
    ]
    for headers, body in forms:
        refused = client.post(url, content=body, headers=headers)
        assert refused.status_code == 403, (headers, refused.text)
        assert "refused" in refused.json()["error"]
    assert [a["id"] for a in client.get("/api/pending", headers=BEARER).json()["asks"]] == [
        ask["id"]]
    assert waiting.poll() is None  # still waiting: nothing was answered
    assert _answers(tmp_path) == []


def test_bad_answers_are_errors_that_name_the_fault(waiting: subprocess.Popen[str],
                                                    tmp_path: Path) -> None:
    client = _client(tmp_path)
    (ask,) = _asks(client)
    cases = [
        (f"/api/asks/{ask['id']}/refuse", {}, 400, "reason"),
        (f"/api/asks/{ask['id']}/approve", {"for_session": "yes"}, 400, "for_session"),
        (f"/api/asks/{ask['id']}/approve", [1], 400, "JSON object"),
        (f"/api/asks/{ask['id']}/maybe", {}, 404, "approve"),
        ("/api/asks/ask-0000000000/approve", {}, 404, "ask-0000000000"),
    ]
    for url, body, status, named in cases:
        answer = client.post(url, json=body, headers=ANSWER)
        assert answer.status_code == status and named in answer.json()["error"], answer.text
    huge = client.post(f"/api/asks/{ask['id']}/approve", headers=ANSWER,
                       content=json.dumps({"by": "x" * (1 << 17)}))
    assert huge.status_code == 413
    assert waiting.poll() is None and _answers(tmp_path) == []


def test_an_answer_needs_the_token_and_the_gauge_counts_the_ask(
        waiting: subprocess.Popen[str], tmp_path: Path) -> None:
    client = _client(tmp_path)
    (ask,) = _asks(client)
    assert pending_count(Source("file:", tmp_path / "events.jsonl")) == 1
    url = f"/api/asks/{ask['id']}/approve"
    without = {k: v for k, v in ANSWER.items() if k != "Authorization"}
    assert client.post(url, json={}, headers=without).status_code == 401
    done = client.post(url, json={}, headers=ANSWER)
    assert done.status_code == 200 and done.json()["by"] == "dashboard"
    assert _outcome(waiting)[0] == 0
    assert pending_count(Source("file:", tmp_path / "events.jsonl")) == 0


def test_a_dashboard_without_a_token_shows_asks_but_answers_none(
        waiting: subprocess.Popen[str], tmp_path: Path) -> None:
    """On loopback without a token the agent on the machine could reach the port: it must
    not be able to approve its own ask there (as serve mounts /asks only with a token)."""
    client = _client(tmp_path, token=None)
    (ask,) = _asks(client, {})
    pending = client.get("/api/pending").json()
    assert pending["can_answer"] is False and "--token" in pending["cannot_answer"]
    refused = client.post(f"/api/asks/{ask['id']}/approve", json={}, headers={
        "X-MCP-Hooks-Answer": "1"})
    assert refused.status_code == 403 and "--token" in refused.json()["error"]
    assert waiting.poll() is None and _answers(tmp_path) == []
