"""Running ``mcp-hooks`` and ``doctor --json`` in an empty HOME (``home_env``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import MCP_HOOKS


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)


def doctor(env: dict[str, str], project: Path, user_dir: Path,
           *args: str) -> tuple[int, dict[str, Any]]:
    result = run(env, project, "doctor", "--json", "--user-dir", str(user_dir), *args)
    assert result.stdout.strip(), f"doctor printed no report (exit {result.returncode}): " \
        f"{result.stderr}"
    return result.returncode, json.loads(result.stdout)


def home_env(tmp_path: Path) -> dict[str, str]:
    """An environment with an empty HOME (and the hosts' own homes) under ``tmp_path`` and
    this checkout's ``mcp-hooks`` first on PATH."""
    home = tmp_path / "home"
    home.mkdir()
    return {**os.environ, "HOME": str(home), "CODEX_HOME": str(tmp_path / "codex-home"),
            "KIMI_SHARE_DIR": str(tmp_path / "kimi-share"),
            "PATH": f"{Path(MCP_HOOKS).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
