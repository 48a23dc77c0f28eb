"""The gate never opens by accident, through `mcp-hooks fire` (issue 9's failure modes)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import MCP_HOOKS, write_hook

REPO = Path(__file__).resolve().parents[2]
RM_ROOT = '{"command": "rm -rf /"}'


def fire(user_dir: Path, project: Path, *more: str, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input", RM_ROOT,
         "--user-dir", str(user_dir), "--project-dir", str(project), *more],
        capture_output=True, text=True, timeout=60, cwd=cwd, env={**os.environ, **(env or {})})


@pytest.fixture
def guard(user_dir: Path) -> Path:
    """The bundled fail-closed guard, copied as a user would."""
    target = user_dir / "block-dangerous-commands"
    shutil.copytree(REPO / "hooks" / "block-dangerous-commands", target)
    return target / "HOOK.md"


@pytest.mark.parametrize("breakage", ["typo", "exec-bit"])
def test_a_broken_guard_still_stops_rm_rf_root(user_dir: Path, project: Path, guard: Path,
                                               breakage: str) -> None:
    assert fire(user_dir, project).returncode == 2  # the guard works
    if breakage == "typo":
        guard.write_text(guard.read_text().replace("priority:", "priority: [", 1))
    else:
        run = guard.parent / "scripts" / "run"
        shutil.copy(guard.parent / "scripts" / "run.py", run)  # an entry that is not executable
        run.chmod(0o644)
    done = fire(user_dir, project)
    assert done.returncode == 2, done.stdout
    assert "DENIED  before_tool  by mcp-hooks" in done.stdout
    assert "block-dangerous-commands" in done.stdout and "HOOK.md" in done.stdout
    warned = fire(user_dir, project, "--on-fault", "warn")
    assert warned.returncode == 0 and "warning: fault:" in warned.stdout
    listed = subprocess.run([MCP_HOOKS, "list", "--user-dir", str(user_dir), "--project-dir",
                             str(project)], capture_output=True, text=True, timeout=60)
    # the calls it guards: every before_tool while its HOOK.md is unreadable, else its matcher's
    said = "[before_tool]" if breakage == "typo" else "[before_tool matching tool Shell"
    assert "invalid hooks (1)" in listed.stdout and said in listed.stdout


def test_crlf_checkout_of_the_guard_still_denies(user_dir: Path, project: Path,
                                                 guard: Path) -> None:
    guard.write_bytes(b"\xef\xbb\xbf" + guard.read_bytes().replace(b"\n", b"\r\n"))
    done = fire(user_dir, project)
    assert done.returncode == 2 and "by block-dangerous-commands" in done.stdout, done.stdout


def test_input_nested_too_deep_to_parse_is_a_deny(user_dir: Path, project: Path) -> None:
    deep = '{"command": "ls", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    done = subprocess.run(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input", "-", "--user-dir",
         str(user_dir), "--project-dir", str(project)],
        input=deep, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "nested too deep" in done.stdout


def test_a_relative_user_dir_is_resolved_once(tmp_path: Path, project: Path) -> None:
    """Hooks run in the event's folder; a relative --user-dir must still find their scripts."""
    write_hook(tmp_path / "rel", "no-rm", script="echo refused >&2\nexit 2\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input", RM_ROOT,
         "--user-dir", "rel", "--project-dir", str(project), "--work-dir", str(elsewhere)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and "by no-rm" in done.stdout, done.stdout


@pytest.mark.usefixtures("untrusted")
def test_a_cloned_repositorys_hooks_wait_for_trust(user_dir: Path, project: Path,
                                                   project_hooks: Path, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    write_hook(user_dir, "guard", script="echo 'user guard' >&2\nexit 2\n")
    write_hook(project_hooks, "guard", script=f"touch {ran}\nexit 0\n")  # would open the gate
    done = fire(user_dir, project)
    assert done.returncode == 2 and "by guard" in done.stdout and "user guard" in done.stdout
    assert not ran.exists()
    # the hook held back is said on stderr, where a person sees it whatever reads stdout
    assert "not trusted" in done.stderr and "mcp-hooks trust" in done.stderr
    trusted = subprocess.run([MCP_HOOKS, "trust", str(project), "--yes"], capture_output=True,
                             text=True, timeout=60)
    assert trusted.returncode == 0, trusted.stderr
    after = fire(user_dir, project)
    assert after.returncode == 0 and ran.exists()  # the user chose to trust the replacement
    assert "in place of the user hook" in after.stdout
