"""``mcp-hooks install`` / ``uninstall`` on real config files in temporary folders.

Every host's config is written through the real console script, with HOME, CODEX_HOME and
KIMI_SHARE_DIR pointed at temporary folders: entries merged, unrelated ones kept, a second
install changes nothing, a backup of the previous file, a dry run writes nothing, uninstall
removes only ours, and the command written really runs the bridge.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.hosts import get_host
from mcp_hooks.hosts.configfile import generated as generated_config
from tests.conftest import MCP_HOOKS, write_hook

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hosts"

# (host, scope, config path relative to the project or the fake home, config kind)
TARGETS = [
    ("claude-code", "project", "project/.claude/settings.json", "claude"),
    ("claude-code", "user", "home/.claude/settings.json", "claude"),
    ("codex", "user", "codex-home/hooks.json", "claude"),
    ("codex", "project", "project/.codex/hooks.json", "claude"),
    ("gemini-cli", "project", "project/.gemini/settings.json", "claude"),
    ("gemini-cli", "user", "home/.gemini/settings.json", "claude"),
    ("cursor", "project", "project/.cursor/hooks.json", "flat"),
    ("cursor", "user", "home/.cursor/hooks.json", "flat"),
    ("copilot-cli", "project", "project/.github/hooks/mcp-hooks.json", "copilot"),
    ("copilot-cli", "user", "home/.copilot/hooks/mcp-hooks.json", "copilot"),
    ("kimi-cli", "user", "kimi-share/config.toml", "kimi"),
    ("qwen-code", "project", "project/.qwen/settings.json", "claude"),
    ("qwen-code", "user", "home/.qwen/settings.json", "claude"),
]
# hosts whose config we generate whole: Cline's folder of scripts, OpenCode's plugin
GENERATED = [
    ("cline", "user", "home/.cline/hooks"),
    ("cline", "project", "project/.clinerules/hooks"),
    ("opencode", "project", "project/.opencode/plugins/mcp-hooks.js"),
    ("opencode", "user", "xdg-config/opencode/plugins/mcp-hooks.js"),
]


@pytest.fixture
def env(tmp_path: Path, project: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    # the repo venv's mcp-hooks on PATH, as `uv tool install` would put it there
    return {**os.environ, "HOME": str(home), "CODEX_HOME": str(tmp_path / "codex-home"),
            "KIMI_SHARE_DIR": str(tmp_path / "kimi-share"),
            "PATH": f"{Path(MCP_HOOKS).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=60)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def our_commands(kind: str, text: str) -> dict[str, str]:
    """Event -> our command, read back from a written config."""
    found: dict[str, str] = {}
    if kind == "kimi":
        for hook in tomllib.loads(text).get("hooks", []):
            if " bridge " in hook["command"]:
                found[hook["event"]] = hook["command"]
        return found
    data = json.loads(text)
    for event, entries in data.get("hooks", {}).items():
        for entry in entries:
            handlers = entry.get("hooks", [entry]) if kind == "claude" else [entry]
            for handler in handlers:
                command = handler.get("command") or handler.get("bash") or ""
                if " bridge " in command:
                    found[event] = command
    return found


def backups(env: dict[str, str]) -> list[Path]:
    folder = Path(env["XDG_STATE_HOME"]) / "mcp-hooks" / "backups"
    return sorted(folder.iterdir()) if folder.is_dir() else []


@pytest.mark.parametrize(("host", "scope", "rel", "kind"), TARGETS)
def test_install_writes_every_event_and_is_idempotent(host: str, scope: str, rel: str,
                                                      kind: str, env: dict[str, str],
                                                      project: Path, tmp_path: Path) -> None:
    args = ["install", host, "--scope", scope]
    said = ok(run(env, project, *args))
    path = tmp_path / rel
    text = path.read_text()
    commands = our_commands(kind, text)
    assert list(commands) == list(get_host(host).install_events)
    # a committed project file holds no path of this machine; the user's gets this mcp-hooks
    start = "mcp-hooks" if scope == "project" else MCP_HOOKS
    for event, command in commands.items():
        assert command.startswith(f"{start} bridge {host} --event {event}")
        assert "--user-dir" not in command and "--project-dir" not in command
    assert ("plain `mcp-hooks`" in said) == (scope == "project")
    again = ok(run(env, project, *args))
    assert "already up to date" in again
    assert path.read_text() == text
    assert backups(env) == []  # nothing existed before, nothing changed after


@pytest.mark.parametrize(("host", "scope", "rel", "kind"), TARGETS)
def test_uninstall_removes_only_ours(host: str, scope: str, rel: str, kind: str,
                                     env: dict[str, str], project: Path,
                                     tmp_path: Path) -> None:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    original = _foreign_config(kind)
    path.write_text(original)
    ok(run(env, project, "install", host, "--scope", scope))
    merged = path.read_text()
    assert our_commands(kind, merged)
    _assert_foreign_kept(kind, merged)
    first_backup = backups(env)
    assert len(first_backup) == 1 and first_backup[0].read_text() == original
    ok(run(env, project, "uninstall", host, "--scope", scope))
    after = path.read_text()
    assert our_commands(kind, after) == {}
    if kind == "kimi":
        assert after == original
    else:
        assert json.loads(after) == json.loads(original)
    assert "nothing to uninstall" in ok(run(env, project, "uninstall", host, "--scope", scope))


def _foreign_config(kind: str) -> str:
    if kind == "kimi":
        return ('default_model = "fake"\ntelemetry = false\n\n[providers.fake]\n'
                'type = "openai_legacy"\nbase_url = "http://127.0.0.1:9/v1"\n\n'
                '[[hooks]]\nevent = "PreToolUse"\nmatcher = "Shell"\n'
                'command = "/opt/hooks/audit.sh"\n')
    if kind == "claude":
        return json.dumps({
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "/opt/hooks/audit.sh"}]}],
                "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]},
            "model": "opus",
        }, indent=4)
    event = "beforeShellExecution" if kind == "flat" else "preToolUse"
    handler: dict[str, Any] = ({"command": "/opt/hooks/audit.sh"} if kind == "flat" else
                               {"type": "command", "bash": "/opt/hooks/audit.sh"})
    return json.dumps({"version": 1, "hooks": {event: [handler]}})


def _assert_foreign_kept(kind: str, text: str) -> None:
    if kind == "kimi":
        data = tomllib.loads(text)
        assert data["providers"]["fake"]["type"] == "openai_legacy"
        assert data["hooks"][0]["command"] == "/opt/hooks/audit.sh"
        return
    data = json.loads(text)
    assert "/opt/hooks/audit.sh" in json.dumps(data)
    if kind == "claude":
        assert data["permissions"] == {"allow": ["Bash(ls)"]} and data["model"] == "opus"
        assert data["hooks"]["PreToolUse"][0]["matcher"] == "Bash"
        assert data["hooks"]["Notification"][0]["hooks"][0]["command"] == "notify-send hi"


def test_a_file_only_we_wrote_is_removed_by_uninstall(env: dict[str, str],
                                                      project: Path) -> None:
    ok(run(env, project, "install", "copilot-cli"))
    path = project / ".github" / "hooks" / "mcp-hooks.json"
    assert path.exists()
    ok(run(env, project, "uninstall", "copilot-cli"))
    assert not path.exists()


def test_dry_run_prints_the_diff_and_writes_nothing(env: dict[str, str], project: Path) -> None:
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text('{\n  "security": {\n    "auth": {"selectedType": "gemini-api-key"}\n  }\n}\n')
    before = path.read_text()
    output = ok(run(env, project, "install", "gemini-cli", "--dry-run"))
    assert output.startswith(f"--- {path}")
    assert '+    "BeforeTool": [' in output and "dry run" in output
    assert path.read_text() == before and backups(env) == []
    ok(run(env, project, "install", "gemini-cli"))
    output = ok(run(env, project, "uninstall", "gemini-cli", "--dry-run"))
    assert '-    "BeforeTool": [' in output
    assert our_commands("claude", path.read_text())


def test_gemini_entries_are_named_with_a_millisecond_timeout(env: dict[str, str],
                                                             project: Path) -> None:
    ok(run(env, project, "install", "gemini-cli", "--event", "before_tool"))
    data = json.loads((project / ".gemini" / "settings.json").read_text())
    handler = data["hooks"]["BeforeTool"][0]["hooks"][0]
    assert handler["name"] == "mcp-hooks" and handler["timeout"] == 600000
    assert list(data["hooks"]) == ["BeforeTool"]


def test_events_can_be_chosen_by_host_or_canonical_name(env: dict[str, str],
                                                        project: Path) -> None:
    ok(run(env, project, "install", "cursor", "--event", "before_tool", "--event", "stop"))
    data = json.loads((project / ".cursor" / "hooks.json").read_text())
    assert list(data["hooks"]) == ["beforeShellExecution", "beforeMCPExecution",
                                   "beforeReadFile", "stop"]
    result = run(env, project, "install", "cursor", "--event", "nonsense")
    assert result.returncode == 64 and "no event 'nonsense'" in result.stderr


def test_folders_given_to_install_are_passed_to_the_bridge(env: dict[str, str], project: Path,
                                                           tmp_path: Path) -> None:
    hooks = tmp_path / "my-hooks"
    hooks.mkdir()
    ok(run(env, project, "install", "codex", "--scope", "user", "--user-dir", str(hooks),
           "--event", "PreToolUse"))
    command = our_commands("claude", (tmp_path / "codex-home" / "hooks.json").read_text())[
        "PreToolUse"]
    assert command.endswith(f"--event PreToolUse --user-dir {hooks}")
    ok(run(env, project, "install", "codex", "--scope", "user", "--on-fault", "warn",
           "--event", "PreToolUse"))
    command = our_commands("claude", (tmp_path / "codex-home" / "hooks.json").read_text())[
        "PreToolUse"]
    assert command.endswith("--event PreToolUse --on-fault warn")


def test_unreadable_configs_are_left_alone(env: dict[str, str], project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{not json")
    result = run(env, project, "install", "claude-code")
    assert result.returncode == 1 and "not valid JSON" in result.stderr
    assert path.read_text() == "{not json"
    path.write_text('{"hooks": []}')
    result = run(env, project, "install", "claude-code")
    assert result.returncode == 1 and "must be an object" in result.stderr
    kimi = Path(env["KIMI_SHARE_DIR"]) / "config.toml"
    kimi.parent.mkdir()
    kimi.write_text("this = = broken\n")
    result = run(env, project, "install", "kimi-cli")
    assert result.returncode == 1 and "not valid TOML" in result.stderr
    assert kimi.read_text() == "this = = broken\n"


def test_usage_errors(env: dict[str, str], project: Path) -> None:
    """Options the host cannot take are the caller's mistake: exit 64, nothing written."""
    result = run(env, project, "install", "kimi-cli", "--scope", "project")
    assert result.returncode == 64 and "use --scope user" in result.stderr
    result = run(env, project, "install", "vim")
    assert result.returncode == 64 and "unknown host" in result.stderr
    result = run(env, project, "install", "codex", "--via", "http")
    assert result.returncode == 64 and "Claude Code hook type" in result.stderr
    result = run(env, project, "install", "codex", "--via", "server")
    assert result.returncode == 64 and "token" in result.stderr
    assert not (project / ".codex").exists()


# -- the written command works when the host runs it ---------------------------------------


def _deny_hook(project: Path) -> None:
    write_hook(project / ".agents" / "hooks", "deny-rm",
               script='echo "no rm here" >&2\nexit 2\n',
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")


def test_the_installed_command_runs_the_bridge(env: dict[str, str], project: Path,
                                               tmp_path: Path) -> None:
    _deny_hook(project)
    ok(run(env, project, "install", "claude-code", "--event", "PreToolUse"))
    ok(run(env, project, "install", "kimi-cli", "--event", "PreToolUse"))
    claude = our_commands("claude", (project / ".claude" / "settings.json").read_text())
    kimi = our_commands("kimi", (tmp_path / "kimi-share" / "config.toml").read_text())
    for host, command in (("claude-code", claude["PreToolUse"]),
                          ("kimi-cli", kimi["PreToolUse"])):
        payload = (FIXTURES / host / "PreToolUse.rm.json").read_text().replace(
            "$PROJECT", str(project))
        # as the hosts do: a shell runs the command string, in some other folder
        result = subprocess.run(["sh", "-c", command], input=payload, capture_output=True,
                                text=True, env=env, cwd=tmp_path, timeout=60)
        answer = json.loads(result.stdout)
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny", result.stderr
        assert answer["hookSpecificOutput"]["permissionDecisionReason"] == "no rm here"


def test_via_server_falls_back_to_the_bridge_when_no_server_answers(
        env: dict[str, str], project: Path, tmp_path: Path) -> None:
    _deny_hook(project)
    env = {**env, "MCP_HOOKS_TOKEN": "s3cret"}
    ok(run(env, project, "install", "codex", "--scope", "user", "--via", "server",
           "--url", "http://127.0.0.1:9", "--event", "PreToolUse"))
    text = (tmp_path / "codex-home" / "hooks.json").read_text()
    command = json.loads(text)["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    folder = Path(env["XDG_CONFIG_HOME"]) / "mcp-hooks"
    script, header = folder / "mcp-hooks-forward.py", folder / "forward.header"
    assert command.startswith(f"{sys.executable} -I -S {script} http://127.0.0.1:9 codex "
                              "PreToolUse")
    assert stat.S_IMODE(header.stat().st_mode) == 0o600
    assert header.read_text() == "Authorization: Bearer s3cret\n"
    assert "s3cret" not in text and "s3cret" not in script.read_text()
    payload = (FIXTURES / "codex" / "PreToolUse.bash.json").read_text().replace(
        "$PROJECT", str(project)).replace("echo hello > marker.txt", "rm -rf build")
    result = subprocess.run(["sh", "-c", command], input=payload, capture_output=True,
                            text=True, env=env, cwd=tmp_path, timeout=60)
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    ok(run(env, project, "uninstall", "codex", "--scope", "user"))
    assert not (tmp_path / "codex-home" / "hooks.json").exists()


def test_claude_code_native_http_and_mcp_tool_forms(env: dict[str, str],
                                                    project: Path) -> None:
    ok(run(env, project, "install", "claude-code", "--via", "http", "--event", "PreToolUse",
           "--url", "http://127.0.0.1:8765/"))
    path = project / ".claude" / "settings.json"
    handler = json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert handler["type"] == "http"
    assert handler["url"] == "http://127.0.0.1:8765/hooks/bridge/claude-code?event=PreToolUse"
    assert handler["headers"] == {"Authorization": "Bearer $MCP_HOOKS_TOKEN"}
    assert handler["allowedEnvVars"] == ["MCP_HOOKS_TOKEN"]
    ok(run(env, project, "install", "claude-code", "--via", "mcp", "--event", "SessionEnd",
           "--event", "PostToolUseFailure"))
    hooks = json.loads(path.read_text())["hooks"]
    assert "PreToolUse" not in hooks  # an install replaces all our entries
    tool = hooks["PostToolUseFailure"][0]["hooks"][0]
    assert tool["type"] == "mcp_tool" and tool["server"] == "mcp-hooks"
    assert tool["tool"] == "bridge_hook"
    assert tool["input"]["tool_input"] == "${tool_input}"
    assert tool["input"]["input_command"] == "${tool_input.command}"
    assert hooks["SessionEnd"][0]["hooks"][0]["input"]["hook_event_name"] == "SessionEnd"
    ok(run(env, project, "uninstall", "claude-code"))
    assert not path.exists()


def test_via_mcp_refuses_events_that_can_block(env: dict[str, str], project: Path) -> None:
    """Claude Code may run tools before its MCP servers connect; an mcp_tool gate would be
    open meanwhile, so blocking events are refused with what to use instead."""
    for events in (["--event", "PreToolUse"], ["--event", "Stop"], []):
        result = run(env, project, "install", "claude-code", "--via", "mcp", *events)
        assert result.returncode == 64
        assert "before its MCP servers connect" in result.stderr
        assert "--via command" in result.stderr and "--event SessionEnd" in result.stderr
    assert not (project / ".claude" / "settings.json").exists()


# -- the wiring keeps working --------------------------------------------------------------


def _throwaway_python(root: Path) -> Path:
    """A python that looks like uv's cache (uvx): a link inside an ``archive-v0`` folder."""
    folder = root / "uv-cache" / "archive-v0" / "Xy12" / "bin"
    folder.mkdir(parents=True)
    link = folder / "python"
    link.symlink_to(sys.executable)
    return link


def _as_uvx(env: dict[str, str], tmp_path: Path, *args: str,
            path: str = "/usr/bin:/bin") -> subprocess.CompletedProcess[str]:
    """``mcp-hooks`` run as uvx runs it: from a throwaway environment, with PATH as given."""
    python = _throwaway_python(tmp_path) if not (tmp_path / "uv-cache").exists() else (
        tmp_path / "uv-cache" / "archive-v0" / "Xy12" / "bin" / "python")
    source = str(Path(__file__).resolve().parents[2])
    # the system temp dir elsewhere: pytest's own folders are under /tmp
    systmp = tmp_path / "systmp"
    systmp.mkdir(exist_ok=True)
    run_env = {**env, "PATH": path, "PYTHONPATH": source, "TMPDIR": str(systmp)}
    return subprocess.run([str(python), "-m", "mcp_hooks.cli", *args], capture_output=True,
                          text=True, env=run_env, cwd=tmp_path, timeout=60)


def test_install_from_a_throwaway_environment_refuses(env: dict[str, str],
                                                      tmp_path: Path) -> None:
    result = _as_uvx(env, tmp_path, "install", "codex", "--scope", "user")
    assert result.returncode == 1, result.stdout
    assert "archive-v0" in result.stderr
    assert "uv tool install . (or pipx install .) in a checkout" in result.stderr
    assert "uv tool install mcp-hooks" not in result.stderr  # not on PyPI: it would fail
    assert not (tmp_path / "codex-home" / "hooks.json").exists()


def test_install_from_a_throwaway_environment_finds_a_stable_one(env: dict[str, str],
                                                                 tmp_path: Path) -> None:
    # a stable mcp-hooks on PATH wins over the throwaway one that runs install
    bin_dir = str(Path(MCP_HOOKS).parent)
    ok(_as_uvx(env, tmp_path, "install", "codex", "--scope", "user", "--event", "PreToolUse",
               path=f"{bin_dir}:/usr/bin:/bin"))
    command = our_commands("claude", (tmp_path / "codex-home" / "hooks.json").read_text())[
        "PreToolUse"]
    assert command.startswith(f"{MCP_HOOKS} bridge codex --event PreToolUse")
    # none on PATH but uvx: the pinned uvx form would fail until mcp-hooks is on PyPI, so
    # install refuses and says how to install it for good
    tools = tmp_path / "tools"
    tools.mkdir()
    uvx = tools / "uvx"
    uvx.write_text("#!/bin/sh\nexit 0\n")
    uvx.chmod(0o755)
    result = _as_uvx(env, tmp_path, "install", "codex", "--scope", "user", "--event",
                     "PreToolUse", path=f"{tools}:/usr/bin:/bin")
    assert result.returncode == 1 and "uv tool install ." in result.stderr, result.stderr
    assert "mcp-hooks==" not in (tmp_path / "codex-home" / "hooks.json").read_text()


def test_throwaway_places_are_recognised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_hooks.hosts.host_command import throwaway_reason

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uvc"))
    assert throwaway_reason(tmp_path / "uvc" / "builds-v0" / "bin" / "mcp-hooks")
    assert throwaway_reason(tmp_path / "home" / ".cache" / "uv" / "x" / "bin" / "mcp-hooks")
    assert throwaway_reason("/opt/x/archive-v0/abc/bin/mcp-hooks")
    assert throwaway_reason("/opt/x/.tmpAbC/bin/mcp-hooks")
    assert throwaway_reason(tmp_path / "home" / ".local" / "pipx" / ".cache" / "h" / "bin")
    assert throwaway_reason(tmp_path / "tmp" / "venv" / "bin" / "mcp-hooks")
    assert throwaway_reason(tmp_path / "home" / ".local" / "bin" / "mcp-hooks") is None
    assert throwaway_reason(MCP_HOOKS) is None  # the repo's .venv is not throwaway
    monkeypatch.setattr(tempfile, "tempdir", None)


def test_bridge_command_is_recognised_by_shape(env: dict[str, str], project: Path,
                                               tmp_path: Path) -> None:
    """Entries written with a --bridge-command that lacks "mcp-hooks" are still ours:
    re-installs never duplicate them and uninstall removes them (Kimi included)."""
    runner = tmp_path / "bin" / "hook-runner"
    runner.parent.mkdir()
    runner.write_text(f"#!/bin/sh\nexec {MCP_HOOKS} \"$@\"\n")
    runner.chmod(0o755)
    for host, rel, kind in (("kimi-cli", "kimi-share/config.toml", "kimi"),
                            ("cursor", "home/.cursor/hooks.json", "flat"),
                            ("claude-code", "home/.claude/settings.json", "claude")):
        args = ["install", host, "--scope", "user", "--bridge-command", str(runner)]
        ok(run(env, project, *args))
        path = tmp_path / rel
        first = path.read_text()
        commands = our_commands(kind, first)
        assert commands and all(c.startswith(f"{runner} bridge {host}")
                                for c in commands.values())
        ok(run(env, project, *args))
        assert path.read_text() == first
        # the same entries from another command: replaced, not added to
        ok(run(env, project, "install", host, "--scope", "user"))
        again = our_commands(kind, path.read_text())
        assert list(again) == list(commands)
        assert all(c.startswith(MCP_HOOKS) for c in again.values())
        ok(run(env, project, *args))
        ok(run(env, project, "uninstall", host, "--scope", "user"))
        assert not path.exists() or our_commands(kind, path.read_text()) == {}
    # the escape hatch for dev checkouts and tests: the same through the environment
    ok(run({**env, "MCP_HOOKS_BRIDGE_COMMAND": str(runner)}, project, "install", "codex",
           "--event", "PreToolUse"))
    command = our_commands("claude", (project / ".codex" / "hooks.json").read_text())
    assert command["PreToolUse"].startswith(f"{runner} bridge codex")


def test_install_and_doctor_name_no_host() -> None:
    """A host's knowledge lives in its own module: the generic modules hold no host name as a
    value to switch on (they read ``Host`` declarations instead)."""
    import ast

    import mcp_hooks.hosts
    from mcp_hooks.hosts import ALIASES, HOSTS

    names = {*HOSTS, *ALIASES}
    root = Path(mcp_hooks.hosts.__file__).parent
    for module in ("install.py", "configfile.py", "forward_script.py", "doctor.py", "bridge.py"):
        tree = ast.parse((root / module).read_text(encoding="utf-8"))
        named = [node.value for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and node.value in names]
        assert named == [], (module, named)


# -- generated configs: Cline's scripts, OpenCode's plugin -----------------------------------


def generated(host: str, path: Path) -> dict[str, str]:
    """Event -> our command, read back from what install generated."""
    if not path.exists():
        return {}
    texts = [p.read_text() for p in sorted(path.iterdir())] if path.is_dir() else [
        path.read_text()]
    found: dict[str, str] = {}
    for text in texts:
        found.update(generated_config(get_host(host)).config_commands(text) or {})
    return found


def _gen_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg-config")}


@pytest.mark.parametrize(("host", "scope", "rel"), GENERATED)
def test_generated_configs_install_uninstall_exactly_what_they_wrote(
        host: str, scope: str, rel: str, env: dict[str, str], project: Path,
        tmp_path: Path) -> None:
    env = _gen_env(env, tmp_path)
    path = tmp_path / rel
    folder = path if path.suffix != ".js" else path.parent
    folder.mkdir(parents=True)
    # the user's own files there: never touched (Cline also runs PreToolUse.sh)
    theirs = {folder / "PreToolUse.sh": "#!/bin/sh\necho '{}'\n", folder / "other.js": "//\n"}
    for mine, text in theirs.items():
        mine.write_text(text)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    ok(run(env, project, "install", host, "--scope", scope))
    commands = generated(host, path)
    assert sorted(commands) == sorted(get_host(host).install_events)
    start = "mcp-hooks" if scope == "project" else MCP_HOOKS
    for event, command in commands.items():
        assert command.startswith(f"{start} bridge {host} --event {event}")
    if path.is_dir():  # Cline: one executable script per event
        for event in commands:
            assert os.access(path / event, os.X_OK)
            assert (path / event).read_text().startswith("#!/bin/sh\n")
    snapshot = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert "already up to date" in ok(run(env, project, "install", host, "--scope", scope))
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == snapshot
    ok(run(env, project, "uninstall", host, "--scope", scope))
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()
             and "backups" not in p.parts}
    assert after == before
    assert "nothing to uninstall" in ok(run(env, project, "uninstall", host, "--scope", scope))


def test_a_generated_file_that_is_not_ours_is_never_replaced(env: dict[str, str],
                                                             project: Path,
                                                             tmp_path: Path) -> None:
    env = _gen_env(env, tmp_path)
    script = tmp_path / "home" / ".cline" / "hooks" / "PreToolUse"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\necho '{\"cancel\": false}'\n")
    result = run(env, project, "install", "cline")
    assert result.returncode == 1 and "not written by mcp-hooks" in result.stderr
    assert sorted(p.name for p in script.parent.iterdir()) == ["PreToolUse"]  # nothing else
    plugin = project / ".opencode" / "plugins" / "mcp-hooks.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("export const Mine = async () => ({});\n")
    result = run(env, project, "install", "opencode")
    assert result.returncode == 1 and "not written by mcp-hooks" in result.stderr
    left = ok(run(env, project, "uninstall", "opencode"))
    assert "holds no entries of mcp-hooks, nothing to uninstall" in left
    assert plugin.read_text() == "export const Mine = async () => ({});\n"


def test_cline_hooks_dir_and_dry_run(env: dict[str, str], project: Path,
                                     tmp_path: Path) -> None:
    """``--hooks-dir`` (the folder given to ``cline --hooks-dir``) is written instead; a dry
    run prints one diff per script and writes nothing."""
    folder = tmp_path / "my-cline-hooks"
    output = ok(run(env, project, "install", "cline", "--hooks-dir", str(folder), "--dry-run"))
    assert output.count("+++ ") == len(get_host("cline").install_events)
    assert not folder.exists()
    ok(run(env, project, "install", "cline", "--hooks-dir", str(folder),
           "--event", "before_tool"))
    assert sorted(p.name for p in folder.iterdir()) == ["PreToolUse"]
    ok(run(env, project, "uninstall", "cline", "--hooks-dir", str(folder)))
    assert not folder.exists()


@pytest.mark.parametrize(("host", "event", "fixture_name", "deny"), [
    ("qwen-code", "PreToolUse", "PreToolUse.rm",
     lambda o: o["hookSpecificOutput"]["permissionDecisionReason"]),
    ("cline", "PreToolUse", "PreToolUse.rm", lambda o: o["context"]),
    ("opencode", "tool.execute.before", "tool.execute.before.rm", lambda o: o["reason"]),
])
def test_the_new_hosts_written_commands_run_the_bridge(
        host: str, event: str, fixture_name: str, deny: Any, env: dict[str, str],
        project: Path, tmp_path: Path) -> None:
    """As each host runs what install wrote: Qwen a shell command, Cline its script (``sh``,
    from the shebang), OpenCode the plugin's argv (checked here through the same words)."""
    env = _gen_env(env, tmp_path)
    _deny_hook(project)
    ok(run(env, project, "install", host, "--event", "before_tool", "--scope", "project"))
    payload = (FIXTURES / host / f"{fixture_name}.json").read_text().replace(
        "$PROJECT", str(project))
    if host == "qwen-code":
        argv = ["sh", "-c", our_commands("claude", (project / ".qwen" / "settings.json")
                                         .read_text())[event]]
    elif host == "cline":
        argv = ["sh", str(project / ".clinerules" / "hooks" / event)]
    else:
        argv = ["sh", "-c", generated(host, project / ".opencode" / "plugins" /
                                      "mcp-hooks.js")[event]]
    result = subprocess.run(argv, input=payload, capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=60)
    assert "no rm here" in deny(json.loads(result.stdout)), result.stderr


def test_init_finds_the_new_hosts(env: dict[str, str], project: Path, tmp_path: Path) -> None:
    """``init`` wires a host whose program is on PATH or whose config folder exists."""
    from mcp_hooks.cli.setup import found_hosts

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("qwen", "cline", "opencode"):
        exe = bin_dir / program
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    home = tmp_path / "home"
    found = dict(found_hosts(home, str(bin_dir)))
    assert {"qwen-code", "cline", "opencode"} <= set(found)
    assert "qwen is on PATH" in found["qwen-code"]
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    assert found_hosts(home, str(empty)) == []
    (home / ".cline").mkdir()
    (home / ".qwen").mkdir()
    assert [n for n, _ in found_hosts(home, str(empty))] == ["qwen-code", "cline"]
