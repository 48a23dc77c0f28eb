"""A cached virtual environment per agent framework, for the adapter tests.

An adapter test runs its scenario script (``tests/scenarios/``) in a venv that has the
framework from PyPI, pinned, and this checkout installed editable (``pip install -e``), as an
agent developer's project would. The venv lives in the test cache (``tests/shared_cache.py``:
installed in a temporary folder under a lock, renamed into place complete) under
``venvs/<name>-<key>``, where the key hashes the pins, the checkout's path, the Python and
the core ``dependencies`` of its ``pyproject.toml`` (a new dependency, or another checkout,
gets its own venv; the checkout's code is live in it, being editable).

An install that fails raises with pip's output: the tests fail, never skip (CI has PyPI).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests import shared_cache

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = Path(__file__).resolve().parent / "scenarios"


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
