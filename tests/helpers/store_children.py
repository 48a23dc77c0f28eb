"""``children``: run a script in several processes at once, each with a store built over the
same state as a contract test's backend (``tests/state/conftest.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.state.conftest import Backend

ROOT = Path(__file__).resolve().parents[2]


def children(backend: Backend, script: str, n: int = 2) -> list[str]:
    """Run ``script`` in ``n`` processes at once, each with ``store`` built over the same
    state; their stdouts."""
    head = ("import sys, json\nfrom tests.state.conftest import build\n"
            f"store = build({backend.name!r}, {backend.where!r})\n")
    backend.processes()
    procs = [subprocess.Popen([sys.executable, "-c", head + script, str(i)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(n)]
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outs.append(out)
    return outs
