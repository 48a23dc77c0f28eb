"""The Java adapter's forward client (``java/``: ``McpHooksClient``, JDK only), driven from a
test without Maven: its four JDK-only sources and a tiny ``main`` compiled with ``javac``,
run with ``java``.

``java_fire(folder, url, token, fields, user_dir=..., project_dir=...)`` fires one event
through ``McpHooksClient.fire`` and returns the ``Decision`` it printed as a dict
(``denied``, ``reason``, ``blocked_by``, ``warnings``, ``forward_failure``). Without
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

ADAPTER = (Path(__file__).resolve().parents[2] / "java" / "src" / "main" / "java" / "io"
           / "github" / "mcphooks" / "agentscope")
SOURCES = ("McpHooksClient.java", "Decision.java", "Json.java", "Events.java")  # JDK only
INSTALL = "apt-get install -y openjdk-17-jdk-headless"
HANG = 120.0  # seconds: only to stop a hang

MAIN = """\
package io.github.mcphooks.agentscope;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** args: URL TOKEN USER_DIR PROJECT_DIR EVENT_JSON; prints the Decision as JSON. */
public final class FireMain {
    public static void main(String[] args) {
        McpHooksClient client = McpHooksClient.builder().serverUrl(args[0]).token(args[1])
                .userDir(Path.of(args[2])).projectDir(Path.of(args[3])).build();
        @SuppressWarnings("unchecked")
        Map<String, Object> fields = (Map<String, Object>) Json.parse(args[4]);
        Decision d = client.fire(fields);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("denied", d.denied());
        out.put("reason", d.reason());
        out.put("blocked_by", d.blockedBy());
        out.put("warnings", d.warnings());
        out.put("forward_failure", d.forwardFailure());
        System.out.println(Json.write(out));
    }
}
"""


def compiled(folder: Path) -> Path:
    """The classes folder of the client and its ``FireMain``, compiled into ``folder``."""
    javac = shutil.which("javac")
    if javac is None or shutil.which("java") is None:
        _missing(f"javac and java are needed for the Java adapter's client ({INSTALL})")
    assert javac is not None
    source = folder / "src"
    source.mkdir(parents=True)
    (source / "FireMain.java").write_text(MAIN, encoding="utf-8")
    classes = folder / "classes"
    done = subprocess.run(
        [javac, "-d", str(classes), str(source / "FireMain.java"),
         *(str(ADAPTER / name) for name in SOURCES)],
        capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stdout + done.stderr
    return classes


def java_fire(classes: Path, url: str, token: str, fields: dict[str, Any], *,
              user_dir: Path, project_dir: Path) -> dict[str, Any]:
    """One event fired through ``McpHooksClient`` (classes from ``compiled``)."""
    done = subprocess.run(
        [shutil.which("java") or "java", "-cp", str(classes),
         "io.github.mcphooks.agentscope.FireMain", url, token, str(user_dir), str(project_dir),
         json.dumps(fields)], capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stdout + done.stderr
    decision: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return decision
