"""``log``, ``signals`` and ``respond`` with ``--state URL``: they read a shared store's logs.

Real parts throughout: the Redis and PostgreSQL of ``tests/helpers/servers.py``, records
written by real ``mcp-hooks fire --state URL`` runs (each its own process: its own replica),
read back by the installed ``mcp-hooks`` console script.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.state.redis import RedisStore
from mcp_hooks.state.url import close_store, open_store
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.restartable import restartable
from tests.helpers.servers import (  # noqa: F401 - fixtures
    free_port,
    postgres_service,
    postgres_url,
    redis_service,
    redis_url,
)

LINE_TIMEOUT = 60.0  # seconds a follower may take to print a line (stops a hang only)


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


@pytest.fixture(params=["redis", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    """A fresh shared store (its own key prefix or schema) on each backend."""
    return str(request.getfixturevalue(f"{request.param}_url"))


def password_of(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


@pytest.fixture
def hooks(user_dir: Path) -> Path:
    write_hook(user_dir, "no-rm", extra="matcher:\n  tool: Shell\n  pattern: rm\n",
               script="cat >/dev/null\necho 'rm refused' >&2\nexit 2\n")
    return user_dir


def fire(url: str, hooks: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run("fire", *args, "--user-dir", str(hooks), "--project-dir", str(project),
               "--state", url)


def test_log_reads_every_process_records_from_the_store(url: str, hooks: Path, project: Path,
                                                        tmp_path: Path) -> None:
    file_log = tmp_path / "events.jsonl"
    denied = fire(url, hooks, project, "before_tool", "--tool", "Shell", "--input",
                  '{"command": "rm x"}', "--session", "s-7")
    assert denied.returncode == 2, denied.stderr
    assert fire(url, hooks, project, "session_start", "--session", "other").returncode == 0

    shown = run("log", "--state", url, "--session", "s-7", "--log", str(file_log))
    assert shown.returncode == 0, shown.stderr
    assert "before_tool" in shown.stdout and "DENY" in shown.stdout
    assert "rm refused" in shown.stdout and "session_start" not in shown.stdout
    # MCP_HOOKS_STATE says the same as --state; --json prints the records, oldest first
    raw = run("log", "--json", env={"MCP_HOOKS_STATE": url})
    assert raw.returncode == 0, raw.stderr
    records = [json.loads(line) for line in raw.stdout.splitlines()]
    assert [r["event"] for r in records] == ["before_tool", "session_start"]
    assert len({r["replica"] for r in records}) == 2  # two fire processes, one log
    # the default (file:) reads the file, as before: nothing was written there
    empty = run("log", "--log", str(file_log))
    assert empty.returncode == 0 and empty.stdout == ""
    assert f"no events logged yet in {file_log}" in empty.stderr
    assert password_of(url) not in shown.stderr + raw.stderr


def test_log_of_an_empty_store_names_it_without_its_password(url: str) -> None:
    shown = run("log", "--state", url)
    assert shown.returncode == 0, shown.stderr
    assert "no events logged yet in the state store " in shown.stderr
    assert password_of(url) not in shown.stderr and "***" in shown.stderr


def test_log_follow_polls_the_store(url: str, hooks: Path, project: Path) -> None:
    follower = subprocess.Popen([MCP_HOOKS, "log", "--follow", "--state", url, "--session",
                                 "f-1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, stdin=subprocess.DEVNULL)
    lines: queue.Queue[str] = queue.Queue()
    assert follower.stdout is not None
    stdout = follower.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    try:
        # until the follower prints one: then it is following (no sleep guessing when)
        for n in range(50):
            fire(url, hooks, project, "after_agent", "--session", "f-1")
            try:
                lines.get(timeout=1.0 + n / 10)
                break
            except queue.Empty:
                continue
        else:
            pytest.fail("log --follow printed none of 50 events")
        fire(url, hooks, project, "before_tool", "--tool", "Shell", "--input",
             '{"command": "rm y"}', "--session", "other")  # another session: not shown
        fire(url, hooks, project, "before_tool", "--tool", "Shell", "--input",
             '{"command": "rm z"}', "--session", "f-1")
        while True:
            line = lines.get(timeout=LINE_TIMEOUT)
            if "after_agent" not in line:  # the loop above may have fired one more
                break
        assert "before_tool" in line and "DENY" in line and "session=f-1" in line
    finally:
        follower.terminate()
        _, err = follower.communicate(timeout=30)
    assert password_of(url) not in err


def sent_signal(url: str, hooks: Path, project: Path, session: str) -> str:
    done = fire(url, hooks, project, "before_tool", "--tool", "Shell", "--input",
                '{"command": "rm -rf /"}', "--session", session, "--json")
    assert done.returncode == 2, done.stderr
    return str(json.loads(done.stdout)["signals"][0]["header"]["id"])


def test_signals_and_respond_by_a_unique_prefix(url: str, hooks: Path, project: Path) -> None:
    signal_id = sent_signal(url, hooks, project, "s-1")
    listed = run("signals", "--state", url, "--json")
    assert listed.returncode == 0, listed.stderr
    sent = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["kind"], r["signal_id"], r["session_id"]) for r in sent] == [
        ("signal", signal_id, "s-1")]

    answered = run("respond", signal_id[:8], "abort", "--state", url)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.startswith(f"answered signal {signal_id} (before_tool, block) "
                                      "with abort")
    again = run("respond", signal_id[:8], "retry_after_fix", "--state", url)
    assert again.returncode == 64
    assert "already answered: abort" in again.stderr
    shown = run("signals", "--state", url, "--session", "s-1")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[-1].endswith(f"answered abort ({signal_id})")


def test_an_ambiguous_prefix_lists_the_candidates(url: str) -> None:
    store = open_store(url)
    try:
        for n in (1, 2):
            store.append("signals", {"kind": "signal", "signal_id": f"feed000{n}-aaaa",
                                     "session_id": "s", "intensity": "block", "hook": "x"})
    finally:
        close_store(store)
    done = run("respond", "feed", "abort", "--state", url)
    assert done.returncode == 64
    assert "signal id 'feed' is ambiguous" in done.stderr
    assert "feed0001-aaaa, feed0002-aaaa" in done.stderr
    one = run("respond", "feed0002", "abort", "--state", url)
    assert one.returncode == 0, one.stderr
    assert "answered signal feed0002-aaaa" in one.stdout
    # a pattern is not a prefix: glob and LIKE characters match only themselves
    for hostile in ("*", "%", "_eed", "feed000?", "[f]eed", "\\", "f" * 10_000):
        done = run("respond", hostile, "abort", "--state", url)
        assert done.returncode == 64, (hostile, done.stderr)
        assert "no signal" in done.stderr, (hostile, done.stderr)
    empty = run("respond", "", "abort", "--state", url)
    assert empty.returncode == 64 and "the signal id is empty" in empty.stderr


def test_an_unknown_id_names_the_store_never_its_password(url: str) -> None:
    done = run("respond", "no-such", "abort", "--state", url)
    assert done.returncode == 64
    assert "no signal 'no-such' in the state store" in done.stderr
    assert password_of(url) not in done.stderr


def test_a_store_that_cannot_be_reached_exits_1_in_one_line(url: str) -> None:
    gone = url.split("@", 1)[0] + "@127.0.0.1:1/" + url.split("/", 3)[3]  # port 1: refused
    for command in (["log"], ["signals"], ["respond", "abc", "abort"]):
        done = run(*command, env={"MCP_HOOKS_STATE": gone})  # a password stays off argv
        assert done.returncode == 1, (command, done.stderr)
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert "cannot be used" in done.stderr and password_of(url) not in done.stderr


def test_since_filters_by_time_on_the_store_and_in_the_file(url: str, tmp_path: Path) -> None:
    old = {"ts": "2026-01-15T10:29:59.999Z", "kind": "event", "event": "session_start",
           "session_id": "s", "decision": "allow"}
    new = {"ts": "2026-01-15T10:30:00.000Z", "kind": "event", "event": "after_agent",
           "session_id": "s", "decision": "allow"}
    store = open_store(url)
    try:
        for record in (old, new):
            store.append("events", record)
    finally:
        close_store(store)
    file_log = tmp_path / "events.jsonl"
    file_log.write_text("".join(json.dumps(r) + "\n" for r in (old, new)))
    for where in (["--state", url], ["--log", str(file_log)]):
        shown = run("log", "--json", "--since", "2026-01-15 10:30", *where)
        assert shown.returncode == 0, shown.stderr
        assert [json.loads(line)["event"] for line in shown.stdout.splitlines()] == [
            "after_agent"]
        every = run("log", "--json", "--since", "2026-01-15", *where)
        assert len(every.stdout.splitlines()) == 2
        none = run("log", "--since", "1s", *where)
        assert none.returncode == 0 and none.stdout == ""
        assert "no events logged since " in none.stderr
    bad = run("log", "--since", "yesterday")
    assert bad.returncode == 64 and "'yesterday' is not a time" in bad.stderr


def test_a_store_lost_under_log_follow_ends_it_in_one_line(tmp_path: Path) -> None:
    with restartable("redis") as own:
        server = own.server
        follower = subprocess.Popen([MCP_HOOKS, "log", "--follow"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    stdin=subprocess.DEVNULL,
                                    env={**os.environ, "MCP_HOOKS_STATE": server.url})
        assert follower.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        stdout = follower.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        store = open_store(server.url)
        try:  # until it prints one: then it is following, and the store goes under it
            for n in range(50):
                store.append("events", {"ts": "t", "event": "after_agent", "session_id": "s"})
                try:
                    assert "after_agent" in lines.get(timeout=1.0 + n / 10)
                    break
                except queue.Empty:
                    continue
            else:
                pytest.fail("log --follow printed none of 50 records")
        finally:
            close_store(store)
        own.stop()  # the server is stopped under the follower
    _, err = follower.communicate(timeout=120)
    assert follower.returncode == 1, err
    assert len(err.splitlines()) == 1 and "cannot be used" in err, err
    assert server.password not in err


@pytest.mark.parametrize("command", ["log", "signals"])
@pytest.mark.parametrize("count", ["-3", "many"])
def test_a_line_count_that_is_not_one_is_a_usage_error(command: str, count: str) -> None:
    done = run(command, "-n", count)
    assert done.returncode == 64 and done.stdout == "", done
    assert f"{count!r} is not a count of lines; give 0 (all) or more" in done.stderr


def _corrupt(store: Any, signal_id: str, part: str, text: str) -> None:
    """Write ``text`` over the signal's ``sent`` or ``answer`` record, as another program could."""
    if isinstance(store, RedisStore):
        key = "sig" if part == "sent" else "ans"
        store._redis.set(f"{store.prefix}{key}:{signal_id}", text)
        return
    with store._pool.connection() as conn:
        conn.execute(f"UPDATE mcp_hooks_signals SET {part} = %s::json WHERE signal_id = %s",
                     (text, signal_id))


@pytest.mark.parametrize(("part", "text"), [("sent", '"a string"'), ("sent", "[1, 2]"),
                                            ("answer", "[]"), ("answer", "17")])
def test_respond_to_a_malformed_record_names_it_and_answers_nothing(
        url: str, part: str, text: str) -> None:
    """A signal's record in the store that is not a JSON object made respond traceback."""
    store = open_store(url)
    try:
        store.append("signals", {"kind": "signal", "signal_id": "bad00001", "session_id": "s",
                                 "intensity": "block", "hook": "x"})
        _corrupt(store, "bad00001", part, text)
        if isinstance(store, RedisStore) and part == "sent":
            store._redis.set(f"{store.prefix}sig:bad00001", "not json {")
    finally:
        close_store(store)
    done = run("respond", "bad00001", "abort", "--state", url)
    assert done.returncode == 64, done.stderr
    assert "Traceback" not in done.stderr
    assert f"the {part} record of signal 'bad00001' is not a JSON object" in done.stderr
    assert password_of(url) not in done.stderr


def test_log_text_names_the_replica_sorts_by_time_and_says_the_loop_guard(
        url: str, user_dir: Path, project: Path) -> None:
    """Records a replica's spool replayed late stand where they happened; each line names
    the replica; the loop guard's override is said (docs/events.md)."""
    write_hook(user_dir, "never-done", trigger="before_stop",
               script="cat >/dev/null\necho 'not done yet' >&2\nexit 2\n")
    for _ in range(2):  # the cap is 1: the second stop is let through, saying so
        fire(url, user_dir, project, "before_stop", "--session", "loop", "--stop-block-cap",
             "1", "--payload", '{"stop_reason": "done"}')
    store = open_store(url, replica="web-2")
    try:  # as a spool replays: the newer record first, the older one after it
        for ts, event in (("2026-01-15T10:30:01.000Z", "after_agent"),
                          ("2026-01-15T10:30:00.000Z", "session_start")):
            store.append("events", {"ts": ts, "kind": "event", "event": event,
                                    "session_id": "late", "decision": "allow"})
    finally:
        close_store(store)
    late = run("log", "--state", url, "--session", "late")
    assert late.returncode == 0, late.stderr
    lines = late.stdout.splitlines()
    assert ["session_start" in lines[0], "after_agent" in lines[1]] == [True, True], lines
    assert all("replica=web-2" in line for line in lines), lines
    guarded = run("log", "--state", url, "--session", "loop").stdout.splitlines()
    assert len(guarded) == 2 and "replica=" in guarded[1], guarded
    assert "warning: loop guard: the stop was allowed after 1 consecutive blocks" in guarded[1]
    assert "not done yet" in guarded[1]


def test_signals_open_lists_what_no_response_answers(url: str, hooks: Path,
                                                      project: Path) -> None:
    first = sent_signal(url, hooks, project, "s-1")
    second = sent_signal(url, hooks, project, "s-2")
    assert run("respond", first, "abort", "--state", url).returncode == 0
    listed = run("signals", "--state", url, "--open", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line)["signal_id"] for line in listed.stdout.splitlines()] == [second]
    assert run("respond", second, "abort", "--state", url).returncode == 0
    none = run("signals", "--state", url, "--open")
    assert none.returncode == 0 and none.stdout == ""
    assert "no unanswered signals logged yet" in none.stderr


def test_fire_with_the_store_down_says_the_hooks_did_not_run(user_dir: Path,
                                                           project: Path) -> None:
    write_hook(user_dir, "bye", trigger="session_end", script="cat >/dev/null\nexit 0\n")
    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    done = fire(down, user_dir, project, "session_end", "--session", "s")
    assert done.returncode == 0, done.stderr  # session_end cannot block
    assert "no hook matched" not in done.stdout
    assert "no hook ran: mcp-hooks could not run this event's hooks" in done.stdout
    assert "cannot be used" in done.stdout
