"""A cached virtual environment per agent framework, for the adapter tests.

An adapter test runs its scenario script (``tests/scenarios/``) in a venv that has the
framework from PyPI, pinned, and this checkout installed editable (``pip install -e``), as an
agent developer's project would. The venv lives in the test cache
(``tests/helpers/shared_cache.py``:
installed in a temporary folder under a lock, renamed into place complete) under
``venvs/<name>-<key>``, where the key hashes the pins, the checkout's path, the Python and
the core ``dependencies`` of its ``pyproject.toml`` (a new dependency, or another checkout,
gets its own venv; the checkout's code is live in it, being editable).

An install that fails raises with pip's output: the tests fail, never skip (CI has PyPI).

The adapter tests share their hooks (``GUARD``, ``REWRITE``, ``GATE``: sh scripts for
``tests.conftest.write_hook``) and ``run_scenario``, which runs a scenario script with one JSON
argument and returns the JSON line it printed last.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.helpers import shared_cache

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
MARK_ENV = "MCP_HOOKS_TEST_MARK"  # the file the stop gate leaves at its first refusal

# a before_tool hook: refuses any write to a path with "danger" in it, says why on stderr
GUARD = """\
payload=$(cat)
case "$payload" in
  *danger*) echo "writing danger files is not allowed by policy P-7" >&2; exit 2 ;;
esac
exit 0
"""
# a before_tool hook: every write goes to safe.txt, with a marker in the text
REWRITE = """\
cat >/dev/null
echo '{"modified_input": {"path": "safe.txt", "text": "rewritten by hook"}}'
"""
# a before_stop gate: the first stop is refused (and leaves the mark), the next passes
GATE = f"""\
cat >/dev/null
if [ -e "${MARK_ENV}" ]; then exit 0; fi
: > "${MARK_ENV}"
echo "not done yet: run the test suite before you stop (gate G-3)" >&2
exit 2
"""
WRITE_TOOL_ONLY = "matcher:\n  tool: write_file\n"
# a hook that asks a person before a danger file is written (docs/ask.md)
ASKS_FOR_DANGER = """\
payload=$(cat)
case "$payload" in
  *danger*) echo '{"decision": "ask", "reason": "danger files need a person"}' ;;
esac
exit 0
"""


def broken_stop_hook(root: Path) -> None:
    """A ``before_stop`` hook in scope that cannot load: every stop is a fault of ours,
    denied (on_fault block), which only the engine's loop guard lets through at its cap."""
    (root / "broken-gate").mkdir(parents=True, exist_ok=True)
    (root / "broken-gate" / "HOOK.md").write_text("---\nname: broken-gate\ntrigger: before_stop\n")


def _key(pins: Sequence[str]) -> str:
    project = (REPO / "pyproject.toml").read_text()
    deps = re.search(r"^dependencies = \[.*?^\]", project, re.S | re.M)
    digest = hashlib.sha256()
    for part in (*pins, str(REPO), deps.group(0) if deps else project, sys.version):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:12]


def pip_env() -> dict[str, str]:
    """The caller's environment (index, proxy and CA settings apply), pip's download cache
    in the test cache."""
    return {**os.environ, "PIP_CACHE_DIR": str(shared_cache.cache_root() / "pip"),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def framework_python(name: str, pins: Sequence[str], check: str,
                     timeout: float = 900) -> Path:
    """The interpreter of a venv with ``pins`` and this checkout (editable), made once.

    Args:
        name: the folder's prefix (``langchain``).
        pins: pip requirements, pinned (``langchain==1.4.7``).
        check: Python code the new venv must run (an import of the framework and the adapter).

    Raises:
        RuntimeError: the venv could not be made, pip failed, or ``check`` failed; the message
            has the tool's output.
    """

    def install(tmp: Path) -> None:
        steps = [
            [sys.executable, "-m", "venv", str(tmp)],
            [str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet",
             "-e", str(REPO), *pins],
            [str(tmp / "bin" / "python"), "-c", check],
        ]
        for argv in steps:
            done = subprocess.run(argv, capture_output=True, text=True, env=pip_env(),
                                  timeout=timeout, stdin=subprocess.DEVNULL, cwd=tmp)
            if done.returncode != 0:
                raise RuntimeError(
                    f"making the {name} venv failed at {' '.join(argv[:6])} ... "
                    f"(exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")

    folder, _ = shared_cache.ensure(f"venvs/{name}-{_key(pins)}", install, relocatable=False)
    return folder / "bin" / "python"


def run_scenario(python: Path, script: str, mark: Path, **args: Any) -> dict[str, Any]:
    """Run ``SCENARIOS/script`` with ``args`` as its JSON argument (the stop gate's mark at
    ``mark``); the JSON object it printed last. A failed run fails the test with its stderr."""
    done = subprocess.run(
        [str(python), str(SCENARIOS / script), json.dumps(args)],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        env={**os.environ, MARK_ENV: str(mark)})
    assert done.returncode == 0, f"{script} failed:\n{done.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
