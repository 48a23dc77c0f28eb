"""One guard per door (``mcp_hooks/guard.py``): a fault injected at the bottom (the registry's
``select`` raising a ``BaseException`` of our own, or a plain ``RuntimeError``) reaches each
door's one guard through the layers under it, which raise, and is answered once: the door's
deny names it exactly once (never "fault: fault: ..." or one guard's words wrapped in
another's), and the event log holds one record of it.

The doors are the real ones: the MCP server through an in-memory client, ``Hooks.fire`` and
``afire``, the adapters' ``Firing``, and, in subprocesses, the ``bridge`` and ``fire``
commands, the proxy with a real upstream, and the server's ``/hooks/bridge`` and
``/hooks/fire`` endpoints. In a subprocess, the fault is injected by a small launcher that
replaces ``Registry.select`` before it runs the command line (``LAUNCHER``).
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters

import mcp_hooks
from mcp_hooks import Hooks, Outcome
from mcp_hooks.adapters._firing import Firing
from mcp_hooks.hosts import get_host
from mcp_hooks.hosts.forward_auth import sign_request
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.server import build_server
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings
from tests.conftest import write_hook
from tests.helpers.background import background
from tests.helpers.proxied import settled, text_of, upstream

MESSAGE = "injected-at-the-bottom-4711"
TOKEN = "correct-horse-battery-staple"
SOURCE = str(Path(mcp_hooks.__file__).resolve().parent.parent)


class Injected(BaseException):
    """A BaseException of our own, not an Exception: what only a BaseException guard takes."""


KINDS = {"BaseException": Injected, "Exception": RuntimeError}

# Runs ``mcp-hooks ARGS`` with ``Registry.select`` raising KIND on before_tool events.
LAUNCHER = '''
import sys

from mcp_hooks.registry.discovery import Registry


class Injected(BaseException):
    """A BaseException of our own."""


KIND = sys.argv.pop(1)
_select = Registry.select


def select(self, name, *args, **kwargs):
    if name == "before_tool":
        raise (Injected if KIND == "BaseException" else RuntimeError)(MESSAGE)
    return _select(self, name, *args, **kwargs)


Registry.select = select
from mcp_hooks.cli import main

sys.exit(main(sys.argv[1:]))
'''.replace("MESSAGE", repr(MESSAGE), 1)


@pytest.fixture(params=list(KINDS))
def kind(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def hooked(user_dir: Path) -> Path:
    """A user hook on before_tool, so that the engine selects (and the fault fires)."""
    return write_hook(user_dir, "gate")


@pytest.fixture
def injected(kind: str, monkeypatch: pytest.MonkeyPatch, hooked: Path) -> str:
    """``Registry.select`` raising ``kind`` in this process, on before_tool events."""
    select = Registry.select

    def raising(self: Registry, name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "before_tool":
            raise KINDS[kind](MESSAGE)
        return select(self, name, *args, **kwargs)

    monkeypatch.setattr(Registry, "select", raising)
    return kind


@pytest.fixture
def launcher(tmp_path: Path, hooked: Path) -> Path:
    path = tmp_path / "launch_injected.py"
    path.write_text(LAUNCHER)
    return path


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SOURCE}


def _answered_once(reason: str | None, kind: str) -> None:
    """The deny names the injected fault, once; no guard wrapped another's answer."""
    assert reason is not None, "not a deny"
    assert reason.count(MESSAGE) == 1, reason
    assert reason.count("could not decide this event") == 1, reason
    assert reason.count("fault:") == 0, reason
    named = "Injected" if kind == "BaseException" else "RuntimeError"
    assert reason.count(named) == 1, reason


def _logged_once(log: Path) -> dict[str, Any]:
    """The one event record of the before_tool event, a deny saying what broke."""
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    events = [r for r in records if r.get("kind") == "event" and r.get("event") == "before_tool"]
    assert len(events) == 1, events
    assert events[0]["decision"] == "deny", events[0]
    assert MESSAGE in json.dumps(events[0]), events[0]
    return events[0]


def _deny(outcome: Outcome, kind: str) -> None:
    assert outcome.denied and outcome.blocked_by == "mcp-hooks", outcome
    _answered_once(outcome.reason, kind)


SHELL: dict[str, Any] = {"tool_name": "Shell", "tool_input": {"command": "ls"}}


# -- in this process ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_mcp_tool_call_is_the_servers_one_guard(injected: str, project: Path,
                                                          user_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    async with HookService(Settings.from_env(
            project_dir=project, user_dir=user_dir, log=log)) as service, \
            Client(build_server(service)) as client:
        result = await client.call_tool("fire_hook_event", {
            "event_type": "before_tool", **SHELL, "work_dir": str(project)})
        outcome = result.structured_content
        assert not result.is_error and outcome is not None, result
        assert outcome["decision"] == "deny" and outcome["blocked_by"] == "mcp-hooks", outcome
        _answered_once(outcome["reason"], injected)
        assert "the server failed" in outcome["reason"]
    _logged_once(log)


@pytest.mark.parametrize("how", ["fire", "afire"])
def test_hooks_fire_and_afire_are_the_librarys_one_guard(injected: str, how: str,
                                                         project: Path, user_dir: Path,
                                                         tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    with Hooks(project, user_dir=user_dir, log=log) as hooks:
        outcome = (hooks.fire("before_tool", **SHELL) if how == "fire"
                   else asyncio.run(hooks.afire("before_tool", **SHELL)))
        _deny(outcome, injected)
        assert "Hooks could not fire before_tool" in (outcome.reason or "")
    _logged_once(log)


@pytest.mark.parametrize("how", ["fire", "fire_sync"])
def test_an_adapters_firing_is_its_one_guard(injected: str, how: str, project: Path,
                                             user_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    firing = Firing(project, user_dir=user_dir, log=log, framework="langchain")
    try:
        outcome = (firing.fire_sync("before_tool", **SHELL) if how == "fire_sync"
                   else asyncio.run(firing.fire("before_tool", **SHELL)))
    finally:
        firing.close()
    _deny(outcome, injected)
    reason = outcome.reason or ""
    assert "the langchain adapter could not fire before_tool" in reason
    assert "Hooks could not fire" not in reason  # the library's guard is not under it too
    _logged_once(log)


# -- in subprocesses -----------------------------------------------------------------------------


def _run(launcher: Path, kind: str, args: list[str], stdin: str,
         cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(launcher), kind, *args], input=stdin,
                          capture_output=True, text=True, cwd=cwd, env=_env(), timeout=120)


def test_the_bridge_answers_in_the_hosts_form_once(kind: str, launcher: Path, project: Path,
                                                   user_dir: Path, tmp_path: Path) -> None:
    host = get_host("claude-code")
    log = tmp_path / "events.jsonl"
    done = _run(launcher, kind, ["bridge", "claude-code", "--user-dir", str(user_dir),
                                 "--project-dir", str(project), "--log", str(log)],
                json.dumps(host.shell_call("ls", "s-1", project)), project)
    reason = host.deny_reason(done.stdout, done.stderr, done.returncode)
    _answered_once(reason, kind)
    assert "the engine failed on PreToolUse" in (reason or "")
    assert "Traceback" not in done.stderr, done.stderr  # answered by its guard, not main's
    _logged_once(log)


def test_fire_answers_from_the_command_lines_one_guard(kind: str, launcher: Path,
                                                       project: Path, user_dir: Path,
                                                       tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    done = _run(launcher, kind, ["fire", "before_tool", "--tool", "Shell", "--input",
                                 '{"command": "ls"}', "--json", "--user-dir", str(user_dir),
                                 "--project-dir", str(project), "--log", str(log)], "", project)
    assert done.returncode == 2, (done.stdout, done.stderr)
    outcome = json.loads(done.stdout)
    assert outcome["decision"] == "deny" and outcome["blocked_by"] == "mcp-hooks", outcome
    _answered_once(outcome["reason"], kind)
    assert "mcp-hooks fire failed" in outcome["reason"]
    _logged_once(log)


@pytest.mark.anyio
async def test_the_proxys_gate_refuses_the_call_once(kind: str, launcher: Path,
                                                     project: Path, user_dir: Path,
                                                     tmp_path: Path) -> None:
    root = tmp_path / "files"
    root.mkdir()
    log = tmp_path / "events.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(launcher), kind, "proxy", "--upstream",
              upstream("files", "--root", str(root), "--tools", "write_file"),
              "--user-dir", str(user_dir), "--project-dir", str(project), "--log", str(log)],
        env=_env(), cwd=str(project))
    async with Client(params) as client:
        await settled(client)
        result = await client.call_tool("write_file", {"path": "a.txt", "content": "x"})
        text = text_of(result)
        assert result.is_error and "Blocked by mcp-hooks" in text, text
        _answered_once(text, kind)
        assert "the proxy failed" in text
    assert not (root / "a.txt").exists()  # the upstream was never called
    _logged_once(log)


@contextmanager
def _served(launcher: Path, kind: str, project: Path, user_dir: Path,
            log: Path) -> Iterator[str]:
    argv = [sys.executable, str(launcher), kind, "serve", "--transport", "http", "--port", "0",
            "--project-dir", str(project), "--user-dir", str(user_dir), "--log", str(log),
            "--token", TOKEN]
    with background(argv, announce=r"serving \w+ at (http://\S+)/mcp", env=_env(),
                    timeout=60) as server:
        yield server.url


@pytest.mark.parametrize("endpoint", ["bridge", "fire"])
def test_the_servers_endpoints_answer_once(kind: str, endpoint: str, launcher: Path,
                                           project: Path, user_dir: Path,
                                           tmp_path: Path) -> None:
    host = get_host("claude-code")
    log = tmp_path / "events.jsonl"
    with _served(launcher, kind, project, user_dir, log) as base:
        if endpoint == "bridge":
            response = httpx2.post(
                f"{base}/hooks/bridge/claude-code",
                content=json.dumps(host.shell_call("ls", "s-1", project)).encode(),
                headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
            assert response.status_code == 200, response.text
            reason = host.deny_reason(response.text, "", 0)
            assert "the engine failed on PreToolUse" in (reason or "")
        else:
            body = json.dumps({"event_type": "before_tool", **SHELL,
                               "work_dir": str(project)}).encode()
            signed = sign_request(TOKEN, "/hooks/fire", body)
            response = httpx2.post(f"{base}/hooks/fire", content=body, headers=signed.headers,
                                   timeout=60)
            assert response.status_code == 200, response.text
            outcome = response.json()
            assert outcome["decision"] == "deny", outcome
            reason = outcome["reason"]
            assert "the server failed" in reason
        _answered_once(reason, kind)
    _logged_once(log)


def test_the_launcher_injects_nothing_but_the_fault(launcher: Path, project: Path,
                                                    user_dir: Path, tmp_path: Path) -> None:
    """The same launcher, on an event it leaves alone, answers as mcp-hooks does: so the
    denies above are the injected fault's, not the launcher's."""
    done = _run(launcher, "Exception", ["fire", "before_agent", "--json", "--user-dir",
                                        str(user_dir), "--project-dir", str(project),
                                        "--no-log"], "", project)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["decision"] == "allow"
    assert MESSAGE not in done.stderr



# -- below the doors, nothing swallows ------------------------------------------------------------

PACKAGE = Path(mcp_hooks.__file__).resolve().parent
BROAD = ("Exception", "BaseException")

# (module, function, what is caught) -> why it may take everything and not raise. Anything
# else below the doors that catches ``Exception``/``BaseException`` (or a bare ``except:``,
# or ``contextlib.suppress`` of them) must re-raise: the door's one guard answers it.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("mcp_hooks.state.eventlog", "EventLog.__del__", "suppress Exception"):
        "a finalizer closing the log's held descriptor: at interpreter exit anything may be "
        "gone already, and a finalizer has no one to tell",
    ("mcp_hooks.engine.asking", "Asker._race.door", "Exception"):
        "the door's approver and the store poll race in a task group: the approver's error "
        "is kept and raised as itself after the group, never inside an exception group",
    ("mcp_hooks.engine.asking", "Asker._race.store", "Exception"):
        "as above, for the store's error while it is polled",
    ("mcp_hooks.state.deadline", "_Watchdog._run", "suppress Exception"):
        "the watchdog shuts down a socket past its deadline: one that is already gone leaves "
        "nothing to do, and the watchdog must outlive it",
    ("mcp_hooks.state.pgpool", "_close_all", "suppress Exception"):
        "closing idle connections on the way out: a close that fails leaves nothing to undo",
    ("mcp_hooks.state.pgpool", "Pool._take_idle", "suppress Exception"):
        "an idle connection found dead is closed and replaced: its close failing changes nothing",
    ("mcp_hooks.state.pglane", "PgLane.aclose", "suppress Exception"):
        "the asyncio pool's idle connections closed with the engine: nothing to undo",
    ("mcp_hooks.state.pglane", "PgLane._take_idle", "suppress Exception"):
        "as pgpool's: an idle connection found dead is closed and replaced",
    ("mcp_hooks.state.pglane", "PgLane.drop_idle", "suppress Exception"):
        "the store was lost: its dead idle connections closed, a failing close changes nothing",
    ("mcp_hooks.state.bridge", "run", "BaseException"):
        "not swallowed: the awaitable's error (or the task's cancellation) is thrown into the "
        "store's sync code at the wait it came from (greenlet.throw), which raises it on",
    ("mcp_hooks.metrics", "Metrics.read_from.safe", "Exception"):
        "a gauge read when /metrics is scraped: a reading that fails is -1, the scrape answers",
    ("mcp_hooks.state.url", "close_store", "Exception"):
        "a shared store's connections let go on the way out, said on stderr: nothing to undo",
    # a door in the api room: the Python API's one guard
    ("mcp_hooks.api", "Hooks.fire", "BaseException"): "the door Hooks.fire: its one guard",
    ("mcp_hooks.api", "Hooks.afire", "BaseException"): "the door Hooks.afire: its one guard",
    # a hook's own failure is data, judged as that hook's result (HOOK.md on_error)
    ("mcp_hooks.engine.callables", "CallableHook.call", "BaseException"):
        "a Python callable hook raising is its own verdict (a deny naming it)",
    ("mcp_hooks.engine.callables", "_Own.__await__", "BaseException"):
        "tells what a callable raised from what was thrown into it; its result is the hook's",
    ("mcp_hooks.engine.callables", "_copy", "Exception"):
        "a value deepcopy cannot copy is handed on as it is (the hook sees the original)",
    ("mcp_hooks.engine.callables", "_quietly", "suppress Exception"):
        "a notification's callable: its result and errors are ignored by design",
    ("mcp_hooks.control.evaluation", "_Job.run", "BaseException"):
        "an oracle's exception is kept and reported by the caller as that oracle's fault",
    ("mcp_hooks.control.evaluation", "_stamped", "Exception"):
        "a malformed signal from an oracle is that oracle's fault signal",
    ("mcp_hooks.control.evaluation", "_fault", "Exception"):
        "an oracle's exception whose str() raises too: its fault is still reported",
    ("mcp_hooks.engine.entries", "ControlLayer._load.work", "BaseException"):
        "hooks.yaml read in a thread: the error is handed back and reported (fails closed)",
    ("mcp_hooks.engine.launch", "run_background", "Exception"):
        "a detached background run has no caller: its fault goes to stderr",
    ("mcp_hooks.hookkit", "_call", "Exception"):
        "a hook written with hookkit is the hook: its function raising is reported as its "
        "failure (exit 1), as any hook's",
    # what must never raise, or must outlive what it watches
    ("mcp_hooks.engine.engine", "Engine._note_fault", "suppress Exception"):
        "recording a fault must not hide it: the fault itself is raised on",
    ("mcp_hooks.state.eventlog", "EventLog.append", "Exception"):
        "a failing log never fails an event (it says so on stderr once)",
    ("mcp_hooks.state.inbox", "AidInbox.take", "suppress Exception"):
        "a torn or foreign line in the inbox is skipped",
    ("mcp_hooks.engine.launch", "InProcessLauncher.close", "suppress BaseException"):
        "the caller's own error is propagating already; async hooks only stop beside it",
    ("mcp_hooks.ownstdout", "owned_stdout", "suppress Exception"):
        "restoring stdout when the command ends must not replace the command's own error",
    ("mcp_hooks.service", "HookService._keep_engines", "Exception"):
        "a project whose hooks cannot load is logged and its events answered as "
        "ServiceUnavailable (a fault)",
    ("mcp_hooks.service", "HookService.check_changes", "Exception"):
        "a change listener failing never stops the watcher",
    ("mcp_hooks.service", "HookService._watch", "Exception"):
        "the watcher must outlive anything on disk",
}


def _broad(node: ast.expr | None) -> str | None:
    if node is None:
        return "bare"
    for name in node.elts if isinstance(node, ast.Tuple) else [node]:
        ident = name.id if isinstance(name, ast.Name) else getattr(name, "attr", None)
        if ident in BROAD:
            return str(ident)
    return None


def _raises(body: list[ast.stmt]) -> bool:
    """Whether a handler always raises (re-raises, or raises another): its last statement
    is a ``raise``. One that raises only sometimes (``if ...: raise``) and answers otherwise
    is a guard: it swallows."""
    return isinstance(body[-1], ast.Raise)


def swallowers(source: str, module: str) -> list[tuple[str, str, str, int]]:
    """``(module, function, caught, line)`` of each broad catch in ``source`` that does not
    raise: an ``except`` of ``Exception``/``BaseException`` (or bare), or their ``suppress``."""
    found: list[tuple[str, str, str, int]] = []
    scope: list[str] = []

    def visit(node: ast.AST) -> None:
        named = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if named:
            scope.append(node.name)  # type: ignore[union-attr]
        where = ".".join(scope) or "<module>"
        if isinstance(node, ast.ExceptHandler):
            caught = _broad(node.type)
            if caught and not _raises(node.body):
                found.append((module, where, caught, node.lineno))
        if isinstance(node, ast.withitem) and isinstance(node.context_expr, ast.Call):
            call = node.context_expr
            func = call.func
            if getattr(func, "attr", getattr(func, "id", None)) == "suppress":
                for arg in call.args:
                    caught = _broad(arg)
                    if caught:
                        found.append((module, where, f"suppress {caught}", call.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)
        if named:
            scope.pop()

    visit(ast.parse(source))
    return found


def _below_the_doors() -> dict[str, Path]:
    from tests.helpers.rooms import ROOMS

    doors = ROOMS["hosts"]  # the lowest door's floor
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        room = parts[1] if len(parts) > 1 else ""
        if room in ROOMS and ROOMS[room] < doors:
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def test_nothing_below_the_doors_swallows_an_exception() -> None:
    modules = _below_the_doors()
    assert "mcp_hooks.engine.engine" in modules and "mcp_hooks.service" in modules
    found = [hit for module, path in modules.items()
             for hit in swallowers(path.read_text(encoding="utf-8"), module)]
    unexplained = [f"{m}:{line} {fn}: except {caught}" for m, fn, caught, line in found
                   if (m, fn, caught) not in ALLOWED]
    assert not unexplained, (
        "below the doors, a broad except must re-raise (each door has one guard that "
        "answers; guard.py), or be in ALLOWED with the reason:\n" + "\n".join(unexplained))
    stale = set(ALLOWED) - {(m, fn, caught) for m, fn, caught, _ in found}
    assert not stale, f"ALLOWED entries that no longer match a handler (remove them): {stale}"


def test_the_scan_tells_a_swallow_from_a_re_raise() -> None:
    source = '''
def swallows():
    try:
        pass
    except Exception:
        return None

def re_raises():
    try:
        pass
    except BaseException as exc:
        note(exc)
        raise

def converts():
    try:
        pass
    except Exception as exc:
        raise ValueError("said") from exc

def narrow():
    try:
        pass
    except OSError:
        pass

def bare():
    try:
        pass
    except:
        def later():
            raise

def sometimes():
    try:
        pass
    except BaseException as exc:
        if passes_through(exc):
            raise
        return fault(exc)

def quiet():
    with contextlib.suppress(BaseException):
        pass
'''
    assert [(fn, caught) for _, fn, caught, _ in swallowers(source, "m")] == [
        ("swallows", "Exception"), ("bare", "bare"), ("sometimes", "BaseException"),
        ("quiet", "suppress BaseException")]
