"""The Java forward client (``java/client``: ``McpHooksClient``, JDK only, no dependency),
driven from a test without Maven: its three sources and a tiny ``main`` compiled with ``javac``,
run with ``java``.

``java_fire(folder, url, token, fields, user_dir=..., project_dir=...)`` sends one event
through ``McpHooksClient.send`` and returns what came back as a dict: ``forward_failure``
(the client's ``Answer.failure()``, or None) and, read from the verified outcome, ``denied``,
``reason``, ``blocked_by``, ``warnings`` (None, False and [] on a failure: the client reads
no JSON; failing closed is its caller's, the AgentScope adapter's ``Decision``). Without
``javac`` or ``java`` the test skips saying why, or fails under ``CI=true``
(``tests/helpers/servers._missing``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers.servers import _missing

CLIENT = (Path(__file__).resolve().parents[2] / "java" / "client" / "src" / "main" / "java"
          / "io" / "github" / "mcphooks" / "client")
SOURCES = ("McpHooksClient.java", "ForwardAuth.java", "Answer.java")  # the whole client
INSTALL = "apt-get install -y openjdk-17-jdk-headless"
HANG = 120.0  # seconds: only to stop a hang

MAIN = """\
package io.github.mcphooks.client;

import java.nio.file.Path;

/** args: URL TOKEN USER_DIR PROJECT_DIR EVENT_TYPE EVENT_JSON; prints the failure (or an
 *  empty line), then the outcome JSON (or an empty line). */
public final class FireMain {
    public static void main(String[] args) {
        McpHooksClient client = McpHooksClient.builder().serverUrl(args[0]).token(args[1])
                .userDir(Path.of(args[2])).projectDir(Path.of(args[3])).build();
        Answer a = client.send(args[4], args[5]);
        System.out.println(a.failure() == null ? "" : a.failure().replace('\\n', ' '));
        System.out.println(a.outcome() == null ? "" : a.outcome().replace('\\n', ' '));
    }
}
"""


def compiled(folder: Path) -> Path:
    """The classes folder of the client and its ``FireMain``, compiled into ``folder``."""
    javac = shutil.which("javac")
    if javac is None or shutil.which("java") is None:
        _missing(f"javac and java are needed for the Java forward client ({INSTALL})")
    assert javac is not None
    source = folder / "src"
    source.mkdir(parents=True)
    (source / "FireMain.java").write_text(MAIN, encoding="utf-8")
    classes = folder / "classes"
    done = subprocess.run(
        [javac, "-d", str(classes), str(source / "FireMain.java"),
         *(str(CLIENT / name) for name in SOURCES)],
        capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stdout + done.stderr
    return classes


def java_fire(classes: Path, url: str, token: str, fields: dict[str, Any], *,
              user_dir: Path, project_dir: Path) -> dict[str, Any]:
    """One event sent through ``McpHooksClient`` (classes from ``compiled``)."""
    done = subprocess.run(
        [shutil.which("java") or "java", "-cp", str(classes),
         "io.github.mcphooks.client.FireMain", url, token, str(user_dir), str(project_dir),
         fields["event_type"], json.dumps(fields)], capture_output=True, text=True,
        timeout=HANG)
    assert done.returncode == 0, done.stdout + done.stderr
    failure, outcome_text = done.stdout.split("\n")[-3:-1]
    outcome: dict[str, Any] = json.loads(outcome_text) if outcome_text else {}
    return {"forward_failure": failure or None, "denied": outcome.get("decision") == "deny",
            "reason": outcome.get("reason"), "blocked_by": outcome.get("blocked_by"),
            "warnings": outcome.get("warnings", [])}
