"""A detached async hook never sees the shared store's URL (it may hold the password)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.servers import redis_service, redis_url  # noqa: F401 - fixtures


def test_detached_async_hook_never_sees_the_store_url(redis_url: str, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "env.txt"
    job = {
        "kind": "hooks", "event": "post_tool_use", "session_id": "s1", "log": None,
        "state": redis_url, "replica": "r1",
        "jobs": [{
            "hook": {"name": "spy", "scope": "project", "priority": 0},
            "argv": [sys.executable, "-c",
                     f"import os, pathlib; pathlib.Path({str(out)!r}).write_text("
                     "'\\n'.join(os.environ.values()))"],
            "stdin": "{}", "cwd": str(tmp_path), "env": {}, "timeout": 60, "limits": {},
        }],
    }
    # the deploy's own variable holding the URL it passed as --state "$STORE_URL"
    env = {**os.environ, "STORE_URL": redis_url, "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "mcp_hooks.engine.launch"], input=json.dumps(job),
                   text=True, env=env, check=True, timeout=120)
    seen = out.read_text()
    assert redis_url not in seen
