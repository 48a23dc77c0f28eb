"""Benchmark of the AgentScope Java adapter (issue 23): per ``before_tool`` event through the
Java hook and its client to a local ``mcp-hooks serve``, next to a bare HTTP round trip to the
same server, in the same run, interleaved.

The server (``mcp-hooks serve --transport http`` from this checkout, its event log off) has
as user hooks the bundled library's ``block-dangerous-commands`` (persistent, as shipped), so
each event runs a real guard. ``java/agentscope/src/test/java/.../BenchMain.java`` (run on
the JVM with agentscope-core 2.0.x from ``mvn``'s class path) then times, per round, one bare ``POST
/hooks/fire`` answered ``401`` (HTTP and the server's routing, no engine), one
``McpHooksHook.onEvent(PreActingEvent)`` for ``execute_shell_command`` ``rm -f
build/out.o`` (name mapping, signing, the server's checks, the guard, which runs on it and
allows it, the answer's verification) and the same
event through ``McpHooksClient.send`` alone, its answer read into a ``Decision``.

Run: ``.venv/bin/python bench/bench_java.py [--events N] [--warmup N]``. Needs ``mvn`` and
``java`` (skipped, saying so, without them). Prints the figures and replaces the ``## java``
section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from results import say, write_section  # noqa: E402

REPO = HERE.parent
JAVA = REPO / "java"
LIBRARY = REPO / "hooks"
MCP_HOOKS = Path(sys.executable).parent / "mcp-hooks"
ANNOUNCE = re.compile(r"serving \w+ at (http://\S+)/mcp")
MAIN = "io.github.mcphooks.agentscope.BenchMain"


def build_classpath(out: Path) -> str:
    """Compile the adapter, the client it needs, and the adapter's tests (2.0 profile) and
    return the JVM class path."""
    cp_file = out / "classpath.txt"
    done = subprocess.run(
        ["mvn", "-q", "-B", "-P", "agentscope-2.0", "-DskipTests", "-pl", "agentscope", "-am",
         "test-compile", "dependency:build-classpath", "-Dmdep.includeScope=test",
         f"-Dmdep.outputFile={cp_file}"],  # the adapter's list, written last
        cwd=JAVA, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"mvn failed ({done.returncode}):\n{done.stdout[-3000:]}"
                         f"{done.stderr[-3000:]}")
    target = JAVA / "agentscope" / "target" / "agentscope-2.0"
    return os.pathsep.join([str(target / "classes"), str(target / "test-classes"),
                            str(JAVA / "client" / "target" / "agentscope-2.0" / "classes"),
                            cp_file.read_text().strip()])


def serve(root: Path, token: str) -> tuple[subprocess.Popen[str], str]:
    user = root / "user-hooks"
    shutil.copytree(LIBRARY / "block-dangerous-commands", user / "block-dangerous-commands")
    project = root / "project"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_HOOKS_", "XDG_"))}
    env.update(HOME=str(root / "home"), XDG_STATE_HOME=str(root / "home" / "state"))
    proc = subprocess.Popen(
        [str(MCP_HOOKS), "serve", "--transport", "http", "--port", "0", "--token", token,
         "--user-dir", str(user), "--project-dir", str(project), "--no-log"],
        cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        found = ANNOUNCE.search(line)
        if found:
            # keep draining stderr, so a chatty server never blocks on a full pipe
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, found.group(1)
    raise SystemExit("mcp-hooks serve ended before it announced its address")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args()
    if not (shutil.which("mvn") and shutil.which("java")):
        say("bench_java: skipped (mvn or java is not on PATH)")
        return
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="bench-java-") as tmp:
        root = Path(tmp)
        classpath = build_classpath(root)
        proc, url = serve(root, token)
        try:
            done = subprocess.run(
                ["java", "-cp", classpath, "-Djava.util.logging.config.file=/dev/null",
                 "-Dslf4j.internal.verbosity=ERROR", MAIN, url, token, str(args.events),
                 str(args.warmup)],
                capture_output=True, text=True, timeout=1800)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    if done.returncode != 0:
        raise SystemExit(f"BenchMain failed ({done.returncode}):\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    hook, client, bare = figures["hook"], figures["client"], figures["bare"]
    rows = [("McpHooksHook.onEvent (PreActingEvent, the guard allows)", hook),
            ("McpHooksClient.send alone, its answer read into a Decision", client),
            ("bare HTTP round trip (POST /hooks/fire, 401)", bare)]
    table = "\n".join(
        f"| {name} | {f['median_us'] / 1000:.2f} ms | {f['p99_us'] / 1000:.2f} ms |"
        for name, f in rows)
    over = (hook["median_us"] - bare["median_us"]) / 1000
    body = (
        f"One `before_tool` event through the AgentScope Java adapter (agentscope-core 2.0.x, "
        f"JDK {java_version()}) to a local `mcp-hooks serve --transport http` whose user hooks "
        f"are the bundled `block-dangerous-commands` (persistent), {figures['events']} events "
        f"after {args.warmup} of warm-up, interleaved with a bare HTTP round trip to the same "
        f"server from the same JVM (`bench/bench_java.py`, `BenchMain`).\n\n"
        f"| per event | median | p99 |\n|---|---|---|\n{table}\n\n"
        f"The hook costs {over:.2f} ms more than a bare round trip at the median: the forward "
        f"protocol's HMACs on both sides, the server's engine and the resident guard's answer; "
        f"the hook's own translation is the difference between its row and the client's.")
    say(body)
    write_section("java", body)


def java_version() -> str:
    done = subprocess.run(["java", "-version"], capture_output=True, text=True)
    first = (done.stderr or done.stdout).splitlines()[0] if (done.stderr or done.stdout) else ""
    found = re.search(r'"([^"]+)"', first)
    return found.group(1) if found else "unknown"


if __name__ == "__main__":
    main()
