"""``pending``, ``approve``, ``refuse`` and ``fire``'s ask, across real processes: a ``fire``
waiting on an ask answered by another ``mcp-hooks`` process (file store, Redis), block now /
approve / re-run, bad ids exiting 64, the y/N prompt on a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.servers import redis_service, redis_url  # noqa: F401 - fixtures

ASKS = """cat >/dev/null
echo '{"decision": "ask", "reason": "deletes need a person"}'
"""
HANG = 60.0  # seconds that stop a hang only


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def _fire_args(user_dir: Path, project: Path, *more: str) -> list[str]:
    return [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--session", "s1",
            "--input", '{"command": "rm -rf build"}', "--user-dir", str(user_dir),
            "--project-dir", str(project), "--json", *more]


def _pending(*more: str) -> list[dict[str, object]]:
    done = run("pending", "--json", *more)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _wait_pending(*more: str) -> list[dict[str, object]]:
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        found = _pending(*more)
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("no ask became pending")


@pytest.fixture
def asker(user_dir: Path) -> Path:
    write_hook(user_dir, "asker", script=ASKS)
    return user_dir


@pytest.mark.parametrize("answer", ["approve", "refuse"])
def test_a_waiting_fire_gets_the_answer_of_another_process(
        asker: Path, project: Path, answer: str) -> None:
    waiting = subprocess.Popen(_fire_args(asker, project), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                               env={**os.environ, "MCP_HOOKS_ASK_TIMEOUT": "90"})
    try:
        found = _wait_pending()
        assert found[0]["tool_input"] == {"command": "rm -rf build"}
        assert found[0]["session_id"] == "s1" and found[0]["reason"] == "deletes need a person"
        more = ["--by", "ann"] + (["--reason", "not today"] if answer == "refuse" else [])
        done = run(answer, str(found[0]["id"]), *more)
        assert done.returncode == 0, done.stderr
        out, err = waiting.communicate(timeout=HANG)
    finally:
        waiting.kill()
        waiting.wait()
    outcome = json.loads(out)
    if answer == "approve":
        assert waiting.returncode == 0 and outcome["decision"] == "allow", err
    else:
        assert waiting.returncode == 2 and "not today" in outcome["reason"]
    again = run(answer, str(found[0]["id"]), *more)
    assert again.returncode == 64 and "already answered" in again.stderr


def test_block_now_approve_rerun_and_bad_ids(asker: Path, project: Path) -> None:
    env = {"MCP_HOOKS_ASK_TIMEOUT": "0"}
    first = subprocess.run(_fire_args(asker, project), capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL, env={**os.environ, **env})
    assert first.returncode == 2
    outcome = json.loads(first.stdout)
    ask_id = outcome["ask"]["id"]
    assert f"mcp-hooks approve {ask_id}" in outcome["reason"]
    listed = run("pending")
    assert ask_id in listed.stdout and "rm -rf build" in listed.stdout
    assert run("approve", ask_id).returncode == 0
    second = subprocess.run(_fire_args(asker, project), capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL, env={**os.environ, **env})
    assert second.returncode == 0, second.stdout
    unknown = run("approve", "ask-0000000000")
    assert unknown.returncode == 64 and "no ask 'ask-0000000000'" in unknown.stderr
    assert run("refuse", ask_id, "--reason", "late").returncode == 64
    assert run("refuse", ask_id).returncode == 64  # --reason is required
    log = [json.loads(line) for line in
           (Path(os.environ["XDG_STATE_HOME"]) / "mcp-hooks" / "events.jsonl")
           .read_text().splitlines()]
    kinds = [r["kind"] for r in log if str(r.get("kind", "")).startswith("ask")]
    assert kinds == ["ask", "ask_timeout", "ask_answer"]
    answered = next(r for r in log if r.get("kind") == "ask_answer")
    assert answered["channel"] == "cli" and answered["by"]


def test_pending_and_approve_on_redis_across_processes(
        asker: Path, project: Path, redis_url: str) -> None:  # noqa: F811 - fixture
    waiting = subprocess.Popen(_fire_args(asker, project, "--state", redis_url),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True,
                               env={**os.environ, "MCP_HOOKS_ASK_TIMEOUT": "90"})
    try:
        found = _wait_pending("--state", redis_url)
        assert _pending() == []  # the file store knows nothing of it
        assert run("approve", str(found[0]["id"]), "--state", redis_url).returncode == 0
        out, err = waiting.communicate(timeout=HANG)
    finally:
        waiting.kill()
        waiting.wait()
    assert waiting.returncode == 0, err + out


def _read_until(fd: int, text: bytes) -> bytes:
    seen = b""
    deadline = time.monotonic() + HANG
    while text not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


@pytest.mark.parametrize(("typed", "code"), [(b"y\n", 0), (b"n\n", 2)])
def test_fire_on_a_terminal_asks_y_or_n(asker: Path, project: Path, typed: bytes,
                                        code: int) -> None:
    parent, child = pty.openpty()
    proc = subprocess.Popen(_fire_args(asker, project), stdin=child, stdout=subprocess.PIPE,
                            stderr=child, env={**os.environ, "MCP_HOOKS_ASK_TIMEOUT": "90"})
    os.close(child)
    try:
        prompt = _read_until(parent, b"Approve? [y/N]")
        assert b"deletes need a person" in prompt and b"rm -rf build" in prompt
        os.write(parent, typed)
        out, _ = proc.communicate(timeout=HANG)
    finally:
        proc.kill()
        proc.wait()
        os.close(parent)
    assert proc.returncode == code
    outcome = json.loads(out)
    assert outcome["decision"] == ("allow" if code == 0 else "deny")


def test_log_shows_the_asks(asker: Path, project: Path) -> None:
    first = subprocess.run(_fire_args(asker, project), capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL,
                           env={**os.environ, "MCP_HOOKS_ASK_TIMEOUT": "0"})
    ask_id = json.loads(first.stdout)["ask"]["id"]
    assert run("approve", ask_id, "--by", "ann").returncode == 0
    shown = run("log", "-n", "0").stdout
    assert f"ASK {ask_id} hook=asker tool=Shell  reason: deletes need a person" in shown
    assert f"ASK_TIMEOUT {ask_id} hook=asker nobody answered; deny" in shown
    assert f"ASK_ANSWER {ask_id} hook=asker approved via cli by ann" in shown
