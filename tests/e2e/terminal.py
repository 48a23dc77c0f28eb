"""A host program run interactively, on a pseudo-terminal, as a person at a terminal runs it
(standard library only): ``Terminal(argv, cwd, env)`` starts it, ``until`` reads its screen
until a condition holds (the timeout only stops a hang), ``send`` types keys, closing kills
its process group."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import signal
import time
from collections.abc import Callable
from pathlib import Path

ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]")


class Terminal:
    """One interactive run; use as a context manager."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.output = b""
        pid, fd = pty.fork()
        if pid == 0:  # the child: the program, in its own session on the terminal
            try:
                os.chdir(cwd)
                os.execve(argv[0], argv, {**env, "TERM": "xterm-256color"})
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd

    @property
    def screen(self) -> str:
        """What was written so far, control sequences removed, spaces squeezed."""
        text = ANSI.sub(b"", self.output).decode("utf-8", "replace")
        return re.sub(r"[ \r]+", " ", text)

    def until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        """Read the terminal until ``done()``; ``TimeoutError`` naming ``what`` and the
        screen's end if it never holds (a hang)."""
        end = time.monotonic() + timeout
        while not done():
            if time.monotonic() > end:
                raise TimeoutError(f"never {what}; the screen ends:\n{self.screen[-3000:]}")
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.output += os.read(self.fd, 65536)
                except OSError as exc:  # the program ended
                    if not done():
                        raise TimeoutError(f"ended before {what}:\n{self.screen[-3000:]}") from exc
                    return

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        os.close(self.fd)
