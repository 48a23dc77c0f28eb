"""hooks.yaml oracles at run time, against a hostile repository: read-only means read-only,
every evaluation has a deadline, nothing an oracle raises escapes, commands leave nothing
behind and see no secret, state of any shape never denies for good, and many threads at
once decide as one would."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from mcp_hooks.control import OracleContext, build_oracle
from mcp_hooks.control.context import BadRevisionError, git_changed_files
from mcp_hooks.control.ladder import Ladder
from mcp_hooks.control.oracles.base import OracleConfigError
from mcp_hooks.control.oracles.commands import default_test_command
from mcp_hooks.engine.chain import Chain
from mcp_hooks.engine.entries import ControlLayer
from mcp_hooks.paths import state_dir
from mcp_hooks.spec.outcome import Event
from mcp_hooks.spec.signals import Signal
from tests.conftest import MCP_HOOKS
from tests.helpers.bounded import bounded
from tests.helpers.control_helpers import make_repo, write


def evaluate(name: str, repo: Path, config: dict[str, Any] | None = None,
             trigger: str = "after_tool", **payload: Any) -> Signal | None:
    oracle = build_oracle(name, config or {}, repo)
    context = OracleContext.from_payload(trigger, {"work_dir": str(repo), **payload})
    return bounded(lambda: oracle.evaluate(context))


def layer(repo: Path, tmp_path: Path, **kw: Any) -> ControlLayer:
    return ControlLayer(repo, user_file=tmp_path / "home" / ".ahp" / "hooks.yaml", **kw)


class Decision(NamedTuple):
    """What the entries' verdicts did to a real chain (``Chain.entries``)."""

    deny: str | None  # who blocked
    reason: str | None
    warnings: list[str]
    contexts: list[str]


def applied(control: ControlLayer, trigger: str, payload: dict[str, Any], *,
            can_block: bool = True, fail_closed: bool = True) -> Decision:
    chain = Chain(trigger, Event.create(event_type=trigger), [], [])
    chain.entries(control.decide(trigger, payload, can_block=can_block, fail_closed=fail_closed))
    return Decision(chain.blocked_by if chain.stopped else None, chain.reason, chain.warnings,
                    chain.contexts)


def decide(control: ControlLayer, trigger: str, payload: dict[str, Any], *,
           can_block: bool = True, fail_closed: bool = True) -> Decision:
    return bounded(lambda: applied(control, trigger, payload, can_block=can_block,
                                   fail_closed=fail_closed))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# p\n", "src/app.py": "x = 1\n"})


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    where = tmp_path / "outside"
    where.mkdir()
    (where / "victim.txt").write_text("untouched\n")
    return where


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


# -- read-only means read-only ---------------------------------------------------------

@pytest.mark.parametrize("log_file", ["~/.bashrc", "../x", "~", "logs/../../x", ""])
def test_change_logger_refuses_a_log_file_outside_the_project(repo: Path, log_file: str,
                                                              ) -> None:
    with pytest.raises(OracleConfigError) as raised:
        build_oracle("ChangeLogger", {"log_file": log_file}, repo)
    assert raised.value.key == "log_file"


def test_change_logger_from_the_users_layer_never_touches_bashrc(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    write(home, ".bashrc", "export PS1='$ '\n")
    monkeypatch.setenv("HOME", str(home))
    write(home, ".ahp/hooks.yaml", "hooks:\n  post-tool-use:\n    - oracle: ChangeLogger\n"
                                   "      config: {log_file: ~/.bashrc}\n")
    decision = decide(layer(repo, tmp_path), "after_tool",
                      {"work_dir": str(repo), "tool_name": "Write",
                       "tool_input": {"file_path": "$(touch /tmp/pwned).py"}},
                      can_block=False)
    assert (home / ".bashrc").read_text() == "export PS1='$ '\n"
    assert any("log_file" in w and "~" in w for w in decision.warnings), decision


def test_change_logger_never_writes_through_a_symlink(repo: Path, outside: Path) -> None:
    before = snapshot(outside)
    (repo / "logs").symlink_to(outside)
    (repo / "changes.jsonl").symlink_to(outside / "victim.txt")
    for log_file in ("logs/changes.jsonl", "changes.jsonl", str(repo / "logs" / "x.jsonl"),
                     str(outside / "victim.txt")):
        said = evaluate("ChangeLogger", repo, {"log_file": log_file}, tool_name="Write",
                        tool_input={"file_path": "a.py"})
        assert said is not None and "not written" in said.text(), (log_file, said)
    assert snapshot(outside) == before


def test_file_change_limiter_base_never_reaches_git_as_an_option(repo: Path,
                                                                 tmp_path: Path) -> None:
    target = tmp_path / "truncated.txt"
    for base in (f"--output={target}", f"-o{target}", "HEAD --output=x", ""):
        with pytest.raises(OracleConfigError) as raised:
            build_oracle("FileChangeLimiter", {"base": base}, repo)
        assert raised.value.key == "base"
    with pytest.raises(OracleConfigError) as raised:  # `git log --5` would be an option
        build_oracle("ContextLoader", {"history": -5}, repo)
    assert raised.value.key == "history"
    with pytest.raises(BadRevisionError):  # the same check below the config's
        git_changed_files(repo, f"--output={target}")
    assert not target.exists()
    missing = build_oracle("FileChangeLimiter", {"base": "no-such-branch"}, repo)
    with pytest.raises(BadRevisionError, match="no-such-branch"):  # a fault, not a pass
        missing.evaluate(OracleContext.from_payload("before_issue_submit",
                                                    {"work_dir": str(repo)}))


def test_retrospective_archive_never_writes_outside(repo: Path, outside: Path) -> None:
    before = snapshot(outside)
    issue = {"id": "FEAT-1", "title": "x"}
    (repo / ".ahp").mkdir()
    (repo / ".ahp" / "archive").symlink_to(outside)
    said = evaluate("RetrospectiveGenerator", repo, {"archive_issue": True},
                    trigger="after_issue_close", issue=issue)
    assert said is not None and "not archived" in said.text() and "symlink" in said.text()
    assert snapshot(outside) == before
    (repo / ".ahp" / "archive").unlink()
    (repo / ".ahp" / "archive").mkdir()
    (repo / ".ahp" / "archive" / "FEAT-1.json").symlink_to(outside / "victim.txt")
    said = evaluate("RetrospectiveGenerator", repo, {"archive_issue": True},
                    trigger="after_issue_close", issue={**issue, "id": "../FEAT-1"})
    assert said is not None and "archived to .ahp/archive/_FEAT-1.json" in said.text()
    said = evaluate("RetrospectiveGenerator", repo, {"archive_issue": True},
                    trigger="after_issue_close", issue=issue)
    assert said is not None and "archived to .ahp/archive/FEAT-1.json" in said.text()
    assert not (repo / ".ahp" / "archive" / "FEAT-1.json").is_symlink()  # replaced, not followed
    assert snapshot(outside) == before
    with pytest.raises(OracleConfigError):
        build_oracle("RetrospectiveGenerator", {"archive_dir": "~/archive"}, repo)


def test_untrusted_writers_write_nothing_at_all(repo: Path, tmp_path: Path,
                                               untrusted: None) -> None:
    write(repo, ".ahp/hooks.yaml", """
hooks:
  post-tool-use:
    - oracle: ChangeLogger
      config: {log_file: changes.jsonl}
    - oracle: ChangeLogger
      id: default-log
  post-issue-close:
    - oracle: RetrospectiveGenerator
      config: {archive_issue: true}
""")
    control = layer(repo, tmp_path)
    tool = decide(control, "after_tool", {"work_dir": str(repo), "tool_name": "Write",
                                          "tool_input": {"file_path": "a.py"}},
                  can_block=False)
    closed = decide(control, "after_issue_close",
                    {"work_dir": str(repo), "issue": {"id": "FEAT-1"}}, can_block=False)
    assert not (repo / "changes.jsonl").exists()
    assert not (state_dir() / "changes.jsonl").exists()
    assert not (repo / ".ahp" / "archive").exists()
    for decision in (tool, closed):
        assert any("not trusted" in w and "mcp-hooks trust" in w for w in decision.warnings)


# -- deadlines and faults ----------------------------------------------------------------

ORACLES = """
import os
import time

class Waiter:
    def __init__(self, config):
        self.flag = config["flag"]
    def evaluate(self, context):
        while not os.path.exists(self.flag):
            time.sleep(0.01)

class Sleeper:
    def __init__(self, config):
        pass
    def evaluate(self, context):
        time.sleep(60)

class Custom(BaseException):
    pass

class Raiser:
    def __init__(self, config):
        self.kind = config["raise"]
    def evaluate(self, context):
        raise {"SystemExit": SystemExit(0), "KeyboardInterrupt": KeyboardInterrupt(),
               "GeneratorExit": GeneratorExit(), "Custom": Custom("custom escape")}[self.kind]
"""

RAISED = ["SystemExit", "KeyboardInterrupt", "GeneratorExit", "Custom"]


def custom_oracles(repo: Path, trigger: str, entries: str) -> None:
    write(repo, ".ahp/oracles.py", ORACLES)
    write(repo, ".ahp/hooks.yaml", f"hooks:\n  {trigger}:\n{entries}")


@pytest.mark.parametrize("fail_closed", [True, False])
def test_an_oracle_that_sleeps_is_abandoned_at_its_timeout(repo: Path, tmp_path: Path,
                                                          fail_closed: bool) -> None:
    custom_oracles(repo, "pre-tool-use",
                   "    - {oracle: 'oracles.py:Sleeper', config: {timeout: 0.5}}\n")
    decision = decide(layer(repo, tmp_path), "before_tool",
                      {"work_dir": str(repo), "tool_name": "Shell",
                       "tool_input": {"command": "ls"}}, fail_closed=fail_closed)
    said = decision.reason if fail_closed else " ".join(decision.warnings)
    assert (decision.deny is not None) is fail_closed
    assert "Sleeper" in (said or "") and "timed out" in (said or "")
    assert "0.5 s" in (said or "")


def test_abandoned_oracles_are_bounded_and_the_rest_go_on(repo: Path, tmp_path: Path) -> None:
    from mcp_hooks.control.evaluation import MAX_ABANDONED, _pool

    flag = tmp_path / "release"
    custom_oracles(repo, "pre-tool-use", "    - oracle: 'oracles.py:Waiter'\n"
                   f"      config: {{timeout: 0.2, flag: {json.dumps(str(flag))}}}\n"
                   "    - oracle: PermissionChecker\n"
                   "      config: {require_confirmation: false}\n")
    control = layer(repo, tmp_path)
    payload = {"work_dir": str(repo), "tool_name": "Shell", "tool_input": {"command": "ls"}}
    before = set(_pool.abandoned)
    try:
        said: list[str] = []
        while len(said) <= MAX_ABANDONED and "was not started" not in "".join(said[-1:]):
            warnings = decide(control, "before_tool", payload, fail_closed=False).warnings
            said.append(warnings[0])  # earlier tests' sleepers may still count: at most 16
        assert all("timed out" in w for w in said[:-1]) and len(said) > 1, said
        assert "was not started" in said[-1] and _pool.busy() >= MAX_ABANDONED
        dangerous = {**payload, "tool_input": {"command": "rm -rf /"}}
        held = decide(control, "before_tool", dangerous)  # nothing starts: a fault, denied
        assert held.deny is not None and "was not started" in (held.reason or "")
    finally:
        flag.touch()
    mine = set(_pool.abandoned) - before
    assert mine
    for thread in mine:
        thread.join(60)
        assert not thread.is_alive()  # an abandoned thread ends with its oracle
    assert not decide(control, "before_tool", payload, fail_closed=False).warnings


@pytest.mark.parametrize("timeout", [0, -1, 601, "5", True])
def test_the_timeout_key_is_checked(repo: Path, timeout: Any) -> None:
    with pytest.raises(OracleConfigError) as raised:
        build_oracle("PermissionChecker", {"timeout": timeout}, repo)
    assert raised.value.key == "timeout"
    assert build_oracle("PermissionChecker", {"timeout": 0.25}, repo).timeout == 0.25


def test_the_longest_timeout_is_the_hosts_hook_timeout() -> None:
    from mcp_hooks.control.runtime import MAX_TIMEOUT
    from mcp_hooks.hosts.base import HOOK_TIMEOUT_S

    assert MAX_TIMEOUT == HOOK_TIMEOUT_S


def run_cli(*args: str, cwd: Path, stdin: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, env=env or dict(os.environ), timeout=120)


@pytest.mark.parametrize("kind", RAISED)
def test_a_base_exception_from_an_oracle_is_a_deny_through_fire(repo: Path, tmp_path: Path,
                                                                kind: str) -> None:
    custom_oracles(repo, "pre-tool-use",
                   f"    - {{oracle: 'oracles.py:Raiser', config: {{raise: {kind}}}}}\n")
    done = run_cli("--user-dir", str(tmp_path / "u"), "--project-dir", str(repo), "fire",
                   "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}', cwd=repo)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Raiser" in done.stdout and kind in done.stdout, done.stdout
    assert "Traceback" not in done.stderr and "Exception in thread" not in done.stderr


@pytest.mark.parametrize("kind", RAISED)
def test_a_base_exception_from_an_oracle_is_a_deny_through_the_bridge(
        repo: Path, tmp_path: Path, kind: str) -> None:
    custom_oracles(repo, "pre-tool-use",
                   f"    - {{oracle: 'oracles.py:Raiser', config: {{raise: {kind}}}}}\n")
    fixture = Path(__file__).parents[1] / "fixtures" / "hosts" / "claude-code"
    payload = (fixture / "PreToolUse.bash.json").read_text().replace("$PROJECT", str(repo))
    done = run_cli("bridge", "claude-code", "--user-dir", str(tmp_path / "u"), cwd=repo,
                   stdin=payload)
    assert done.returncode == 0, done.stderr  # Claude Code reads the deny from the JSON
    said = json.loads(done.stdout)["hookSpecificOutput"]
    assert said["permissionDecision"] == "deny"
    assert "Raiser" in said["permissionDecisionReason"]
    assert kind in said["permissionDecisionReason"]
    assert "Traceback" not in done.stderr and "Exception in thread" not in done.stderr


def test_a_fifo_checklist_file_is_a_fault_not_a_hang(repo: Path, tmp_path: Path) -> None:
    os.mkfifo(repo / "TASKS.md")
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n"
                                   "    - oracle: ChecklistValidator\n"
                                   "      config: {checklist_file: TASKS.md}\n")
    decision = decide(layer(repo, tmp_path), "before_issue_submit", {"work_dir": str(repo)})
    assert decision.deny is not None
    assert "TASKS.md" in (decision.reason or "") and "not a regular file" in (
        decision.reason or "")
    (repo / "TASKS.md").unlink()
    (repo / "TASKS.md").symlink_to("/dev/zero")
    decision = decide(layer(repo, tmp_path), "before_issue_submit", {"work_dir": str(repo)})
    assert "TASKS.md" in (decision.reason or "") and "symlink" in (decision.reason or "")
    (repo / "TASKS.md").unlink()
    write(repo, "TASKS.md", "- [ ] x\n" * 200_000)  # over the cap
    decision = decide(layer(repo, tmp_path), "before_issue_submit", {"work_dir": str(repo)})
    assert "TASKS.md" in (decision.reason or "") and "cap" in (decision.reason or "")


def test_a_fifo_under_ahp_is_never_opened(repo: Path, tmp_path: Path,
                                         untrusted: None) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n    - oracle: PermissionChecker\n")
    os.mkfifo(repo / ".ahp" / "evil.py")  # the trust digest records it by kind, unopened
    decision = decide(layer(repo, tmp_path), "before_tool",
                      {"work_dir": str(repo), "tool_name": "Shell",
                       "tool_input": {"command": "rm -rf build"}})
    assert decision.deny is None and not decision.warnings  # decided: no deadline was hit
    assert "dangerous operation: Shell contains 'rm -rf'" in " ".join(decision.contexts)


def test_a_fifo_in_the_repository_hangs_no_reader(repo: Path) -> None:
    os.mkfifo(repo / "requirements.txt")
    os.mkfifo(repo / "Makefile")
    said = evaluate("DependencyChecker", repo, trigger="before_issue_start")
    assert said is not None and "requirements.txt is not a regular file" in said.text()
    assert bounded(lambda: default_test_command(repo))[-2:] == ["pytest", "-q"]
    os.mkfifo(repo / "coverage.json")
    gate = evaluate("TestGate", repo, {"command": "true", "coverage_threshold": 1},
                    trigger="before_issue_submit")
    assert gate is not None and gate.header.type == "coverage_missing"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, limit: float = 60.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


DAEMON = "setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' & "


@pytest.mark.parametrize("then, timeout, denied", [
    ("echo started", 5, False),  # the command is done; its daemon holds stdout
    ("sleep 300", 1, True),  # the command itself outlives its timeout
])
def test_a_test_gate_daemon_neither_hangs_the_event_nor_survives_it(
        repo: Path, tmp_path: Path, then: str, timeout: int, denied: bool) -> None:
    command = json.dumps(["sh", "-c", DAEMON + "while [ ! -s daemon.pid ]; do :; done; " + then])
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n    - oracle: TestGate\n"
                                   f"      config: {{command: {command}, timeout: {timeout}}}\n")
    done = run_cli("--user-dir", str(tmp_path / "u"), "--project-dir", str(repo), "fire",
                   "pre-issue-submit", cwd=repo)
    assert done.returncode == (2 if denied else 0), (done.stdout, done.stderr)
    if denied:
        assert f"no answer within {timeout} s" in done.stdout
    pid = int((repo / "daemon.pid").read_text())
    assert wait_gone(pid), f"the daemon {pid} outlived its event"


def test_an_oracles_command_sees_no_secret(repo: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_HOOKS_TOKEN", "tok-123")
    monkeypatch.setenv("UPSTREAM_KEY", "hdr-456")
    show = "echo token=${MCP_HOOKS_TOKEN:-none} key=${UPSTREAM_KEY:-none}"
    write(repo, ".ahp/hooks.yaml", "hooks:\n  post-issue-submit:\n"
                                   "    - oracle: ReviewTrigger\n"
                                   f"      config: {{command: {json.dumps(show)}}}\n")
    decision = decide(layer(repo, tmp_path, secrets=["hdr-456"]), "after_issue_submit",
                      {"work_dir": str(repo)}, can_block=False)
    assert any("token=none key=none" in c for c in decision.contexts), decision


# -- state -------------------------------------------------------------------------------

def warning() -> Signal:
    return Signal.prompt("25 files changed", suggestions=["split"])


CORRUPT: list[Any] = [
    [], "x", 3, None, {"sessions": []}, {"sessions": {"s": []}},
    {"sessions": {"s": {"counts": [], "at": "yesterday"}}},
    {"sessions": {"s": {"counts": {"t/e": -5}, "at": 1e18}}},
    {"sessions": {"s": {"counts": {"t/e": "2"}}}},
    {"sessions": {"s": {"counts": {"t/e": 1e300}}}},
    {"sessions": {"s": {"counts": {"t/e": 10**30}, "at": float("nan")}}},
    {"sessions": {"s": {"counts": {"t/e": True}}}},
]


@pytest.mark.parametrize("content", [*(json.dumps(c) for c in CORRUPT), "{not json",
                                     b"\xff\xfe", "[" * 100_000])
def test_a_corrupt_ladder_counts_from_zero_and_is_rewritten(tmp_path: Path,
                                                            content: str | bytes) -> None:
    path = tmp_path / "ladder.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    ladder = Ladder(path)
    assert ladder.count("s", "t", "e") == 0
    first = ladder.apply("s", "t", "e", warning())
    assert first is not None and first.intensity == "prompt"
    data = json.loads(path.read_text())
    assert data["sessions"]["s"]["counts"] == {"t/e": 1}
    second = ladder.apply("s", "t", "e", warning(), ("prompt", "block"))
    assert second is not None and second.blocks  # it climbs again from there


def test_a_fifo_or_symlinked_ladder_is_replaced_not_followed(tmp_path: Path,
                                                            outside: Path) -> None:
    path = tmp_path / "ladder.json"
    os.mkfifo(path)
    first = bounded(lambda: Ladder(path).apply("s", "t", "e", warning()))
    assert first is not None and first.intensity == "prompt"
    assert path.is_file() and json.loads(path.read_text())["sessions"]["s"]["counts"]
    path.unlink()
    path.symlink_to(outside / "victim.txt")
    assert Ladder(path).apply("s", "t", "e", warning()) is not None
    assert (outside / "victim.txt").read_text() == "untouched\n"
    assert not path.is_symlink()


def test_a_corrupt_ladder_never_denies_an_escalating_entry(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", """
hooks:
  pre-tool-use:
    - oracle: PermissionChecker
      escalation: [prompt, block]
""")
    path = tmp_path / "ladder.json"
    path.write_text(json.dumps({"sessions": {"s1": []}}))
    control = layer(repo, tmp_path, ladder=Ladder(path))
    harmless = decide(control, "before_tool", {"work_dir": str(repo), "session_id": "s1",
                                               "tool_name": "Shell",
                                               "tool_input": {"command": "ls"}})
    assert harmless.deny is None and not harmless.warnings
    first = decide(control, "before_tool", {"work_dir": str(repo), "session_id": "s1",
                                            "tool_name": "Shell",
                                            "tool_input": {"command": "rm -rf /"}})
    assert first.deny is None and first.contexts  # the first step: a prompt


# -- threads -------------------------------------------------------------------------------

def test_concurrent_decides_from_many_threads(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", """
hooks:
  pre-tool-use:
    - oracle: PermissionChecker
      config: {require_confirmation: false}
""")
    control = layer(repo, tmp_path, watch=True)
    errors: list[BaseException] = []
    wrong: list[tuple[str, Decision]] = []
    start = threading.Barrier(16)

    def worker(n: int) -> None:
        start.wait()
        for i in range(30):
            command = "rm -rf /" if (n + i) % 2 else "ls -la"
            try:
                decision = applied(
                    control, "before_tool", {"work_dir": str(repo), "session_id": f"s{n}",
                                    "tool_name": "Shell", "tool_input": {"command": command}},
                    can_block=True, fail_closed=False)
            except BaseException as exc:
                errors.append(exc)
                continue
            if (decision.deny is not None) != command.startswith("rm") or decision.warnings:
                wrong.append((command, decision))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads)
    assert not errors and not wrong, (errors[:3], wrong[:3])
