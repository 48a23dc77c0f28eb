"""Background processes for tests: start one, wait for the URL it announces, stop it."""

from __future__ import annotations

import queue
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Background:
    """A running process, the URL it announced, and its stderr lines as they come."""

    def __init__(self, proc: subprocess.Popen[str], url: str, lines: queue.Queue[str]) -> None:
        self.proc = proc
        self.url = url
        self.lines = lines


@contextmanager
def background(
    argv: list[str],
    *,
    announce: str | None = r"serving \w+ at (\S+)",
    env: dict[str, str] | None = None,
    capture_stdout: bool = False,
    timeout: float = 60,
) -> Iterator[Background]:
    """Run ``argv`` until the block ends; wait for ``announce`` (a regex whose group 1 is the
    URL) on stderr first. With ``capture_stdout``, stdout must stay empty (HTTP servers print
    nothing there)."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put("")

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        url = ""
        seen: list[str] = []
        while announce and not url:
            line = lines.get(timeout=timeout)
            seen.append(line)
            if not line:
                raise AssertionError("the process exited before serving:\n" + "".join(seen))
            found = re.search(announce, line)
            if found:
                url = found.group(1)
        yield Background(proc, url, lines)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(10)
        if proc.stdout is not None:
            assert proc.stdout.read() == "", "the process printed on stdout"
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
