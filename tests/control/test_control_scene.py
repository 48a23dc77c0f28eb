"""The seed's full example (``002``, section 8) as a test, through the real doors.

The project is ``examples/control_scene/`` built into a real git repository
(``build_project``: its ``.ahp/hooks.yaml`` committed, 25 modules changed since). The submit
of FEAT-0123 is fired through ``mcp-hooks fire`` (a subprocess) and through an in-memory MCP
client (``fire_hook_event``), answered through ``mcp-hooks respond`` and ``respond_to_signal``,
and the signal log is read back through ``mcp-hooks signals --json``:

1. the checklist is 1/3 done -> deny, a block signal from ``checklist-validator`` with the
   open items as its resolution path; answered ``retry_after_fix``;
2. the checklist done, 25 files changed -> allow with a prompt signal from
   ``change-size-limiter`` (its message in ``additional_context``); TestGate and
   SecurityScanner ran and passed; answered ``acknowledge``;
3. accepted: ``post-issue-submit`` runs ReviewTrigger's local command -> an aid signal from
   ``notification``; answered ``suggestion_applied``;

and the three answered lines are the seed's. Then the ladder: the change-size warning,
repeated, is a prompt, a control, a block, across new processes; a pass resets it. And the
order the README promises: the HOOK.md chain first, a HOOK.md deny stopping the hooks.yaml
entries too. ``make demo`` runs the same scene (``examples/control_scene/scene.py``).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from mcp import Client

from mcp_hooks.control import trust_config
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.server import build_server
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from tests.conftest import write_hook

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
SCENE_FILE = REPO / "examples" / "control_scene" / "scene.py"
MCP_HOOKS = str(Path(sys.executable).parent / "mcp-hooks")
SESSION = "feat-0123"


def _load_scene() -> ModuleType:
    spec = importlib.util.spec_from_file_location("control_scene", SCENE_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scene = _load_scene()


@pytest.fixture
def repo(tmp_path: Path, untrusted: None) -> Path:
    """The scene's repository, its .ahp trusted for real (TestGate and ReviewTrigger run
    commands: untrusted, they would not run)."""
    project = scene.build_project(tmp_path / "feat-0123")
    trust_config(project, TrustStore())
    return project


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "logs" / "events.jsonl"


def common(user_dir: Path, project: Path, log: Path) -> list[str]:
    return ["--user-dir", str(user_dir), "--project-dir", str(project), "--log", str(log)]


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *argv], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=300)


def cli_fire(project: Path, args: list[str], payload: dict[str, Any],
             session: str = SESSION) -> tuple[int, dict[str, Any]]:
    done = cli("fire", "pre-issue-submit", "--session", session, "--json", "--payload",
               json.dumps(payload), *args, cwd=project)
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture
async def client(repo: Path, user_dir: Path, log: Path) -> AsyncIterator[Client]:
    async with HookService(Settings.from_env(project_dir=repo, user_dir=user_dir, log=log),
                           watch_interval=0.05) as svc, Client(build_server(svc)) as c:
        yield c


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    return data


def signals_of(outcome: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["header"]["intensity"], s["header"]["source"]) for s in outcome["signals"]]


async def test_the_seeds_submit_scene(repo: Path, user_dir: Path, log: Path,
                                      client: Client) -> None:
    args = common(user_dir, repo, log)
    # 1. blocked by the checklist: `mcp-hooks fire`, a new process
    code, first = cli_fire(repo, args, {"issue": scene.issue(done=False)})
    assert code == 2 and first["decision"] == "deny"
    assert first["blocked_by"] == "checklist-validator"
    assert "checklist incomplete: 2/3 open" in first["reason"]
    assert signals_of(first) == [("block", "checklist-validator")]
    block = first["signals"][0]
    assert block["context"]["hook"] == "before_issue_submit"
    assert block["context"]["issue_id"] == "FEAT-0123"
    assert block["payload"]["resolution_path"] == ["complete tests [chk-002]",
                                                   "complete API docs [chk-003]"]
    answered = cli("respond", block["header"]["id"], "retry_after_fix", "--details",
                   '{"fixed": ["tests", "API docs"]}', *args, cwd=repo)
    assert answered.returncode == 0, answered.stderr

    # 2. fixed; warned for 25 changed files (git says so: the payload names no file), allowed
    where = {"session_id": SESSION, "work_dir": str(repo)}
    second = await call(client, "fire_hook_event", **where, event_type="pre-issue-submit",
                        payload={"issue": scene.issue(done=True)})
    assert second["decision"] == "allow"
    assert signals_of(second) == [("prompt", "change-size-limiter")]  # TestGate etc. passed
    prompt = second["signals"][0]
    assert prompt["payload"]["message"] == ("large change: 25 files changed, more than 20; "
                                            "submit in steps?")
    assert len(prompt["context"]["files"]) == 25
    assert any("25 files changed" in c for c in second["additional_context"])
    await call(client, "respond_to_signal", signal_id=prompt["header"]["id"],
               action="acknowledge", details={"why": "one feature, one submit"})

    # 3. accepted: post-issue-submit tells the reviewers through the local command
    after = await call(client, "fire_hook_event", **where, event_type="post-issue-submit",
                       payload={"issue": {**scene.issue(done=True), "status": "review"}})
    assert after["decision"] == "allow"
    assert signals_of(after) == [("aid", "notification")]
    aid = after["signals"][0]
    assert aid["payload"]["context_info"] == ("reviewers notified of FEAT-0123; expect an "
                                              "answer within 2 hours")
    sent = [json.loads(line) for line in
            (repo / ".ahp" / "notifications.log").read_text().splitlines()]
    assert sent == [{"issue": "FEAT-0123", "actions": "notify_reviewers", "session": SESSION}]
    await call(client, "respond_to_signal", signal_id=aid["header"]["id"],
               action="suggestion_applied")

    # the signal log, through the CLI: three signals sent, three answered, the seed's shape
    done = cli("signals", "--json", "-n", "0", *args, cwd=repo)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    sent_lines = [r for r in lines if r["kind"] == "signal"]
    answers = [r for r in lines if r["kind"] == "response"]
    assert [r["signal_id"] for r in sent_lines] == [block["header"]["id"],
                                                    prompt["header"]["id"], aid["header"]["id"]]
    assert all(r["consumed"] is False and r["action"] is None for r in sent_lines)
    assert [{k: r[k] for k in scene.SEED_KEYS[1:]} for r in answers] == [
        dict(zip(scene.SEED_KEYS[1:], row, strict=True)) for row in scene.EXPECTED_LOG]
    for record in answers:
        assert set(scene.SEED_KEYS) <= set(record)
        assert record["timestamp"].endswith("Z") and record["session_id"] == SESSION
    assert [r["signal_id"] for r in answers] == [r["signal_id"] for r in sent_lines]
    assert answers[0]["details"] == {"fixed": ["tests", "API docs"]}


LADDER = """\
hooks:
  pre-issue-submit:
    - oracle: FileChangeLimiter
      id: change-size-limiter
      config:
        action: control
      escalation: [prompt, control, block]
"""


async def test_the_warning_repeated_climbs_the_ladder_across_restarts(
        repo: Path, user_dir: Path, log: Path) -> None:
    # the local layer (git-ignored) overrides the project's entry key by key: same id,
    # max_files 20 kept, action control, and a ladder
    (repo / ".ahp" / "hooks.local.yaml").write_text(LADDER)
    trust_config(repo, TrustStore())
    args = common(user_dir, repo, log)
    fixed = {"issue": scene.issue(done=True)}

    async def by_server(payload: dict[str, Any]) -> dict[str, Any]:
        async with HookService(Settings.from_env(
                project_dir=repo, user_dir=user_dir, log=log)) as svc, \
                Client(build_server(svc)) as c:
            return await call(c, "fire_hook_event", session_id=SESSION, work_dir=str(repo),
                              event_type="pre-issue-submit", payload=payload)

    first = await by_server(fixed)  # a server, then closed
    assert first["decision"] == "allow"
    assert signals_of(first) == [("prompt", "change-size-limiter")]
    code, second = cli_fire(repo, args, fixed)  # a new process: the count was kept
    assert code == 0 and second["decision"] == "allow"
    assert signals_of(second) == [("control", "change-size-limiter")]
    (split,) = second["signals"][0]["payload"]["modifications"]
    assert split["action"] == "split_batch"
    assert [len(b) for b in split["batches"]] == [20, 5]
    third = await by_server(fixed)  # a new server
    assert third["decision"] == "deny" and third["blocked_by"] == "change-size-limiter"
    assert signals_of(third) == [("block", "change-size-limiter")]
    assert "large change: 25 files changed" in third["reason"]
    # the ladder is per session: another session starts at the bottom
    code, other = cli_fire(repo, args, fixed, session="someone-else")
    assert code == 0 and signals_of(other) == [("prompt", "change-size-limiter")]
    # a pass (20 files named by the issue) resets it: the next violation is a prompt again
    small = {"issue": {**scene.issue(done=True),
                       "files_changed": [f"users_api/field_{n:02d}.py" for n in range(20)]}}
    code, passed = cli_fire(repo, args, small)
    assert code == 0 and passed["signals"] == []
    code, again = cli_fire(repo, args, fixed)
    assert code == 0 and signals_of(again) == [("prompt", "change-size-limiter")]


async def test_hook_md_chain_runs_first_and_its_deny_stops_the_entries(
        repo: Path, user_dir: Path, log: Path) -> None:
    # a HOOK.md hook on the same trigger, recording that it ran; TestGate's command is
    # replaced (local layer) by one that records its run too
    write_hook(user_dir, "submit-window", trigger="pre-issue-submit", script=(
        'cat >/dev/null\necho hook >> "$AGENT_HOOKS_WORK_DIR/order.log"\n'
        'if [ -f "$AGENT_HOOKS_WORK_DIR/freeze" ]; then echo "release freeze" >&2; exit 2; fi\n'
        'echo \'{"additional_context": "submits are reviewed within a day"}\'\n'))
    (repo / ".ahp" / "hooks.local.yaml").write_text(
        "hooks:\n  pre-issue-submit:\n    - oracle: TestGate\n      config:\n"
        "        command: \"echo tests >> order.log\"\n")
    trust_config(repo, TrustStore())
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "order.log\nfreeze\n")
    args = common(user_dir, repo, log)
    fixed = {"issue": scene.issue(done=True)}
    code, outcome = cli_fire(repo, args, fixed)
    assert code == 0
    assert (repo / "order.log").read_text().split() == ["hook", "tests"]
    assert outcome["additional_context"][0] == "submits are reviewed within a day"
    assert ("prompt", "change-size-limiter") in signals_of(outcome)
    # a HOOK.md deny ends the event: no hooks.yaml entry runs after it
    (repo / "order.log").unlink()
    (repo / "freeze").touch()
    code, denied = cli_fire(repo, args, fixed)
    assert code == 2 and denied["blocked_by"] == "submit-window"
    assert (repo / "order.log").read_text().split() == ["hook"]
    assert signals_of(denied) == [("block", "submit-window")]


def test_the_demo_scene_runs() -> None:
    """``make demo``'s control scene, as it runs there (its own HOME and trust)."""
    done = subprocess.run([sys.executable, str(SCENE_FILE)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shown = [json.loads(line.strip()) for line in done.stdout.splitlines()
             if line.strip().startswith('{"timestamp"')]
    assert [tuple(r[k] for k in scene.SEED_KEYS[1:]) for r in shown] == scene.EXPECTED_LOG
    assert "DENY by checklist-validator" in done.stdout
