"""The control layer inside the engine: hooks.yaml entries after the HOOK.md chain, their
signals acting on the outcome, faults failing closed, aid delivered on the next event."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_hooks.engine.engine import Engine
from mcp_hooks.engine.entries import ControlLayer
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.settings import Settings
from mcp_hooks.spec.outcome import Event, Outcome
from mcp_hooks.state.eventlog import EventLog
from mcp_hooks.state.inbox import AidInbox
from mcp_hooks.state.signallog import SignalLog
from tests.conftest import write_hook
from tests.helpers.control_helpers import make_repo, write

pytestmark = pytest.mark.anyio

OPEN_ISSUE: dict[str, Any] = {
    "id": "FEAT-7", "checklist": [{"text": "code", "done": True},
                                  {"text": "tests", "done": False}],
    "files_changed": ["a.py"]}
DONE_ISSUE: dict[str, Any] = {
    "id": "FEAT-7", "checklist": [{"text": "code", "done": True}],
    "files_changed": [f"src/m{i}.py" for i in range(25)]}

SEED_YAML = """
hooks:
  pre-issue-submit:
    - oracle: ChecklistValidator
      config: {min_completion_rate: 1.0}
      priority: 1
    - oracle: FileChangeLimiter
      config: {max_files: 20, action: prompt}
      priority: 2
"""

CUSTOM = """
from mcp_hooks.spec.signals import Signal

class Boom:
    def __init__(self, config):
        pass
    def evaluate(self, context):
        raise RuntimeError("the oracle fell over")

class Narrow:
    def __init__(self, config):
        pass
    def evaluate(self, context):
        cmd = context.tool_input.get("command", "")
        return Signal.control([{"field": "tool_input", "from": {"command": cmd},
                                "to": {"command": cmd + " --dry-run"},
                                "description": "ran as a dry run first"}])

class Advice:
    def __init__(self, config):
        pass
    def evaluate(self, context):
        return Signal.aid("remember the changelog", follow_ups=["update CHANGELOG.md"])
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def engine_for(repo: Path, tmp_path: Path, *, on_fault: str = "block",
               one_shot: bool = False) -> Engine:
    registry = Registry(tmp_path / "user-hooks", repo, watch=not one_shot)
    control = ControlLayer(repo, user_file=tmp_path / "home" / ".ahp" / "hooks.yaml",
                           watch=not one_shot)
    return Engine(registry, Settings(on_fault=on_fault),  # type: ignore[arg-type]
                  log=EventLog(tmp_path / "events.jsonl"), control=control, one_shot=one_shot)


async def fire(engine: Engine, event: Event) -> Outcome:
    async with engine:
        return await engine.fire(event)


def submit(repo: Path, issue: dict[str, Any], session: str = "s1") -> Event:
    return Event("pre-issue-submit", session_id=session, work_dir=str(repo),
                 payload={"issue": issue})


async def test_a_block_signal_denies_and_a_prompt_is_context(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", SEED_YAML)
    engine = engine_for(repo, tmp_path)
    async with engine:
        blocked = await engine.fire(submit(repo, OPEN_ISSUE))
        warned = await engine.fire(submit(repo, DONE_ISSUE))
    assert blocked.denied and blocked.blocked_by == "checklist-validator"
    assert "checklist incomplete" in (blocked.reason or "")
    assert [s.intensity for s in blocked.signals] == ["block"]
    assert not warned.denied
    assert [s.intensity for s in warned.signals] == ["prompt"]
    assert any("25" in c and "file-change-limiter" in c for c in warned.additional_context)
    lines = [json.loads(x) for x in (tmp_path / "signals.jsonl").read_text().splitlines()]
    assert [(x["intensity"], x["source"], x["consumed"]) for x in lines] == [
        ("block", "checklist-validator", False), ("prompt", "file-change-limiter", False)]


async def test_hook_md_hooks_run_first_and_their_deny_ends_it(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", SEED_YAML)
    hooks = repo / ".agents" / "hooks"
    write_hook(hooks, "first", trigger="pre-issue-submit",
               script="echo ran >> \"$AGENT_HOOKS_WORK_DIR/../ran\" 2>/dev/null; "
                      "echo 'not today' >&2; exit 2\n")
    outcome = await fire(engine_for(repo, tmp_path), submit(repo, OPEN_ISSUE))
    assert outcome.denied and outcome.blocked_by == "first"
    assert [s.source for s in outcome.signals] == ["first"]  # no oracle ran after the deny


async def test_a_broken_hooks_yaml_fails_closed_naming_the_file(repo: Path,
                                                                tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n    - {oracle: NoSuchOracle}\n"
                                   "  post-issue-submit:\n    - {oracle: NoSuchOracle}\n")
    engine = engine_for(repo, tmp_path)
    async with engine:
        tool = await engine.fire(Event("before_tool", session_id="s", work_dir=str(repo),
                                       tool_name="Shell", tool_input={"command": "ls"}))
        after = await engine.fire(Event("post-issue-submit", session_id="s", work_dir=str(repo),
                                        payload={"issue": OPEN_ISSUE}))
    assert tool.denied and "hooks.yaml" in (tool.reason or "")
    assert "NoSuchOracle" in (tool.reason or "")
    assert not after.denied  # an event that cannot block: the problem is a warning there
    assert any("NoSuchOracle" in w for w in after.warnings)


@pytest.mark.parametrize("on_fault", ["block", "warn"])
async def test_an_oracle_that_raises_is_a_fault(repo: Path, tmp_path: Path,
                                                on_fault: str) -> None:
    write(repo, ".ahp/oracles.py", CUSTOM)
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n    - {oracle: 'oracles.py:Boom'}\n")
    outcome = await fire(engine_for(repo, tmp_path, on_fault=on_fault),
                         Event("before_tool", work_dir=str(repo), tool_name="Shell",
                               tool_input={"command": "ls"}))
    if on_fault == "block":
        assert outcome.denied and "the oracle fell over" in (outcome.reason or "")
        assert "could not decide" in (outcome.reason or "")
    else:
        assert not outcome.denied
        assert any("the oracle fell over" in w for w in outcome.warnings)


async def test_a_control_signal_rewrites_the_tool_input(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/oracles.py", CUSTOM)
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n    - {oracle: 'oracles.py:Narrow'}\n")
    outcome = await fire(engine_for(repo, tmp_path),
                         Event("before_tool", work_dir=str(repo), tool_name="Shell",
                               tool_input={"command": "make deploy"}))
    assert not outcome.denied
    assert outcome.modified_input == {"command": "make deploy --dry-run"}
    assert [s.intensity for s in outcome.signals] == ["control"]


async def test_hook_md_links_and_entries_are_one_chain(repo: Path, tmp_path: Path) -> None:
    """A HOOK.md hook's rewrite reaches the hooks.yaml entries after it; the first block (an
    entry's) decides, and every link that ran before it is in the one outcome."""
    write(repo, ".ahp/oracles.py", CUSTOM + """
class Refuse:
    def __init__(self, config):
        pass
    def evaluate(self, context):
        cmd = context.tool_input.get("command", "")
        if "--prod" in cmd:
            return Signal.block(f"no prod deploys today: {cmd}")
        return None
""")
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n"
          "    - {oracle: 'oracles.py:Narrow', priority: 1}\n"
          "    - {oracle: 'oracles.py:Refuse', priority: 2}\n")
    write_hook(repo / ".agents" / "hooks", "prod", script=(
        "echo '{\"modified_input\": {\"command\": \"make deploy --prod\"}}'\n"))
    outcome = await fire(engine_for(repo, tmp_path),
                         Event("before_tool", work_dir=str(repo), tool_name="Shell",
                               tool_input={"command": "make deploy"}))
    assert outcome.denied and outcome.blocked_by == "refuse", outcome
    assert outcome.reason == "no prod deploys today: make deploy --prod"
    assert outcome.modified_input is None  # a denied call is not rewritten
    assert [r.name for r in outcome.hooks] == ["prod"]
    assert [(s.source, s.intensity) for s in outcome.signals] == [
        ("refuse", "block"), ("prod", "control"), ("narrow", "control")]


async def test_untrusted_entries_that_run_commands_do_not_run(repo: Path, tmp_path: Path,
                                                              untrusted: None) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n    - oracle: TestGate\n"
                                   "      config: {command: 'touch pwned'}\n")
    outcome = await fire(engine_for(repo, tmp_path), submit(repo, OPEN_ISSUE))
    assert not (repo / "pwned").exists()
    assert not outcome.denied
    assert any("not trusted" in w and "mcp-hooks trust" in w for w in outcome.warnings)


async def test_async_entries_reach_the_next_event_as_aid(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/oracles.py", CUSTOM)
    write(repo, ".ahp/hooks.yaml",
          "hooks:\n  post-tool-use:\n    - {oracle: 'oracles.py:Advice', async: true}\n")
    engine = engine_for(repo, tmp_path)
    async with engine:
        first = await engine.fire(Event("after_tool", session_id="s9", work_dir=str(repo),
                                        tool_name="Shell", tool_input={}, tool_output="ok"))
        assert not any("changelog" in c for c in first.additional_context)
        log = SignalLog(tmp_path / "signals.jsonl")
        with anyio.fail_after(60):
            while not any(r.get("intensity") == "aid" for r in log.read()):
                await anyio.sleep(0.02)
        other = await engine.fire(Event("before_agent", session_id="other", work_dir=str(repo)))
        second = await engine.fire(Event("before_agent", session_id="s9", work_dir=str(repo)))
        third = await engine.fire(Event("before_agent", session_id="s9", work_dir=str(repo)))
    assert not any("changelog" in c for c in other.additional_context)
    assert any("remember the changelog" in c for c in second.additional_context)
    assert [s.intensity for s in second.signals] == ["aid"]
    assert not third.additional_context  # handed over once
    aid_lines = [r for r in log.read() if r.get("intensity") == "aid"]
    assert len(aid_lines) == 1  # logged when made, not again when delivered


async def test_an_async_hook_md_hook_leaves_aid(repo: Path, tmp_path: Path) -> None:
    hooks = repo / ".agents" / "hooks"
    write_hook(hooks, "advisor", trigger="after_tool", extra="async: true\n",
               script="echo '{\"additional_context\": \"run the linters too\"}'\n")
    engine = engine_for(repo, tmp_path)
    async with engine:
        await engine.fire(Event("after_tool", session_id="s3", work_dir=str(repo),
                                tool_name="Shell", tool_input={}, tool_output="ok"))
    # leaving the engine waited for the async hook: its aid is waiting in the inbox
    nxt = await fire(engine_for(repo, tmp_path), Event("before_agent", session_id="s3",
                                                       work_dir=str(repo)))
    assert any("run the linters too" in c and "advisor" in c for c in nxt.additional_context)


def test_the_one_shot_door_blocks_and_reads_no_control_code_without_hooks_yaml(
        repo: Path, tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    payload = json.dumps({"issue": OPEN_ISSUE})
    cmd = [sys.executable, "-m", "mcp_hooks.cli", "--user-dir", str(tmp_path / "u"),
           "--project-dir", str(repo), "--log", str(tmp_path / "e.jsonl"),
           "fire", "pre-issue-submit", "--payload", payload]
    write(repo, ".ahp/hooks.yaml", SEED_YAML)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=repo, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "checklist incomplete" in done.stdout + done.stderr
    probe = ("import sys, mcp_hooks.registry.discovery as d, mcp_hooks.engine.engine as e, "
             "mcp_hooks.spec.outcome as o\n"
             f"eng = e.Engine(d.Registry({str(tmp_path / 'u')!r}, {str(tmp_path)!r}), "
             "one_shot=True)\n"
             f"out = eng.fire_blocking(o.Event('before_tool', work_dir={str(tmp_path)!r}, "
             "tool_name='Shell', tool_input={}))\n"
             "print(out.decision, any(m.startswith('mcp_hooks.control.config') "
             "for m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.stdout.split() == ["allow", "False"], done.stderr


def test_the_inbox_claims_once(tmp_path: Path) -> None:
    from mcp_hooks.spec.signals import Signal

    inbox = AidInbox(tmp_path / "aid")
    inbox.put("s", [Signal.aid("one")])
    inbox.put("s", [Signal.aid("two")])
    inbox.put(None, [Signal.aid("lost: no session")])
    assert [s.payload["context_info"] for s in inbox.take("s")] == ["one", "two"]
    assert inbox.take("s") == [] and inbox.take(None) == []


async def test_a_long_lived_engine_sees_hooks_yaml_change(repo: Path, tmp_path: Path) -> None:
    engine = engine_for(repo, tmp_path)
    async with engine:
        before = await engine.fire(submit(repo, OPEN_ISSUE))
        write(repo, ".ahp/hooks.yaml", SEED_YAML)
        added = await engine.fire(submit(repo, OPEN_ISSUE))
        write(repo, ".ahp/hooks.local.yaml",
              "hooks:\n  pre-issue-submit:\n    - {oracle: ChecklistValidator, enabled: false}\n")
        switched_off = await engine.fire(submit(repo, OPEN_ISSUE))
    assert not before.denied and added.denied and not switched_off.denied


async def test_a_broken_hooks_yaml_under_on_fault_warn_is_a_warning(repo: Path,
                                                                   tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n    - {oracle: NoSuchOracle}\n")
    outcome = await fire(engine_for(repo, tmp_path, on_fault="warn"),
                         Event("before_tool", work_dir=str(repo), tool_name="Shell",
                               tool_input={"command": "ls"}))
    assert not outcome.denied
    assert any("NoSuchOracle" in w for w in outcome.warnings)


@pytest.mark.parametrize("fired", ["Shell", "Bash"])
async def test_when_tool_takes_a_hosts_own_name(repo: Path, tmp_path: Path, fired: str) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n    - oracle: SecurityScanner\n"
                                   "      when: {tool: [Bash]}\n")
    outcome = await fire(engine_for(repo, tmp_path),
                         Event("before_tool", work_dir=str(repo), tool_name=fired,
                               tool_input={"command": "echo AKIAABCDEFGHIJKLMNOP"}))
    assert outcome.denied, outcome


def test_the_inbox_sees_aid_left_after_it_found_nothing(tmp_path: Path) -> None:
    from mcp_hooks.spec.signals import Signal

    inbox = AidInbox(tmp_path / "aid")
    assert inbox.take("s") == []  # no folder yet
    inbox.put("other", [Signal.aid("for another session")])
    assert inbox.take("s") == []  # the folder changed, but not for this session
    assert inbox.take("s") == []  # unchanged since: one stat, nothing
    AidInbox(tmp_path / "aid").put("s", [Signal.aid("late")])  # another writer, same folder
    assert [s.payload["context_info"] for s in inbox.take("s")] == ["late"]
    assert [s.payload["context_info"] for s in inbox.take("other")] == ["for another session"]


async def test_hooks_yaml_still_runs_beside_a_broken_hook_under_on_fault_warn(
        repo: Path, tmp_path: Path) -> None:
    hooks = repo / ".agents" / "hooks"
    (hooks / "broken").mkdir(parents=True)
    (hooks / "broken" / "HOOK.md").write_text("---\nname: broken\ntrigger: pre-issue-submit\n")
    write(repo, ".ahp/hooks.yaml", SEED_YAML)
    outcome = await fire(engine_for(repo, tmp_path, on_fault="warn"), submit(repo, OPEN_ISSUE))
    assert outcome.denied and outcome.blocked_by == "checklist-validator"  # the gate held
    assert any("failed to load" in w for w in outcome.warnings)


def test_a_one_shot_engine_runs_async_entries_in_a_detached_process(repo: Path,
                                                                    tmp_path: Path) -> None:
    """``mcp-hooks fire`` and the bridges exit at once; the background entries go on in a
    process of their own, and their aid reaches the session's next (one-shot) event."""
    import time

    write(repo, ".ahp/oracles.py", CUSTOM)
    write(repo, ".ahp/hooks.yaml",
          "hooks:\n  post-tool-use:\n    - {oracle: 'oracles.py:Advice', async: true}\n")
    first = engine_for(repo, tmp_path, one_shot=True).fire_blocking(
        Event("after_tool", session_id="s5", work_dir=str(repo), tool_name="Shell",
              tool_input={}, tool_output="ok"))
    assert not first.additional_context
    log = SignalLog(tmp_path / "signals.jsonl")
    for _ in range(2400):  # up to 120 s: the detached process goes at its own pace
        if any(r.get("intensity") == "aid" for r in log.read()):
            break
        time.sleep(0.05)
    nxt = engine_for(repo, tmp_path, one_shot=True).fire_blocking(
        Event("before_agent", session_id="s5", work_dir=str(repo)))
    assert any("remember the changelog" in c for c in nxt.additional_context), nxt


async def test_the_engines_secrets_never_reach_an_oracles_command(repo: Path,
                                                                  tmp_path: Path) -> None:
    """A token given to ``serve --token`` (not in the environment) is a secret of the engine:
    the control layer it builds scrubs it from oracle commands as hooks are scrubbed."""
    home = tmp_path / "home"
    write(home, ".ahp/hooks.yaml", "hooks:\n  post-issue-submit:\n    - oracle: ReviewTrigger\n"
                                   "      config: {command: 'echo seen=${SERVE_TOKEN:-none}'}\n")
    os.environ["SERVE_TOKEN"] = "flag-token-123"
    try:
        registry = Registry(tmp_path / "user-hooks", repo)
        engine = Engine(registry, settings=Settings(secrets=("flag-token-123",)))
        assert engine.control is not None
        engine.control.user_file = home / ".ahp" / "hooks.yaml"
        outcome = await fire(engine, Event("post-issue-submit", session_id="s",
                                           work_dir=str(repo), payload={"issue": DONE_ISSUE}))
    finally:
        del os.environ["SERVE_TOKEN"]
    assert any("seen=none" in c for c in outcome.additional_context), outcome
    assert not any("flag-token-123" in c for c in outcome.additional_context)
