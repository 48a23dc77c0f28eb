"""The Makefile's Maven runs print plain text off a terminal: Debian's Maven 3.8 writes
colour resets (ESC[0m) even with ``-B``, which ``MVN_OPTS_PLAIN`` stops (issue 29, item 16)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def makefile_variable(name: str) -> str:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    found = re.search(rf"^{name}\s*:=\s*(.*)$", text, re.M)
    assert found, f"the Makefile defines no {name}"
    return found.group(1).strip()


def test_the_java_test_target_passes_the_plain_options() -> None:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r'MAVEN_OPTS="\$\$\{MAVEN_OPTS:-\} \$\(MVN_OPTS_PLAIN\)" mvn -q -B', text)


@pytest.mark.skipif(not (shutil.which("mvn") and shutil.which("java")),
                    reason="needs mvn and a JDK; `make java-test` runs the build")
@pytest.mark.parametrize("plain", [True, False])
def test_maven_prints_no_colour_codes_with_the_makefiles_options(plain: bool) -> None:
    opts = makefile_variable("MVN_OPTS_PLAIN") if plain else ""
    done = subprocess.run(["mvn", "-q", "-B", "validate"], cwd=REPO / "java",
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MAVEN_OPTS": opts})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout + done.stderr
    if plain:
        assert "\x1b" not in out, repr(out[:300])
    elif "\x1b" not in out:  # a Maven without the reset bug: nothing to show
        pytest.skip("this Maven writes no colour codes even without the options")
