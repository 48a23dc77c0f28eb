"""Fixtures of the end-to-end tests against the real agent hosts.

* ``host_factory`` (session): installs each pinned host once into the cache outside the
  repository (see ``hosts.py``), reusing a complete install; skips a host, saying why, only
  where its installer's tools are missing (``npm``/``node``; Python >= 3.13 for kimi-cli).
* ``fake_model``: the scripted fake model server on loopback, logging to ``fake-model.jsonl``.
* ``box``: a fresh project folder and HOME for one host run.
* ``mcp_hooks_exe``: the real ``mcp-hooks`` console script.

The ``e2e`` marker is registered in pyproject.toml; ``make e2e`` selects these tests
(``pytest -m e2e``), ``make test`` leaves them out (``-m 'not e2e'``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .fake_model import FakeModelServer
from .hosts import HOSTS, Host, HostUnavailable, InstallInfo, Sandbox

REPO = Path(__file__).resolve().parents[2]

# Filled while tests run; printed in the terminal summary.
INSTALLS: dict[str, InstallInfo | str] = {}
RUN_TIMES: list[tuple[str, str, float]] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not INSTALLS and not RUN_TIMES:
        return
    tr = terminalreporter
    tr.section("real agent hosts (e2e)")
    for name, info in INSTALLS.items():
        if isinstance(info, str):
            tr.write_line(f"{name}: {info}")
        elif info.installed_now:
            tr.write_line(
                f"{name} {info.version}: installed in {info.seconds:.1f} s "
                f"({info.size_bytes / 1e6:.0f} MB) at {info.prefix}"
            )
        else:
            tr.write_line(f"{name} {info.version}: cached at {info.prefix}")
    by_host: dict[str, list[float]] = {}
    for host, _test, secs in RUN_TIMES:
        by_host.setdefault(host, []).append(secs)
    for host, times in sorted(by_host.items()):
        times.sort()
        median = times[len(times) // 2]
        tr.write_line(f"{host}: {len(times)} runs, median {median:.2f} s, max {times[-1]:.2f} s")


@pytest.fixture(scope="session")
def host_factory() -> Callable[[str], Host]:
    """Return ``get(name) -> Host``: the installed host, or skip/fail saying why."""
    errors: dict[str, str] = {}
    skips: dict[str, str] = {}
    ready: dict[str, Host] = {}

    def get(name: str) -> Host:
        if name in ready:
            return ready[name]
        if name in skips:
            pytest.skip(skips[name])
        if name in errors:
            pytest.fail(errors[name], pytrace=False)
        cls = HOSTS[name]
        try:
            info = cls.ensure_installed()
        except HostUnavailable as exc:
            skips[name] = f"{name} {cls.version} not installable here: {exc}"
            INSTALLS[name] = f"skipped: {exc}"
            pytest.skip(skips[name])
        except Exception as exc:
            errors[name] = f"installing {name} {cls.version} failed: {exc}"
            INSTALLS[name] = errors[name]
            pytest.fail(errors[name], pytrace=False)
        INSTALLS[name] = info
        ready[name] = cls(info)
        return ready[name]

    return get


@pytest.fixture
def fake_model(tmp_path: Path) -> Iterator[FakeModelServer]:
    """The fake model server, started; its log is ``<tmp_path>/fake-model.jsonl``."""
    with FakeModelServer(tmp_path / "fake-model.jsonl") as server:
        yield server


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    """A fresh project and HOME for one host run."""
    return Sandbox(tmp_path / "run")


def _find_mcp_hooks() -> Path | None:
    override = os.environ.get("MCP_HOOKS_E2E_EXE")
    if override:
        return Path(override)
    candidates = [
        Path(sys.executable).parent / "mcp-hooks",
        REPO / ".venv" / "bin" / "mcp-hooks",
    ]
    found = shutil.which("mcp-hooks")
    if found:
        candidates.append(Path(found))
    for cand in candidates:
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    return None


@pytest.fixture(scope="session")
def mcp_hooks_exe() -> Path:
    """The real ``mcp-hooks`` console script: ``$MCP_HOOKS_E2E_EXE`` if set (to test another
    build, e.g. one installed with pipx), else the one beside ``sys.executable``, else the
    repo's venv."""
    exe = _find_mcp_hooks()
    if exe is None:
        pytest.fail(
            "no mcp-hooks console script beside sys.executable or in .venv/bin: "
            "pip install -e . first",
            pytrace=False,
        )
    return exe


def bridges_importable() -> bool:
    """Whether ``mcp_hooks.hosts.install`` exists (the host bridges have landed), or
    ``$MCP_HOOKS_E2E_EXE`` names an mcp-hooks build to test."""
    if os.environ.get("MCP_HOOKS_E2E_EXE"):
        return True
    try:
        return importlib.util.find_spec("mcp_hooks.hosts.install") is not None
    except ModuleNotFoundError:
        return False
