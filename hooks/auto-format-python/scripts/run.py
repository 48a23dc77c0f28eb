"""Format the Python file a tool just wrote, with ruff or black, if either is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from mcp_hooks.hookkit import allow, hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@hook
def main(payload: dict[str, Any]) -> dict[str, Any] | None:
    tool_input = payload.get("tool_input") or {}
    raw = next((tool_input[k] for k in ("path", "file_path", "filename", "target_file")
                if isinstance(tool_input.get(k), str)), None)
    if not raw:
        print("no file path in tool_input", file=sys.stderr)
        return None
    root = Path(payload.get("work_dir") or os.getcwd()).resolve()
    path = (root / raw).resolve()
    if not path.is_file() or path.suffix not in (".py", ".pyi") or root not in path.parents:
        print(f"{path}: not a Python file inside {root}; left alone", file=sys.stderr)
        return None
    for tool, args in (("ruff", ["format", "--quiet"]), ("black", ["-q"])):
        exe = shutil.which(tool)
        if exe:
            done = subprocess.run([exe, *args, str(path)], cwd=root, capture_output=True, text=True)
            return allow(log=f"{tool} formatted {raw}" if done.returncode == 0
                         else f"{tool} failed on {raw}: {done.stderr.strip()[:300]}")
    return allow(log="neither ruff nor black is installed; nothing formatted")
