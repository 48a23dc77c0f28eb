"""The dashboard's pages and JSON endpoints through Starlette's test client, over real logs.

The event log is written by a real ``Engine`` firing real hooks (a deny, an allow) into a
file in ``tmp_path``; the signal log by the engine too (a hook that sends a block signal).
Checked: each page's shell holds no value from the log (the script writes values as text),
the endpoints' rows and filters, the cursor that returns only the new events, validated
query parameters, the token rules (sign-in cookie that is not the token, bearer for
scripts, another site's sign-in refused) and a missing or unreadable store as a page that
says what is wrong and the fix.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest
from starlette.testclient import TestClient

from mcp_hooks import Engine, Registry, Settings
from mcp_hooks.dashboard.app import PAGES, DashboardConfig, dashboard_app
from mcp_hooks.dashboard.guard import COOKIE
from mcp_hooks.dashboard.source import Source
from mcp_hooks.spec.outcome import Event
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background

XSS = "<script>alert('x')</script>"
TOKEN = "dashboard-test-token-7f3a"
BLOCKER = """input=$(cat)
case "$input" in
  *"rm -rf"*) echo "no rm -rf <b>here</b> <script>alert(1)</script>" >&2; exit 2;;
esac
exit 0
"""


def _fire(project: Path, user_dir: Path, log: Path, *commands: tuple[str, str]) -> None:
    registry = Registry(user_dir, project, watch=False)
    engine = Engine(registry, Settings(log=log), one_shot=True)
    for session, command in commands:
        engine.fire_blocking(Event(event_type="before_tool", tool_name="Bash",
                                   tool_input={"command": command}, session_id=session,
                                   work_dir=str(project)))


@pytest.fixture
def logged(project: Path, user_dir: Path, tmp_path: Path) -> Path:
    write_hook(user_dir, "no-rm", script=BLOCKER)
    log = tmp_path / "state" / "events.jsonl"
    _fire(project, user_dir, log, ("s-deny", "rm -rf /"), ("s-allow", "ls"),
          (XSS, "echo hi"))
    return log


def _client(log: Path, project: Path, user_dir: Path, **more: Any) -> TestClient:
    config = DashboardConfig(Source("file:", log), roots=(project,), user_dir=user_dir, **more)
    return TestClient(dashboard_app(config))


def test_every_page_is_a_shell_without_a_value_from_the_log(
        logged: Path, project: Path, user_dir: Path) -> None:
    client = _client(logged, project, user_dir)
    assert client.get("/", follow_redirects=False).headers["location"] == "/activity"
    for page in PAGES:
        answer = client.get(f"/{page}")
        assert answer.status_code == 200, page
        assert "<script>alert" not in answer.text and "s-deny" not in answer.text
        assert answer.headers["content-security-policy"].startswith("default-src 'self'")
        assert answer.headers["cache-control"] == "no-store"
    script = client.get("/static/dashboard.js")
    assert script.status_code == 200 and "innerHTML" not in script.text
    assert "textContent" in script.text
    assert client.get("/static/..%2fapp.py").status_code == 404


def test_activity_rows_carry_every_value_as_data(logged: Path, project: Path,
                                                 user_dir: Path) -> None:
    data = _client(logged, project, user_dir).get("/api/events").json()
    rows = {r["session"]: r for r in data["events"]}
    assert set(rows) == {"s-deny", "s-allow", XSS}
    deny = rows["s-deny"]
    assert deny["decision"] == "deny" and deny["blocked_by"] == "no-rm"
    assert "<script>alert(1)</script>" in deny["reason"]  # as text, for textContent
    assert deny["event"] == "before_tool" and deny["tool"] == "Bash"
    assert deny["duration_ms"] > 0
    assert rows["s-allow"]["decision"] == "allow"
    assert [r["session"] for r in data["events"]] == ["s-deny", "s-allow", XSS]  # oldest first


@pytest.mark.parametrize(("query", "sessions"), [
    ("decision=deny", ["s-deny"]),
    ("session=s-allow", ["s-allow"]),
    ("hook=no-rm", ["s-deny", "s-allow", XSS]),
    ("hook=nobody", []),
    ("limit=1", [XSS]),
    ("since=2000-01-01", ["s-deny", "s-allow", XSS]),
    ("until=2000-01-01", []),
])
def test_activity_filters(logged: Path, project: Path, user_dir: Path, query: str,
                          sessions: list[str]) -> None:
    data = _client(logged, project, user_dir).get(f"/api/events?{query}").json()
    assert [r["session"] for r in data["events"]] == sessions


@pytest.mark.parametrize(("query", "named"), [
    ("limit=0", "limit"), ("limit=abc", "limit"), ("limit=999999", "limit"),
    ("decision=maybe", "decision"), ("since=yesterday", "since"),
    ("until=2026-13", "until"), ("session=" + "x" * 300, "session"),
    ("session=a%00b", "session"),
])
def test_bad_query_parameters_are_400_naming_them(logged: Path, project: Path,
                                                  user_dir: Path, query: str,
                                                  named: str) -> None:
    answer = _client(logged, project, user_dir).get(f"/api/events?{query}")
    assert answer.status_code == 400
    assert answer.json()["error"].startswith(f"{named}:")
    hooks = _client(logged, project, user_dir).get("/api/hooks?window=forever")
    assert hooks.status_code == 400 and hooks.json()["error"].startswith("window:")


def test_the_cursor_returns_only_the_events_logged_after_it(
        logged: Path, project: Path, user_dir: Path) -> None:
    client = _client(logged, project, user_dir)
    cursor = client.get("/api/events").json()["cursor"]
    assert client.get(f"/api/events?after={cursor}").json()["events"] == []
    _fire(project, user_dir, logged, ("s-new", "rm -rf ~"))
    fresh = client.get(f"/api/events?after={cursor}&decision=deny").json()
    assert [r["session"] for r in fresh["events"]] == ["s-new"]
    assert client.get(f"/api/events?after={fresh['cursor']}").json()["events"] == []


def test_hooks_sessions_fleet_and_pending(logged: Path, project: Path, user_dir: Path) -> None:
    write_hook(project / ".agents" / "hooks", "untrusted-one")
    client = _client(logged, project, user_dir)
    hooks = client.get("/api/hooks?window=all").json()
    rows = {h["name"]: h for h in hooks["hooks"]}
    assert rows["no-rm"]["runs"] == 3 and rows["no-rm"]["denies"] == 1
    assert rows["no-rm"]["scope"] == "user" and rows["no-rm"]["mode"] == "enforce"
    assert 0 < rows["no-rm"]["p50_ms"] <= rows["no-rm"]["p95_ms"]
    assert rows["untrusted-one"]["trusted"] is False
    assert sum(sum(v) for v in hooks["chart"]["series"].values()) == 3
    session = client.get("/api/session?id=s-deny").json()
    assert [i["decision"] for i in session["timeline"] if i["kind"] == "event"] == ["deny"]
    assert client.get("/api/session").status_code == 400
    fleet = client.get("/api/fleet").json()
    assert fleet["health"] == "ok" and fleet["mismatch"] is False
    assert sum(r["events"] for r in fleet["replicas"]) == 3
    pending = client.get("/api/pending").json()["signals"]  # the deny's block signal
    assert [(s["session"], s["intensity"]) for s in pending] == [("s-deny", "block")]
    assert sorted(i["kind"] for i in session["timeline"]) == ["event", "signal"]


def test_pending_lists_unanswered_block_and_prompt_signals(
        logged: Path, project: Path, user_dir: Path) -> None:
    signals = logged.with_name("signals.jsonl")
    lines = [{"kind": "signal", "signal_id": f"sig-{n}", "intensity": intensity,
              "timestamp": f"2026-01-01T00:00:0{n}Z", "session_id": "s1", "hook": "before_tool",
              "source": "oracle", "signal": {"payload": {"reason": XSS}}}
             for n, intensity in enumerate(("block", "prompt", "aid", "block"))]
    lines.append({"kind": "response", "signal_id": "sig-3", "action": "abort"})
    signals.write_text(signals.read_text() + "".join(json.dumps(line) + "\n" for line in lines))
    pending = _client(logged, project, user_dir).get("/api/pending").json()["signals"]
    assert [(s["id"], s["intensity"], s["reason"]) for s in pending][1:] == [
        ("sig-0", "block", XSS), ("sig-1", "prompt", XSS)]


def test_a_token_is_asked_for_and_never_shown(logged: Path, project: Path,
                                             user_dir: Path) -> None:
    client = _client(logged, project, user_dir, token=TOKEN)
    page = client.get("/activity")
    assert page.status_code == 401 and 'type="password"' in page.text
    assert TOKEN not in page.text
    api = client.get("/api/events")
    assert api.status_code == 401 and api.headers["www-authenticate"].startswith("Bearer")
    bearer = client.get("/api/events", headers={"Authorization": f"Bearer {TOKEN}"})
    assert bearer.status_code == 200
    wrong = client.post("/login", data={"token": "nope"}, follow_redirects=False)
    assert wrong.status_code == 401 and COOKIE not in wrong.headers.get("set-cookie", "")
    foreign = client.post("/login", data={"token": TOKEN}, follow_redirects=False,
                          headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403
    signed = client.post("/login", data={"token": TOKEN}, follow_redirects=False)
    assert signed.status_code == 303 and TOKEN not in signed.headers["location"]
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert TOKEN not in cookie
    assert client.get("/activity").status_code == 200  # the cookie now
    assert TOKEN not in client.get("/activity").text
    client.cookies.clear()
    assert client.get("/api/events").status_code == 401


def test_a_missing_or_unreadable_store_is_a_page_with_the_fix(
        tmp_path: Path, project: Path, user_dir: Path) -> None:
    gone = tmp_path / "nowhere" / "events.jsonl"
    client = _client(gone, project, user_dir)
    page = client.get("/activity")
    assert page.status_code == 503
    assert str(gone.parent) in page.text and "--log FILE or --state URL" in page.text
    assert "Traceback" not in page.text
    assert client.get("/api/events").status_code == 503
    folder = tmp_path / "a-folder"
    folder.mkdir()
    answer = _client(folder, project, user_dir).get("/hooks")
    assert answer.status_code == 503 and "not a regular file" in answer.text
    locked = tmp_path / "locked.jsonl"
    locked.write_text("{}\n")
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("running as root: a mode-0 file is still readable")
        answer = _client(locked, project, user_dir).get("/activity")
        assert answer.status_code == 503 and "read access" in answer.text
    finally:
        locked.chmod(0o600)
    empty = tmp_path / "empty" / "events.jsonl"
    empty.parent.mkdir()
    assert _client(empty, project, user_dir).get("/api/events").json()["events"] == []


def test_an_unreachable_shared_store_is_a_page_not_a_traceback(
        tmp_path: Path, project: Path, user_dir: Path) -> None:
    config = DashboardConfig(Source("redis://127.0.0.1:1/0", tmp_path / "events.jsonl"),
                             roots=(project,), user_dir=user_dir)
    client = TestClient(dashboard_app(config))
    page = client.get("/activity")
    assert page.status_code == 503 and "Traceback" not in page.text
    assert "127.0.0.1:1" in page.text
    assert client.get("/api/events").status_code == 503


def test_the_tail_read_keeps_the_latest_records_of_a_long_log(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    with log.open("w") as out:
        out.write("not json\n")
        for n in range(30000):
            out.write(json.dumps({"ts": f"2026-01-01T00:00:{n:05d}", "kind": "event",
                                  "session_id": f"s{n}", "decision": "allow"}) + "\n")
        out.write('{"torn": ')  # a line still being written
    rows, cursor = Source("file:", log).recent(5)
    assert [r["session_id"] for r in rows] == [f"s{n}" for n in range(29995, 30000)]
    assert int(cursor) == log.stat().st_size


def test_the_command_refuses_a_public_bind_without_a_token_and_foreign_hosts(
        tmp_path: Path, project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_HOOKS_")}
    log = tmp_path / "events.jsonl"
    done = subprocess.run([MCP_HOOKS, "dashboard", "--host", "0.0.0.0", "--port", "0",
                           "--log", str(log)], capture_output=True, text=True, timeout=120,
                          env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 64 and "without a token" in done.stderr
    argv = [MCP_HOOKS, "dashboard", "--port", "0", "--log", str(log), "--project-dir",
            str(project)]
    with background(argv, env=env, announce=r"serving at (\S+)", timeout=120) as board:
        url = board.url
        port = int(url.split(":")[2].split("/")[0])
        ok = httpx2.get(url, timeout=60)
        rebound = httpx2.get(url, headers={"Host": f"attacker.example:{port}"}, timeout=60)
    assert ok.status_code == 200 and "<nav>" in ok.text
    assert rebound.status_code == 400  # DNS rebinding: a loopback bind answers loopback names


REWRITER = """cat >/dev/null
echo '{"modified_input": {"command": "ls -la"}}'
"""


def test_a_session_shows_rewrites_before_and_after_and_stop_gate_rounds(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "widen", script=REWRITER)
    write_hook(user_dir, "not-yet", trigger="before_stop",
               script="cat >/dev/null\necho 'tests fail' >&2\nexit 2\n")
    log = tmp_path / "state" / "events.jsonl"
    engine = Engine(Registry(user_dir, project, watch=False), Settings(log=log), one_shot=True)
    engine.fire_blocking(Event(event_type="before_tool", tool_name="Bash", session_id="s-r",
                               tool_input={"command": "ls"}, work_dir=str(project)))
    for _ in range(2):
        engine.fire_blocking(Event(event_type="before_stop", session_id="s-r",
                                   work_dir=str(project)))
    timeline = _client(log, project, user_dir).get("/api/session?id=s-r").json()["timeline"]
    events = [i for i in timeline if i["kind"] == "event"]
    assert events[0]["rewrite"] is True
    assert json.loads(events[0]["before"]) == {"command": "ls"}
    assert json.loads(events[0]["after"]) == {"command": "ls -la"}
    assert [i.get("stop_round") for i in events[1:]] == [1, 2]

