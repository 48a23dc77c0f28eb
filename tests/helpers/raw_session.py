"""Raw JSON-RPC over the stdio of ``serve`` or ``proxy`` (no SDK in between, so odd input can
be sent): ``RawSession``/``raw_session``, the initialize messages, ``nested`` JSON,
``proxy_argv`` and ``call_line``; ``running`` starts a server and waits for its URL."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import MCP_HOOKS
from tests.helpers.background import background

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"}}}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


class RawSession:
    """A process spoken to in raw JSON-RPC lines on its stdin; answers read by id."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.answers: dict[Any, dict[str, Any]] = {}

    def send(self, *lines: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        for line in lines:
            self.proc.stdin.write(line if isinstance(line, bytes)
                                  else json.dumps(line).encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, rid: Any) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while rid not in self.answers:
            line = self.proc.stdout.readline()
            assert line, f"stdout closed before the answer to {rid!r} (exit {self.proc.poll()})"
            message = json.loads(line)  # every line on stdout is a JSON-RPC message
            if "id" in message:
                assert message["id"] not in self.answers, message
                self.answers[message["id"]] = message
        return self.answers[rid]

    def pop(self, rid: Any) -> dict[str, Any]:
        """The answer to ``rid``, forgotten (ids may repeat: ``None`` does)."""
        answer = self.answer(rid)
        del self.answers[rid]
        return answer

    def outcome(self, rid: Any) -> dict[str, Any]:
        result = self.answer(rid)["result"]
        assert result["isError"] is False, result
        structured: dict[str, Any] = result["structuredContent"]
        return structured


@contextmanager
def raw_session(argv: list[str], env: dict[str, str] | None = None) -> Iterator[RawSession]:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    session = RawSession(proc)
    try:
        session.send(INIT, INITIALIZED)
        assert session.answer(0)["result"]["serverInfo"]["name"].startswith("mcp-hooks")
        yield session
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(30) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()


def proxy_argv(project: Path, user_dir: Path, *args: str) -> list[str]:
    return [MCP_HOOKS, "proxy", *args, "--user-dir", str(user_dir),
            "--project-dir", str(project), "--no-log"]


def call_line(rid: Any, name: str, arguments_json: str) -> bytes:
    return (f'{{"jsonrpc":"2.0","id":{json.dumps(rid)},"method":"tools/call","params":'
            f'{{"name":"{name}","arguments":{arguments_json}}}}}\n').encode()


@contextmanager
def running(args: list[str], *, announce: str | None = None) -> Iterator[str]:
    """A background process; yields the URL it announces on stderr (``announce`` regex)."""
    with background(args, announce=announce, env=dict(os.environ)) as process:
        yield process.url
