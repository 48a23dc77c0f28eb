"""Running ``mcp-hooks bridge HOST`` as a host would (``bridge``), on a host's recorded payload
(``fixture``); ``rm_call``: each host's ``rm -rf`` call and the flags its bridge needs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import MCP_HOOKS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hosts"


def fixture(host: str, name: str, project: Path) -> dict[str, Any]:
    text = (FIXTURES / host / f"{name}.json").read_text().replace("$PROJECT", str(project))
    data: dict[str, Any] = json.loads(text)
    return data


def bridge(host: str, payload: Any, user_dir: Path, records: Path | None = None,
           *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if records is not None:
        env["RECORD_DIR"] = str(records)
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [MCP_HOOKS, "bridge", host, "--user-dir", str(user_dir), *args],
        input=data, capture_output=True, text=True, env=env, timeout=60,
    )


def rm_call(host: str, name: str, project: Path) -> tuple[dict[str, Any], list[str]]:
    payload = fixture(host, name, project)
    flags: list[str] = []
    if host == "codex":
        payload["tool_input"]["command"] = "rm -rf build"
    if host == "copilot-cli":
        flags = ["--event", "preToolUse"]
    return payload, flags
