"""The dashboard in a real browser: Debian's chromium driven headless by Playwright.

Playwright's own browser download does not work here, so the browser is ``/usr/bin/chromium``
(``executable_path``; ``.ci/run`` installs the ``chromium`` package when it is missing). Real
parts throughout: ``mcp-hooks serve --transport http --dashboard`` subprocesses, a real MCP
client firing events, a real ``redis-server`` for two replicas. Checked: a denied event's row
appears on the open Activity page without a reload, the filter narrows to it, its session
opens, an XSS payload in the reason stays text (no script runs), a request without the token
off loopback gets the sign-in form and the token signs in, and two replicas with different
hooks show on the Fleet page with the digest warning. Each page is photographed into
``$MCP_HOOKS_SCREENSHOTS`` (default: the test's temporary folder); docs/img/ holds one each.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.mcp_calls import fire
from tests.helpers.servers import redis_server

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
WAIT_MS = 30_000  # a hang stops here; the row shows within a poll (0.5 s)
XSS = "<img src=x onerror=\"window.__xss=1\"><script>window.__xss=1</script>"
ECHO_BLOCKER = """input=$(cat)
case "$input" in
  *"rm -rf"*) printf 'refused: %s' "$input" >&2; exit 2;;
esac
exit 0
"""
TOKEN = "browser-test-token-9d1e"

sync_api = pytest.importorskip("playwright.sync_api", reason="the dev extra installs playwright")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)")
    with sync_api.sync_playwright() as play:
        chromium = play.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("MCP_HOOKS_SCREENSHOTS") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _env(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_HOOKS_")}
    return {**env, **more}


def _fire(url: str, session: str, command: str, headers: dict[str, str] | None = None) -> None:
    async def go() -> None:
        async with Client(url) as client:
            await fire(client, event_type="before_tool", tool_name="Bash",
                       tool_input={"command": command}, session_id=session)
    # Playwright's sync API keeps an event loop in this thread: the client gets its own
    failed: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(go)
        except BaseException as exc:  # raised again in the test's thread
            failed.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "the MCP call hung"
    if failed:
        raise failed[0]


def test_activity_live_filter_session_and_xss(browser: object, project: Path, user_dir: Path,
                                              tmp_path: Path, shots: Path) -> None:
    write_hook(user_dir, "no-rm", script=ECHO_BLOCKER)
    log = tmp_path / "state" / "events.jsonl"
    argv = [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--dashboard",
            "--project-dir", str(project), "--user-dir", str(user_dir), "--log", str(log)]
    with background(argv, env=_env(), timeout=120) as server:
        base = server.url.rsplit("/mcp", 1)[0] + "/dashboard"
        _fire(server.url, "s-earlier", "ls -la")
        page = browser.new_page(viewport={"width": 1400, "height": 700})  # type: ignore[attr-defined]
        page.goto(f"{base}/activity")
        page.wait_for_selector("#activity tbody tr", timeout=WAIT_MS)
        _fire(server.url, "s-denied", f"rm -rf / {XSS}")
        row = page.locator("#activity tbody tr", has_text="s-denied")
        row.wait_for(timeout=WAIT_MS)  # appeared without a reload
        assert "deny" in row.inner_text() and "no-rm" in row.inner_text()
        assert "<script>window.__xss=1</script>" in row.inner_text()  # shown as text
        assert page.evaluate("window.__xss") is None  # and never run
        assert page.locator("#activity img").count() == 0
        page.screenshot(path=str(shots / "dashboard-activity.png"))

        page.select_option("select[name=decision]", "deny")
        page.click("form.filters button")
        page.wait_for_url("**decision=deny**", timeout=WAIT_MS)
        page.wait_for_selector("#activity tbody tr", timeout=WAIT_MS)
        sessions = page.locator("#activity tbody tr td:nth-child(2)").all_inner_texts()
        assert sessions == ["s-denied"]

        page.click("a.session >> text=s-denied")
        page.wait_for_selector("h2:has-text('Session s-denied')", timeout=WAIT_MS)
        assert page.evaluate("window.__xss") is None
        page.screenshot(path=str(shots / "dashboard-sessions.png"))
        for name in ("hooks", "pending"):
            page.goto(f"{base}/{name}")
            page.wait_for_selector("table", timeout=WAIT_MS)
            page.screenshot(path=str(shots / f"dashboard-{name}.png"))
        page.close()


def test_off_loopback_the_token_is_asked_for(browser: object, tmp_path: Path,
                                             project: Path) -> None:
    log = tmp_path / "state" / "events.jsonl"
    log.parent.mkdir()
    argv = [MCP_HOOKS, "dashboard", "--host", "0.0.0.0", "--port", "0", "--token", TOKEN,
            "--log", str(log), "--project-dir", str(project)]
    with background(argv, env=_env(), announce=r"serving at (\S+)", timeout=120) as server:
        url = server.url.replace("0.0.0.0", "127.0.0.1")
        page = browser.new_page()  # type: ignore[attr-defined]
        answer = page.goto(url)
        assert answer.status == 401
        assert page.locator("input[type=password]").count() == 1
        assert TOKEN not in page.content()
        page.fill("input[type=password]", "wrong")
        page.click("button[type=submit]")
        assert "not this server" in page.inner_text("main")
        page.fill("input[type=password]", TOKEN)
        page.click("button[type=submit]")
        page.wait_for_selector("#activity", timeout=WAIT_MS)
        assert TOKEN not in page.url and TOKEN not in page.content()
        page.close()


def test_two_redis_replicas_on_the_fleet_page(browser: object, project: Path, tmp_path: Path,
                                              shots: Path) -> None:
    one, two = tmp_path / "hooks-one", tmp_path / "hooks-two"
    for folder in (one, two):
        write_hook(folder, "no-rm", script=ECHO_BLOCKER)
    write_hook(two, "audit")  # another set of hooks: another digest
    with redis_server() as redis:
        env = _env(MCP_HOOKS_STATE=redis.url)

        def serve(name: str, hooks: Path) -> list[str]:
            return [MCP_HOOKS, "serve", "--transport", "http", "--stateless", "--port", "0",
                    "--replica-id", name, "--project-dir", str(project), "--user-dir",
                    str(hooks)]

        with background(serve("replica-a", one), env=env, timeout=120) as a, \
                background(serve("replica-b", two), env=env, timeout=120) as b:
            _fire(a.url, "s-a", "rm -rf /")
            _fire(b.url, "s-b", "ls")
            argv = [MCP_HOOKS, "dashboard", "--port", "0", "--project-dir", str(project),
                    "--user-dir", str(one)]
            with background(argv, env=env, announce=r"serving at (\S+)",
                            timeout=120) as board:
                page = browser.new_page(viewport={"width": 1200, "height": 500})  # type: ignore[attr-defined]
                page.goto(board.url.replace("/activity", "/fleet"))
                page.wait_for_selector("table tbody tr", timeout=WAIT_MS)
                text = page.inner_text("main")
                assert "replica-a" in text and "replica-b" in text
                assert page.locator("#mismatch").count() == 1
                assert not redis.password or redis.password not in page.content()
                page.screenshot(path=str(shots / "dashboard-fleet.png"))
                page.goto(board.url)
                page.locator("#activity tbody tr", has_text="s-a").wait_for(timeout=WAIT_MS)
                page.close()


ASKER = """cat >/dev/null
echo '{"decision": "ask", "reason": "deleting the build needs a person"}'
"""


@pytest.mark.parametrize("button", ["Approve", "Refuse"])
def test_a_person_answers_a_waiting_call_on_the_pending_page(
        browser: object, project: Path, user_dir: Path, tmp_path: Path, shots: Path,
        button: str) -> None:
    """A ``mcp-hooks fire`` blocked on a hook's ask (the file store) is answered by a click
    on the Pending page of a real ``mcp-hooks dashboard`` with a token: approved, the call
    goes on (exit 0); refused with a reason, it is denied with that reason (exit 2). The
    answer is logged with the name the person gave the page."""
    write_hook(user_dir, "asker", script=ASKER)
    log = tmp_path / "state" / "events.jsonl"
    log.parent.mkdir()
    env = _env(MCP_HOOKS_ASK_TIMEOUT="120")
    waiting = subprocess.Popen(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--session", "s-ask",
         "--input", '{"command": "rm -rf build"}', "--user-dir", str(user_dir),
         "--project-dir", str(project), "--log", str(log), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=env)
    argv = [MCP_HOOKS, "dashboard", "--port", "0", "--token", TOKEN, "--log", str(log),
            "--project-dir", str(project), "--user-dir", str(user_dir)]
    try:
        with background(argv, env=env, announce=r"serving at (\S+)", timeout=120) as board:
            page = browser.new_page(viewport={"width": 1400, "height": 600})  # type: ignore[attr-defined]
            page.goto(board.url.replace("/activity", "/pending"))
            page.fill("input[type=password]", TOKEN)
            page.click("button[type=submit]")
            page.wait_for_selector("#activity", timeout=WAIT_MS)
            page.goto(board.url.replace("/activity", "/pending"))
            row = page.locator("tr[data-ask]", has_text="rm -rf build")
            row.wait_for(timeout=WAIT_MS)  # the waiting call, shown within a poll
            assert "deleting the build needs a person" in row.inner_text()
            page.fill("#by", "ann")
            page.dispatch_event("#by", "change")
            if button == "Approve":
                page.screenshot(path=str(shots / "dashboard-pending.png"))
            else:
                row.locator("input.refusal").fill("use make clean")
            row.locator(f"button:text-is('{button}')").click()
            said = "approved" if button == "Approve" else "refused"
            page.locator("#status", has_text=said).wait_for(timeout=WAIT_MS)
            out, err = waiting.communicate(timeout=120)
            page.close()
    finally:
        waiting.kill()
        waiting.communicate()
    outcome = json.loads(out)
    if button == "Approve":
        assert (waiting.returncode, outcome["decision"]) == (0, "allow"), err
    else:
        assert waiting.returncode == 2 and "use make clean" in outcome["reason"], outcome
    answers = [r for r in map(json.loads, log.read_text().splitlines())
               if r.get("kind") == "ask_answer"]
    assert [(a["channel"], a["by"]) for a in answers] == [("dashboard", "ann")]
