"""bench/compare.py, the old-against-new benchmark driver: its probes run in a child of the
Python they are given and report JSON medians; the driver refuses a Python whose layout is
not the side it was given for (the old layout itself is not installed here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

COMPARE = Path(__file__).resolve().parent.parent / "bench" / "compare.py"


def test_a_probe_reports_the_new_layout_and_its_medians(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(COMPARE), "--probe", "persistent", "--n", "20", "--shared",
         str(tmp_path)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["layout"] == "new"
    assert found["Engine.fire"] > found["protocol floor"] > 0


def test_the_driver_refuses_a_python_of_the_wrong_layout(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(COMPARE), "--old", sys.executable, "--rounds", "1", "--only",
         "callable", "--scale", "0.01"], capture_output=True, text=True, timeout=300,
        check=False, cwd=tmp_path)
    assert done.returncode == 1
    assert f"{sys.executable} has the new layout installed, not the old" in done.stderr
    assert not list(tmp_path.iterdir())  # nothing written here, no RESULTS.md touched


def test_an_unknown_probe_is_named_with_the_ones_there_are() -> None:
    done = subprocess.run(
        [sys.executable, str(COMPARE), "--old", sys.executable, "--only", "persistant"],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "unknown probe(s) persistant; there are oneshot, nomatch" in done.stderr
