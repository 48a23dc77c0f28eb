"""The bundled protect-hooks hook, run as the engine runs it: the real script, JSON on stdin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.guard_cases import ALLOWED, DENIED, sh

LIBRARY = Path(__file__).resolve().parents[2] / "hooks"
SCRIPT = LIBRARY / "protect-hooks" / "scripts" / "run.py"
PREFIX = "Hook configuration protected:"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{}")
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "MCP_HOOKS_USER_DIR", "MCP_HOOKS_TRUST_STORE",
                "MCP_HOOKS_LOG", "MCP_HOOKS_MANAGED_DIR", "CODEX_HOME", "CLAUDE_CONFIG_DIR",
                "GEMINI_CLI_HOME", "COPILOT_HOME", "KIMI_SHARE_DIR", "AGENT_HOOKS_HOOK_DIR"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".agents" / "hooks" / "guard" / "scripts").mkdir(parents=True)
    (project / ".agents" / "hooks" / "guard" / "HOOK.md").write_text("---\n---\n")
    (project / "src").mkdir()
    return project


def run(project: Path, tool: str, tool_input: Any, script: Path = SCRIPT,
        **extra: Any) -> subprocess.CompletedProcess[str]:
    event = {"event_type": "before_tool", "tool_name": tool, "tool_input": tool_input,
             "work_dir": str(project), "session_id": "s", **extra}
    data = json.dumps(event).encode()
    done = subprocess.run([sys.executable, str(script)], input=data, capture_output=True,
                          cwd=project, timeout=30)
    return subprocess.CompletedProcess(done.args, done.returncode,
                                       done.stdout.decode(errors="replace"),
                                       done.stderr.decode(errors="replace"))


@pytest.mark.parametrize(("tool", "tool_input"), DENIED, ids=[f"{t}:{i}" for t, i in DENIED])
def test_denies(home: Path, project: Path, tool: str, tool_input: Any) -> None:
    if isinstance(tool_input, dict) and isinstance(tool_input.get("path"), str):
        tool_input = {**tool_input, "path": tool_input["path"].replace("/HOME", str(home))}
    done = run(project, tool, tool_input)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith(PREFIX) and "Ask the user" in done.stderr


@pytest.mark.parametrize(("tool", "tool_input"), ALLOWED, ids=[f"{t}:{i}" for t, i in ALLOWED])
def test_allows(home: Path, project: Path, tool: str, tool_input: Any) -> None:
    done = run(project, tool, tool_input)
    assert done.returncode == 0, done.stderr


def test_reason_names_the_refusal_the_location_and_the_way_out(home: Path,
                                                               project: Path) -> None:
    done = run(project, "Bash", sh("rm -rf .agents/hooks"))
    assert "`rm` of .agents/hooks" in done.stderr
    assert "a project hooks folder (.agents/hooks)" in done.stderr
    assert "ask the user" in done.stderr.lower() and "mcp-hooks trust" in done.stderr


def test_an_unknown_tool_is_told_where_it_is_declared_a_reader(home: Path,
                                                                project: Path) -> None:
    done = run(project, "mcp__tickets__attach", {"file": ".agents/hooks/guard/HOOK.md"})
    assert done.returncode == 2
    assert done.stderr.startswith(f"{PREFIX} refused mcp__tickets__attach naming "
                                  ".agents/hooks/guard/HOOK.md — a project hooks folder")
    assert (f"mcp__tickets__attach is an unknown tool treated as a write: declare it a reader "
            f"in {LIBRARY / 'protect-hooks' / 'HOOK.md'}, key metadata.readers "
            "(`readers: [attach]` under `metadata:`)") in done.stderr
    assert "Ask the user to declare it there" in done.stderr


def copy_of_the_hook(tmp_path: Path, readers: str) -> Path:
    """A user's copy of protect-hooks whose HOOK.md declares ``readers`` under metadata."""
    copy = tmp_path / "mine" / "protect-hooks"
    shutil.copytree(LIBRARY / "protect-hooks", copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    text = (copy / "HOOK.md").read_text()
    (copy / "HOOK.md").write_text(text.replace("\nmetadata:\n", f"\nmetadata:\n{readers}", 1))
    return copy / "scripts" / "run.py"


@pytest.mark.parametrize("readers", ["  readers: [attach, Frobnicate]\n",
                                     "  readers:\n    - mcp__tickets__attach\n"
                                     "    - frobnicate\n"])
def test_declared_readers_pass(home: Path, project: Path, tmp_path: Path, readers: str) -> None:
    script = copy_of_the_hook(tmp_path, readers)
    for tool, tool_input in [("mcp__tickets__attach", {"file": ".agents/hooks/guard"}),
                             ("frobnicate", {"path": "~/.claude/settings.json"})]:
        assert run(project, tool, tool_input, script=script).returncode == 0, tool
    assert run(project, "unknown", {"path": ".agents/hooks/x"}, script=script).returncode == 2
    # a shell tool is read for what its command writes, whatever the list says
    assert run(project, "Bash", sh("rm -rf .agents/hooks"), script=script).returncode == 2


def test_a_broken_readers_list_is_named(home: Path, project: Path, tmp_path: Path) -> None:
    script = copy_of_the_hook(tmp_path, "  readers: 7\n")
    done = run(project, "frobnicate", {"path": ".agents/hooks/x"}, script=script)
    assert done.returncode == 2
    assert (f"metadata.readers in {script.parent.parent / 'HOOK.md'} is ignored: it must be a "
            "list of tool names") in done.stderr


def test_environment_locations(home: Path, project: Path, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("MCP_HOOKS_USER_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("MCP_HOOKS_TRUST_STORE", str(tmp_path / "t.json"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "km"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cl"))
    monkeypatch.setenv("AGENT_HOOKS_HOOK_DIR", str(tmp_path / "lib" / "protect-hooks"))
    monkeypatch.setenv("MCP_HOOKS_MANAGED_DIR", str(tmp_path / "org"))
    for path in ("org/guard/HOOK.md", "org/hooks.yaml", "cfg/agents/hooks/x",
                 "cfg/mcp-hooks/token", "state/mcp-hooks/trust.json",
                 "mine/h/HOOK.md", "t.json", "cx/hooks.json", "cx/config.toml", "km/config.toml",
                 "cl/settings.json", "lib/other-hook/HOOK.md"):
        full = str(tmp_path / path)
        assert run(project, "WriteFile", {"path": full}).returncode == 2, path
        assert run(project, "Shell", sh(f"echo x > '{full}'")).returncode == 2, path
    assert run(project, "Shell", sh(f"rm -rf {tmp_path / 'state'}")).returncode == 2
    assert run(project, "Shell", sh(f"rm -rf {tmp_path / 'org'}")).returncode == 2
    assert run(project, "WriteFile", {"path": "/etc/agents/hooks/x/HOOK.md"}).returncode == 2
    assert run(project, "WriteFile", {"path": str(tmp_path / "cfg" / "other.txt")}).returncode == 0


def test_symlinks_are_resolved(home: Path, project: Path) -> None:
    (project / "innocent").symlink_to(project / ".agents" / "hooks")
    (project / "conf.json").symlink_to(home / ".claude" / "settings.json")
    assert run(project, "WriteFile", {"path": "innocent/guard/HOOK.md"}).returncode == 2
    assert run(project, "Shell", sh("echo {} > conf.json")).returncode == 2
    assert run(project, "Shell", sh("cat conf.json")).returncode == 0


@pytest.mark.parametrize("tool_input", [
    {"path": "src/\udcff\ud800.py", "content": "\udcff"},
    {"path": ["x"] * 10, "nested": {"a": [{"b": [[[["x"]]]]}]}},
    {"path": "a" * 2_000_000, "content": "b" * 2_000_000},
    {"path": None, "file_path": 12, "paths": [None, {}, []]},
    "just a string",
    [1, 2, 3],
])
def test_odd_input_is_answered_not_crashed(home: Path, project: Path, tool_input: Any) -> None:
    done = run(project, "WriteFile", tool_input)
    assert done.returncode == 0, done.stderr


def test_odd_commands_are_answered(home: Path, project: Path) -> None:
    deep: Any = {"x": 1}
    for _ in range(500):
        deep = {"x": deep}
    assert run(project, "WriteFile", {"path": "a.txt", "meta": deep}).returncode == 0
    assert run(project, "Shell", sh("echo " + "$(" * 300 + "x" + ")" * 300)).returncode == 0
    huge = "echo " + "a " * 200_000
    assert run(project, "Shell", sh(huge)).returncode == 0
    assert run(project, "Shell", sh(huge + "; rm .agents/hooks/x")).returncode == 2
    assert run(project, "Shell", sh("rm \udcff .agents/hooks")).returncode == 2
    assert run(project, "Shell", sh(None)).returncode == 0
    assert run(project, "Shell", sh("")).returncode == 0


@pytest.mark.parametrize("command", [
    "rm " + " ".join(f"w{i}" for i in range(40_000)),  # past the size the shell parser reads
    "rm " + " ".join(f"w{i}" for i in range(12_000)),  # parsed, but more paths than it checks
    "x=$(ls); rm $x " + " ".join(f"w{i}" for i in range(12_000)),
    "rm " + " ".join(f"/tmp/*/w{i}*" for i in range(1_000)),  # each wildcard lists folders
])
def test_more_paths_than_it_checks_are_refused_with_the_way_out(home: Path, project: Path,
                                                                command: str) -> None:
    done = run(project, "Shell", sh(command))
    assert done.returncode == 2
    assert "names more paths than the 10000 this guard checks per call" in done.stderr
    assert "Split it into smaller calls" in done.stderr
    done = run(project, "WriteFile", {"paths": [f"a/b{i}" for i in range(12_000)]})
    assert done.returncode == 2 and "Split it" in done.stderr


def test_unreadable_event_is_refused(project: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], input=b"{not json", capture_output=True,
                          cwd=project, timeout=30)
    assert done.returncode == 2 and PREFIX.encode() in done.stderr


def test_it_is_fast(home: Path, project: Path) -> None:
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([sys.executable, "-X", "importtime", str(SCRIPT)],
                          input=json.dumps({"tool_name": "Shell", "tool_input": sh("ls"),
                                            "work_dir": str(project)}).encode(),
                          capture_output=True, cwd=project, env=env, timeout=30)
    assert done.returncode == 0
    heavy = {"asyncio", "subprocess", "pathlib", "typing", "email", "urllib"}
    imported = {line.split("|")[-1].strip().split(".")[0]
                for line in done.stderr.decode().splitlines() if "|" in line}
    assert not heavy & imported


@pytest.mark.parametrize("command", [
    "rm -rf build/* dist/*", "rm -f *.pyc", "cp notes.txt .", "cp -r src /tmp/x && cp a.txt src/",
    "mv old.txt new.txt", "rsync -a src/ /tmp/backup/", "tar czf /tmp/b.tgz .agents",
    "git commit -m 'touch .claude/settings.json'", "npm install && pip install -e .",
])
def test_everyday_commands_in_a_project_with_hooks_pass(home: Path, project: Path,
                                                        command: str) -> None:
    (project / "build").mkdir()
    done = run(project, "Shell", sh(command))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("command", ["rm -rf .*", "cp -r /tmp/evil/hooks .agents/",
                                     "mv /tmp/x .agents", "rsync -a --delete /tmp/empty/ ./"])
def test_replacing_a_folder_that_holds_hooks_is_refused(home: Path, project: Path,
                                                         command: str) -> None:
    assert run(project, "Shell", sh(command)).returncode == 2


@pytest.mark.parametrize("command", ["rm -rf /", "rm -rf /*", "rm -rf ~", "chmod -R 777 /"])
def test_deleting_everything_is_left_to_block_dangerous_commands(home: Path, project: Path,
                                                                 command: str) -> None:
    assert run(project, "Shell", sh(command)).returncode == 0
