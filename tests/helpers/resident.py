"""A persistent hook process (``MCP_HOOKS_PERSISTENT=1``), driven one event line at a time:
hookkit's own tests and the bundled guards' rule tables share it."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

WAIT = 120  # seconds: only to stop a hang, never a speed check


def hook_env(**extra: str) -> dict[str, str]:
    """This process's environment for a hook, without MCP_HOOKS_PERSISTENT, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "MCP_HOOKS_PERSISTENT"}
    env.update(extra)
    return env


ID = "_mcp_hooks_event_id"


class Resident:
    """A persistent hook process, driven one line at a time; an event that is a JSON object
    gets an id, which its answer must echo (it is taken out of the answer ``ask`` returns)."""

    def __init__(self, script: Path, log: Path, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        self.log = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, cwd=cwd, env={**(env or hook_env()), "MCP_HOOKS_PERSISTENT": "1"})

    def ask(self, line: bytes) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        event_id = None
        if line.startswith(b"{") and line.endswith(b"}"):
            event_id = os.urandom(8).hex()
            line = line[:-1] + (b", " if line != b"{}" else b"") + json.dumps(
                {ID: event_id})[1:].encode()
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], WAIT)
        assert ready, f"no answer to {line[:80]!r}"
        answer = json.loads(self.proc.stdout.readline())
        assert isinstance(answer, dict)
        assert answer.pop(ID, None) == event_id, answer
        return answer

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=WAIT)
        assert self.proc.stdout is not None
        rest = self.proc.stdout.read()
        self.proc.stdout.close()
        self.log.close()
        assert rest == b"", f"output after the last answer: {rest[:200]!r}"
        return code
