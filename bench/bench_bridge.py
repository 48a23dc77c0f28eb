"""Benchmark of the host bridges (issue 5, item 6): what a host pays per hook call.

A host runs its hook command as a new process on every tool call. Measured, interleaved,
each as a new process with Claude Code's real PreToolUse payload (``Bash``) on stdin and one
matching ``exit 0`` HOOK.md hook:

- ``bridge``: ``mcp-hooks bridge claude-code`` (what ``install`` writes by default).
  Target (issue 34): median <= 60 ms wall.
- ``forward``: the ``install --via server`` command (the forward script, standard library
  only, run as ``python -I -S``, to a running ``mcp-hooks serve --transport http`` with a
  token). Target (issue 34): median <= 10 ms wall. A/B: the same with
  ``MCP_HOOKS_FORWARD_HTTP=library`` (``http.client`` instead of the script's own HTTP/1.1
  exchange).
- ``http hook``: what Claude Code's own ``http`` hook (``install claude-code --via http``)
  costs, no process at all: this process POSTs the hook input to the same server's
  ``/hooks/bridge/claude-code`` with the bearer token, a new connection per call.
- floors and scale: a bare ``python -I -S -c pass`` (the floor of the forward script, which
  runs that way) and ``python -c pass`` (of any Python bridge) with the same interpreter, and
  a plain shell-script hook run the same way (``cat >/dev/null; exit 0``). Every figure is
  also given as a ratio to the ``python -I -S`` floor of the same run: the machine is shared.
- where the bridge's time goes: importing exactly the ``mcp_hooks`` modules one bridge run
  loads (read from a real run first, so the row follows the code; the run must not import
  asyncio), and pydantic with one model, for scale.

Run: ``.venv/bin/python bench/bench_bridge.py [--runs N]``. Prints the figures and replaces
the ``## bridge`` section of bench/RESULTS.md.

If ``mcp-hooks serve`` does not (yet) mount the forwarding endpoint, the benchmark serves
the same endpoint itself (``--serve``: the server's ``HookService`` and MCP app over the
shared transport, plus ``mcp_hooks.server.forward.bridge_routes``) and says so.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from results import machine, say, verdict, write_section  # noqa: E402

MCP_HOOKS = str(Path(sys.executable).parent / "mcp-hooks")
TOKEN = "bench-bridge-token"
PAYLOAD = {
    "session_id": "3f1c9a52-7b8e-4d21-9f0a-2c6e8b1d4a77",
    "transcript_path": "/tmp/transcript.jsonl",
    "cwd": "",
    "prompt_id": "p-1",
    "permission_mode": "default",
    "effort": {"level": "medium"},
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "echo hello > marker.txt", "description": "Write hello"},
    "tool_use_id": "toolu_01FakeModelCall0000000001",
}


# One bridge run in-process, then what it imported: its mcp_hooks modules and whether asyncio
# came along (it must not: see docs/design-notes.md, Cold start).
IMPORTS_OF_A_RUN = (
    "import json, sys\n"
    "from mcp_hooks import cli\n"
    "cli.main(['bridge', 'claude-code', '--user-dir', sys.argv[1]])\n"
    "sys.stdout.flush()\n"
    "mods = sorted(m for m in sys.modules if m.split('.')[0] == 'mcp_hooks')\n"
    "sys.stderr.write('\\n' + json.dumps({'modules': mods, 'asyncio': 'asyncio' in "
    "sys.modules}) + '\\n')\n"
)
FLOOR = "python -I -S -c pass"
Sample = tuple[float, bytes, "float | None"]  # wall seconds, stdout, CPU seconds (None: none)
PYDANTIC = "import pydantic\nclass M(pydantic.BaseModel):\n    x: int = 0\nM()"


def setup(tmp: Path) -> tuple[Path, Path, dict[str, str]]:
    project = tmp / "project"
    hook = project / ".agents" / "hooks" / "allow-shell"
    (hook / "scripts").mkdir(parents=True)
    (hook / "HOOK.md").write_text(
        "---\nname: allow-shell\ndescription: allows every shell command\n"
        "trigger: before_tool\nmatcher:\n  tool: Shell\n---\n"
    )
    run = hook / "scripts" / "run"
    run.write_text("#!/bin/sh\nexit 0\n")
    run.chmod(0o755)
    user = tmp / "user-hooks"
    user.mkdir()
    env = dict(os.environ)
    env.update(XDG_CONFIG_HOME=str(tmp / "config"), XDG_STATE_HOME=str(tmp / "state"),
               HOME=str(tmp / "home"))
    env.pop("MCP_HOOKS_TOKEN", None)
    # An installed package has its bytecode compiled (pip does it); a checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would recompile every module on every start. Cache it aside.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    (tmp / "home").mkdir()
    # the project hook runs only once trusted: trust it for real, so every run pays the
    # trust check a user's bridge pays (the store in the bench's own XDG_STATE_HOME)
    subprocess.run([MCP_HOOKS, "trust", str(project), "--yes"], env=env, cwd=tmp, check=True,
                   capture_output=True)
    return project, user, env


def _children_cpu() -> float:
    """CPU seconds (user + system) of every child process reaped so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(argv: list[str], data: bytes, env: dict[str, str], cwd: Path) -> Sample:
    """(wall seconds, stdout, CPU seconds of the process and what it waited for)."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, input=data, capture_output=True, env=env, cwd=cwd, check=False)
    elapsed, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return elapsed, done.stdout, cpu


def timed_http(base: str, data: bytes) -> Sample:
    """One Claude Code ``http`` hook call: the hook input POSTed with the bearer token."""
    host, _, port = base.removeprefix("http://").partition(":")
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", "/hooks/bridge/claude-code?event=PreToolUse", body=data,
                     headers={"Authorization": f"Bearer {TOKEN}",
                              "Content-Type": "application/json"})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    elapsed = time.perf_counter() - t0
    if response.status != 200:
        raise SystemExit(f"the http hook got HTTP {response.status}: {body[-400:]!r}")
    return elapsed, body, None  # no process of its own: the server's CPU is not counted


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_server(project: Path, user: Path, env: dict[str, str],
                 tmp: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """A running server with the forwarding endpoint: ``mcp-hooks serve`` if it mounts it,
    else this script's own ``--serve``. Returns (process, base URL, which)."""
    port = free_port()
    common = ["--project-dir", str(project), "--user-dir", str(user),
              "--log", str(tmp / "server-events.jsonl")]
    tries = [
        ("mcp-hooks serve", [MCP_HOOKS, "serve", "--transport", "http", "--port", str(port),
                             "--token", TOKEN, *common]),
        ("bench --serve (endpoint not yet mounted by mcp-hooks serve)",
         [sys.executable, __file__, "--serve", str(port), *common]),
    ]
    for which, argv in tries:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        base = f"http://127.0.0.1:{port}"
        if _wait_ready(base, proc):
            return proc, base, which
        proc.terminate()
        proc.wait(10)
    raise SystemExit("no server with the forwarding endpoint could be started")


def _wait_ready(base: str, proc: subprocess.Popen[bytes]) -> bool:
    body = json.dumps({**PAYLOAD, "cwd": "/nonexistent"}).encode()
    for _ in range(300):
        if proc.poll() is not None:
            return False
        try:
            out = subprocess.run(
                ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                 f"Authorization: Bearer {TOKEN}", "--data-binary", "@-",
                 f"{base}/hooks/bridge/claude-code"],
                input=body, capture_output=True, timeout=5, check=False,
            ).stdout.decode()
        except subprocess.TimeoutExpired:
            out = ""
        if out in ("200", "422"):
            return True
        if out == "404":
            return False
        time.sleep(0.1)
    return False


def serve_forwarding(port: int, project: str, user: str, log: str) -> None:
    """``--serve``: the MCP server app plus the forwarding endpoint, as serve would mount it."""
    import anyio

    from mcp_hooks.server import build_server
    from mcp_hooks.server.forward import bridge_routes
    from mcp_hooks.server.transport import ServeOptions, serve
    from mcp_hooks.service import HookService
    from mcp_hooks.settings import Settings

    async def main() -> None:
        service = HookService(Settings.from_env(project_dir=Path(project), user_dir=Path(user),
                                       log=Path(log)))
        async with service:
            options = ServeOptions(transport="http", port=port, token=TOKEN)
            await serve(build_server(service), options,
                        routes=bridge_routes(service.engine_for, TOKEN))

    anyio.run(main)


def bridge_imports(data: bytes, env: dict[str, str], tmp: Path, user: Path) -> list[str]:
    """The mcp_hooks modules one bridge run imports (asserting asyncio is not among them)."""
    done = subprocess.run([sys.executable, "-c", IMPORTS_OF_A_RUN, str(user)], input=data,
                          env=env, cwd=tmp, capture_output=True, check=True)
    found = json.loads(done.stderr.decode().strip().splitlines()[-1])
    assert not found["asyncio"], "the bridge imported asyncio"
    modules: list[str] = found["modules"]
    return modules


def forward_command(tmp: Path, env: dict[str, str], base: str, project: Path) -> str:
    config = tmp / "forward-settings.json"
    subprocess.run(
        [MCP_HOOKS, "install", "claude-code", "--via", "server", "--url", base, "--token",
         TOKEN, "--event", "PreToolUse", "--config", str(config)],
        env=env, cwd=project, check=True, capture_output=True,
    )
    command: str = json.loads(config.read_text())["hooks"]["PreToolUse"][0]["hooks"][0][
        "command"]
    return command


def bench(runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-bridge-") as name:
        tmp = Path(name)
        project, user, env = setup(tmp)
        data = json.dumps({**PAYLOAD, "cwd": str(project)}).encode()
        sh_hook = tmp / "plain-hook.sh"
        sh_hook.write_text("#!/bin/sh\ncat >/dev/null\nexit 0\n")
        sh_hook.chmod(0o755)
        proc, base, which = start_server(project, user, env, tmp)
        try:
            forward = forward_command(tmp, env, base, project)
            imports = "import " + ", ".join(bridge_imports(data, env, tmp, user))
            library = {**env, "MCP_HOOKS_FORWARD_HTTP": "library"}
            cases: dict[str, Callable[[], Sample]] = {
                "bridge": lambda: timed([MCP_HOOKS, "bridge", "claude-code", "--user-dir",
                                         str(user)], data, env, tmp),
                "forward": lambda: timed(["sh", "-c", forward], data, env, tmp),
                # A/B: the forward script's library path (http.client) instead of its own
                "forward (http.client)": lambda: timed(["sh", "-c", forward], data, library,
                                                       tmp),
                "http hook (no process)": lambda: timed_http(base, data),
                "shell hook": lambda: timed([str(sh_hook)], data, env, tmp),
                FLOOR: lambda: timed([sys.executable, "-I", "-S", "-c", "pass"], b"", env,
                                     tmp),
                "python -c pass": lambda: timed([sys.executable, "-c", "pass"], b"", env, tmp),
                # where the bridge's time goes: importing what it needs; pydantic alone, for scale
                "import bridge modules": lambda: timed([sys.executable, "-c", imports], b"",
                                                       env, tmp),
                "import pydantic": lambda: timed([sys.executable, "-c", PYDANTIC], b"", env,
                                                 tmp),
            }
            # the answers must be a plain allow: no output at all
            for label in ("bridge", "forward", "forward (http.client)",
                          "http hook (no process)"):
                out = cases[label]()[1]
                assert out.strip() == b"", (label, out)
            for _ in range(3):  # warm the page cache and the server
                for run in cases.values():
                    run()
            samples: dict[str, list[float]] = {label: [] for label in cases}
            cpu: dict[str, list[float]] = {label: [] for label in cases}
            for _ in range(runs):
                for label, run in cases.items():
                    elapsed, _, used = run()
                    samples[label].append(elapsed)
                    if used is not None:
                        cpu[label].append(used)
        finally:
            proc.terminate()
            proc.wait(10)
        log = (tmp / "server-events.jsonl").read_text().splitlines()
        served = sum(1 for line in log if '"before_tool"' in line)
    report(runs, samples, cpu, which, served, forward, imports.count(",") + 1)


def report(runs: int, samples: dict[str, list[float]], cpu: dict[str, list[float]],
           which: str, served: int, forward: str, modules: int) -> None:
    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    cpu_med = {k: statistics.median(v) * 1000 for k, v in cpu.items() if v}
    p90 = {k: sorted(v)[int(len(v) * 0.9) - 1] * 1000 for k, v in samples.items()}
    floor = med[FLOOR]
    bridge_ok = med["bridge"] <= 60
    forward_ok = med["forward"] <= 10
    cpu_floor = cpu_med[FLOOR]
    rows = "\n".join(
        f"| {label} | {med[label]:.1f} | {p90[label]:.1f} | {med[label] / floor:.2f}x "
        f"| {med[label] / med['shell hook']:.0f}x | "
        + (f"{cpu_med[label]:.1f} | {cpu_med[label] / cpu_floor:.2f}x |" if label in cpu_med
           else "— | — |")
        for label in samples
    )
    http = med["http hook (no process)"]
    body = f"""\
One hook call as a host makes it: a new process, Claude Code's PreToolUse (`Bash`) payload on
stdin, one matching `exit 0` HOOK.md hook (`matcher.tool: Shell`), event log on, bytecode
cached as in an installed package. {runs} runs of each, interleaved. Server for the
forwarding path and the http hook: {which} (it answered {served} calls). Load average
{os.getloadavg()[0]:.2f} at the end: other work shared the 2 cores, so read the ratios to the
floor (`{FLOOR}`, {floor:.1f} ms here) first.

| per hook call | median ms | p90 ms | vs floor | vs shell hook | CPU ms | CPU vs floor |
|---|---|---|---|---|---|---|
{rows}

CPU is user + system time of the process and the processes it waited for (the hook): the
figure other work on the machine disturbs least. The forward rows run through `sh -c`, as a
host runs them, and their CPU leaves out the server's; the http hook has no process of its own.

- `mcp-hooks bridge claude-code`: **{med['bridge']:.1f} ms** median
  ({med['bridge'] / floor:.1f}x the floor; CPU {cpu_med['bridge']:.1f} ms,
  {cpu_med['bridge'] / cpu_floor:.1f}x the floor's), target <= 60 ms: {verdict(bridge_ok)}. Where it
  goes: a bare `python -c pass` costs {med['python -c pass']:.1f} ms; starting it and importing
  the {modules} `mcp_hooks` modules a bridge run loads (read from a real run; no asyncio, no
  pydantic: pydantic with one model costs {med['import pydantic']:.1f} ms on its own)
  {med['import bridge modules']:.1f} ms; translating, running the hook and answering the
  remaining {med['bridge'] - med['import bridge modules']:.1f} ms. What bounds it (profiled
  2026-11-29, `python -X importtime` and cProfile of one run): about 35 frozen dataclasses
  built at import (a quarter of the import time: `dataclasses` execs every generated method;
  `Settings` alone, 30 fields, 3 ms), the standard library under them (`re`, `enum`,
  `typing`, `pathlib` with `urllib.parse` and `ipaddress`, `inspect` with `ast` and `dis`
  under `dataclasses`, `hashlib` loading OpenSSL, `ctypes` for the subreaper), argparse
  (its messages import `locale` unless the language is C), and the package's own module
  bodies. Moving it further means fewer modules on the bridge's path (a bridge-only import
  graph) or fewer dataclasses there, not another small cut.
- `install --via server` command (the forward script to the running server, falling back to
  the bridge if the server does not answer): **{med['forward']:.1f} ms** median
  ({med['forward'] / floor:.2f}x the floor; its own CPU {cpu_med['forward']:.1f} ms,
  {cpu_med['forward'] / cpu_floor:.2f}x the floor's), target <= 10 ms: {verdict(forward_ok)}.
  It runs as
  `python -I -S` (no site-packages) and runs its body from cached bytecode; over its floor
  it spends {med['forward'] - floor:.1f} ms: the server's answer (the http hook row,
  {http:.1f} ms) and the script's own work, about {med['forward'] - floor - http:.1f} ms
  (reading the token, signing, the exchange, checking the answer's signature). Below the
  floor plus the server's answer it cannot go. With `MCP_HOOKS_FORWARD_HTTP=library` it uses
  `http.client` (as it does for https): {med['forward (http.client)']:.1f} ms, the cost of
  importing it.
- Claude Code's `http` hook (`install claude-code --via http`: Claude Code POSTs the hook
  input to `/hooks/bridge/claude-code` with the bearer token; the route exists, with the same
  token as `/hooks/fire`): **{http:.1f} ms** median, no process at all
  ({med['forward'] / http:.1f}x less than the forward script, {med['bridge'] / http:.0f}x
  less than the bridge). Claude Code carries on without the hook if the server is down.
- The forward command: `{' '.join(w.rsplit('/', 1)[-1] for w in forward.split()[:4])} URL
  claude-code PreToolUse`.
"""
    say(f"bridge: {med['bridge']:.1f} ms median (target 60: {verdict(bridge_ok)})")
    say(f"forward: {med['forward']:.1f} ms median (target 10: {verdict(forward_ok)}) via {which}")
    say(f"http hook: {http:.1f} ms; floor {FLOOR}: {floor:.1f} ms; shell hook: "
        f"{med['shell hook']:.1f} ms")
    say(machine())
    write_section("bridge", body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--project-dir")
    parser.add_argument("--user-dir")
    parser.add_argument("--log")
    args = parser.parse_args()
    if args.serve is not None:
        serve_forwarding(args.serve, args.project_dir, args.user_dir, args.log)
        return
    if subprocess.run(["sh", "-c", "command -v curl"], capture_output=True).returncode != 0:
        raise SystemExit("curl is needed to wait for the server")
    bench(args.runs)


if __name__ == "__main__":
    main()
