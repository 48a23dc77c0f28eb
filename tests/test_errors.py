"""The error tree (``mcp_hooks/errors.py``) and the command boundary (``mcp_hooks.cli.main``).

Every exception class the package defines is rooted in ``ConfigError`` (exit 64) or
``RunError`` (exit 1) and drawn in the errors.py docstring; the boundary prints any of them,
alone or wrapped in (nested) exception groups, as one line and exits with its code.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from mcp_hooks import cli, errors
from mcp_hooks.errors import (
    AddressInUseError,
    ConfigError,
    HookFileError,
    MCPHooksError,
    RunError,
    UsageError,
)
from tests.conftest import MCP_HOOKS, write_hook

if sys.version_info < (3, 11):  # the boundary itself handles the backport's groups too
    pytest.skip("exception groups are built in from Python 3.11", allow_module_level=True)
BaseExceptionGroup: Any = vars(builtins)["BaseExceptionGroup"]
ExceptionGroup: Any = vars(builtins)["ExceptionGroup"]

# -- the tree ----------------------------------------------------------------------------


# Run in a fresh interpreter: importing every module (the MCP SDK, pydantic) must not leak
# into other tests, and what the stdlib reads of the home folder at import is not ours.
_WALK = """
import importlib, inspect, json, pkgutil
import mcp_hooks
from mcp_hooks.errors import ConfigError, MCPHooksError, RunError

found = []
for info in pkgutil.walk_packages(mcp_hooks.__path__, "mcp_hooks."):
    if info.name.rsplit(".", 1)[-1] == "__main__":  # running it is not importing it
        continue
    try:
        module = importlib.import_module(info.name)
    except ModuleNotFoundError as exc:  # an adapter whose framework (an extra) is not here
        if info.name.startswith("mcp_hooks.adapters.") and exc.name \
                and not exc.name.startswith("mcp_hooks"):
            continue
        raise
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ == info.name and issubclass(cls, BaseException):
            found.append({
                "where": f"{cls.__module__}.{cls.__qualname__}", "name": cls.__name__,
                "ours": issubclass(cls, MCPHooksError),
                "rooted": cls in (MCPHooksError, ConfigError, RunError)
                or issubclass(cls, (ConfigError, RunError)),
            })
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def exception_classes() -> list[dict[str, Any]]:
    """Every exception class the package defines, with where it sits in the tree."""
    done = subprocess.run([sys.executable, "-c", _WALK], capture_output=True, text=True,
                          timeout=120, check=True)
    classes: list[dict[str, Any]] = json.loads(done.stdout)
    return classes


def test_the_walk_sees_the_package(exception_classes: list[dict[str, Any]]) -> None:
    """The tree tests below would pass on an empty walk; make sure it is not empty."""
    where = {c["where"] for c in exception_classes}
    assert {"mcp_hooks.errors.MCPHooksError", "mcp_hooks.errors.HookFileError",
            "mcp_hooks.registry.trust.TrustStoreError",
            "mcp_hooks.spec.matching.MatcherError"} <= where
    assert len(where) >= 10, where


# classes of modules the bundled hooks import on every tool call, kept free of
# mcp_hooks.errors (it imports pathlib and typing: tests/hooks/test_protect_hooks.py's
# test_it_is_fast); each with why
STANDALONE = {"mcp_hooks.spec.patchtext.TooManyValues":
              "the patch reader of protect-hooks and protect-secrets: a plain ValueError"}


def test_every_exception_of_the_package_is_rooted_in_config_or_run_error(
    exception_classes: list[dict[str, Any]],
) -> None:
    unrooted = [c["where"] for c in exception_classes
                if not c["rooted"] and c["where"] not in STANDALONE]
    assert unrooted == [], f"not rooted in errors.ConfigError or errors.RunError: {unrooted}"


def test_every_error_class_is_drawn_in_the_errors_docstring(
    exception_classes: list[dict[str, Any]],
) -> None:
    drawing = errors.__doc__ or ""
    missing = [c["where"] for c in exception_classes
               if c["ours"] and f" {c['name']} " not in drawing and c["where"] not in STANDALONE]
    assert missing == [], f"missing from the drawing in errors.py: {missing}"


def test_each_branch_has_its_exit_code() -> None:
    assert errors.exit_code(UsageError("x")) == errors.EXIT_USAGE == 64
    assert errors.exit_code(AddressInUseError("127.0.0.1", 1)) == errors.EXIT_FAILURE == 1
    assert errors.exit_code(HookFileError(Path("HOOK.md"), "name", "missing")) == 64
    assert errors.exit_code(ValueError("not ours")) == 1
    from mcp_hooks.registry.digest import TrustError, UnhashableError
    from mcp_hooks.registry.trust import TrustStoreError
    from mcp_hooks.spec.matching import MatcherError

    assert issubclass(MatcherError, ConfigError) and issubclass(MatcherError, ValueError)
    for cls in (TrustError, TrustStoreError, UnhashableError):
        assert issubclass(cls, RunError), cls


# -- the boundary, in process -------------------------------------------------------------


def _raising(exc: BaseException) -> cli.Command:
    def command(args: object) -> NoReturn:
        raise exc

    return command


def _main_with(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> int:
    """``mcp-hooks events`` whose command raises ``exc``."""
    monkeypatch.setitem(cli.COMMANDS, "events", _raising(exc))
    return cli.main(["events"])


@pytest.mark.parametrize(("exc", "code"), [
    (UsageError("give the project once"), 64),
    (HookFileError(Path("/h/HOOK.md"), "trigger", "unknown event"), 64),
    (AddressInUseError("127.0.0.1", 8765), 1),
    (RunError("the upstream went away"), 1),
])
def test_our_error_is_one_line_and_its_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], exc: MCPHooksError,
    code: int,
) -> None:
    assert _main_with(monkeypatch, exc) == code
    captured = capsys.readouterr()
    assert captured.err == f"mcp-hooks events: {exc}\n"
    assert captured.out == ""


def test_a_nested_group_of_our_errors_is_its_first_leaf(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    busy = AddressInUseError("127.0.0.1", 8765)
    group = ExceptionGroup("unhandled errors in a TaskGroup", [
        ExceptionGroup("unhandled errors in a TaskGroup", [busy]),
        UsageError("a later one"),
    ])
    assert _main_with(monkeypatch, group) == 1
    err = capsys.readouterr().err
    assert err == f"mcp-hooks events: {busy}\n"
    assert "already in use" in err and "TaskGroup" not in err


def test_the_first_leaf_decides_the_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    group = ExceptionGroup("g", [UsageError("first"), RunError("second")])
    assert _main_with(monkeypatch, group) == 64
    assert capsys.readouterr().err == "mcp-hooks events: first\n"


def test_a_busy_port_from_the_os_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    busy = OSError(errno.EADDRINUSE, "error while attempting to bind on address "
                   "('127.0.0.1', 8765): address already in use")
    assert _main_with(monkeypatch, ExceptionGroup("g", [busy])) == 1
    assert capsys.readouterr().err == f"mcp-hooks events: {busy}\n"


@pytest.mark.parametrize("exc", [
    RuntimeError("a bug"),
    OSError(errno.EACCES, "permission denied"),
    ExceptionGroup("g", [UsageError("ours"), RuntimeError("a bug beside it")]),
    ExceptionGroup("g", [ExceptionGroup("g", [KeyError("deep bug")]), RunError("ours")]),
])
def test_anything_else_keeps_its_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], exc: Exception,
) -> None:
    with pytest.raises(type(exc)) as raised:
        _main_with(monkeypatch, exc)
    assert raised.value is exc
    assert capsys.readouterr().err == ""


def test_an_interrupt_inside_a_group_is_130(monkeypatch: pytest.MonkeyPatch) -> None:
    group = BaseExceptionGroup("g", [KeyboardInterrupt(), KeyboardInterrupt()])
    assert _main_with(monkeypatch, group) == 130
    assert _main_with(monkeypatch, KeyboardInterrupt()) == 130


def test_reportable_names_the_leaf_or_none() -> None:
    leaf = RunError("leaf")
    assert cli.reportable(leaf) is leaf
    assert cli.reportable(ExceptionGroup("a", [ExceptionGroup("b", [leaf])])) is leaf
    assert cli.reportable(ExceptionGroup("a", [leaf, ValueError("bug")])) is None
    assert cli.reportable(ValueError("bug")) is None


# -- the boundary, through real processes --------------------------------------------------


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port this test listens on, so nobody else can."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _one_line_failure(done: subprocess.CompletedProcess[str], command: str) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"mcp-hooks {command}: "), lines
    return lines[0]


def test_a_task_group_failing_on_a_busy_port_is_one_line(held_port: int, tmp_path: Path) -> None:
    """A real anyio task group (as under serve and proxy) wraps the bind error in a group."""
    script = textwrap.dedent(f"""
        import sys
        import anyio
        from mcp_hooks import cli

        async def listen():
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.sleep, 30)
                await anyio.create_tcp_listener(local_host="127.0.0.1", local_port={held_port})

        cli.COMMANDS["events"] = lambda args: anyio.run(listen)
        sys.exit(cli.main(["events"]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 1
    line = _one_line_failure(done, "events")
    assert "in use" in line.lower(), line


@pytest.mark.parametrize("command", [
    ["serve", "--transport", "http"],
    ["proxy", "--upstream", "idle=sleep 60", "--transport", "http"],
])
def test_serve_and_proxy_on_a_busy_port_say_so_in_one_line(
    held_port: int, project: Path, command: list[str],
) -> None:
    done = subprocess.run([MCP_HOOKS, *command, "--port", str(held_port), "--project-dir",
                           str(project)], capture_output=True, text=True, timeout=60,
                          cwd=project, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    line = _one_line_failure(done, command[0])
    assert str(held_port) in line and "in use" in line, line


def test_a_run_time_error_of_a_real_command_exits_1(project_hooks: Path, project: Path,
                                                    tmp_path: Path) -> None:
    """The trust store's lock cannot be opened (it is a folder): a RunError, not usage."""
    write_hook(project_hooks, "fmt")
    store = tmp_path / "state" / "trust.json"
    store.with_name("trust.json.lock").mkdir(parents=True)
    done = subprocess.run([MCP_HOOKS, "trust", str(project), "--yes"], capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "MCP_HOOKS_TRUST_STORE": str(store)})
    assert done.returncode == 1, (done.stdout, done.stderr)
    line = _one_line_failure(done, "trust")
    assert "trust.json.lock: cannot open the lock file" in line, line
    assert not store.exists()


def test_a_usage_error_of_a_real_command_exits_64(project: Path) -> None:
    done = subprocess.run([MCP_HOOKS, "fire", "no-such-event", "--project-dir", str(project)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 64
    line = _one_line_failure(done, "fire")
    assert "unknown event type 'no-such-event'" in line, line
