"""Run the project's tests before the agent stops; deny the stop while they fail."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from mcp_hooks.hookkit import allow, deny, hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TAIL_LINES = 40


def max_blocks() -> int:
    hook_md = Path(os.environ.get("AGENT_HOOKS_HOOK_DIR", ".")) / "HOOK.md"
    try:
        match = re.search(r"^\s+max_blocks:\s*(\d+)\s*$", hook_md.read_text(), re.MULTILINE)
    except OSError:
        match = None
    return int(match.group(1)) if match else 3


def test_command(root: Path) -> list[str] | None:
    configured = os.environ.get("ENFORCE_TESTS_COMMAND")
    if configured:
        return ["sh", "-c", configured]
    makefile = root / "Makefile"
    if makefile.is_file() and re.search(r"^test\s*:", makefile.read_text(errors="replace"), re.M):
        return ["make", "test"]
    package = root / "package.json"
    if package.is_file():
        try:
            if json.loads(package.read_text()).get("scripts", {}).get("test"):
                return ["npm", "test", "--silent"]
        except ValueError:
            pass
    if any((root / f).exists()
           for f in ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", "tests")):
        return [sys.executable, "-m", "pytest", "-q"]
    if (root / "Cargo.toml").is_file():
        return ["cargo", "test"]
    if (root / "go.mod").is_file():
        return ["go", "test", "./..."]
    return None


@hook
def main(payload: dict[str, Any]) -> dict[str, Any] | None:
    root = Path(payload.get("work_dir") or os.getcwd())
    command = test_command(root)
    if command is None:
        return allow(log=f"no test command found in {root}; stop allowed")
    shown = command[-1] if command[:2] == ["sh", "-c"] else " ".join(command)
    try:
        run = subprocess.run(command, cwd=root, stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, errors="replace")
    except OSError as exc:
        return allow(log=f"could not run {shown}: {exc}; stop allowed")
    if run.returncode == 0:
        return allow(log=f"tests pass ({shown})")
    tail = "\n".join((run.stdout + run.stderr).rstrip().splitlines()[-TAIL_LINES:])
    report = f"Tests fail: `{shown}` exited {run.returncode}. Fix them before finishing.\n{tail}"
    blocks = payload.get("stop_block_count") or 0
    if payload.get("stop_hook_active") and blocks >= max_blocks():
        return allow(context=f"Stopping with failing tests after {blocks} attempts.\n{report}",
                     log="max_blocks reached; stop allowed")
    return deny(report)
