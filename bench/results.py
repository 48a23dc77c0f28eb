"""Shared helpers for the benchmarks: hook folders, an echo server, medians, the machine, and
RESULTS.md sections."""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = (
    "# Benchmark results\n\n"
    "Written by `make bench` (each benchmark replaces its own section). Medians over many "
    "runs, each compared with its floor measured in the same run, interleaved; the machines "
    "are shared and noisy, so read the ratios first.\n"
)


def median_us(samples: list[float]) -> float:
    """Median of samples given in seconds, in microseconds."""
    return statistics.median(samples) * 1e6


def percentile(samples: list[float], p: float) -> float:
    """The ``p``-th percentile of ``samples`` (nearest rank), in their own unit."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.system()} {platform.release()}, {os.cpu_count()} cores ({cpu}), "
            f"Python {platform.python_version()}, load average {load:.2f} at start")


def git_rev() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=RESULTS.parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_section(name: str, body: str) -> None:
    """Replace (or add) the section ``## name`` of RESULTS.md."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = (f"## {name}\n\nMeasured {stamp} at commit {git_rev()} on {machine()}.\n\n"
               f"{body.strip()}\n")
    text = RESULTS.read_text() if RESULTS.exists() else HEADER
    pattern = re.compile(rf"^## {re.escape(name)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text)
    else:
        text = text.rstrip() + "\n\n" + section
    RESULTS.write_text(text.rstrip() + "\n")


def verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def say(line: str) -> None:
    print(line, file=sys.stderr if line.startswith("!") else sys.stdout, flush=True)


def make_hook(root: Path, name: str, trigger: str = "before_tool", extra: str = "",
              script: str = "exit 0\n") -> Path:
    """Write a hook folder; returns its entry script (``#!/bin/sh`` unless it has its own)."""
    hook = root / name
    (hook / "scripts").mkdir(parents=True, exist_ok=True)
    (hook / "HOOK.md").write_text(
        f"---\nname: {name}\ndescription: bench hook {name}\ntrigger: {trigger}\n{extra}---\n")
    run = hook / "scripts" / "run"
    run.write_text(script if script.startswith("#!") else "#!/bin/sh\n" + script)
    run.chmod(0o755)
    return run


def echo_server() -> None:
    """A bare SDK server with one echo tool over stdio: the floor MCP benchmarks compare with."""
    from mcp.server import MCPServer

    server = MCPServer("echo")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    server.run("stdio")
