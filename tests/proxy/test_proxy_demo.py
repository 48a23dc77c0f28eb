"""The proxy scene of ``make demo`` runs and shows what it should."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_demo_proxy_scene(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo_proxy.py"), "--user-dir",
         str(REPO / "hooks"), "--log", str(log)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "REFUSED Blocked by hook protect-secrets" in done.stdout
    assert "ALLOWED, passed through: wrote" in done.stdout
    events = [json.loads(line) for line in log.read_text().splitlines()]
    denied = [e for e in events if e.get("kind") == "event" and e["decision"] == "deny"]
    assert [(e["event"], e["tool_name"], e["blocked_by"]) for e in denied] == [
        ("before_tool", "write_file", "protect-secrets")]
