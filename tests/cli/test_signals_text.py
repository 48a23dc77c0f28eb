"""``mcp-hooks signals`` as text: one entry per signal, in time order, a reason of several
lines kept under its entry (real hooks, real ``mcp-hooks fire`` runs, the real signal log)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.conftest import MCP_HOOKS, write_hook

ENTRY = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, timeout=60)


def test_a_reason_of_several_lines_stays_under_its_entry(
        user_dir: Path, project: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "wordy", extra="matcher:\n  tool: Shell\n",
               script="printf 'no, because:\\n- it deletes\\n- it is late\\n' >&2\nexit 2\n")
    log = tmp_path / "events.jsonl"
    for session in ("first", "second"):
        done = run("fire", "before_tool", "--tool", "Shell", "--input",
                   json.dumps({"command": "rm -rf build"}), "--session", session,
                   "--user-dir", str(user_dir), "--project-dir", str(project),
                   "--log", str(log))
        assert done.returncode == 2, done.stderr

    shown = run("signals", "--log", str(log))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    entries = [line for line in lines if ENTRY.match(line)]
    assert len(entries) == 2, shown.stdout
    assert all("wordy" in e and e.endswith(")") for e in entries), shown.stdout
    assert entries == sorted(entries)  # time order
    # Every line that is not an entry is a continuation of the reason, indented under it.
    continuation = [line for line in lines if not ENTRY.match(line)]
    assert continuation == [" " * 25 + "- it deletes", " " * 25 + "- it is late"] * 2, \
        shown.stdout
    assert lines[1] == " " * 25 + "- it deletes"
