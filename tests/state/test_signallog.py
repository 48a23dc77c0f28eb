"""The signal log: the seed's line shape, responses per intensity, whole lines under races."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mcp_hooks.errors import ConfigError
from mcp_hooks.spec.signals import ACTIONS, INTENSITIES, Signal
from mcp_hooks.state.eventlog import EventLog
from mcp_hooks.state.signallog import SignalLog, signal_record

SEED_KEYS = ("timestamp", "hook", "intensity", "source", "consumed", "action")


def make(intensity: str, source: str = "checklist-validator",
         hook: str = "before_issue_submit") -> Signal:
    payloads = {"block": {"reason": "checklist incomplete"},
                "control": {"modifications": [{"field": "batch_size", "to": 100}]},
                "prompt": {"message": "25 files changed"},
                "aid": {"context_info": "reviewers notified"}}
    return Signal.make(intensity, payloads[intensity], source=source,  # type: ignore[arg-type]
                       hook=hook, issue_id="FEAT-0123")


def seed_view(line: dict[str, object]) -> dict[str, object]:
    return {k: line[k] for k in SEED_KEYS if k != "timestamp"}


def test_the_seeds_example_leaves_its_lines(tmp_path: Path) -> None:
    log = SignalLog(tmp_path / "signals.jsonl")
    block = make("block")
    prompt = make("prompt", source="change-size-limiter")
    aid = make("aid", source="notification", hook="after_issue_submit")
    log.record([block], session_id="s1")
    log.respond(block.id, "retry_after_fix", {"fixed": "completed the API docs"})
    log.record([prompt], session_id="s1")
    log.respond(prompt.id, "acknowledge")
    log.record([aid], session_id="s1")
    log.respond(aid.id, "suggestion_applied")
    responses = [r for r in log.read() if r["kind"] == "response"]
    assert [seed_view(r) for r in responses] == [
        {"hook": "before_issue_submit", "intensity": "block", "source": "checklist-validator",
         "consumed": True, "action": "retry_after_fix"},
        {"hook": "before_issue_submit", "intensity": "prompt", "source": "change-size-limiter",
         "consumed": True, "action": "acknowledge"},
        {"hook": "after_issue_submit", "intensity": "aid", "source": "notification",
         "consumed": True, "action": "suggestion_applied"},
    ]
    assert all(r["session_id"] == "s1" for r in responses)
    assert responses[0]["details"] == {"fixed": "completed the API docs"}
    assert all(str(r["timestamp"]).endswith("Z") for r in responses)
    lines = (tmp_path / "signals.jsonl").read_text().splitlines()
    assert len(lines) == 6 and all(json.loads(line) for line in lines)


def test_a_signal_line(tmp_path: Path) -> None:
    signal = make("prompt")
    line = signal_record(signal, "s9")
    assert seed_view(line) == {"hook": "before_issue_submit", "intensity": "prompt",
                               "source": "checklist-validator", "consumed": False,
                               "action": None}
    assert (line["kind"], line["signal_id"], line["issue_id"]) == ("signal", signal.id,
                                                                   "FEAT-0123")
    assert Signal.from_dict(line["signal"]) == signal


@pytest.mark.parametrize("intensity", INTENSITIES)
def test_an_action_of_another_intensity_is_refused(tmp_path: Path, intensity: str) -> None:
    log = SignalLog(tmp_path / "signals.jsonl")
    signal = make(intensity)
    log.record([signal])
    wrong = next(a for i, acts in ACTIONS.items() if i != intensity for a in acts)
    with pytest.raises(ConfigError, match=f"not a {intensity} one; use one of "
                       + ", ".join(ACTIONS[intensity])):
        log.respond(signal.id, wrong)
    assert log.responses(signal.id) == []
    log.respond(signal.id, ACTIONS[intensity][-1])
    (response,) = log.responses(signal.id)
    assert response["action"] == ACTIONS[intensity][-1]


def test_clear_errors(tmp_path: Path) -> None:
    log = SignalLog(tmp_path / "signals.jsonl")
    signal = make("block")
    log.record([signal])
    with pytest.raises(ConfigError, match="unknown action 'shrug'; the actions are block: "):
        log.respond(signal.id, "shrug")
    with pytest.raises(ConfigError, match="no signal 'nope' in the signal log"):
        log.respond("nope", "abort")
    with pytest.raises(ConfigError, match="details must be a JSON object"):
        log.respond(signal.id, "abort", ["x"])  # type: ignore[arg-type]
    log.respond(signal.id, "abort")
    with pytest.raises(ConfigError, match=f"signal {signal.id} was already answered: abort"):
        log.respond(signal.id, "retry_after_fix")
    assert ConfigError.exit_code == 64


def test_beside_the_event_log(tmp_path: Path) -> None:
    events = EventLog(tmp_path / "state" / "events.jsonl")
    assert SignalLog.beside(events).path == tmp_path / "state" / "signals.jsonl"
    assert SignalLog.beside(events.path).path == tmp_path / "state" / "signals.jsonl"


def test_read_filters_by_session(tmp_path: Path) -> None:
    log = SignalLog(tmp_path / "signals.jsonl")
    log.record([make("aid")], session_id="a")
    log.record([make("aid")], session_id="b")
    assert [r["session_id"] for r in log.read("b")] == ["b"]


def test_racing_responses_to_one_signal_record_one(tmp_path: Path) -> None:
    log = SignalLog(tmp_path / "signals.jsonl")
    signal = make("prompt")
    log.record([signal])
    start = threading.Barrier(8)
    outcomes: list[str] = []

    def answer() -> None:
        start.wait()
        try:
            SignalLog(log.path).respond(signal.id, "dismiss")
            outcomes.append("recorded")
        except ConfigError:
            outcomes.append("refused")

    threads = [threading.Thread(target=answer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["recorded"] + ["refused"] * 7
    assert len(log.responses(signal.id)) == 1


WRITER = """
import sys
from mcp_hooks.state.signallog import SignalLog
from mcp_hooks.spec.signals import Signal
log = SignalLog(sys.argv[1])
for n in range(150):
    signal = Signal.prompt("x" * 5000, suggestions=[sys.argv[2]] * 20, source=sys.argv[2])
    log.record([signal], session_id=sys.argv[2])
    log.respond(signal.id, "dismiss")
"""


def test_concurrent_processes_never_tear_a_line(tmp_path: Path) -> None:
    path = tmp_path / "signals.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{n}"])
             for n in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    lines = path.read_text().splitlines()
    assert len(lines) == 4 * 150 * 2
    records = [json.loads(line) for line in lines]  # every line whole
    for n in range(4):
        mine = [r for r in records if r["session_id"] == f"w{n}"]
        assert sum(r["kind"] == "response" for r in mine) == 150


# -- the command line: fire an issue event, read the signals, answer one ---------------------


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    from tests.conftest import MCP_HOOKS

    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, timeout=60,
                          env=env)


def test_signals_and_respond_on_the_command_line(tmp_path: Path, user_dir: Path,
                                                 project: Path) -> None:
    import os

    from tests.conftest import write_hook

    write_hook(user_dir, "checklist-gate", trigger="pre-issue-submit", script=(
        "cat >/dev/null\necho '{\"intensity\": \"block\", \"reason\": \"checklist incomplete\","
        " \"resolution_path\": [\"complete the API docs\"]}'\n"))
    log = tmp_path / "state" / "events.jsonl"
    env = {**os.environ, "MCP_HOOKS_LOG": str(log)}
    common = ("--user-dir", str(user_dir), "--project-dir", str(project))
    issue = json.dumps({"issue": {"id": "FEAT-0123", "checklist": [
        {"text": "API docs", "done": False}]}})
    fired = cli("fire", "pre-issue-submit", "--session", "s1", "--payload", issue, "--json",
                *common, env=env)
    assert fired.returncode == 2, fired.stderr
    outcome = json.loads(fired.stdout)
    (signal,) = outcome["signals"]
    signal_id = signal["header"]["id"]
    assert signal["context"]["issue_id"] == "FEAT-0123"

    shown = cli("signals", "--session", "s1", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "before_issue_submit" in shown.stdout and "block" in shown.stdout
    assert "checklist incomplete" in shown.stdout and signal_id in shown.stdout

    wrong = cli("respond", signal_id, "acknowledge", env=env)
    assert wrong.returncode == 64
    assert "answers a prompt signal, not a block one" in wrong.stderr
    bad = cli("respond", signal_id, "abort", "--details", "[1", env=env)
    assert bad.returncode == 64 and "--details is not JSON" in bad.stderr
    done = cli("respond", signal_id, "retry_after_fix", "--details", '{"fixed": "docs"}',
               "--json", env=env)
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert (line["consumed"], line["action"], line["session_id"]) == (
        True, "retry_after_fix", "s1")
    raw = cli("signals", "--json", "-n", "0", env=env).stdout.splitlines()
    assert [json.loads(r)["kind"] for r in raw] == ["signal", "response"]


def _with_id(log: SignalLog, signal_id: str, intensity: str = "prompt") -> None:
    """A signal line with a chosen id (ids are random UUIDs otherwise)."""
    log.append(signal_record(make(intensity), "s1") | {"signal_id": signal_id})


def test_respond_takes_an_unambiguous_start_of_the_id(tmp_path: Path) -> None:
    import os

    log = SignalLog(tmp_path / "signals.jsonl")
    first, second = "aaaa1111-0000-4000-8000-000000000001", "aaaa2222-0000-4000-8000-000000000002"
    _with_id(log, first)
    _with_id(log, second)
    env = {**os.environ, "MCP_HOOKS_LOG": str(tmp_path / "events.jsonl")}

    both = cli("respond", "aaaa", "acknowledge", env=env)
    assert both.returncode == 64
    assert both.stderr.strip() == (f"mcp-hooks respond: signal id 'aaaa' is ambiguous: 2 "
                                   f"signals start with it ({first}, {second}); give more of "
                                   "the id")
    unknown = cli("respond", "bbbb", "acknowledge", env=env)
    assert unknown.returncode == 64
    assert "no signal 'bbbb' in the signal log" in unknown.stderr
    assert "`mcp-hooks signals` lists the signals sent and their ids" in unknown.stderr

    said = cli("respond", "aaaa1", "acknowledge", env=env)
    assert said.returncode == 0, said.stderr
    assert said.stdout == (f"answered signal {first} (before_issue_submit, prompt) with "
                           "acknowledge\n")
    raw = cli("respond", "aaaa2222", "dismiss", "--json", env=env)
    assert raw.returncode == 0, raw.stderr
    assert json.loads(raw.stdout)["signal_id"] == second
    assert [r["action"] for r in log.read() if r["kind"] == "response"] == [
        "acknowledge", "dismiss"]


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_signals_and_respond_refuse_a_log_that_is_not_a_file(tmp_path: Path,
                                                             kind: str) -> None:
    import os

    path = tmp_path / "signals.jsonl"
    said = {"folder": "a folder", "fifo": "a FIFO", "device": "a device"}[kind]
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # no one writes it: a blocking read would hang
    else:
        path.symlink_to("/dev/full")  # endless zeros: an unbounded read would never end
    env = {**os.environ, "MCP_HOOKS_LOG": str(tmp_path / "events.jsonl")}
    for command in (["signals"], ["signals", "--follow"], ["respond", "abc", "abort"],
                    ["respond", "abc", "abort", "--json"]):
        done = cli(*command, env=env)
        assert done.returncode == 64, (command, done.stderr)
        assert done.stderr.strip() == (
            f"mcp-hooks {command[0]}: the signal log {path} is {said}, not a regular file; it "
            "is the signals.jsonl beside the event log: move it away, or point --log "
            "(MCP_HOOKS_LOG) at an event log in another folder"), command
        assert done.stdout == ""


LIMITED = """
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
os.execv(sys.argv[2], sys.argv[2:])
"""


def test_an_answer_the_disk_cannot_take_leaves_the_log_as_it_was(tmp_path: Path) -> None:
    import os

    from tests.conftest import MCP_HOOKS

    log = SignalLog(tmp_path / "signals.jsonl")
    signal = make("block")
    log.record([signal], session_id="s1")
    before = log.path.read_bytes()
    env = {**os.environ, "MCP_HOOKS_LOG": str(tmp_path / "events.jsonl")}
    # room for 40 bytes of the answer: a real short write, then EFBIG
    cut = subprocess.run([sys.executable, "-c", LIMITED, str(len(before) + 40), MCP_HOOKS,
                          "respond", signal.id[:8], "abort"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert cut.returncode == 1, cut.stderr
    assert cut.stderr.strip() == (
        f"mcp-hooks respond: cannot record the answer to signal {signal.id} in the signal log "
        f"{log.path}: File too large; nothing was recorded, so answer again once the log can "
        "be written")
    assert log.path.read_bytes() == before  # no torn answer
    again = cli("respond", signal.id[:8], "abort", env=env)
    assert again.returncode == 0, again.stderr
    assert [r["action"] for r in log.read()] == [None, "abort"]
