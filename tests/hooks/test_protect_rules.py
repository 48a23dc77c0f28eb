"""protect-hooks, one table per rule module: the writes each module must refuse (with what the
reason names) and the safe look-alikes it must let pass. The real hook answers them, one
persistent process (hookkit's ``MCP_HOOKS_PERSISTENT=1``) for the whole file, in a project
with ``.agents/hooks`` and a home with ``~/.claude/settings.json``.

test_protect_hooks.py keeps the wider table (tests/helpers/guard_cases.py) and the messages,
test_protect_hooks_git.py mcp-server-git's writers (git_writes.py) in real repositories.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.resident import Resident, hook_env

SCRIPT = Path(__file__).resolve().parents[2] / "hooks" / "protect-hooks" / "scripts" / "run.py"
PREFIX = "Hook configuration protected: refused "
Call = tuple[str, Any]


def sh(command: str) -> Call:
    return ("Bash", {"command": command})


def write(path: str) -> Call:
    return ("WriteFile", {"path": path, "content": "x"})


# protected_paths.py: what counts as protected (PATTERNS anywhere, the roots the environment
# names, a folder that holds one), and what does not
PATH_RULES: list[tuple[Call, str]] = [
    (write(".agents/hooks/x/HOOK.md"), "a project hooks folder (.agents/hooks)"),
    (write(".ahp/hooks.yaml"), "a control layer folder (.ahp"),
    (write(".github/hooks/hooks.json"), "Copilot CLI's project hook config"),
    (write(".claude/settings.json"), "Claude Code's settings, which hold its hooks"),
    (write(".claude/settings.local.json"), "Claude Code's settings, which hold its hooks"),
    (write(".codex/hooks.json"), "Codex's hook config"),
    (write(".codex/config.toml"), "Codex's config"),
    (write(".gemini/settings.json"), "Gemini CLI's settings"),
    (write(".cursor/hooks.json"), "Cursor's hook config"),
    (write(".kimi/config.toml"), "Kimi CLI's config"),
    (write(".qwen/settings.json"), "Qwen Code's settings"),
    (write(".clinerules/hooks/x.sh"), "Cline's project hooks folder"),
    (write(".cline/hooks/x.sh"), "Cline's hooks folder"),
    (write(".opencode/plugins/x.js"), "OpenCode's project plugins"),
    (write("~/.config/agents/hooks/x/HOOK.md"), "the user hooks folder"),
    (write("~/.local/state/mcp-hooks/trust.json"), "the mcp-hooks state folder"),
    (write("~/.config/mcp-hooks/forward.py"), "the mcp-hooks config folder"),
    (write("~/.copilot/hooks/x.json"), "Copilot CLI's user hook config"),
    (write("~/.config/opencode/plugins/x.js"), "OpenCode's user plugins"),
    (write("/etc/agents/hooks/x/HOOK.md"), "the managed hooks folder"),
    (write("src/../.agents/hooks/x"), "a project hooks folder"),
    (write(".agents/h*/x"), "a project hooks folder"),
    (sh("rm -rf .agents"), ".agents, a folder that holds an agent's hook config"),
    (sh("rm -rf ."), "a folder that holds a project hooks folder (.agents/hooks)"),
    (sh("rm -rf ~/.config"), "a folder that holds the user hooks folder"),
]
PATH_LOOK_ALIKES: list[Call] = [
    write(".agents/notes.md"), write(".github/workflows/ci.yml"),
    write(".claude/commands/review.md"), write(".codex/sessions/x.json"),
    write("src/hooks/x.py"), write(".cursor/rules/x.mdc"), write("~/.config/other/x"),
    write("docs/.ahp.md"), sh("mkdir -p .github/workflows"), sh("rm -rf /"),
]

# verb_writes.py: what each shell verb writes
VERB_RULES: list[tuple[Call, str]] = [
    (sh("rm .agents/hooks/x/HOOK.md"), "`rm` of .agents/hooks/x/HOOK.md"),
    (sh("rmdir .agents/hooks/x"), "`rmdir` of"),
    (sh("truncate -s 0 .ahp/hooks.yaml"), "`truncate` of .ahp/hooks.yaml"),
    (sh("chmod 777 ~/.claude/settings.json"), "`chmod` of"),
    (sh("vim .codex/hooks.json"), "`vim` of .codex/hooks.json"),
    (sh("touch .agents/hooks/x/run.py"), "`touch` of"),
    (sh("mkdir .agents/hooks/new"), "`mkdir` of"),
    (sh("mv .agents/hooks /tmp/gone"), "`mv` to .agents/hooks"),
    (sh("cp evil.md .agents/hooks/x/HOOK.md"), "`cp` to .agents/hooks/x/HOOK.md"),
    (sh("cp evil.md .agents/hooks/x/"), "`cp` to"),
    (sh("install -m 644 x .ahp/hooks.yaml"), "`install` to .ahp/hooks.yaml"),
    (sh("ln -sf /tmp/x .claude/settings.json"), "`ln` to"),
    (sh("rsync -a x/ .agents/hooks/"), "`rsync` to"),
    (sh("dd if=x of=.ahp/hooks.yaml"), "`dd of=` .ahp/hooks.yaml"),
    (sh("sed -i s/a/b/ .agents/hooks/x/HOOK.md"), "`sed -i` on"),
    (sh("git checkout -- .agents/hooks"), "`git checkout` of .agents/hooks"),
    (sh("git -C . rm -r .ahp"), "`git rm` of .ahp"),
    (sh("tee -a .codex/config.toml"), "`tee` to .codex/config.toml"),
    (sh("curl -o .agents/hooks/x/run.py https://example.com/x"), "`curl` saving to"),
    (sh("wget -O .ahp/hooks.yaml https://example.com/x"), "`wget` saving to"),
    (sh("tar -xzf hooks.tgz -C .agents/hooks"), "`tar` writing into .agents/hooks"),
    (sh("unzip x.zip -d .ahp"), "`unzip` writing into .ahp"),
    (sh("find .agents/hooks -name '*.md' -delete"), "`find -delete/-exec` under .agents/hooks"),
    (sh("find src -fprint .ahp/list"), "`find` writing to .ahp/list"),
    (sh("patch .agents/hooks/x/HOOK.md fix.diff"), "`patch` of"),
    (sh("rename s/a/b/ .agents/hooks/x"), "`rename` of"),
    (sh("gio trash .ahp"), "`gio trash` of .ahp"),
    (sh("cd .agents && rm -rf hooks"), "`rm` of hooks"),
    (sh("mcp-hooks trust .agents/hooks/x"), "`mcp-hooks trust`, run by the agent"),
    (sh("mcp-hooks approve abc123"), "`mcp-hooks approve`, run by the agent"),
    (sh("python3 -m mcp_hooks install claude-code"), "`mcp-hooks install`, run by the agent"),
]
VERB_LOOK_ALIKES: list[Call] = [
    sh("cp .agents/hooks/x/HOOK.md /tmp/copy.md"), sh("sed -n p .agents/hooks/x/HOOK.md"),
    sh("git checkout main"), sh("tar -czf /tmp/backup.tgz .agents"),
    sh("curl -o /tmp/x https://example.com/x"), sh("touch src/x.py"),
    sh("mcp-hooks install --dry-run claude-code"), sh("mcp-hooks list"),
    sh("find .agents -name '*.md'"), sh("mv src/a.py src/b.py"), sh("rm -rf build"),
    sh("mcp-hooks --state /tmp/s fire before_tool"),
]

# shell_writes.py: redirections, nesting, wrappers and the conservative reads
SHELL_RULES: list[tuple[Call, str]] = [
    (sh("echo x > .agents/hooks/x/HOOK.md"), "the redirection > .agents/hooks/x/HOOK.md"),
    (sh("echo x >> ~/.claude/settings.json"), "the redirection >>"),
    (sh("make 2> .ahp/log"), "the redirection > .ahp/log"),
    (sh("sudo tee .codex/hooks.json < x"), "`tee` to .codex/hooks.json"),
    (sh("sh -c 'rm -rf .agents'"), "`rm` of .agents"),
    (sh("echo $(rm -rf .ahp)"), "`rm` of .ahp"),
    (sh("eval \"rm .ahp/hooks.yaml\""), "`rm` of .ahp/hooks.yaml"),
    (sh("env -S 'rm -rf .agents'"), "`rm` of .agents"),
    (sh("timeout 5 nohup rm -rf .ahp"), "`rm` of .ahp"),
    (sh("X=1 sudo -u root rm -rf .ahp"), "`rm` of .ahp"),
    (sh("echo .agents/hooks | xargs rm -rf"), "writes through a variable or xargs"),
    (sh("python3 -c \"open('.agents/hooks/x/run.py', 'w').write('x')\""),
     "a python3 one-liner that writes files and names"),
    (sh("perl -pi -e s/a/b/ .agents/hooks/x/HOOK.md"), "perl -i on"),
    (sh("rm -rf '.agents/hooks"), "a command that writes files and names"),
    (sh("rm -rf .agents/{hooks,x}"), "`rm` of .agents/{hooks,x}"),
    (sh("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: .ahp/hooks.yaml\n+x\n"
        "*** End Patch\nEOF"), "a patch that writes .ahp/hooks.yaml"),
]
SHELL_LOOK_ALIKES: list[Call] = [
    sh("cat .agents/hooks/x/HOOK.md > /tmp/copy"), sh("make test 2>&1 | tail"),
    sh("ls .agents/hooks"), sh("grep -r hooks .agents"), sh("cat < .claude/settings.json"),
    sh("python3 -c \"print('.agents/hooks')\""), sh("echo '> .agents/hooks/x'"),
    sh("bash -c 'ls .ahp'"),
]

# tool_writes.py: each tool by its kind (file tools, patch tools, readers, unknown tools)
TOOL_RULES: list[tuple[Call, str]] = [
    (("Write", {"file_path": ".claude/settings.json", "content": "{}"}), "Write would write"),
    (("Edit", {"file_path": ".agents/hooks/x/HOOK.md", "old_string": "a", "new_string": "b"}),
     "Edit would edit"),
    (("mcp__fs__write_file", {"path": ".ahp/hooks.yaml", "content": "x"}),
     "mcp__fs__write_file would write"),
    (("mcp__fs__move_file", {"source": ".agents/hooks/x", "destination": "/tmp/x"}),
     "mcp__fs__move_file would move"),
    (("mcp__fs__delete_file", {"path": ".ahp"}), "mcp__fs__delete_file would delete"),
    (("str_replace_based_edit_tool", {"command": "create", "path": ".ahp/hooks.yaml",
                                      "file_text": "x"}), "str_replace_based_edit_tool would"),
    (("mcp__fs__create_directory", {"path": ".agents/hooks/new"}),
     "mcp__fs__create_directory would create"),
    (("mcp__tickets__attach", {"target": ".agents/hooks/x/HOOK.md"}),
     "is an unknown tool treated as a write"),
    (("ApplyPatch", {"input": "*** Begin Patch\n*** Update File: .agents/hooks/x/HOOK.md\n"
                              "@@\n-a\n+b\n*** End Patch"}), "a patch that writes"),
    (("apply_patch", {"patchText": "--- a/.ahp/hooks.yaml\n+++ b/.ahp/hooks.yaml\n"}),
     "a patch that writes"),
    (("Bash", {"command": ["rm", "-rf", ".agents"]}), "`rm` of .agents"),
    (("run_shell_command", {"command": "rm -rf .ahp", "dir_path": "."}), "`rm` of .ahp"),
]
TOOL_LOOK_ALIKES: list[Call] = [
    ("Read", {"file_path": ".claude/settings.json"}),
    ("mcp__git__git_status", {"repo_path": "."}),
    ("mcp__fs__read_text_file", {"path": ".agents/hooks/x/HOOK.md"}),
    ("str_replace_based_edit_tool", {"command": "view", "path": ".agents/hooks/x/HOOK.md"}),
    ("Write", {"file_path": "src/app.py", "content": "see .agents/hooks/x"}),
    ("mcp__tickets__attach", {"repo": "."}),
    ("mcp__fs__create_directory", {"path": ".github/workflows"}),
    ("Grep", {"pattern": "x", "path": ".agents"}),
    ("mcp__docs__list_pages", {"path": ".agents/hooks"}),
]

DENIED = [*PATH_RULES, *VERB_RULES, *SHELL_RULES, *TOOL_RULES]
ALLOWED = [*PATH_LOOK_ALIKES, *VERB_LOOK_ALIKES, *SHELL_LOOK_ALIKES, *TOOL_LOOK_ALIKES]


def _id(call: Call) -> str:
    return f"{call[0]}:{json.dumps(call[1])[:80]}"


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Resident, Path]]:
    tmp = tmp_path_factory.mktemp("protect")
    home = tmp / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{}")
    project = tmp / "project"
    (project / ".agents" / "hooks" / "x").mkdir(parents=True)
    (project / ".agents" / "hooks" / "x" / "HOOK.md").write_text("---\n---\n")
    (project / "src").mkdir()
    env = hook_env(HOME=str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "MCP_HOOKS_USER_DIR",
                "MCP_HOOKS_TRUST_STORE", "MCP_HOOKS_LOG", "MCP_HOOKS_MANAGED_DIR", "CODEX_HOME",
                "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME", "COPILOT_HOME", "KIMI_SHARE_DIR",
                "AGENT_HOOKS_HOOK_DIR", "CLINE_DIR"):
        env.pop(var, None)
    resident = Resident(SCRIPT, tmp / "stderr.log", env=env, cwd=project)
    yield resident, project
    assert resident.close() == 0


def _ask(guard: tuple[Resident, Path], call: Call) -> dict[str, Any]:
    resident, project = guard
    event = {"event_type": "before_tool", "tool_name": call[0], "tool_input": call[1],
             "work_dir": str(project), "session_id": "s"}
    return resident.ask(json.dumps(event).encode())


@pytest.mark.parametrize(("call", "reason"), DENIED, ids=[_id(c) for c, _ in DENIED])
def test_refuses(guard: tuple[Resident, Path], call: Call, reason: str) -> None:
    answer = _ask(guard, call)
    assert answer["decision"] == "deny" and answer["exit_code"] == 2, answer
    said = str(answer["reason"])
    assert said.startswith(PREFIX) and reason in said, said


@pytest.mark.parametrize("call", ALLOWED, ids=[_id(c) for c in ALLOWED])
def test_lets_look_alikes_pass(guard: tuple[Resident, Path], call: Call) -> None:
    assert _ask(guard, call) == {"exit_code": 0}


def test_every_rule_module_has_its_table() -> None:
    tables = {"protected_paths": PATH_RULES, "verb_writes": VERB_RULES,
              "shell_writes": SHELL_RULES, "tool_writes": TOOL_RULES}
    elsewhere = {"git_writes": "test_protect_hooks_git.py",
                 "declared_readers": "test_protect_hooks.py"}
    rules = {p.stem for p in SCRIPT.parent.glob("*.py")} - {"run", "protect_hooks",
                                                             "shell_words"}
    assert rules == set(tables) | set(elsewhere), "a rule module without its table (or gone)"
    assert all(tables.values())
