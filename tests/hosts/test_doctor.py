"""``mcp-hooks doctor`` through the real console script: real host configs written by
``mcp-hooks install`` in temporary homes, the written commands really run against a probe
hook, real hook folders, a real server and a fake listener for ``--via server``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.doctor_runs import doctor, home_env, run
from tests.helpers.forward_served import TOKEN, fake_listener, served


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return home_env(tmp_path)


def installed(env: dict[str, str], project: Path, *args: str) -> None:
    result = run(env, project, "install", *args)
    assert result.returncode == 0, result.stderr


def test_a_healthy_install_passes(env: dict[str, str], project: Path, user_dir: Path) -> None:
    installed(env, project, "claude-code", "--scope", "user")  # this repo venv's mcp-hooks
    installed(env, project, "cursor")  # project scope: plain `mcp-hooks` on PATH
    installed(env, project, "kimi-cli", "--event", "PreToolUse")
    write_hook(user_dir, "fine")
    code, report = doctor(env, project, user_dir)
    assert code == 0, report["problems"]
    assert report["ok"] is True and report["problems"] == []
    wired = {(w["host"], w["scope"]): w for w in report["hosts"]}
    assert set(wired) == {("claude-code", "user"), ("cursor", "project"), ("kimi-cli", "user")}
    for w in wired.values():
        assert w["probe"]["ok"] is True, w["probe"]
        assert all(w["resolves"].values())
    assert wired["cursor", "project"]["resolves"] == {"mcp-hooks": True}
    assert "PreToolUse" in wired["claude-code", "user"]["events"]
    assert report["hooks"]["valid"] == 1 and report["hooks"]["invalid"] == []
    assert report["files"]["event_log"]["status"] == "writable"
    assert report["files"]["trust_store"]["status"] == "writable"
    text = run(env, project, "doctor", "--user-dir", str(user_dir))
    assert text.returncode == 0 and "the gate is whole" in text.stdout


def test_a_wired_command_that_no_longer_exists(env: dict[str, str], project: Path,
                                               user_dir: Path, tmp_path: Path) -> None:
    runner = tmp_path / "gone" / "hook-runner"
    runner.parent.mkdir()
    runner.write_text(f"#!/bin/sh\nexec {MCP_HOOKS} \"$@\"\n")
    runner.chmod(0o755)
    installed(env, project, "codex", "--scope", "user", "--bridge-command", str(runner))
    assert doctor(env, project, user_dir)[0] == 0
    runner.unlink()
    code, report = doctor(env, project, user_dir)
    assert code == 1 and report["ok"] is False
    (wiring,) = report["hosts"]
    assert wiring["host"] == "codex" and wiring["resolves"] == {str(runner): False}
    assert wiring["probe"]["ok"] is False
    missing = [p for p in report["problems"] if str(runner) in p["what"]]
    assert missing and "does not exist" in missing[0]["what"]
    assert "mcp-hooks install codex" in missing[0]["fix"]
    text = run(env, project, "doctor", "--user-dir", str(user_dir))
    assert text.returncode == 1 and "PROBLEM" in text.stdout and "fix:" in text.stdout


def test_a_host_command_that_does_not_deny_is_found(env: dict[str, str], project: Path,
                                                    user_dir: Path, tmp_path: Path) -> None:
    """A command that runs but lets everything through (here: `true`) is not a gate."""
    liar = tmp_path / "bin" / "allow-all"
    liar.parent.mkdir()
    liar.write_text("#!/bin/sh\ncat >/dev/null\nexit 0\n")
    liar.chmod(0o755)
    installed(env, project, "gemini-cli", "--bridge-command", str(liar))
    code, report = doctor(env, project, user_dir)
    assert code == 1
    (wiring,) = report["hosts"]
    assert wiring["resolves"] == {str(liar): True} and wiring["probe"]["ok"] is False
    assert any("did not deny the probe" in p["what"] for p in report["problems"])


def test_an_invalid_hook_is_reported(env: dict[str, str], project: Path,
                                     user_dir: Path) -> None:
    installed(env, project, "claude-code", "--scope", "user", "--event", "PreToolUse")
    broken = user_dir / "broken"
    broken.mkdir()
    (broken / "HOOK.md").write_text("---\nname: broken\ntrigger: nonsense\n---\n")
    code, report = doctor(env, project, user_dir)
    assert code == 1
    (invalid,) = report["hooks"]["invalid"]
    assert invalid["name"] == "broken"
    problem = next(p for p in report["problems"] if "invalid hook" in p["what"])
    assert "mcp-hooks validate" in problem["fix"]
    # the probe itself is not disturbed by the user's broken hook: it runs in its own folder
    assert report["hosts"][0]["probe"]["ok"] is True


def test_nothing_wired_is_a_warning(env: dict[str, str], project: Path,
                                    user_dir: Path) -> None:
    code, report = doctor(env, project, user_dir)
    assert code == 0 and report["hosts"] == []
    assert any("no agent host is wired" in w["what"] for w in report["warnings"])


def test_via_server_the_server_must_authenticate(env: dict[str, str], project: Path,
                                                 user_dir: Path, tmp_path: Path) -> None:
    env = {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with served(project, user_dir, tmp_path / "events.jsonl", "--token", TOKEN) as base:
        installed(env, project, "codex", "--scope", "user", "--via", "server", "--url", base,
                  "--token", TOKEN, "--event", "PreToolUse")
        code, report = doctor(env, project, user_dir)
        assert code == 0, report["problems"]
        (wiring,) = report["hosts"]
        assert wiring["server"]["status"] == "answers and authenticates"
        assert wiring["probe"]["ok"] is True  # the local fallback denies too
        assert wiring["resolves"][sys.executable] is True
    # the server gone: the local bridge still answers, a warning
    code, report = doctor(env, project, user_dir)
    assert code == 0 and report["hosts"][0]["server"]["status"].startswith("not answering")
    # something else on the port that answers "allow": broken
    with fake_listener(b"", {}) as (fake, _):
        installed(env, project, "codex", "--scope", "user", "--via", "server", "--url", fake,
                  "--token", TOKEN, "--event", "PreToolUse")
        code, report = doctor(env, project, user_dir)
    assert code == 1
    assert report["hosts"][0]["server"]["status"] == "not authenticated"
    # a token the server does not know: broken
    with served(project, user_dir, tmp_path / "events2.jsonl", "--token", "other") as base:
        installed(env, project, "codex", "--scope", "user", "--via", "server", "--url", base,
                  "--token", TOKEN, "--event", "PreToolUse")
        code, report = doctor(env, project, user_dir)
    assert code == 1 and report["hosts"][0]["server"]["status"] == "wrong token"


def test_an_untrusted_project_hook_is_reported(env: dict[str, str], project: Path,
                                               user_dir: Path, project_hooks: Path) -> None:
    env = {k: v for k, v in env.items() if k != "MCP_HOOKS_TRUST_PROJECT_HOOKS"}
    write_hook(project_hooks, "from-the-repo")
    code, report = doctor(env, project, user_dir, "--project-dir", str(project))
    assert code == 1
    assert [u["name"] for u in report["hooks"]["untrusted"]] == ["from-the-repo"]
    problem = next(p for p in report["problems"] if "from-the-repo" in p["what"])
    assert "mcp-hooks trust" in problem["fix"]


def test_identical_user_and_project_copies_are_recognised(env: dict[str, str], project: Path,
                                                          user_dir: Path) -> None:
    """What the Quick start leaves: the same bundled guard in both folders. Not a thing to
    rename; a project copy that differs is."""
    folders = ["--user-dir", str(user_dir), "--project-dir", str(project)]
    for scope in ("user", "project"):
        added = run(env, project, "add", "block-dangerous-commands", "--scope", scope, *folders)
        assert added.returncode == 0, added.stderr
    code, report = doctor(env, project, user_dir, "--project-dir", str(project))
    assert code == 0, report["problems"]
    assert report["hooks"]["identical"] == ["block-dangerous-commands"]
    assert not any("rename" in (w["fix"] or "") for w in report["warnings"])
    (note,) = report["notes"]
    assert "'block-dangerous-commands' is in both the user and the project folder, byte for " \
           "byte the same: it runs once" in note["what"]
    text = run(env, project, "doctor", *folders).stdout
    assert "1 replaced (1 by an identical copy)" in text and "rename" not in text

    copy = project / ".agents" / "hooks" / "block-dangerous-commands" / "HOOK.md"
    copy.write_text(copy.read_text() + "\nOur own note.\n")
    run(env, project, "trust", "--yes", *folders)
    code, report = doctor(env, project, user_dir, "--project-dir", str(project))
    assert report["hooks"]["identical"] == [] and report["notes"] == []
    (shadowed,) = [w for w in report["warnings"] if "shadows" in w["what"]]
    assert "which differs from it" in shadowed["what"] and "rename one" in shadowed["fix"]


def test_no_host_wired_is_said_in_the_verdict(env: dict[str, str], project: Path,
                                              user_dir: Path) -> None:
    done = run(env, project, "doctor", "--user-dir", str(user_dir))
    assert done.returncode == 0
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("0 problem(s), 1 warning(s): no host is wired")
    assert "the gate is whole" not in done.stdout


@pytest.mark.parametrize(("host", "scope"), [("qwen-code", "project"), ("cline", "user"),
                                             ("cline", "project"), ("opencode", "project"),
                                             ("opencode", "user")])
def test_the_new_hosts_are_probed_through_what_install_wrote(
        host: str, scope: str, env: dict[str, str], project: Path, user_dir: Path) -> None:
    """Qwen's settings, Cline's folder of scripts and OpenCode's plugin: doctor reads our
    entries back and runs the gate's command with the host's own payload; a broken one (the
    Cline script's command, the plugin's) is a problem."""
    installed(env, project, host, "--scope", scope)
    code, report = doctor(env, project, user_dir, "--host", host)
    assert code == 0, report["problems"]
    (wired,) = report["hosts"]
    assert (wired["host"], wired["scope"]) == (host, scope)
    assert wired["probe"]["ok"] is True, wired["probe"]
    assert wired["probe"]["event"] in ("PreToolUse", "tool.execute.before")
    # break the written command (a program that is not there): the probe must find it
    path = Path(wired["file"])
    target = path / "PreToolUse" if path.is_dir() else path
    target.write_text(target.read_text().replace(MCP_HOOKS, "mcp-hooks")
                      .replace("mcp-hooks bridge", "/gone/mcp-hooks bridge")
                      .replace('"mcp-hooks",', '"/gone/mcp-hooks",'))
    code, report = doctor(env, project, user_dir, "--host", host)
    assert code == 1
    problems = " ".join(p["what"] for p in report["problems"])
    assert "/gone/mcp-hooks" in problems and "did not deny the probe" in problems, problems


def test_an_old_python_dash_m_command_is_a_problem(env: dict[str, str], project: Path,
                                                   user_dir: Path) -> None:
    """What install wrote before: ``<python> -m mcp_hooks.cli bridge ...``. Its probe passes
    (doctor runs it in a folder of its own), but hosts run it in the project, where a cloned
    repository's ``mcp_hooks/`` comes first: a problem naming the file and the fix."""
    settings = Path(env["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    old = f"{sys.executable} -m mcp_hooks.cli bridge claude-code --event PreToolUse"
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [
        {"hooks": [{"type": "command", "command": old}]}]}}, indent=2) + "\n")
    code, report = doctor(env, project, user_dir)
    assert code == 1
    (problem,) = [p for p in report["problems"] if "project folder" in p["what"]]
    assert str(settings) in problem["what"] and "without -I or -P" in problem["what"]
    assert "mcp-hooks install claude-code --scope user" in problem["fix"]
    assert report["hosts"][0]["probe"]["ok"] is True  # the probe alone would not see it
    installed(env, project, "claude-code", "--scope", "user")  # the fix, as printed
    code, report = doctor(env, project, user_dir)
    assert code == 0, report["problems"]


def test_a_forged_opencode_plugin_is_a_problem(env: dict[str, str], project: Path,
                                               user_dir: Path) -> None:
    """The probe runs the commands a plugin names, not the plugin: one that names ours but
    lets every call through must be found by comparing it with what install writes."""
    installed(env, project, "opencode", "--scope", "project")
    plugin = project / ".opencode" / "plugins" / "mcp-hooks.js"
    written = plugin.read_text()
    assert doctor(env, project, user_dir, "--host", "opencode")[0] == 0
    deny = 'if (answer.decision === "deny") throw'
    assert deny in written
    plugin.write_text(written.replace(deny, "if (false) throw"))  # our marker, our commands
    code, report = doctor(env, project, user_dir, "--host", "opencode")
    assert code == 1
    assert report["hosts"][0]["probe"]["ok"] is True  # the commands still deny
    (problem,) = [p for p in report["problems"] if str(plugin) in p["what"]]
    assert "forged, edited, or written by another version" in problem["what"]
    assert "mcp-hooks install opencode --scope project" in problem["fix"]
    installed(env, project, "opencode", "--scope", "project")  # the fix rewrites it
    assert plugin.read_text() == written
    assert doctor(env, project, user_dir, "--host", "opencode")[0] == 0


def test_a_pythonpath_read_as_the_current_folder_is_a_problem(
        env: dict[str, str], project: Path, user_dir: Path) -> None:
    installed(env, project, "cursor")
    code, report = doctor({**env, "PYTHONPATH": f"{os.pathsep}/opt/lib"}, project, user_dir)
    assert code == 1
    (problem,) = [p for p in report["problems"] if "PYTHONPATH" in p["what"]]
    assert "''" in problem["what"] and "remove the empty" in problem["fix"]


def test_a_forward_script_falling_back_to_python_dash_m_is_a_problem(
        env: dict[str, str], project: Path, user_dir: Path) -> None:
    """A ``--via server`` entry runs our forward script, which runs the bridge itself when no
    server answers: that fallback must not import from the project folder either."""
    env = {**env, "MCP_HOOKS_TOKEN": TOKEN}
    installed(env, project, "claude-code", "--scope", "user", "--via", "server", "--url",
              "http://127.0.0.1:9", "--event", "PreToolUse")
    script = Path(env["XDG_CONFIG_HOME"]) / "mcp-hooks" / "mcp-hooks-forward.py"
    text = script.read_text()
    assert f"BRIDGE = {[MCP_HOOKS]!r}\n" in text
    code, report = doctor(env, project, user_dir)
    assert code == 0, report["problems"]  # the server is down: a warning only
    script.write_text(text.replace(f"BRIDGE = {[MCP_HOOKS]!r}\n",
                                   f"BRIDGE = {[sys.executable, '-m', 'mcp_hooks.cli']!r}\n"))
    code, report = doctor(env, project, user_dir)
    assert code == 1
    (problem,) = [p for p in report["problems"] if "project folder" in p["what"]]
    assert str(script) in problem["what"] and "falls back to" in problem["what"]
    assert "mcp-hooks install claude-code --via server --scope user" in problem["fix"]
