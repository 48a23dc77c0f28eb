"""Shared fixtures: a guard against the real home directory, and fresh hook folders.

The suite's one cache folder (``tests/helpers/shared_cache.py``) is resolved once, before any test
moves ``HOME`` or ``XDG_*``, and exported as ``$MCP_HOOKS_TEST_CACHE`` so every test and every
process it starts installs into, and reuses, the same folder.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import shared_cache

BIN = Path(sys.executable).parent
MCP_HOOKS = str(BIN / "mcp-hooks")


def pytest_configure(config: pytest.Config) -> None:
    os.environ[shared_cache.ENV] = str(shared_cache.cache_root())


class RealHomeTouched(AssertionError):
    """A test reached for the real home directory instead of the folders it was given."""


@pytest.fixture(autouse=True)
def guard_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Any test that touches the real home fails.

    ``~/.config/agents/hooks`` is a real discovery root and ``~/.local/state`` holds the real
    event log: in-process, ``expanduser("~")`` raises; for subprocesses, HOME points at a
    path under /dev/null that can be neither read nor created. XDG folders point at fresh
    temporary ones, so code that honours them works.
    """
    xdg = tmp_path_factory.mktemp("xdg")
    # The system temp dir is the test's own: `install` refuses to write a path under the temp
    # dir (a throwaway venv), and this checkout (and its .venv) may itself live under /tmp.
    systmp = xdg / "tmp"
    systmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(systmp))
    monkeypatch.setattr(tempfile, "tempdir", str(systmp))
    monkeypatch.setenv("HOME", "/dev/null/real-home-is-off-limits")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(xdg / "state"))
    for var in ("MCP_HOOKS_USER_DIR", "MCP_HOOKS_PROJECT_DIR", "MCP_HOOKS_LOG",
                "MCP_HOOKS_TOKEN", "MCP_HOOKS_STOP_BLOCK_CAP", "MCP_HOOKS_ON_FAULT",
                "MCP_HOOKS_TRUST_STORE", "MCP_HOOKS_SERVER"):
        monkeypatch.delenv(var, raising=False)
    # Project hooks run only once trusted. Tests about something else trust them all, as CI
    # would; the trust tests take this away (the ``untrusted`` fixture) and trust for real.
    monkeypatch.setenv("MCP_HOOKS_TRUST_PROJECT_HOOKS", "1")
    real_expanduser = os.path.expanduser

    def expanduser(path: str | os.PathLike[str]) -> str:
        text = os.fspath(path)
        if text.startswith("~"):
            raise RealHomeTouched(f"test touched the home directory via expanduser({text!r})")
        return real_expanduser(text)

    monkeypatch.setattr(os.path, "expanduser", expanduser)
    yield


@pytest.fixture
def untrusted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Project hooks need the user's trust again (the trust store under XDG_STATE_HOME)."""
    monkeypatch.delenv("MCP_HOOKS_TRUST_PROJECT_HOOKS", raising=False)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


HookFactory = Callable[..., Path]


def write_hook(
    root: Path,
    name: str,
    *,
    trigger: str = "before_tool",
    script: str = "exit 0\n",
    description: str | None = None,
    extra: str = "",
    entry: str = "scripts/run",
    executable: bool = True,
) -> Path:
    """Write a hook folder: HOOK.md with the given frontmatter, and a sh entry script."""
    hook_dir = root / name
    (hook_dir / "scripts").mkdir(parents=True, exist_ok=True)
    front = f"name: {name}\ndescription: {description or 'test hook ' + name}\ntrigger: {trigger}\n"
    (hook_dir / "HOOK.md").write_text(f"---\n{front}{textwrap.dedent(extra)}---\n\n# {name}\n")
    path = hook_dir / entry
    body = script if script.startswith("#!") else "#!/bin/sh\n" + script
    if entry.endswith(".py"):
        body = script
    path.write_text(body)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return hook_dir


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    d = tmp_path / "user-hooks"
    d.mkdir()
    return d


@pytest.fixture
def project(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    (d / ".agents" / "hooks").mkdir(parents=True)
    return d


@pytest.fixture
def project_hooks(project: Path) -> Path:
    return project / ".agents" / "hooks"
