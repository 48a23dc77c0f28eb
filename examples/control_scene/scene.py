"""The control layer's scene of ``make demo``: the seed's full example (``002``, section 8).

An agent finished FEAT-0123 and submits it. The project's ``.ahp/hooks.yaml`` (beside this
file) is the quality gate of ``pre-issue-submit``: ChecklistValidator, FileChangeLimiter,
TestGate, SecurityScanner; ``post-issue-submit`` tells the reviewers through a local command.
TestGate and ReviewTrigger run commands, so the user trusts the project's ``.ahp`` first
(``mcp-hooks trust PROJECT --yes``); the other entries would apply untrusted.

1. The submit is blocked by the checklist (a block signal with a resolution path); the agent
   answers ``retry_after_fix``. Through ``mcp-hooks fire`` and ``mcp-hooks respond``.
2. Fixed, it submits again: 25 files changed, more than 20, so it is warned (a prompt
   signal) and allowed; it answers ``acknowledge``. Through the MCP server
   (``fire_hook_event``, ``respond_to_signal``).
3. The submit is accepted: ``post-issue-submit`` notifies the reviewers (an aid signal), and
   the agent answers ``suggestion_applied``.

Then ``mcp-hooks signals --json`` prints the three answered lines in the seed's shape.

The project is a real git repository built here at run time (``build_project``), with
``HOME`` and the XDG folders of a throw-away folder, so nothing of yours is read or written.

Run: ``.venv/bin/python examples/control_scene/scene.py``. Exits 1 if an outcome or a log
line is not the expected one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MCP_HOOKS = str(Path(sys.executable).parent / "mcp-hooks")
BOLD, RED, GREEN, DIM, END = (("\033[1m", "\033[31m", "\033[32m", "\033[2m", "\033[0m")
                              if sys.stdout.isatty() else ("",) * 5)
SESSION = "feat-0123"
CHANGED = 25
SEED_KEYS = ("timestamp", "hook", "intensity", "source", "consumed", "action")
# the seed's three log lines: (hook, intensity, source, consumed, action)
EXPECTED_LOG = [
    ("before_issue_submit", "block", "checklist-validator", True, "retry_after_fix"),
    ("before_issue_submit", "prompt", "change-size-limiter", True, "acknowledge"),
    ("after_issue_submit", "aid", "notification", True, "suggestion_applied"),
]
GIT_ENV = {"GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "agent@example.com",
           "GIT_COMMITTER_NAME": "agent", "GIT_COMMITTER_EMAIL": "agent@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def issue(*, done: bool) -> dict[str, Any]:
    """FEAT-0123 as ``monoco issue submit`` would send it: 2 of 3 items open, or all done."""
    return {"id": "FEAT-0123", "type": "feature", "title": "Users API", "status": "in_progress",
            "checklist": [{"text": "the /users endpoint", "done": True},
                          {"text": "tests", "done": done},
                          {"text": "API docs", "done": done}]}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})


def build_project(dest: Path, changed: int = CHANGED) -> Path:
    """A git repository at ``dest``: this scene's ``.ahp`` committed with a small package and
    its tests, then ``changed`` of its modules edited (not committed), as the agent left it."""
    shutil.copytree(HERE / ".ahp", dest / ".ahp")
    (dest / ".gitignore").write_text(".ahp/hooks.local.yaml\n.ahp/notifications.log\n"
                                     "__pycache__/\n")
    api = dest / "users_api"
    api.mkdir()
    (api / "__init__.py").write_text('"""The users API of FEAT-0123."""\n')
    for n in range(changed):
        (api / f"field_{n:02d}.py").write_text(f"def name():\n    return 'field_{n:02d}'\n")
    (dest / "tests").mkdir()
    (dest / "tests" / "test_fields.py").write_text(
        "import importlib\nimport unittest\n\n\n"
        "class Fields(unittest.TestCase):\n"
        "    def test_names(self):\n"
        f"        for n in range({changed}):\n"
        "            module = importlib.import_module(f'users_api.field_{n:02d}')\n"
        "            self.assertEqual(module.name(), f'field_{n:02d}')\n")
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "feat: users API skeleton")
    for n in range(changed):  # the agent's work: every field documented
        path = api / f"field_{n:02d}.py"
        path.write_text(f'"""Field {n} of a user."""\n\n\n' + path.read_text())
    return dest


# -- the scene, printed ---------------------------------------------------------------------

failures: list[str] = []


def say(text: str = "") -> None:
    print(text, flush=True)


def expect(what: str, ok: bool) -> None:
    if not ok:
        failures.append(what)
        say(f"     {RED}unexpected: {what}{END}")


def show(outcome: dict[str, Any]) -> None:
    decision = outcome["decision"]
    colour = RED if decision == "deny" else GREEN
    say(f"  -> {colour}{decision.upper()}{END}"
        + (f" by {outcome['blocked_by']}" if outcome.get("blocked_by") else ""))
    for signal in outcome.get("signals", []):
        h, p = signal["header"], signal["payload"]
        text = p.get("reason") or p.get("message") or p.get("context_info") or ""
        say(f"     {h['intensity']} signal from {h['source']}: {text}")
        steps = p.get("resolution_path") or p.get("suggestions") or p.get("follow_ups") or []
        if steps:
            say(f"     {DIM}{'; '.join(steps)}{END}")
    for warning in outcome.get("warnings", []):
        say(f"     {RED}warning: {warning}{END}")


def only(outcome: dict[str, Any], intensity: str, source: str) -> dict[str, Any] | None:
    found = [s for s in outcome.get("signals", []) if s["header"]["intensity"] == intensity
             and s["header"]["source"] == source]
    expect(f"one {intensity} signal from {source}, got {outcome.get('signals')}",
           len(found) == 1)
    return found[0] if found else None


def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *argv], capture_output=True, text=True, timeout=120,
                          **kwargs)


def submit_by_cli(project: Path, common: list[str]) -> None:
    say(f"{BOLD}1. The agent submits FEAT-0123; 2 of its 3 checklist items are open{END}")
    say(f"{DIM}$ mcp-hooks fire pre-issue-submit --session {SESSION} "
        "--payload '{\"issue\": {\"id\": \"FEAT-0123\", \"checklist\": [...]}}' "
        f"--json{END}")
    done = run(["fire", "pre-issue-submit", "--session", SESSION, "--json", "--payload",
                json.dumps({"issue": issue(done=False)}), *common], cwd=project)
    outcome = json.loads(done.stdout) if done.stdout.strip() else {"decision": "?"}
    show(outcome)
    say(f"     {DIM}(exit {done.returncode}: 2 means denied){END}")
    expect("the first submit is denied (exit 2)", done.returncode == 2
           and outcome["decision"] == "deny")
    block = only(outcome, "block", "checklist-validator")
    if block is None:
        return
    say(f"{DIM}$ mcp-hooks respond {block['header']['id'][:8]}... retry_after_fix{END}")
    answer = run(["respond", block["header"]["id"], "retry_after_fix", "--details",
                  '{"fixed": ["tests", "API docs"]}', *common], cwd=project)
    expect(f"respond retry_after_fix: {answer.stderr.strip()}", answer.returncode == 0)
    say()


async def submit_by_mcp(project: Path, common: list[str]) -> None:
    from mcp import Client, StdioServerParameters

    say(f"{BOLD}2. Fixed, the agent submits again, through the MCP server{END}")
    say(f"{DIM}$ mcp-hooks serve --project-dir {project.name}{END}")
    params = StdioServerParameters(command=MCP_HOOKS, args=["serve", *common],
                                   env=dict(os.environ), cwd=str(project))
    async with Client(params) as client:
        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            if result.is_error or not isinstance(result.structured_content, dict):
                expect(f"{tool} answered with an error: {result.content}", False)
                return {"decision": "?", "signals": []}
            return result.structured_content

        where = {"session_id": SESSION, "work_dir": str(project)}
        say(f"{DIM}fire_hook_event pre-issue-submit (checklist done, {CHANGED} files changed){END}")
        outcome = await call("fire_hook_event", {**where, "event_type": "pre-issue-submit",
                                                 "payload": {"issue": issue(done=True)}})
        show(outcome)
        expect("the second submit is allowed", outcome["decision"] == "allow")
        prompt = only(outcome, "prompt", "change-size-limiter")
        expect("nothing but the warning", len(outcome.get("signals", [])) == 1)
        if prompt is not None:
            say(f"{DIM}respond_to_signal {prompt['header']['id'][:8]}... acknowledge "
                f"(25 files is one feature){END}")
            await call("respond_to_signal", {"signal_id": prompt["header"]["id"],
                                             "action": "acknowledge",
                                             "details": {"why": "one feature, one submit"}})
        say()
        say(f"{BOLD}3. The submit is accepted: FEAT-0123 goes to review{END}")
        say(f"{DIM}fire_hook_event post-issue-submit{END}")
        after = await call("fire_hook_event", {**where, "event_type": "post-issue-submit",
                                               "payload": {"issue": {**issue(done=True),
                                                                     "status": "review"}}})
        show(after)
        aid = only(after, "aid", "notification")
        if aid is not None:
            await call("respond_to_signal", {"signal_id": aid["header"]["id"],
                                             "action": "suggestion_applied"})
    say()


def signal_log(project: Path, common: list[str]) -> None:
    say(f"{BOLD}The signal log: every answer, in the seed's shape{END}")
    say(f"{DIM}$ mcp-hooks signals --json -n 0   (the answers' lines, the seed's keys){END}")
    done = run(["signals", "--json", "-n", "0", *common], cwd=project)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    answers = [r for r in lines if r.get("kind") == "response"]
    for record in answers:
        say("  " + json.dumps({k: record.get(k) for k in SEED_KEYS}))
    expect("the log holds the seed's three answered lines",
           [tuple(r.get(k) for k in SEED_KEYS[1:]) for r in answers] == EXPECTED_LOG)
    say()


async def main() -> int:
    if shutil.which("git") is None:
        say(f"{RED}the control scene needs git on PATH (its project is a git repository); "
            f"install git and run it again{END}")
        return 1
    with tempfile.TemporaryDirectory(prefix="mcp-hooks-control-") as tmp_name:
        tmp = Path(tmp_name)
        # a home of its own: no ~/.ahp/hooks.yaml, trust store, ladder or log of yours
        os.environ.update(HOME=str(tmp / "home"), XDG_CONFIG_HOME=str(tmp / "home/.config"),
                          XDG_STATE_HOME=str(tmp / "home/.local/state"))
        for name in ("MCP_HOOKS_TRUST_PROJECT_HOOKS", "MCP_HOOKS_TRUST_STORE"):
            os.environ.pop(name, None)
        project = build_project(tmp / "feat-0123")
        (tmp / "hooks").mkdir()
        common = ["--user-dir", str(tmp / "hooks"), "--project-dir", str(project),
                  "--log", str(tmp / "events.jsonl")]
        say(f"{BOLD}0. A git repository with .ahp/hooks.yaml (examples/control_scene/); its "
            f"TestGate and ReviewTrigger run commands, so the user trusts it first{END}")
        say(f"{DIM}$ mcp-hooks trust {project.name} --yes{END}")
        trusted = run(["trust", str(project), "--yes"], cwd=tmp)
        say("\n".join(f"  {DIM}{line.strip()}{END}" for line in trusted.stdout.strip().splitlines()
                      if line.strip().startswith(("runs:", "reads:", "trusted"))))
        expect(f"mcp-hooks trust: {trusted.stderr.strip()}", trusted.returncode == 0)
        say()
        submit_by_cli(project, common)
        await submit_by_mcp(project, common)
        signal_log(project, common)
        notified = project / ".ahp" / "notifications.log"
        expect("the notification command ran", notified.is_file()
               and "FEAT-0123" in notified.read_text())
    if failures:
        say(f"{RED}control scene FAILED:{END}")
        for failure in failures:
            say(f"  - {failure}")
        return 1
    return 0


if __name__ == "__main__":
    import anyio

    sys.exit(anyio.run(main))
