"""``install`` keeps a hand-formatted config as its user wrote it, and suggests only hosts.

Through the real console script on real files: ``install`` then ``uninstall`` gives a
hand-formatted JSON config back byte for byte (indentation, key order, one-line lists,
spacing around ``:``, escapes), ``install`` changes only the lines of our entries and writes
them in the file's own indentation; an unknown host name is answered with a host one typo
away, or none (``vscode`` is not ``codex``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import MCP_HOOKS

# a user's settings as written by hand: 4 spaces, tabs nowhere, lists on one line, " : "
HAND_WRITTEN = """{
    "model" : "opus",
    "permissions" : {"allow": ["Bash(ls)", "Read"],   "deny": []},
    "env" : {
        "GREETING": "caf\\u00e9"
    },
    "hooks" : {
        "PreToolUse" : [
            { "matcher": "Bash", "hooks": [ { "type": "command", "command": "mine.sh" } ] }
        ]
    }
}
"""
TABBED_FLAT = """{
\t"version": 1,
\t"hooks": {
\t\t"beforeShellExecution": [{"command": "./mine.sh"}]
\t},
\t"zeta": [1, 2, 3]
}
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {**os.environ, "HOME": str(home),
            "PATH": f"{Path(MCP_HOOKS).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=60)


@pytest.mark.parametrize(("host", "rel", "text", "indent"), [
    ("claude-code", ".claude/settings.json", HAND_WRITTEN, "    "),
    ("gemini-cli", ".gemini/settings.json", HAND_WRITTEN, "    "),
    ("cursor", ".cursor/hooks.json", TABBED_FLAT, "\t"),
])
def test_install_then_uninstall_gives_the_file_back_byte_for_byte(
        host: str, rel: str, text: str, indent: str, env: dict[str, str],
        project: Path) -> None:
    path = project / rel
    path.parent.mkdir(parents=True)
    path.write_text(text)
    done = run(env, project, "install", host)
    assert done.returncode == 0, done.stderr
    installed = path.read_text()
    # every line of the user's is kept as it was (but for a comma before an item we added,
    # and the lines that close a list or object we added to), ours indented as theirs
    lines = installed.splitlines()
    kept = [line for line in text.splitlines() if not line.strip().startswith(("}", "]"))
            and not line.rstrip().endswith("]")]
    assert all(line in lines or line + "," in lines for line in kept), installed
    added = [line for line in lines if line not in text.splitlines()
             and line.rstrip(",") not in text.splitlines()]
    assert added and all(not line.startswith(" ") or line.startswith(indent) for line in added)
    if indent == "\t":
        assert not any(line.startswith(" ") for line in installed.splitlines())
    assert json.loads(installed)["hooks"]  # ours are in, theirs too
    assert "mine.sh" in installed
    done = run(env, project, "uninstall", host)
    assert done.returncode == 0, done.stderr
    assert path.read_text() == text


def test_a_second_install_changes_nothing_in_a_hand_formatted_file(
        env: dict[str, str], project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(HAND_WRITTEN)
    assert run(env, project, "install", "claude-code").returncode == 0
    first = path.read_text()
    again = run(env, project, "install", "claude-code")
    assert "already up to date" in again.stdout
    assert path.read_text() == first


@pytest.mark.parametrize(("given", "hint"), [
    ("vscode", None), ("windsurf", None), ("zed", None),
    ("claud", "claude-code"), ("gemeni", "gemini-cli"), ("open-code", "opencode"),
    ("cusor", "cursor"), ("kimicli", "kimi-cli"),
])
def test_an_unknown_host_is_answered_with_a_close_host_or_none(
        given: str, hint: str | None, env: dict[str, str], project: Path) -> None:
    done = run(env, project, "install", given)
    assert done.returncode == 64
    assert f"unknown host {given!r}" in done.stderr and "use one of: claude-code" in done.stderr
    if hint is None:
        assert "did you mean" not in done.stderr, done.stderr
    else:
        assert f"did you mean {hint!r}?" in done.stderr, done.stderr
