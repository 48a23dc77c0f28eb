"""A cloned repository must never run its own code through what ``install`` wrote.

Hosts run our command in the project folder (Claude Code's command hooks, OpenCode's plugin
``spawnSync(..., {cwd: directory})``), and ``python -m`` puts the current folder first on
``sys.path``: a clone that ships ``mcp_hooks/__init__.py`` would answer in our place, before
any trust check, and its exit 0 is an allow. Here the clone is the folder every written
command runs in, as its host runs it (``sh -c``, Cline's script, OpenCode's plugin under real
node), from an install made where no ``mcp-hooks`` script is on PATH (the ``python`` form):
the clone's code never runs, and ``rm -rf /`` is still denied, by the real hooks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.hosts import HOSTS, get_host
from tests.conftest import MCP_HOOKS, write_hook

CHECKOUT = Path(__file__).resolve().parents[2]
# this environment's site-packages (the repo's venv), where mcp-hooks and its dependencies are
PURELIB = (Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
           / "site-packages")
HOSTILE = """import pathlib, sys
pathlib.Path({marker!r}).write_text("the clone's own mcp_hooks ran: " + repr(sys.argv))
sys.exit(0)
"""
DANGER = "rm -rf /"
REASON = "no rm here, said the real hooks"


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A cloned repository with its own ``mcp_hooks`` package: any import of it leaves a
    marker beside it and exits 0 (an allow, to a host)."""
    folder = tmp_path / "clone"
    marker = tmp_path / "MARKER"
    for module in ("__init__.py", "cli/__init__.py", "cli/__main__.py", "engine/__init__.py",
                   "engine/launch.py"):
        path = folder / "mcp_hooks" / module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HOSTILE.format(marker=str(marker)))
    return folder


def stable_python(root: Path, *, pth: bool) -> Path:
    """A Python environment with mcp-hooks importable but no ``mcp-hooks`` script: a venv of
    this interpreter whose site-packages reaches this checkout's (``pth``: through a ``.pth``
    file, seen under ``-I``; else not at all, for ``PYTHONPATH`` to supply)."""
    base = Path(sys.base_prefix) / "bin"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text(f"home = {base}\ninclude-system-site-packages = false\n"
                                     f"version = {version}\n")
    site = root / "lib" / f"python{version}" / "site-packages"
    site.mkdir(parents=True)
    if pth:
        (site / "this-checkout.pth").write_text(
            f"import site; site.addsitedir({str(PURELIB)!r})\n")
    python = root / "bin" / "python"
    python.symlink_to(Path(sys.executable).resolve())
    return python


def host_env(tmp_path: Path) -> dict[str, str]:
    """Where the hosts and install run: a fake home, no ``mcp-hooks`` on PATH, the real deny
    hook in the user folder."""
    hooks = tmp_path / "user-hooks"
    write_hook(hooks, "deny-rm", script=f'echo "{REASON}" >&2\nexit 2\n',
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
            "CODEX_HOME": str(tmp_path / "codex-home"),
            "KIMI_SHARE_DIR": str(tmp_path / "kimi-share"),
            "CLINE_DIR": str(home / ".cline"), "PATH": "/usr/bin:/bin",
            "MCP_HOOKS_USER_DIR": str(hooks), "MCP_HOOKS_LOG": "off"}


def install(python: Path, env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run([str(python), "-m", "mcp_hooks.cli", "install", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def wired(python: Path, env: dict[str, str], cwd: Path) -> dict[str, tuple[str, Path]]:
    """Host -> (its gate event's command, its config file), as ``doctor --json`` reads them
    from what install wrote; doctor finds nothing there that loads from the project folder."""
    done = subprocess.run([str(python), "-m", "mcp_hooks.cli", "doctor", "--json"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout)
    assert not [p for p in report["problems"] if "project folder" in p["what"]], report
    found = {}
    for wiring in report["hosts"]:
        gate = get_host(wiring["host"]).gate_event
        (command,) = [e["command"] for e in wiring["entries"] if e["event"] == gate]
        found[wiring["host"]] = (command, Path(wiring["file"]))
    return found


def run_as_host(host_name: str, command: str, config: Path, clone: Path,
                env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The gate command run as the host runs it, in the clone: ``sh -c`` of the line, or
    Cline's script file itself."""
    host = get_host(host_name)
    payload = json.dumps(host.shell_call(DANGER, "cwd-test", clone))
    argv = [str(config / host.gate_event)] if config.is_dir() else ["sh", "-c", command]
    return subprocess.run(argv, input=payload, cwd=clone, env=env, capture_output=True,
                          text=True, timeout=120)


def test_every_written_command_ignores_the_clone(tmp_path: Path, clone: Path) -> None:
    python = stable_python(tmp_path / "stable", pth=True)
    env = host_env(tmp_path)
    marker = tmp_path / "MARKER"
    work = tmp_path / "elsewhere"
    work.mkdir()
    for name in HOSTS:
        install(python, env, work, name, "--scope", "user", "--event", "before_tool")
    commands = wired(python, env, work)
    assert sorted(commands) == sorted(HOSTS)
    for name, (command, config) in commands.items():
        done = run_as_host(name, command, config, clone, env)
        assert not marker.exists(), f"{name}: {marker.read_text()}"
        assert " -I -m mcp_hooks.cli bridge " in command, command  # the python form
        reason = get_host(name).deny_reason(done.stdout, done.stderr, done.returncode)
        assert reason is not None and REASON in reason, (name, done.stdout, done.stderr)


def _node_gate(plugin: Path, directory: Path, env: dict[str, str], tmp: Path) -> dict[str, Any]:
    """OpenCode's part: load the plugin under node and call its ``tool.execute.before`` for a
    shell call in ``directory``, as OpenCode does; what it did (threw, or let the call run)."""
    module = tmp / "plugin.mjs"  # the same bytes; .mjs so node 20 reads it as a module
    module.write_bytes(plugin.read_bytes())
    driver = tmp / "drive.mjs"
    driver.write_text(
        'import { pathToFileURL } from "node:url";\n'
        "const [plugin, directory, command] = process.argv.slice(2);\n"
        "const mod = await import(pathToFileURL(plugin).href);\n"
        "const hooks = await mod.McpHooks({ directory });\n"
        "const output = { args: { command } };\n"
        "try {\n"
        '  await hooks["tool.execute.before"]({ tool: "bash", sessionID: "s", callID: "c" },'
        " output);\n"
        "  console.log(JSON.stringify({ ran: output.args }));\n"
        "} catch (error) {\n"
        "  console.log(JSON.stringify({ refused: error.message }));\n"
        "}\n")
    done = subprocess.run(["node", str(driver), str(module), str(directory), DANGER],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("scope", ["user", "project"])
def test_opencode_plugin_under_node_ignores_the_clone(tmp_path: Path, clone: Path,
                                                      scope: str) -> None:
    """The plugin spawns the bridge with ``cwd: directory``, the project OpenCode opened."""
    python = stable_python(tmp_path / "stable", pth=True)
    env = host_env(tmp_path)
    if scope == "project":  # plain `mcp-hooks`, found on the host's PATH
        env["PATH"] = f"{Path(MCP_HOOKS).parent}:/usr/bin:/bin"
    # the project is the clone; install itself runs elsewhere (not `python -m` in a clone)
    install(python, {**env, "MCP_HOOKS_PROJECT_DIR": str(clone)}, tmp_path, "opencode",
            "--scope", scope, "--event", "tool.execute.before")
    plugin = (clone / ".opencode" / "plugins" / "mcp-hooks.js" if scope == "project" else
              tmp_path / "xdg-config" / "opencode" / "plugins" / "mcp-hooks.js")
    outcome = _node_gate(plugin, clone, env, tmp_path)
    assert not (tmp_path / "MARKER").exists(), (tmp_path / "MARKER").read_text()
    assert REASON in outcome.get("refused", ""), outcome


def test_pythonpath_installs_get_dash_p(tmp_path: Path, clone: Path) -> None:
    """mcp-hooks found only through PYTHONPATH: ``-I`` would not see it, so ``-P`` (3.11+)
    is written; on 3.10, which has no ``-P``, install refuses rather than write ``-m``."""
    python = stable_python(tmp_path / "stable", pth=False)
    env = {**host_env(tmp_path),
           "PYTHONPATH": f"{CHECKOUT}{os.pathsep}{PURELIB}"}
    done = subprocess.run([str(python), "-m", "mcp_hooks.cli", "install", "claude-code",
                           "--scope", "user", "--event", "PreToolUse"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    if sys.version_info < (3, 11):
        assert done.returncode == 1 and "imports only from the current folder" in done.stderr
        return
    assert done.returncode == 0, done.stderr
    command, config = wired(python, env, tmp_path)["claude-code"]
    assert " -P -m mcp_hooks.cli bridge " in command, command
    result = run_as_host("claude-code", command, config, clone, env)
    assert not (tmp_path / "MARKER").exists()
    reason = get_host("claude-code").deny_reason(result.stdout, result.stderr, result.returncode)
    assert reason is not None and REASON in reason, (result.stdout, result.stderr)


def test_a_bridge_command_that_imports_from_the_folder_is_refused(tmp_path: Path) -> None:
    env = host_env(tmp_path)
    for given in ("python3 -m mcp_hooks.cli", "./bin/mcp-hooks", f"{sys.executable} -c x"):
        done = subprocess.run([MCP_HOOKS, "install", "claude-code", "--scope", "user",
                               "--bridge-command", given], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 64, done.stderr
        assert "would run code from the project folder" in done.stderr and "-I" in done.stderr
    assert not (tmp_path / "home" / ".claude" / "settings.json").exists()


@pytest.mark.parametrize("start", ["script", "python -I"])
def test_background_work_ignores_the_clone(tmp_path: Path, clone: Path, start: str) -> None:
    """An async hook's detached launcher starts in the folder the bridge runs in: the clone
    (from the ``mcp-hooks`` script: ``-P``; from an isolated bridge: ``-I``)."""
    env = host_env(tmp_path)
    ran = tmp_path / "async-ran"
    write_hook(Path(env["MCP_HOOKS_USER_DIR"]), "later", extra="async: true\n",
               script=f"touch {ran}\n")
    host = get_host("claude-code")
    prefix = [MCP_HOOKS] if start == "script" else [
        str(stable_python(tmp_path / "stable", pth=True)), "-I", "-m", "mcp_hooks.cli"]
    done = subprocess.run([*prefix, "bridge", "claude-code", "--event", "PreToolUse"],
                          input=json.dumps(host.shell_call("ls", "cwd-test", clone)),
                          cwd=clone, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    marker = tmp_path / "MARKER"
    deadline = time.monotonic() + 60  # only stops a hang: the hook takes milliseconds
    while not ran.exists() and not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not marker.exists(), marker.read_text()
    assert ran.exists()
