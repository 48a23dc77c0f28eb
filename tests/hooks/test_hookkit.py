"""mcp_hooks.hookkit: a hook script run one-shot and persistent, as real subprocesses.

The generic part drives a small hookkit script (one-shot: exit codes, stdout, stderr;
persistent: one line in, one answer line out, same process). The bundled part runs every
bundled Python hook, copied alone out of the library, over a table of events both ways and
checks the decisions are the same (the guards' tables are tests/helpers/guard_cases.py's;
the persistent process is tests/helpers/resident.py's ``Resident``).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.hookkit import allow, context, deny, hook, replace_output, rewrite, serve, warn
from tests.helpers.guard_cases import ALLOWED as HOOKS_ALLOWED
from tests.helpers.guard_cases import (
    DANGEROUS,
    LOOK_ALIKES,
    PROD_CHANGES,
    PROD_LOOK_ALIKES,
    SECRET_LOOK_ALIKES,
    SECRET_WRITES,
)
from tests.helpers.guard_cases import DENIED as HOOKS_DENIED
from tests.helpers.resident import WAIT, Resident
from tests.helpers.resident import hook_env as _env

LIBRARY = Path(__file__).resolve().parents[2] / "hooks"
BUNDLED_PYTHON = sorted(p.parent.parent.name for p in LIBRARY.glob("*/scripts/run.py"))

SCRIPT = '''\
import os
import subprocess
import sys

from mcp_hooks.hookkit import context, deny, hook, rewrite, warn


@hook
def main(event):
    what = event.get("what")
    print("stray print for", what)  # reaches the log, never the answer
    if what == "deny":
        return deny("no: " + event.get("why", ""))
    if what == "deny+context":
        return deny("no", context="see the docs")
    if what == "rewrite":
        return rewrite({"command": "ls -la"})
    if what == "context":
        return context("remember the tests")
    if what == "warn":
        return warn("careful")
    if what == "pid":
        return context(str(os.getpid()))
    if what == "raise":
        raise RuntimeError("broken on purpose")
    if what == "exit":
        sys.exit(3)
    if what == "bad-return":
        return 42
    if what == "child":
        subprocess.run([sys.executable, "-c", "print('child stdout')"], check=True)
        done = subprocess.run([sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"],
                              capture_output=True, text=True, check=True)
        return context(done.stdout.strip())
    if what == "env":
        return context(f"{os.environ.get('AGENT_HOOKS_SESSION_ID')}|"
                       f"{os.environ.get('MCP_HOOKS_PERSISTENT')}")
    return None
'''


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "hook" / "run.py"
    path.parent.mkdir()
    path.write_text(SCRIPT)
    return path


def one_shot(script: Path, stdin: bytes, env: dict[str, str] | None = None,
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, str(script)], input=stdin, capture_output=True,
                          env=env or _env(), cwd=cwd, timeout=WAIT, check=False)
    return subprocess.CompletedProcess(done.args, done.returncode,
                                       done.stdout.decode(errors="replace"),
                                       done.stderr.decode(errors="replace"))


def event(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


# -- one-shot ---------------------------------------------------------------------------------

def test_one_shot_allow_prints_nothing_and_exits_0(script: Path) -> None:
    done = one_shot(script, event(what="allow"))
    assert (done.returncode, done.stdout) == (0, "")
    assert "stray print for allow" in done.stderr


def test_one_shot_deny_exits_2_with_its_answer_and_the_reason_on_stderr(script: Path) -> None:
    done = one_shot(script, event(what="deny", why="too risky"))
    assert done.returncode == 2
    # the answer on stdout (where mcp-hooks reads the reason: the print is not in it) ...
    assert json.loads(done.stdout) == {"decision": "deny", "reason": "no: too risky"}
    # ... and the reason last on stderr, for an implementation that reads only stderr
    assert done.stderr.splitlines() == ["stray print for deny", "no: too risky"]


def test_one_shot_deny_with_more_than_a_reason_exits_2_too(script: Path) -> None:
    done = one_shot(script, event(what="deny+context"))
    assert done.returncode == 2
    assert json.loads(done.stdout) == {"decision": "deny", "reason": "no",
                                       "additional_context": "see the docs"}
    assert done.stderr.splitlines()[-1] == "no"


@pytest.mark.parametrize(("what", "answer"), [
    ("rewrite", {"modified_input": {"command": "ls -la"}}),
    ("context", {"additional_context": "remember the tests"}),
    ("warn", {"decision": "warn", "reason": "careful"}),
])
def test_one_shot_answers_are_printed(script: Path, what: str, answer: dict[str, Any]) -> None:
    done = one_shot(script, event(what=what))
    assert done.returncode == 0 and json.loads(done.stdout) == answer, done.stderr


@pytest.mark.parametrize(("what", "said"), [
    ("raise", "RuntimeError: broken on purpose"),
    ("exit", "SystemExit: 3"),
    ("bad-return", "returned int 42"),
])
def test_one_shot_failure_exits_1_with_the_traceback(script: Path, what: str, said: str) -> None:
    done = one_shot(script, event(what=what))
    assert (done.returncode, done.stdout) == (1, "")
    assert said in done.stderr


@pytest.mark.parametrize("stdin", [b"{not json", b"[1, 2]", b""])
def test_one_shot_unreadable_event_is_a_failure(script: Path, stdin: bytes) -> None:
    done = one_shot(script, stdin)
    assert done.returncode == 1 and "hookkit: the event" in done.stderr, done.stderr


def test_one_shot_child_output_goes_to_the_log(script: Path) -> None:
    done = one_shot(script, event(what="child"))
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"additional_context": "''"}
    assert "child stdout" in done.stderr


# -- persistent -------------------------------------------------------------------------------

def test_persistent_answers_each_line_in_one_process(script: Path, tmp_path: Path) -> None:
    hook_process = Resident(script, tmp_path / "stderr.log")
    try:
        first = hook_process.ask(event(what="pid"))
        pid = first["additional_context"]
        assert first == {"additional_context": pid, "exit_code": 0} and pid == str(
            hook_process.proc.pid)
        assert hook_process.ask(event(what="allow")) == {"exit_code": 0}
        assert hook_process.ask(event(what="deny", why="x")) == {
            "decision": "deny", "reason": "no: x", "exit_code": 2}
        assert hook_process.ask(event(what="raise")) == {"exit_code": 1}
        assert hook_process.ask(b"{not json") == {"exit_code": 1}
        assert hook_process.ask(b"[1, 2]") == {"exit_code": 1}
        assert hook_process.ask(event(what="exit")) == {"exit_code": 1}
        assert hook_process.ask(event(what="bad-return")) == {"exit_code": 1}
        assert hook_process.ask(event(what="rewrite")) == {
            "modified_input": {"command": "ls -la"}, "exit_code": 0}
        assert hook_process.ask(event(what="deny+context")) == {
            "decision": "deny", "reason": "no", "additional_context": "see the docs",
            "exit_code": 2}
        # a child gets an empty stdin (never the next event) and its stdout is the log
        assert hook_process.ask(event(what="child")) == {
            "additional_context": "''", "exit_code": 0}
        # the per-event environment follows the event; MCP_HOOKS_PERSISTENT is not passed on
        assert hook_process.ask(event(what="env", session_id="s1"))["additional_context"] == (
            "s1|None")
        assert hook_process.ask(event(what="env", session_id="s2"))["additional_context"] == (
            "s2|None")
        assert hook_process.ask(event(what="env"))["additional_context"] == "None|None"
        assert hook_process.ask(event(what="pid"))["additional_context"] == pid
    finally:
        code = hook_process.close()
    assert code == 0
    log = (tmp_path / "stderr.log").read_text(errors="replace")
    assert "RuntimeError: broken on purpose" in log and "hookkit: the event is not JSON" in log
    assert "child stdout" in log and "stray print for allow" in log


def test_persistent_eof_at_once_exits_0(script: Path) -> None:
    done = subprocess.run([sys.executable, str(script)], input=b"", capture_output=True,
                          env=_env(MCP_HOOKS_PERSISTENT="1"), timeout=WAIT, check=False)
    assert (done.returncode, done.stdout) == (0, b"")


# -- in process: serve() with streams, the answer helpers, the decorator ------------------------

def _serve(fn: Callable[[dict[str, Any]], Any], lines: list[bytes], *, persistent: bool,
           **kwargs: Any) -> tuple[int, list[dict[str, Any]]]:
    out = io.BytesIO()
    code = serve(fn, stdin=io.BytesIO(b"\n".join(lines) + (b"\n" if persistent else b"")),
                 stdout=out, persistent=persistent, **kwargs)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def test_exit_code_in_a_plain_dict(capsys: pytest.CaptureFixture[str]) -> None:
    assert _serve(lambda e: {"exit_code": 2, "reason": "r"}, [b"{}"], persistent=False) == (
        2, [{"reason": "r", "decision": "deny"}])
    assert capsys.readouterr().err == "r\n"
    assert _serve(lambda e: {"exit_code": 7}, [b"{}"], persistent=False) == (1, [])
    assert "exit_code 7" in capsys.readouterr().err
    assert _serve(lambda e: {"exit_code": 2, "reason": "r"}, [b"{}"], persistent=True) == (
        0, [{"reason": "r", "decision": "deny", "exit_code": 2}])


def test_an_answer_json_cannot_hold_is_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    assert _serve(lambda e: {"log": {1, 2}}, [b"{}", b"{}"], persistent=True) == (
        0, [{"exit_code": 1}, {"exit_code": 1}])
    assert "not JSON serializable" in capsys.readouterr().err


def test_unreadable_answer_replaces_the_failure() -> None:
    refused = deny("cannot read it")
    assert _serve(lambda e: None, [b"nope", b"{}"], persistent=True, unreadable=refused) == (
        0, [{"decision": "deny", "reason": "cannot read it", "exit_code": 2}, {"exit_code": 0}])
    assert _serve(lambda e: None, [b"nope"], persistent=False, unreadable=refused) == (
        2, [refused])


def test_the_event_reaches_the_function_as_a_dict() -> None:
    seen: list[Any] = []
    _serve(seen.append, [b'{"tool_input": {"command": "ls"}, "x": "\\u00e9"}'],
           persistent=True)
    assert seen == [{"tool_input": {"command": "ls"}, "x": "\u00e9"}]


def test_the_helpers_build_the_answers_the_engine_reads() -> None:
    assert allow() == {} and allow(log="l") == {"log": "l"}
    assert deny("r", context="c", log="l") == {"decision": "deny", "reason": "r",
                                               "additional_context": "c", "log": "l"}
    assert warn("w") == {"decision": "warn", "reason": "w"}
    assert rewrite({"a": 1}, context="c") == {"modified_input": {"a": 1},
                                             "additional_context": "c"}
    assert replace_output("new") == {"modified_output": "new"}
    assert context("c") == {"additional_context": "c"}
    with pytest.raises(TypeError, match="new tool_input as a dict"):
        rewrite("ls")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="return None to keep it"):
        replace_output(None)


def test_hook_in_an_imported_module_returns_the_function() -> None:
    def check(event: dict[str, Any]) -> None:
        return None

    assert hook(check) is check
    assert hook(unreadable=deny("x"))(check) is check


def test_importing_hookkit_imports_only_the_standard_library() -> None:
    code = ("import sys; before = set(sys.modules); import mcp_hooks.hookkit; "
            "print(' '.join(sorted(set(sys.modules) - before)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=WAIT, check=True)
    new = set(done.stdout.split())
    outside = {m for m in new if m.split(".")[0] not in sys.stdlib_module_names
               and m not in ("mcp_hooks", "mcp_hooks.hookkit")}
    assert "mcp_hooks.hookkit" in new and not outside, outside
    heavy = {"typing", "asyncio", "subprocess", "pathlib", "traceback", "importlib.metadata"}
    assert not heavy & new, heavy & new  # a hook pays only for what it imports itself


# -- every bundled Python hook: the same decisions one-shot and persistent ---------------------

Table = tuple[list[dict[str, Any]], list[str | None], dict[str, str], Path]


def _shell_events(project: Path, commands: list[Any]) -> list[dict[str, Any]]:
    return [{"event_type": "before_tool", "tool_name": "Shell", "tool_input": {"command": c},
             "work_dir": str(project), "session_id": "s"} for c in commands]


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".agents" / "hooks" / "guard" / "scripts").mkdir(parents=True)
    (project / ".agents" / "hooks" / "guard" / "HOOK.md").write_text("---\n---\n")
    (project / "src").mkdir()
    return project


def _dangerous(tmp_path: Path) -> Table:
    project = _project(tmp_path)
    commands: list[Any] = [*DANGEROUS, *LOOK_ALIKES, ["bash", "-lc", "rm -rf /"], {"not": "text"}]
    expected: list[str | None] = (["deny"] * len(DANGEROUS) + ["allow"] * len(LOOK_ALIKES)
                                  + ["deny", "deny"])
    return _shell_events(project, commands), expected, _env(), project


def _secrets(tmp_path: Path) -> Table:
    project = _project(tmp_path)
    events = _shell_events(project, [*SECRET_WRITES, *SECRET_LOOK_ALIKES])
    expected: list[str | None] = ["deny"] * len(SECRET_WRITES) + ["allow"] * len(
        SECRET_LOOK_ALIKES)
    for tool_input, decision in (({"path": ".env", "content": "K=1"}, "deny"),
                                 ({"path": "notes.md", "content": "AKIA" + "A" * 16}, "deny"),
                                 ({"path": ".env.example", "content": "K="}, "allow")):
        events.append({"event_type": "before_tool", "tool_name": "WriteFile",
                       "tool_input": tool_input, "work_dir": str(project)})
        expected.append(decision)
    return events, expected, _env(), project


def _prod(tmp_path: Path) -> Table:
    project = _project(tmp_path)
    return (_shell_events(project, [*PROD_CHANGES, *PROD_LOOK_ALIKES]),
            ["deny"] * len(PROD_CHANGES) + ["allow"] * len(PROD_LOOK_ALIKES),
            _env(ALLOW_PROD_DEPLOY="0"), project)


def _protect_hooks(tmp_path: Path) -> Table:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{}")
    env = _env(HOME=str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "MCP_HOOKS_USER_DIR", "MCP_HOOKS_TRUST_STORE",
                "MCP_HOOKS_LOG", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME",
                "COPILOT_HOME", "KIMI_SHARE_DIR", "AGENT_HOOKS_HOOK_DIR"):
        env.pop(var, None)
    project = _project(tmp_path)
    events, expected = [], []
    for rows, decision in ((HOOKS_DENIED, "deny"), (HOOKS_ALLOWED, "allow")):
        for tool, tool_input in rows:
            if isinstance(tool_input, dict) and isinstance(tool_input.get("path"), str):
                tool_input = {**tool_input, "path": tool_input["path"].replace("/HOME", str(home))}
            events.append({"event_type": "before_tool", "tool_name": tool,
                           "tool_input": tool_input, "work_dir": str(project), "session_id": "s"})
            expected.append(decision)
    return events, expected, env, project


def _enforce_tests(tmp_path: Path) -> Table:
    events, expected = [], []
    for name, passing, extra, decision in (
            ("green", True, {}, "allow"), ("red", False, {}, "deny"),
            ("red-again", False, {"stop_hook_active": True, "stop_block_count": 3}, "allow")):
        folder = tmp_path / name
        folder.mkdir()
        if passing:
            (folder / "ok").write_text("")
        events.append({"event_type": "before_stop", "work_dir": str(folder), "session_id": "s",
                       **extra})
        expected.append(decision)
    return events, expected, _env(ENFORCE_TESTS_COMMAND="echo checking; test -f ok"), tmp_path


def _auto_format(tmp_path: Path) -> Table:
    project = _project(tmp_path)
    (project / "src" / "a.py").write_text("x  =  1\n")
    events = [{"event_type": "after_tool", "tool_name": "WriteFile", "tool_input": tool_input,
               "work_dir": str(project)}
              for tool_input in ({"path": "src/a.py"}, {"path": "notes.md"}, {})]
    return events, ["allow"] * 3, _env(), project


def _session_summary(tmp_path: Path) -> Table:
    log = tmp_path / "events.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in (
        {"session_id": "s1", "event": "before_tool", "tool_name": "Shell"},
        {"session_id": "s1", "event": "before_tool", "tool_name": "Shell", "decision": "deny",
         "reason": "no"},
        {"session_id": "s2", "event": "before_tool", "tool_name": "Write"})) + "\n")
    env = _env(MCP_HOOKS_LOG=str(log), XDG_STATE_HOME=str(tmp_path / "state"))
    events = [{"event_type": "session_end", "session_id": s, "work_dir": str(tmp_path)}
              for s in ("s1", "s2", "s3")]
    return events, ["allow"] * 3, env, tmp_path


TABLES: dict[str, Callable[[Path], Table]] = {
    "auto-format-python": _auto_format,
    "block-dangerous-commands": _dangerous,
    "block-prod-deploy": _prod,
    "enforce-tests": _enforce_tests,
    "protect-hooks": _protect_hooks,
    "protect-secrets": _secrets,
    "session-summary": _session_summary,
}


def _decision(answer: dict[str, Any], code: int | None = None) -> tuple[str, dict[str, Any]]:
    """(allow | deny | failure, the rest of the answer) of one persistent answer (or of a
    one-shot run's stdout with its exit ``code``)."""
    answer = dict(answer)
    code = answer.pop("exit_code", 0) if code is None else code
    if code not in (0, 2):
        return "failure", answer
    word = answer.get("decision")
    decision = "deny" if word in ("deny", "block") else "allow"
    assert (code == 2) == (decision == "deny"), (code, answer)  # a deny exits 2, always
    return decision, answer


def _one_shot_decision(done: subprocess.CompletedProcess[str]) -> tuple[str, dict[str, Any]]:
    if done.returncode not in (0, 2):
        return "failure", {}
    answer = json.loads(done.stdout) if done.stdout.strip() else {}
    if done.returncode == 2:  # the reason on stderr too, last, for whoever reads only that
        assert done.stderr.strip().splitlines()[-1] == answer["reason"].splitlines()[-1]
    return _decision(answer, done.returncode)


def test_every_bundled_python_hook_has_a_table() -> None:
    assert sorted(TABLES) == BUNDLED_PYTHON


@pytest.mark.parametrize("name", BUNDLED_PYTHON)
def test_bundled_hook_decides_the_same_one_shot_and_persistent(name: str, tmp_path: Path) -> None:
    # the hook copied alone, as `mcp-hooks add` does: it must find hookkit from there
    folder = tmp_path / "hooks" / name
    shutil.copytree(LIBRARY / name, folder, ignore=shutil.ignore_patterns("__pycache__",
                                                                            ".mypy_cache"))
    script = folder / "scripts" / "run.py"
    events, expected, env, cwd = TABLES[name](tmp_path)
    env = {**env, "AGENT_HOOKS_HOOK_DIR": str(folder)}
    lines = [json.dumps(e).encode() for e in events]

    resident = Resident(script, tmp_path / f"{name}.log", env=env, cwd=cwd)
    try:
        pids = set()
        persistent = []
        for line in lines:
            persistent.append(_decision(resident.ask(line)))
            pids.add(resident.proc.pid)
    finally:
        assert resident.close() == 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        spawned = list(pool.map(lambda line: _one_shot_decision(
            one_shot(script, line, env=env, cwd=cwd)), lines))

    assert len(pids) == 1
    for row, (e, want, p, o) in enumerate(zip(events, expected, persistent, spawned, strict=True)):
        assert p == o, (row, e.get("tool_input"), p, o)
        assert p[0] == want, (row, e.get("tool_input"), p)


GUARDS = ("block-dangerous-commands", "block-prod-deploy", "protect-hooks", "protect-secrets")


@pytest.mark.anyio
async def test_the_guards_decide_the_same_through_a_long_lived_and_a_one_shot_engine(
        tmp_path: Path) -> None:
    """The guards resident in an engine that keeps them (serve, proxy, a Python Engine) and
    spawned per event by a one-shot engine (fire, the bridges): the same outcomes."""
    from mcp_hooks import Engine, Event, Registry

    user_dir = tmp_path / "hooks"
    for name in GUARDS:
        shutil.copytree(LIBRARY / name, user_dir / name,
                        ignore=shutil.ignore_patterns("__pycache__", ".mypy_cache"))
    project = tmp_path / "plain-project"  # no project hooks of its own
    project.mkdir()
    commands = [DANGEROUS[0], LOOK_ALIKES[1], SECRET_WRITES[0], PROD_CHANGES[0],
                "rm -rf .agents/hooks", "git status", ["bash", "-lc", "rm -rf /"]]

    async def outcomes(one_shot: bool) -> list[tuple[Any, ...]]:
        async with Engine(Registry(user_dir, project, watch=False), one_shot=one_shot) as engine:
            assert all(h.persistent for h in engine.registry.hooks())
            found = []
            for command in commands * 2:  # twice: the second round reuses the processes
                outcome = await engine.fire(Event.create(
                    event_type="before_tool", work_dir=str(project), tool_name="Shell",
                    tool_input={"command": command}))
                found.append((outcome.denied, outcome.blocked_by, outcome.reason,
                              outcome.warnings))
            return found

    resident, spawned = await outcomes(one_shot=False), await outcomes(one_shot=True)
    assert resident == spawned
    assert [d for d, *_ in resident[:len(commands)]] == [True, False, True, True, True, False,
                                                         True], resident
