"""The bundled hook library (``mcp_hooks.registry.bundle``), ``mcp-hooks add`` and ``mcp-hooks
init``.

The library is listed from the package; copies keep modes and leave byte-code out; a hook
already there is left alone unless ``--force`` (which keeps a backup); project copies are
trusted. ``init`` adds the recommended guards, wires the hosts it finds (program on PATH or
config folder) or is told, prints a ``fire`` line that really is denied, and changes nothing
the second time. Commands run as real subprocesses with a home folder of their own.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from mcp_hooks.cli import setup
from mcp_hooks.hosts import HOSTS, get_host
from mcp_hooks.registry import bundle
from mcp_hooks.registry.digest import hook_digest
from mcp_hooks.registry.trust import TrustStore
from tests.conftest import MCP_HOOKS

LIBRARY = Path(__file__).resolve().parents[2] / "hooks"
HOST_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "COPILOT_HOME",
            "KIMI_SHARE_DIR")


# -- the library -----------------------------------------------------------------------------


def test_every_library_folder_is_listed_with_what_add_list_shows() -> None:
    hooks = bundle.bundled_hooks()
    folders = sorted(p.name for p in LIBRARY.iterdir() if (p / "HOOK.md").is_file())
    assert [h.name for h in hooks] == folders and len(folders) >= 7
    by_name = {h.name: h for h in hooks}
    assert set(bundle.RECOMMENDED) <= set(by_name)
    guard = by_name["block-dangerous-commands"]
    assert guard.event == "before_tool" and guard.trigger == "pre-tool-call"
    assert guard.fail_closed and guard.recommended
    assert not by_name["session-summary"].fail_closed
    assert not by_name["session-summary"].recommended
    for hook in hooks:
        assert hook.summary and "\n" not in hook.summary
        assert hook.description.startswith(hook.summary)
        assert hook.path == LIBRARY / hook.name
    # one sentence, not cut inside "deploy ... prod"
    assert "prod, kubectl" in by_name["block-prod-deploy"].summary


def test_select_keeps_order_and_names_unknown_hooks_with_a_suggestion() -> None:
    chosen = bundle.select(["protect-secrets", "block-dangerous-commands", "protect-secrets"])
    assert [h.name for h in chosen] == ["protect-secrets", "block-dangerous-commands"]
    with pytest.raises(bundle.UnknownBundledHookError) as caught:
        bundle.select(["block-dangerus-commands", "zzz"])
    assert caught.value.names == ["block-dangerus-commands", "zzz"]
    message = str(caught.value)
    assert "did you mean 'block-dangerous-commands'?" in message
    assert "session-summary" in message  # the list of what there is


def _fake_library(root: Path) -> Path:
    hook = root / "lib" / "tiny-guard"
    (hook / "scripts" / "__pycache__").mkdir(parents=True)
    (hook / "HOOK.md").write_text("---\nname: tiny-guard\ndescription: Denies. Then more.\n"
                                  "trigger: pre-tool-call\nmetadata:\n  on_error: block\n---\n")
    run = hook / "scripts" / "run"
    run.write_text("#!/bin/sh\nexit 2\n")
    run.chmod(0o755)
    (hook / "scripts" / "helper.txt").write_text("data\n")
    (hook / "scripts" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (hook / "scripts" / "stale.pyc").write_bytes(b"\0")
    (hook / "scripts" / ".mypy_cache" / "3.10").mkdir(parents=True)
    (hook / "scripts" / ".mypy_cache" / "3.10" / "cache.db").write_bytes(b"\0")
    return root / "lib"


def test_add_copies_modes_no_byte_code_or_caches_then_leaves_the_same_hook_alone(
        tmp_path: Path) -> None:
    library = _fake_library(tmp_path)
    [hook] = bundle.bundled_hooks(library)
    assert hook.summary == "Denies." and hook.fail_closed
    dest_root = tmp_path / "hooks"

    [planned] = bundle.add_hooks([hook], dest_root, dry_run=True)
    assert planned.status == "added" and not dest_root.exists()

    [done] = bundle.add_hooks([hook], dest_root)
    dest = dest_root / "tiny-guard"
    assert done.status == "added" and done.dest == dest and done.source == hook.path
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*"))
    assert files == ["HOOK.md", "scripts", "scripts/helper.txt", "scripts/run"]
    assert os.access(dest / "scripts" / "run", os.X_OK)
    assert not os.access(dest / "scripts" / "helper.txt", os.X_OK)
    assert not list(dest_root.glob(".*"))  # no staging folder left behind

    [again] = bundle.add_hooks([hook], dest_root)
    assert again.status == "same" and again.backup is None


def test_a_different_hook_is_a_conflict_unless_forced_and_force_keeps_a_backup(
        tmp_path: Path) -> None:
    [hook] = bundle.bundled_hooks(_fake_library(tmp_path))
    dest_root = tmp_path / "hooks"
    bundle.add_hooks([hook], dest_root)
    run = dest_root / "tiny-guard" / "scripts" / "run"
    run.chmod(0o644)  # a mode bit alone makes it another hook
    [conflict] = bundle.add_hooks([hook], dest_root)
    assert conflict.status == "conflict"
    assert not os.access(run, os.X_OK)  # left exactly as it was

    [replaced] = bundle.add_hooks([hook], dest_root, force=True)
    assert replaced.status == "replaced" and os.access(run, os.X_OK)
    assert replaced.backup is not None
    state = Path(os.environ["XDG_STATE_HOME"])
    assert replaced.backup.is_relative_to(state / "mcp-hooks" / "backups" / "hooks")
    assert not os.access(replaced.backup / "scripts" / "run", os.X_OK)  # the user's version


@pytest.mark.usefixtures("untrusted")
def test_project_copies_are_trusted_as_they_are(tmp_path: Path) -> None:
    project = tmp_path / "project"
    hooks_dir = project / ".agents" / "hooks"
    chosen = bundle.select(["block-dangerous-commands"])
    results = bundle.add_hooks(chosen, hooks_dir, trust_project=project,
                               trust_store=TrustStore())
    assert [(r.status, r.trusted) for r in results] == [("added", True)]
    dest = hooks_dir / "block-dangerous-commands"
    assert TrustStore().status(project, dest.name, hook_digest(dest)) == "trusted"
    assert not (dest / "scripts" / "__pycache__").exists()


def test_a_read_only_package_gives_writable_copies(tmp_path: Path) -> None:
    library = _fake_library(tmp_path)
    for path in library.rglob("*"):
        if path.is_file():
            path.chmod(path.stat().st_mode & ~0o222)
    [hook] = bundle.bundled_hooks(library)
    bundle.add_hooks([hook], tmp_path / "hooks")
    copied = tmp_path / "hooks" / "tiny-guard" / "HOOK.md"
    assert copied.stat().st_mode & stat.S_IWUSR


# -- host detection ----------------------------------------------------------------------


def test_hosts_are_found_by_program_on_path_or_config_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in HOST_ENV:
        monkeypatch.delenv(var, raising=False)
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    assert setup.found_hosts(home, str(bin_dir)) == []
    program = bin_dir / "codex"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    (home / ".gemini").mkdir()
    (home / ".copilot").mkdir()
    found = dict(setup.found_hosts(home, str(bin_dir)))
    assert set(found) == {"codex", "gemini-cli", "copilot-cli"}
    assert found["codex"] == f"codex is on PATH ({program})"
    assert found["gemini-cli"] == f"{home / '.gemini'} exists"
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "kimi-share"))
    (tmp_path / "kimi-share").mkdir()
    assert "kimi-cli" in dict(setup.found_hosts(home, str(bin_dir)))


def test_every_host_names_a_program_and_a_config_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in HOST_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))  # OpenCode's home
    homes = {name: get_host(name).config_home(tmp_path) for name in HOSTS}
    assert homes == {"claude-code": tmp_path / ".claude", "codex": tmp_path / ".codex",
                     "gemini-cli": tmp_path / ".gemini", "cursor": tmp_path / ".cursor",
                     "copilot-cli": tmp_path / ".copilot", "kimi-cli": tmp_path / ".kimi",
                     "qwen-code": tmp_path / ".qwen", "cline": tmp_path / ".cline",
                     "opencode": tmp_path / ".config" / "opencode"}
    assert all(get_host(name).programs for name in HOSTS)
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "g"))
    assert get_host("gemini-cli").config_home(tmp_path) == tmp_path / "g" / ".gemini"


# -- the commands --------------------------------------------------------------------------


def _env(tmp_path: Path) -> dict[str, str]:
    """A machine of its own: a home, XDG folders in it, a PATH with no agent host."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True, exist_ok=True)
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if k not in HOST_ENV and not k.startswith("MCP_HOOKS_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_STATE_HOME=str(home / ".state"), PATH=str(empty_bin))
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path,
         stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True,
                          input=stdin, timeout=60)


def test_add_list_prints_the_library_for_people_and_programs(tmp_path: Path) -> None:
    env = _env(tmp_path)
    done = _run([MCP_HOOKS, "add", "--list"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["NAME", "EVENT", "ON", "ERROR", "WHAT", "IT", "DOES"]
    for hook in bundle.bundled_hooks():
        [row] = [line for line in lines if line.startswith(hook.name + " ")]
        assert hook.trigger in row and hook.summary in row
        assert ("fail-closed" if hook.fail_closed else "fail-open") in row
        assert ("(init adds it)" in row) == hook.recommended
    listed = json.loads(_run([MCP_HOOKS, "add", "--list", "--json"], env, tmp_path).stdout)
    assert [h["name"] for h in listed] == [h.name for h in bundle.bundled_hooks()]
    assert {"name", "trigger", "event", "description", "summary", "fail_closed",
            "recommended", "path"} == set(listed[0])


def test_add_copies_to_the_user_folder_and_refuses_to_overwrite(tmp_path: Path) -> None:
    env = _env(tmp_path)
    user = Path(env["XDG_CONFIG_HOME"]) / "agents" / "hooks"
    done = _run([MCP_HOOKS, "add", "block-dangerous-commands", "session-summary"], env,
                tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"added block-dangerous-commands -> {user / 'block-dangerous-commands'}" \
        in done.stdout
    assert (user / "session-summary" / "HOOK.md").is_file()
    again = _run([MCP_HOOKS, "add", "session-summary"], env, tmp_path)
    assert again.returncode == 0 and "already in place" in again.stdout

    hook_md = user / "session-summary" / "HOOK.md"
    hook_md.write_text(hook_md.read_text() + "\nmy own note\n")
    refused = _run([MCP_HOOKS, "add", "session-summary"], env, tmp_path)
    assert refused.returncode == 1
    assert str(user / "session-summary") in refused.stderr and "--force" in refused.stderr
    assert "my own note" in hook_md.read_text()
    forced = _run([MCP_HOOKS, "add", "session-summary", "--force"], env, tmp_path)
    assert forced.returncode == 0 and "replaced session-summary" in forced.stdout
    assert "my own note" not in hook_md.read_text()
    assert "kept at" in forced.stdout


def test_add_with_a_user_dir_and_usage_errors(tmp_path: Path) -> None:
    env = _env(tmp_path)
    mine = tmp_path / "my-hooks"
    done = _run([MCP_HOOKS, "add", "protect-secrets", "--user-dir", str(mine)], env, tmp_path)
    assert done.returncode == 0 and (mine / "protect-secrets" / "HOOK.md").is_file()
    unknown = _run([MCP_HOOKS, "add", "protect-secret"], env, tmp_path)
    assert unknown.returncode == 64
    assert "did you mean 'protect-secrets'?" in unknown.stderr
    assert _run([MCP_HOOKS, "add"], env, tmp_path).returncode == 64
    assert _run([MCP_HOOKS, "add", "--list", "protect-secrets"], env, tmp_path).returncode == 64
    assert _run([MCP_HOOKS, "add", "--json", "protect-secrets"], env, tmp_path).returncode == 64
    planned = _run([MCP_HOOKS, "add", "session-summary", "--user-dir", str(mine), "--dry-run"],
                   env, tmp_path)
    assert planned.returncode == 0 and "would add session-summary" in planned.stdout
    assert not (mine / "session-summary").exists()


@pytest.mark.usefixtures("untrusted")
def test_add_to_a_project_trusts_the_copy_so_it_runs(tmp_path: Path) -> None:
    env = _env(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    done = _run([MCP_HOOKS, "add", "block-dangerous-commands", "--scope", "project"], env,
                project)
    assert done.returncode == 0, done.stderr
    assert "trusted for this project" in done.stdout
    assert (project / ".agents" / "hooks" / "block-dangerous-commands").is_dir()
    fired = _run([MCP_HOOKS, "fire", "pre-tool-call", "--tool", "Shell", "--input",
                  '{"command": "rm -rf /"}'], env, project)
    assert fired.returncode == 2, fired.stdout + fired.stderr


def _proof_lines(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("3. Check it"))
    return [line.strip() for line in lines[start + 1:start + 3]]


def test_init_wires_the_host_it_finds_and_its_proof_line_is_denied(tmp_path: Path) -> None:
    env = _env(tmp_path)
    home = Path(env["HOME"])
    (home / ".claude").mkdir()
    work = tmp_path / "work"
    work.mkdir()

    dry = _run([MCP_HOOKS, "init", "--dry-run"], env, work)
    assert dry.returncode == 0, dry.stderr
    assert "would add block-dangerous-commands" in dry.stdout
    assert "Claude Code" in dry.stdout and "was not changed" in dry.stdout
    assert not (home / ".claude" / "settings.json").exists()
    assert not (home / ".config" / "agents").exists()

    done = _run([MCP_HOOKS, "init"], env, work)
    assert done.returncode == 0, done.stderr
    for name in bundle.RECOMMENDED:
        assert f"added {name}" in done.stdout and bundle.RECOMMENDED[name] in done.stdout
    assert f"Claude Code ({home / '.claude'} exists)" in done.stdout
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert "PreToolUse" in settings["hooks"]
    assert "Everything was already in place" not in done.stdout

    fire_line, doctor_line = _proof_lines(done.stdout)
    assert doctor_line == "mcp-hooks doctor --host claude-code"
    argv = shlex.split(fire_line)
    assert argv[:2] == ["mcp-hooks", "fire"]
    fired = _run([MCP_HOOKS, *argv[1:]], env, work)
    assert fired.returncode == 2 and "block-dangerous-commands" in fired.stdout

    again = _run([MCP_HOOKS, "init"], env, work)
    assert again.returncode == 0, again.stderr
    assert "already up to date" in again.stdout
    assert "Everything was already in place: nothing was changed." in again.stdout


def test_init_with_no_host_adds_the_guards_and_says_how_to_wire_one(tmp_path: Path) -> None:
    env = _env(tmp_path)
    mine = tmp_path / "hooks"
    done = _run([MCP_HOOKS, "init", "--user-dir", str(mine)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "none found" in done.stdout and "mcp-hooks init --host HOST" in done.stdout
    assert sorted(p.name for p in mine.iterdir()) == sorted(bundle.RECOMMENDED)
    fire_line, doctor_line = _proof_lines(done.stdout)
    assert f"--user-dir {mine}" in fire_line and f"--user-dir {mine}" in doctor_line
    fired = _run([MCP_HOOKS, *shlex.split(fire_line)[1:]], env, tmp_path)
    assert fired.returncode == 2, fired.stdout + fired.stderr


def test_init_for_a_project_names_hosts_and_keeps_kimi_in_user_scope(tmp_path: Path) -> None:
    env = _env(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    done = _run([MCP_HOOKS, "init", "--scope", "project", "--host", "claude",
                 "--host", "kimi-cli"], env, project)
    assert done.returncode == 0, done.stderr
    assert (project / ".claude" / "settings.json").is_file()
    assert (project / ".agents" / "hooks" / "protect-hooks").is_dir()
    assert "it has no project config, so user scope" in done.stdout
    assert (Path(env["HOME"]) / ".kimi" / "config.toml").is_file()
    unknown = _run([MCP_HOOKS, "init", "--host", "claude-cod"], env, project)
    assert unknown.returncode == 64 and "did you mean 'claude-code'?" in unknown.stderr
