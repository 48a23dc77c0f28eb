"""How the ``--via server`` forward script starts (issue 34, item 4): ``python -I -S`` (no
site-packages, nothing from the current folder), its code run from cached bytecode, and a body
that cannot be loaded blocks the call, naming the file and the fix. Real ``install``, real
``serve``, the command run as the host runs it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import write_hook
from tests.helpers.forward_served import install_forward, payload, served


def _run(command: str, data: str, cwd: Path,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", command], input=data, capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=60)


def _deny_rm(project: Path) -> None:
    write_hook(project / ".agents" / "hooks", "deny-rm", script='echo "no rm here" >&2\nexit 2\n',
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")


def test_the_forward_runs_isolated_from_bytecode_cached_once(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    _deny_rm(project)
    with served(project, user_dir, tmp_path / "events.jsonl", "--token",
                "correct-horse-battery-staple") as base:
        command = install_forward(base, project, tmp_path / "settings.json")
        words = shlex.split(command)
        script = Path(words[3])
        assert words[:3] == [sys.executable, "-I", "-S"] and script.name == "mcp-hooks-forward.py"
        body = script.with_name("mcp-hooks-forward-body.py")
        cached = script.parent / "__pycache__" / (
            f"mcp-hooks-forward-body.{sys.implementation.cache_tag}.pyc")
        assert body.is_file() and not cached.exists()
        rm = payload("claude-code", "PreToolUse.rm", project)
        first = _run(command, rm, tmp_path)
        answer = json.loads(first.stdout)["hookSpecificOutput"]
        assert answer["permissionDecision"] == "deny", first.stderr
        assert answer["permissionDecisionReason"] == "no rm here"
        assert first.stderr == ""  # the server answered: no fallback
        written = cached.stat().st_mtime_ns
        again = _run(command, rm, tmp_path)
        assert again.stdout == first.stdout and cached.stat().st_mtime_ns == written
        # installing again writes the body anew and drops its cached bytecode
        install_forward(base, project, tmp_path / "settings.json")
        assert not cached.exists()
        allowed = _run(command, payload("claude-code", "PreToolUse.bash", project), tmp_path)
        assert (allowed.returncode, allowed.stdout) == (0, ""), allowed.stderr
        assert cached.exists()


def test_a_forward_script_without_its_body_blocks(project: Path, user_dir: Path,
                                                  tmp_path: Path) -> None:
    command = install_forward("http://127.0.0.1:9", project, tmp_path / "settings.json")
    body = Path(shlex.split(command)[3]).with_name("mcp-hooks-forward-body.py")
    body.unlink()
    allow = payload("claude-code", "PreToolUse.bash", project)
    done = _run(command, allow, tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert f"cannot load {body}" in done.stderr and "blocked" in done.stderr
    assert "mcp-hooks install claude-code --via server" in done.stderr
    warned = _run(command, allow, tmp_path, env={**os.environ, "MCP_HOOKS_ON_FAULT": "warn"})
    assert warned.returncode == 1 and f"cannot load {body}" in warned.stderr
