"""The persistent-hook protocol: every event carries an id its answer must echo, one process
per hook and project, an idle timeout, and one answer whatever the door.

Real processes throughout: hook scripts that get the protocol wrong in each way the issue
names (a banner, a heartbeat, a late or repeated answer, a blank line, an answer without the
id or with another one), a hookkit hook that prints before it denies, run one-shot (``fire``,
``bridge claude-code``) and resident (an ``Engine`` with its pool, ``serve`` with ``fire
--server``), and the POSIX sh example of docs/hookkit.md as written there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import mcp_hooks
from mcp_hooks import hookkit
from mcp_hooks.engine.engine import Engine
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.runner import persistent, resident
from mcp_hooks.runner.persistent import ID_FIELD, PersistentPool
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from mcp_hooks.spec.outcome import Event, Outcome
from mcp_hooks.state.eventlog import EventLog
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.forward_served import served

pytestmark = pytest.mark.anyio

DOCS = Path(__file__).resolve().parents[2] / "docs" / "hookkit.md"
SOURCE = str(Path(mcp_hooks.__file__).resolve().parent.parent)
TOKEN = "persistent-protocol-token"
WAIT = 120  # seconds: only to stop a hang, never a speed check

GUARD = '''\
import json, os, sys

VARIANT = {variant!r}
REASON = "deny-everything: nothing runs here"


def say(text):
    sys.stdout.write(text + "\\n")
    sys.stdout.flush()


if os.environ.get("MCP_HOOKS_PERSISTENT") != "1":  # one-shot: the plain deny
    sys.stdin.read()
    sys.stderr.write(REASON)
    sys.exit(2)
if VARIANT == "banner":
    say(json.dumps({{"decision": "allow", "banner": "deny-everything ready"}}))
previous = None
for line in sys.stdin:
    event_id = json.loads(line)["_mcp_hooks_event_id"]
    answer = {{"decision": "deny", "reason": f"{{REASON}} (pid {{os.getpid()}})",
              "_mcp_hooks_event_id": event_id}}
    if VARIANT == "heartbeat":
        say(json.dumps({{"decision": "allow", "heartbeat": True}}))
    if VARIANT == "late" and previous is not None:  # a late answer to the event before
        say(json.dumps({{"decision": "allow", "_mcp_hooks_event_id": previous}}))
    if VARIANT == "blank":
        say("")
    elif VARIANT == "no-id":  # the protocol without ids: any line was the next answer
        say(json.dumps({{"decision": "allow"}}))
    elif VARIANT == "wrong-id":
        say(json.dumps({{"decision": "allow", "_mcp_hooks_event_id": "0123abcd"}}))
    else:
        say(json.dumps(answer))
    if VARIANT == "trailer":  # a second answer to the same event, and one more line
        say(json.dumps({{"decision": "allow", "_mcp_hooks_event_id": event_id}}))
        say(json.dumps({{"decision": "allow"}}))
    previous = event_id
'''

ANSWERING = ("banner", "heartbeat", "late", "trailer")  # answer each event, with stray lines
SILENT = ("blank", "no-id", "wrong-id")  # never answer an event with its id


def guard(root: Path, variant: str, on_error: str = "block", timeout: int | None = None) -> Path:
    if timeout is None:
        timeout = 300 if variant in SILENT else 60000  # a silent one times out every event
    return write_hook(root, "deny-everything", script=GUARD.format(variant=variant),
                      entry="scripts/run.py",
                      extra=f"timeout: {timeout}\nmetadata:\n  persistent: true\n"
                            f"  on_error: {on_error}\n")


def event(work_dir: Path, command: str = "ls", **payload: Any) -> Event:
    return Event.create(event_type="before_tool", tool_name="Shell",
                        tool_input={"command": command}, work_dir=str(work_dir),
                        payload=payload)


def alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")  # a zombie counts: it was not reaped


async def gone(pid: int) -> bool:
    for _ in range(1000):  # a hang bound, not a timing
        if not alive(pid):
            return True
        await anyio.sleep(0.02)
    return False


def hook_records(log: Path, name: str) -> list[dict[str, Any]]:
    """The event log's record of hook ``name`` in each event, in order."""
    found = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "event":
            found += [h for h in record["hooks"] if h["name"] == name]
    return found


@pytest.fixture
async def engine(user_dir: Path, project: Path, tmp_path: Path) -> AsyncIterator[Engine]:
    """An engine whose pool restarts a failed process at once (no backoff, so no event runs
    one-shot): every event here goes through a resident process."""
    registry = Registry(user_dir, project)
    pool = PersistentPool(backoff=(0.0,))
    try:
        async with Engine(registry, log=EventLog(tmp_path / "events.jsonl"), pool=pool) as eng:
            yield eng
    finally:
        await pool.aclose()
        registry.close()


# -- ids: stray lines never answer -----------------------------------------------------------


@pytest.mark.parametrize("variant", ANSWERING)
async def test_stray_lines_never_answer_a_fail_closed_deny_everything_hook(
        engine: Engine, user_dir: Path, project: Path, tmp_path: Path, variant: str) -> None:
    guard(user_dir, variant)
    outcomes = [await engine.fire(event(project)) for _ in range(3)]
    assert [o.decision for o in outcomes] == ["deny"] * 3, outcomes
    pids = {re.findall(r"\(pid (\d+)\)", o.reason or "")[0] for o in outcomes}
    assert len(pids) == 1  # its own answers, from one process: nothing was out of step
    assert all(o.hooks[0].status == "deny" and o.hooks[0].exit_code == 2 for o in outcomes)
    assert all(not o.warnings for o in outcomes), [o.warnings for o in outcomes]
    # what it wrote besides its answers is in the log, never in an answer
    logged = "".join(h.get("stderr", "") for h in hook_records(tmp_path / "events.jsonl",
                                                               "deny-everything"))
    assert "ignored" in logged and "stdout line" in logged, logged
    shown = {"banner": "deny-everything ready", "heartbeat": "heartbeat", "late": "allow",
             "trailer": "allow"}[variant]
    assert shown in logged


@pytest.mark.parametrize("variant", SILENT)
@pytest.mark.parametrize("on_error", ["block", "allow"])
async def test_an_answer_without_the_events_id_is_the_hooks_failure(
        engine: Engine, user_dir: Path, project: Path, tmp_path: Path, variant: str,
        on_error: str) -> None:
    guard(user_dir, variant, on_error)
    outcomes = [await engine.fire(event(project)) for _ in range(3)]
    assert all(o.hooks[0].status == "timeout" for o in outcomes), outcomes
    if on_error == "block":  # fails closed: 3 of 3 denied
        assert [o.decision for o in outcomes] == ["deny"] * 3
        assert all("fails closed" in (o.reason or "") for o in outcomes)
    else:  # fails open, with a warning: never a plain allow
        assert [o.decision for o in outcomes] == ["allow"] * 3
        assert all("timed out" in " ".join(o.warnings) for o in outcomes)


async def test_what_a_hook_wrote_in_place_of_its_answer_is_logged(
        engine: Engine, user_dir: Path, project: Path, tmp_path: Path) -> None:
    guard(user_dir, "no-id", timeout=3000)  # time enough to start and write its line
    out = await engine.fire(event(project))
    assert out.decision == "deny" and out.hooks[0].status == "timeout"
    [logged] = hook_records(tmp_path / "events.jsonl", "deny-everything")
    assert "ignored 1 stdout line" in logged["stderr"] and ID_FIELD in logged["stderr"]
    assert '{"decision": "allow"}' in logged["stderr"]


async def test_a_callers_field_of_the_ids_name_is_replaced(engine: Engine, user_dir: Path,
                                                            project: Path) -> None:
    write_hook(user_dir, "echo", entry="scripts/run.py", extra="metadata:\n  persistent: true\n",
               script=textwrap.dedent('''\
        import json, sys
        for line in sys.stdin:
            seen = line.count('"_mcp_hooks_event_id"')
            event_id = json.loads(line)["_mcp_hooks_event_id"]
            print(json.dumps({"additional_context": f"seen {seen} {event_id}",
                              "_mcp_hooks_event_id": event_id}), flush=True)
        '''))
    out = await engine.fire(event(project, _mcp_hooks_event_id="forged-by-the-caller"))
    assert out.hooks[0].status == "allow", out
    [said] = out.additional_context
    assert said.startswith("seen 1 ") and "forged" not in said


@pytest.mark.parametrize("payload", [
    b'{"event_type": "before_tool", "context": {}}', b"{}", b"{ }", b'{"a": 1} \n',
    b'{"_mcp_hooks_event_id": "forged", "b": {}}', b'{"b": "}}", "_mcp_hooks_event_id": 7}',
])
def test_the_event_line_is_the_payload_with_the_id_last(payload: bytes) -> None:
    line = resident.with_id(payload, "00ff")
    assert line.endswith(b'"_mcp_hooks_event_id":"00ff"}\n') and line.count(b"\n") == 1
    sent = json.loads(line)
    assert list(sent)[-1] == ID_FIELD and sent.pop(ID_FIELD) == "00ff"
    expected = json.loads(payload)
    expected.pop(ID_FIELD, None)
    assert sent == expected


# -- one process per hook and project; idle timeout -----------------------------------------

WHERE = '''\
import json, os, sys
for line in sys.stdin:
    event = json.loads(line)
    where = {"pid": os.getpid(), "cwd": os.getcwd(), "work_dir": event["work_dir"],
             "env": os.environ.get("AGENT_HOOKS_WORK_DIR")}
    print(json.dumps({"additional_context": json.dumps(where),
                      "_mcp_hooks_event_id": event["_mcp_hooks_event_id"]}), flush=True)
with open(os.environ["WHERE_LOG"], "a") as log:
    log.write(f"{os.getpid()} saw EOF\\n")
'''


def where_hook(root: Path) -> Path:
    return write_hook(root, "where", script=WHERE, entry="scripts/run.py",
                      extra="metadata:\n  persistent: true\n")


def where(outcome: Outcome) -> dict[str, Any]:
    [said] = outcome.additional_context
    data: dict[str, Any] = json.loads(said)
    return data


def subfolders(project: Path, count: int = 12) -> list[Path]:
    folders = []
    for i in range(count):
        folder = project / f"part{i}" / "src"
        folder.mkdir(parents=True)
        folders.append(folder)
    return folders


async def test_twelve_subfolders_of_one_project_share_one_process(
        user_dir: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WHERE_LOG", str(tmp_path / "where.log"))
    where_hook(user_dir)
    folders = subfolders(project)
    registry = Registry(user_dir, project)
    async with Engine(registry) as engine:
        seen = [where(await engine.fire(event(folder))) for folder in [project, *folders]]
        assert engine._pool is not None and len(engine._pool.pids()) == 1
    registry.close()
    assert len({s["pid"] for s in seen}) == 1
    # the process runs in the project's root; each event names its own folder
    assert {s["cwd"] for s in seen} == {os.path.realpath(project)}
    assert [s["work_dir"] for s in seen] == [str(f) for f in [project, *folders]]
    assert {s["env"] for s in seen} == {None}  # no stale folder in its environment


async def test_the_server_keeps_one_process_for_a_projects_subfolders(
        user_dir: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WHERE_LOG", str(tmp_path / "where.log"))
    where_hook(user_dir)
    folders = subfolders(project)
    async with HookService(Settings.from_env(project_dir=project, user_dir=user_dir,
                                    log=tmp_path / "e.jsonl"), watch_interval=0.05) as service:
        seen = [where(await service.fire(event(folder))) for folder in [project, *folders]]
        pids = {s["pid"] for s in seen}
        assert len(pids) == 1
        assert {s["cwd"] for s in seen} == {os.path.realpath(project)}
    assert await gone(pids.pop())


async def test_an_idle_process_is_stopped_and_a_later_event_starts_one(
        user_dir: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WHERE_LOG", str(tmp_path / "where.log"))
    where_hook(user_dir)
    registry = Registry(user_dir, project)
    pool = PersistentPool(idle_timeout=0.2, close_grace=WAIT)  # it may take its time to leave
    try:
        async with Engine(registry, pool=pool) as engine:
            first = where(await engine.fire(event(project)))["pid"]
            assert await gone(first)  # no event for 0.2 s: stopped, the engine still open
            assert pool.pids() == {} and not pool.closed
            # stopped as at close: stdin closed first, and it left on its own
            assert (tmp_path / "where.log").read_text().split("\n")[0] == f"{first} saw EOF"
            second = where(await engine.fire(event(project)))["pid"]
            assert second != first and alive(second)
    finally:
        await pool.aclose()
        registry.close()
    assert await gone(second)


# -- hookkit: prints never reach the answer, whatever the door ---------------------------------

PRINTS_THEN_DENIES = '''\
import os

from mcp_hooks.hookkit import deny, hook


@hook
def main(event):
    print(f"debug: pid {os.getpid()} looks at {event.get('tool_input')}")
    if "--force" in (event.get("tool_input") or {}).get("command", ""):
        return deny("Force-pushing rewrites history others have; push a new branch instead.")
    return None
'''
REASON = "Force-pushing rewrites history others have; push a new branch instead."
FORCE = {"command": "git push --force"}


@pytest.fixture
def printing_hook(user_dir: Path) -> Path:
    return write_hook(user_dir, "no-force-push", script=PRINTS_THEN_DENIES,
                      entry="scripts/run.py", extra="metadata:\n  persistent: true\n")


def cli(project: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], input=stdin, capture_output=True, text=True,
                          cwd=project, timeout=WAIT, env={**os.environ, "PYTHONPATH": SOURCE})


def table_line(text: str, name: str) -> str:
    """The run table's row of hook ``name`` (signal lines name it too, after ``from``)."""
    [line] = [line for line in text.splitlines()
              if f" {name} " in line and not line.lstrip().startswith("signal:")]
    return line


async def test_a_printing_hookkit_deny_has_the_same_reason_one_shot_and_resident(
        printing_hook: Path, user_dir: Path, project: Path, tmp_path: Path) -> None:
    fire = ["fire", "before_tool", "--tool", "Shell", "--input", json.dumps(FORCE),
            "--user-dir", str(user_dir), "--no-log"]
    # one-shot: mcp-hooks fire (JSON and the table)
    done = cli(project, *fire, "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["reason"] == REASON, done
    table = cli(project, *fire)
    assert table.returncode == 2
    assert "DENY" in table_line(table.stdout, "no-force-push")
    assert "exit 2" in table_line(table.stdout, "no-force-push")
    assert "debug:" not in table.stdout
    # one-shot: the Claude Code bridge
    payload = {"session_id": "s", "cwd": str(project), "hook_event_name": "PreToolUse",
               "tool_name": "Bash", "tool_input": FORCE, "tool_use_id": "t"}
    bridged = cli(project, "bridge", "claude-code", "--user-dir", str(user_dir),
                  stdin=json.dumps(payload))
    assert bridged.returncode == 0, bridged.stderr
    specific = json.loads(bridged.stdout)["hookSpecificOutput"]
    assert (specific["permissionDecision"], specific["permissionDecisionReason"]) == (
        "deny", REASON)
    # resident: an engine with its pool; the prints went to the log
    log = tmp_path / "events.jsonl"
    registry = Registry(user_dir, project)
    async with Engine(registry, log=EventLog(log)) as engine:
        outcomes = [await engine.fire(Event.create(
            event_type="before_tool", tool_name="Shell", tool_input=FORCE,
            work_dir=str(project))) for _ in range(2)]
    registry.close()
    assert [(o.decision, o.reason) for o in outcomes] == [("deny", REASON)] * 2
    assert [o.hooks[0].exit_code for o in outcomes] == [2, 2]  # a deny shows as one
    printed = [h["stderr"] for h in hook_records(log, "no-force-push")]
    pids = {re.findall(r"debug: pid (\d+)", text)[0] for text in printed}
    assert len(pids) == 1  # one resident process printed both


def test_a_printing_hookkit_deny_through_a_server_shows_the_deny(
        printing_hook: Path, user_dir: Path, project: Path, tmp_path: Path) -> None:
    log = tmp_path / "server-events.jsonl"
    fire = ["fire", "before_tool", "--tool", "Shell", "--input", json.dumps(FORCE),
            "--user-dir", str(user_dir), "--no-log"]
    with served(project, user_dir, log, "--token", TOKEN) as url:
        answered = cli(project, *fire, "--server", url, "--token", TOKEN, "--json")
        table = cli(project, *fire, "--server", url, "--token", TOKEN)
    assert "not answered by the server" not in answered.stderr + table.stderr
    assert answered.returncode == 2 and json.loads(answered.stdout)["reason"] == REASON
    # the run table shows the resident hook's deny as a deny (exit 2), not "exit 0"
    assert table.returncode == 2
    line = table_line(table.stdout, "no-force-push")
    assert "DENY" in line and "exit 2" in line, table.stdout
    printed = [h["stderr"] for h in hook_records(log, "no-force-push")]
    assert len({re.findall(r"debug: pid (\d+)", text)[0] for text in printed}) == 1  # resident


def test_hookkit_and_the_pool_name_the_same_id_field() -> None:
    assert hookkit.ID_FIELD == persistent.ID_FIELD == "_mcp_hooks_event_id"


# -- docs/hookkit.md's examples, as written there ----------------------------------------------


def docs_block(language: str, after: str) -> str:
    text = DOCS.read_text()
    start = text.index(after)
    found = re.search(rf"```{language}\n(.*?)```", text[start:], re.S)
    assert found, f"no {language} block after {after!r} in {DOCS}"
    return found.group(1)


async def test_the_posix_sh_example_of_the_docs(user_dir: Path, project: Path,
                                               tmp_path: Path) -> None:
    script = docs_block("sh", "### An example in POSIX sh")
    assert script.startswith("#!/bin/sh\n")
    write_hook(user_dir, "no-rm-rf", script=script,
               extra="metadata:\n  persistent: true\n  on_error: block\n")
    reason = "no rm -rf here: delete the exact paths you mean"
    registry = Registry(user_dir, project)
    pids = set()
    async with Engine(registry, log=EventLog(tmp_path / "events.jsonl")) as engine:
        for command, decision in (("rm -rf /", "deny"), ("ls -la", "allow"),
                                  ("cd x && rm -rf build", "deny"), ("git status", "allow")):
            out = await engine.fire(event(project, command))
            assert out.decision == decision and not out.warnings, (command, out)
            assert out.hooks[0].status == decision
            if decision == "deny":
                assert out.reason == reason
            assert engine._pool is not None
            pids.update(engine._pool.pids().values())
    registry.close()
    assert len(pids) == 1  # one sh process answered all four
    # and one-shot, as other implementations and `mcp-hooks fire` run it
    done = cli(project, "fire", "before_tool", "--tool", "Shell", "--input",
               '{"command": "rm -rf /"}', "--user-dir", str(user_dir), "--no-log", "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["reason"] == reason


async def test_the_python_example_of_the_docs(user_dir: Path, project: Path) -> None:
    script = docs_block("python", "```\nno-force-push/")
    write_hook(user_dir, "no-force-push", script=script, entry="scripts/run.py",
               extra="metadata:\n  persistent: true\n")
    registry = Registry(user_dir, project)
    async with Engine(registry) as engine:
        denied = await engine.fire(event(project, "git push --force origin main"))
        allowed = await engine.fire(event(project, "git push origin main"))
    registry.close()
    assert denied.decision == "deny" and "Force-pushing" in (denied.reason or "")
    assert allowed.decision == "allow" and not allowed.warnings
