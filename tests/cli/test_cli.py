"""The mcp-hooks command, run as the installed console script."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import httpx2
import pytest
import yaml

from mcp_hooks.errors import install_command
from tests.conftest import BIN, MCP_HOOKS, write_hook
from tests.helpers.forward_served import served


def run(*args: str, cwd: Path | None = None, stdin: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=60, env={**os.environ, **(env or {})})


@pytest.fixture
def hooks(user_dir: Path) -> Path:
    write_hook(user_dir, "no-rm", extra="priority: 900\nmatcher:\n  tool: Shell\n  pattern: rm\n",
               script="echo 'rm refused' >&2\nexit 2\n")
    write_hook(user_dir, "ctx", script="""echo '{"additional_context": "be careful"}'\n""")
    return user_dir


def test_fire_denied_exits_2_and_says_why(hooks: Path, project: Path) -> None:
    done = run("fire", "before_tool", "--tool", "Shell", "--input", '{"command": "rm -rf x"}',
               "--user-dir", str(hooks), "--project-dir", str(project))
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith("DENIED  before_tool  by no-rm")
    assert "reason: rm refused" in done.stdout
    assert "DENY no-rm" in done.stdout


def test_fire_allowed_exits_0_with_one_line_per_hook(hooks: Path, project: Path) -> None:
    done = run("fire", "pre-tool-call", "--tool", "Shell", "--input", '{"command": "ls"}',
               "--user-dir", str(hooks), "--project-dir", str(project))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "ALLOWED  before_tool"
    assert any("context: be careful" in line for line in lines)
    assert any(line.strip().startswith("ok   ctx") for line in lines)


def test_fire_json_is_the_outcome(hooks: Path, project: Path) -> None:
    done = run("fire", "before_tool", "--tool", "Shell", "--input", "-", "--json",
               "--user-dir", str(hooks), "--project-dir", str(project),
               stdin='{"command": "rm a"}')
    outcome = json.loads(done.stdout)
    assert done.returncode == 2
    assert outcome["decision"] == "deny" and outcome["blocked_by"] == "no-rm"
    assert set(outcome) >= {"event_type", "reason", "modified_input", "additional_context",
                            "continue_working", "hooks", "warnings"}


def test_fire_writes_the_log_and_log_reads_it(hooks: Path, project: Path, tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    run("fire", "before_tool", "--tool", "Shell", "--input", '{"command": "rm x"}',
        "--session", "s-7", "--user-dir", str(hooks), "--project-dir", str(project),
        "--log", str(log))
    run("fire", "session_start", "--session", "other", "--user-dir", str(hooks),
        "--project-dir", str(project), "--log", str(log))
    shown = run("log", "--log", str(log), "--session", "s-7")
    assert shown.returncode == 0
    assert "before_tool" in shown.stdout and "DENY" in shown.stdout
    assert "rm refused" in shown.stdout and "session_start" not in shown.stdout
    raw = run("log", "--log", str(log), "--json")
    assert [json.loads(line)["event"] for line in raw.stdout.splitlines()] == [
        "before_tool", "session_start"]


def test_default_log_location_and_no_log(hooks: Path, project: Path) -> None:
    state = Path(os.environ["XDG_STATE_HOME"])
    run("fire", "session_start", "--user-dir", str(hooks), "--project-dir", str(project),
        "--no-log")
    assert not (state / "mcp-hooks" / "events.jsonl").exists()
    run("fire", "session_start", "--user-dir", str(hooks), "--project-dir", str(project))
    assert (state / "mcp-hooks" / "events.jsonl").exists()


def test_log_follow_prints_new_events(hooks: Path, project: Path, tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    follower = subprocess.Popen([MCP_HOOKS, "log", "--follow", "--log", str(log)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        run("fire", "after_agent", "--user-dir", str(hooks), "--project-dir", str(project),
            "--log", str(log))
        assert follower.stdout is not None
        line = follower.stdout.readline()
        assert "after_agent" in line
    finally:
        follower.terminate()
        follower.communicate(timeout=10)


@pytest.mark.parametrize("args", [
    ["fire", "before_everything"],
    ["fire", "before_tool", "--input", "{not json"],
    ["fire", "before_tool", "--input", "[1]"],
    ["fire", "before_tool", "--payload", '"x"'],
    ["fire"],
    ["no-such-command"],
    ["fire", "before_tool", "--bogus-flag"],
    [],
])
def test_usage_errors_exit_64_never_2(args: list[str], user_dir: Path) -> None:
    done = run(*args)
    assert done.returncode == 64, (done.stdout, done.stderr)
    assert done.stderr.strip()


def test_unknown_event_message_lists_the_events() -> None:
    done = run("fire", "before_everything")
    assert "unknown event type 'before_everything'" in done.stderr
    assert "before_tool" in done.stderr


def test_list_table_and_invalid_hooks(hooks: Path, project: Path) -> None:
    write_hook(hooks, "broken", extra="timeout: 1\n")
    done = run("list", "--user-dir", str(hooks), "--project-dir", str(project))
    assert done.returncode == 0
    assert "NAME" in done.stdout and "no-rm" in done.stdout and "ctx" in done.stdout
    assert "invalid hooks (1), not loaded; each blocks the events it could handle" in done.stdout
    assert f"{hooks / 'broken' / 'HOOK.md'}: timeout:" in done.stdout
    data = json.loads(run("list", "--json", "--user-dir", str(hooks),
                          "--project-dir", str(project)).stdout)
    assert [h["name"] for h in data["hooks"]] == ["no-rm", "ctx"]
    assert data["invalid"][0]["field"] == "timeout"


def test_show_prints_hook_md(hooks: Path, project: Path) -> None:
    done = run("show", "ctx", "--user-dir", str(hooks), "--project-dir", str(project))
    assert done.stdout.startswith("---\nname: ctx")
    missing = run("show", "nope", "--user-dir", str(hooks), "--project-dir", str(project))
    assert missing.returncode == 64 and "no hook named 'nope'" in missing.stderr


def test_events_lists_aliases() -> None:
    done = run("events")
    assert "before_tool" in done.stdout and "pre-tool-use" in done.stdout
    data = json.loads(run("events", "--json").stdout)
    assert len(data) == 24  # 13 of the spec, 6 of the issue lifecycle, 5 of the agent loop


def test_validate_reports_file_field_reason(user_dir: Path) -> None:
    write_hook(user_dir, "good")
    bad = write_hook(user_dir, "bad", extra="priority: high\n")
    extra = write_hook(user_dir, "extra", extra="colour: red\n")
    done = run("validate", str(user_dir))
    assert done.returncode == 1
    assert f"{bad / 'HOOK.md'}: priority: " in done.stderr
    assert "ok  good" in done.stdout and "ok  extra" in done.stdout
    assert "3 hook(s) checked, 1 problem(s)" in done.stderr
    strict = run("validate", "--strict", str(extra))
    assert strict.returncode == 1
    assert f"{extra / 'HOOK.md'}: colour: unknown field" in strict.stderr
    clean = run("validate", str(user_dir / "good"))
    assert clean.returncode == 0 and "1 hook(s) checked, 0 problem(s)" in clean.stdout


def test_validate_defaults_to_user_and_project(user_dir: Path, project: Path,
                                                project_hooks: Path) -> None:
    write_hook(project_hooks, "proj", extra="async: maybe\n")
    done = run("validate", "--user-dir", str(user_dir), "--project-dir", str(project))
    assert done.returncode == 1 and "proj/HOOK.md: async:" in done.stderr


def test_new_scaffolds_a_working_hook(user_dir: Path, project: Path) -> None:
    done = run("new", "check-things", "--trigger", "before_tool", "--tool", "Shell",
               "--user-dir", str(user_dir), "--project-dir", str(project))
    assert done.returncode == 0, done.stderr
    assert run("validate", "--strict", str(user_dir / "check-things")).returncode == 0
    fired = run("fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
                "--user-dir", str(user_dir), "--project-dir", str(project))
    assert fired.returncode == 0 and "ok   check-things" in fired.stdout
    again = run("new", "check-things", "--trigger", "before_tool", "--user-dir", str(user_dir))
    assert again.returncode == 1 and "already exists" in again.stderr
    in_project = run("new", "proj-hook", "--trigger", "before_stop", "--scope", "project",
                     "--project-dir", str(project), "--user-dir", str(user_dir))
    assert in_project.returncode == 0
    assert (project / ".agents" / "hooks" / "proj-hook" / "HOOK.md").is_file()


@pytest.mark.parametrize("args", [
    ["new", "Bad_Name", "--trigger", "before_tool"],
    ["new", "ok-name", "--trigger", "nope"],
    ["new", "ok-name", "--trigger", "before_stop", "--tool", "Shell"],
])
def test_new_rejects_bad_input(args: list[str], user_dir: Path) -> None:
    done = run(*args, "--user-dir", str(user_dir))
    assert done.returncode == 64 and done.stderr
    assert list(user_dir.iterdir()) == []


def test_project_dir_found_from_a_subfolder(hooks: Path, project: Path,
                                            project_hooks: Path) -> None:
    write_hook(project_hooks, "proj-deny", script="echo 'project says no' >&2\nexit 2\n")
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    done = run("fire", "before_tool", "--tool", "Read", "--user-dir", str(hooks), cwd=sub)
    assert done.returncode == 2 and "project says no" in done.stdout


def test_environment_variables_configure_a_host_run(hooks: Path, project: Path,
                                                    tmp_path: Path) -> None:
    log = tmp_path / "env-log.jsonl"
    done = run("fire", "before_tool", "--tool", "Shell", "--input", '{"command": "rm"}',
               env={"MCP_HOOKS_USER_DIR": str(hooks), "MCP_HOOKS_PROJECT_DIR": str(project),
                    "MCP_HOOKS_LOG": str(log)})
    assert done.returncode == 2 and log.exists()


def test_log_shows_proxy_upstream_records(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(json.dumps({"ts": "2026-01-01T00:00:00.000Z", "kind": "proxy_upstream",
                               "upstream": "git", "state": "dead", "error": "exit 1"}) + "\n")
    shown = run("log", "--log", str(log))
    assert "proxy upstream git is dead: exit 1" in shown.stdout


def test_log_cuts_a_long_reason_at_a_word(user_dir: Path, project: Path,
                                          tmp_path: Path) -> None:
    reason = ("the deployment window is closed until Monday morning; ask the release manager "
              "before pushing anything to production, and say which ticket it fixes")
    write_hook(user_dir, "window", script=f"echo '{reason}' >&2\nexit 2\n")
    log = tmp_path / "events.jsonl"
    run("fire", "before_tool", "--tool", "Shell", "--user-dir", str(user_dir),
        "--project-dir", str(project), "--log", str(log))
    shown = run("log", "--log", str(log)).stdout.strip()
    said = shown.split("  reason: ", 1)[1]
    assert said.endswith("...") and len(said) <= 100
    assert reason.startswith(said[:-3]) and reason[len(said) - 3] == " "  # a whole word
    assert said == ("the deployment window is closed until Monday morning; ask the release "
                    "manager before pushing...")


def test_fire_shows_signal_ids_and_what_hooks_yaml_did(user_dir: Path, project: Path,
                                                       tmp_path: Path) -> None:
    (project / ".ahp").mkdir()
    (project / ".ahp" / "hooks.yaml").write_text(
        "hooks:\n  pre-tool-use:\n    - oracle: PermissionChecker\n")
    write_hook(user_dir, "no-rm", extra="matcher:\n  tool: Read\n")  # never matches Shell
    log = tmp_path / "events.jsonl"
    folders = ["--user-dir", str(user_dir), "--project-dir", str(project), "--log", str(log)]
    done = run("fire", "before_tool", "--tool", "Shell", "--input",
               '{"command": "rm -rf build"}', *folders)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("ALLOWED  before_tool  (no HOOK.md hook ran; hooks.yaml: "
                        "permission-checker sent a prompt)")
    (signal,) = [line for line in lines if line.startswith("  signal: ")]
    found = re.fullmatch(r"  signal: prompt ([0-9a-f-]{36}) from permission-checker; answer: "
                         r"mcp-hooks respond ([0-9a-f]{8}) acknowledge\|apply_suggestion\|"
                         r"dismiss", signal)
    assert found and found.group(1).startswith(found.group(2)), signal
    answered = run("respond", found.group(2), "acknowledge", "--log", str(log))
    assert answered.stdout == (f"answered signal {found.group(1)} (before_tool, prompt) with "
                               "acknowledge\n"), answered.stderr
    unlogged = run("fire", "before_tool", "--tool", "Shell", "--input",
                   '{"command": "rm -rf build"}', *folders[:4], "--no-log")
    assert unlogged.stdout.splitlines()[-1].endswith(
        "from permission-checker (no signal log is kept, so it cannot be answered)")
    plain = run("fire", "before_tool", "--tool", "Read", "--input", '{"path": "x"}', *folders)
    assert plain.returncode == 0 and "signal:" not in plain.stdout  # a hook said ok: none


def test_fire_names_the_untrusted_hooks_it_skipped(user_dir: Path, project: Path,
                                                   project_hooks: Path,
                                                   untrusted: None) -> None:
    write_hook(project_hooks, "gate", trigger="pre-agent-turn")
    folders = ["--user-dir", str(user_dir), "--project-dir", str(project)]
    done = run("fire", "before_agent", *folders)
    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == ("ALLOWED  before_agent  (no before_agent hooks; 1 "
                                           "skipped: untrusted project hook gate)")
    write_hook(project_hooks, "tool-gate", extra="matcher:\n  tool: Shell\n")
    write_hook(user_dir, "read-only", extra="matcher:\n  tool: Read\n")
    missed = run("fire", "before_tool", "--tool", "Shell", *folders)
    assert missed.stdout.splitlines()[0] == ("ALLOWED  before_tool  (no hook matched; 1 "
                                             "skipped: untrusted project hook tool-gate)")
    other = run("fire", "before_stop", *folders)  # nothing of this event is held back
    assert other.stdout.splitlines()[0] == "ALLOWED  before_stop  (no before_stop hooks)"


def test_common_options_read_as_the_command_line_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Adapters get typed options; they must mean what the same flags mean."""
    from mcp_hooks import options
    from mcp_hooks.cli import build_parser

    args = build_parser(["fire", "stop"]).parse_args(
        ["fire", "stop", "--user-dir", str(tmp_path / "u"), "--project-dir", str(tmp_path),
         "--stop-block-cap", "3", "--on-fault", "warn", "--no-log"])
    typed = options.CommonOptions.from_args(args)
    for given in (args, typed):
        assert options.user_dir(given) == tmp_path / "u"
        assert options.project_dir(given) == tmp_path.resolve()
        assert options.stop_block_cap(given) == 3
        assert options.on_fault(given) == "warn"
        assert options.event_log(given) is None
    # nothing given: the environment, then paths.py, decide
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    bare = options.CommonOptions()
    assert options.log_path(bare) == tmp_path / "state" / "mcp-hooks" / "events.jsonl"
    log = options.event_log(bare)
    assert log is not None and log.path == tmp_path / "state" / "mcp-hooks" / "events.jsonl"
    assert options.user_dir(bare) is None
    assert options.user_hooks_dir(bare) == tmp_path / "config" / "agents" / "hooks"
    assert options.user_hooks_dir(typed) == tmp_path / "u"
    assert options.registry(bare, watch=False).user_dir == tmp_path / "config" / "agents" / "hooks"
    monkeypatch.setenv("MCP_HOOKS_LOG", "off")
    assert options.event_log(bare) is None
    assert options.log_path(bare) == tmp_path / "state" / "mcp-hooks" / "events.jsonl"
    monkeypatch.setenv("MCP_HOOKS_STOP_BLOCK_CAP", "5")
    assert options.stop_block_cap(bare) == 5 and options.stop_block_cap(typed) == 3


def test_trust_runs_from_typed_options(project: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_hooks.cli.trust import TrustOptions, run
    from mcp_hooks.registry.trust import TrustStore

    write_hook(project / ".agents" / "hooks", "fmt")
    store = TrustStore(tmp_path / "trust.json")
    assert run(TrustOptions(project=project, yes=True), store) == 0
    assert "trusted fmt" in capsys.readouterr().out
    assert set(store.entries()[str(project.resolve())]) == {"fmt"}
    assert run(TrustOptions(project=project, action="revoke", hooks=("fmt",)), store) == 0
    assert store.entries() == {}


# -- fire: why no hook ran, --verbose, progress on a terminal --------------------------------


def test_fire_tells_no_hooks_installed_from_none_matched(user_dir: Path, project: Path) -> None:
    folders = ["--user-dir", str(user_dir), "--project-dir", str(project)]
    empty = run("fire", "before_tool", "--tool", "Shell", *folders)
    assert empty.returncode == 0
    lines = empty.stdout.splitlines()
    assert lines[0] == "ALLOWED  before_tool  (no hooks installed)"
    assert f"searched: {user_dir} (user), {project}/.agents/hooks (project)" in empty.stdout
    assert "mcp-hooks init" in empty.stdout and "mcp-hooks add" in empty.stdout
    write_hook(user_dir, "no-rm", extra="matcher:\n  tool: Shell\n  pattern: rm\n")
    other = run("fire", "before_stop", *folders)
    assert other.stdout.splitlines()[0] == "ALLOWED  before_stop  (no before_stop hooks)"
    missed = run("fire", "before_tool", "--tool", "Read", *folders)
    assert missed.stdout.splitlines()[0] == "ALLOWED  before_tool  (no hook matched)"
    assert "1 before_tool hook(s), none matched (tool 'Read'); --verbose shows why" \
        in missed.stdout
    assert "no hooks installed" not in missed.stdout
    # the JSON and the exit codes are what they were
    data = json.loads(run("fire", "before_tool", "--tool", "Shell", "--json", *folders).stdout)
    assert data["decision"] == "allow" and data["hooks"] == []


def test_fire_verbose_says_why_each_hook_was_considered(user_dir: Path, project: Path,
                                                        project_hooks: Path,
                                                        untrusted: None) -> None:
    write_hook(user_dir, "no-rm", extra="matcher:\n  tool: Shell\n  pattern: rm\n")
    write_hook(user_dir, "any-tool")
    write_hook(user_dir, "stop-gate", trigger="pre-agent-turn-stop")
    write_hook(user_dir, "broken", extra="timeout: 1\n")
    write_hook(project_hooks, "proj")
    folders = ["--user-dir", str(user_dir), "--project-dir", str(project)]
    done = run("fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
               "--verbose", "--on-fault", "warn", "--json", *folders)
    assert json.loads(done.stdout)["event_type"] == "before_tool"  # stdout stays the JSON
    said = done.stderr
    assert "hooks considered for before_tool (tool 'Shell'):" in said
    assert re.search(r"no-rm +user +skipped  matcher.pattern 'rm' is not found in the tool "
                     r"input", said)
    assert re.search(r"any-tool +user +matched  no matcher: every tool call", said)
    assert re.search(r"stop-gate +user +skipped  its trigger is pre-agent-turn-stop "
                     r"\(before_stop\)", said)
    assert re.search(r"proj +project +not run: untrusted \(see `mcp-hooks trust`\)", said)
    assert re.search(r"broken +user +not loaded: .*broken/HOOK.md: timeout", said)
    read = run("fire", "before_tool", "--tool", "Read", "-v", *folders, "--on-fault", "warn")
    # Claude Code's Read reaches hooks as ReadFile (one vocabulary on every door)
    assert "no-rm" in read.stderr and "tool 'ReadFile' does not match matcher.tool 'Shell'" \
        in read.stderr
    quiet = run("fire", "before_tool", "--tool", "Shell", *folders, "--on-fault", "warn")
    assert "hooks considered" not in quiet.stderr


def test_fire_on_a_terminal_shows_slow_hooks_as_they_finish(user_dir: Path,
                                                            project: Path) -> None:
    write_hook(user_dir, "slow", extra="priority: 900\n", script="sleep 1.2\nexit 0\n")
    write_hook(user_dir, "after-slow", extra="priority: 10\n")
    argv = [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--user-dir", str(user_dir),
            "--project-dir", str(project)]
    master, slave = pty.openpty()
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=slave, timeout=60)
        os.close(slave)
        shown = b""
        while select.select([master], [], [], 0.5)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
    assert done.returncode == 0
    text = shown.decode()
    assert re.search(r"mcp-hooks fire: before_tool: slow allow \(\d+ ms\)", text), text
    assert re.search(r"mcp-hooks fire: before_tool: after-slow allow \(\d+ ms\)", text), text
    assert text.index(": slow allow") < text.index(": after-slow allow")
    # without a terminal: nothing extra
    piped = run(*argv[1:])
    assert piped.returncode == 0 and "mcp-hooks fire:" not in piped.stderr


# -- new: valid YAML for any name, the spec's trigger, a fire line that works ----------------


@pytest.mark.parametrize("name", ["no", "yes", "on", "off", "null", "true", "y", "n", "1e3",
                                  "0x1f", "123", "2024-01-01", "nan", "inf", "12-30", "plain"])
def test_new_writes_yaml_that_reads_back_for_any_name(name: str, user_dir: Path,
                                                      project: Path) -> None:
    done = run("new", name, "--trigger", "before_tool", "--tool", "Shell",
               "--pattern", "a: b #c", "--user-dir", str(user_dir), "--project-dir",
               str(project))
    assert done.returncode == 0, done.stderr
    text = (user_dir / name / "HOOK.md").read_text()
    front = yaml.safe_load(text.split("---")[1])
    assert front["name"] == name
    assert front["trigger"] == "pre-tool-call"
    assert front["matcher"] == {"tool": "Shell", "pattern": "a: b #c"}
    assert front["description"] == f"TODO say what {name} checks and why"
    assert run("validate", "--strict", str(user_dir / name)).returncode == 0


@pytest.mark.parametrize("name", ["has:colon", "No", "a b", ""])
def test_new_refuses_names_that_are_not_hook_names(name: str, user_dir: Path) -> None:
    done = run("new", name, "--trigger", "before_tool", "--user-dir", str(user_dir))
    assert done.returncode == 64 and "a hook name is" in done.stderr
    assert list(user_dir.iterdir()) == []


@pytest.mark.parametrize(("trigger", "written"), [
    ("before_tool", "pre-tool-call"), ("pre-tool-use", "pre-tool-call"),
    ("before_stop", "pre-agent-turn-stop"), ("session_end", "post-session"),
    ("after_tool_failure", "post-tool-call-failure"),
])
def test_new_writes_the_spec_trigger(trigger: str, written: str, user_dir: Path) -> None:
    assert run("new", "h", "--trigger", trigger, "--user-dir", str(user_dir)).returncode == 0
    assert f"\ntrigger: {written}\n" in (user_dir / "h" / "HOOK.md").read_text()


def try_it(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stdout.splitlines() if line.startswith("try it: ")]
    assert len(lines) == 1, done.stdout
    return lines[0][len("try it: "):]


@pytest.mark.parametrize("extra", [
    [], ["--tool", "Shell"], ["--tool", "Bash|Shell", "--pattern", r"git\s+push.*--force"],
    ["--tool", "mcp__.*__write", "--pattern", "rm -rf"], ["--pattern", "[Dd]rop (table|db)"],
], ids=["plain", "tool", "tools+pattern", "tool-regex", "pattern-only"])
def test_new_prints_a_fire_line_that_runs_the_hook(extra: list[str], user_dir: Path,
                                                   project: Path) -> None:
    made = run("new", "probe-me", "--trigger", "before_tool", *extra, "--user-dir",
               str(user_dir), "--project-dir", str(project))
    assert made.returncode == 0, made.stderr
    line = try_it(made)
    assert line.startswith("mcp-hooks fire pre-tool-call")
    # deny, so that the run is visible in the decision too
    script = user_dir / "probe-me" / "scripts" / "run"
    script.write_text("#!/bin/sh\necho 'probe-me ran' >&2\nexit 2\n")
    fired = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=60,
                           cwd=project, env={**os.environ,
                                             "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    assert fired.returncode == 2, (line, fired.stdout, fired.stderr)
    assert "DENIED  before_tool  by probe-me" in fired.stdout


def test_new_project_hook_is_trusted_as_written(project: Path, user_dir: Path,
                                                untrusted: None) -> None:
    made = run("new", "proj-gate", "--trigger", "before_stop", "--scope", "project",
               "--project-dir", str(project), "--user-dir", str(user_dir))
    assert made.returncode == 0, made.stderr
    line = try_it(made)
    assert f"--project-dir {project}" in line
    assert "after an edit, trust it again: mcp-hooks trust" in made.stdout
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    fired = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=60,
                           env=env)
    assert fired.returncode == 0 and "ok   proj-gate" in fired.stdout, fired.stdout
    (project / ".agents" / "hooks" / "proj-gate" / "scripts" / "run").write_text(
        "#!/bin/sh\nexit 2\n")
    edited = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=60,
                            env=env)
    assert edited.returncode == 0  # untrusted again: not run, and the head says so
    assert edited.stdout.splitlines()[0] == ("ALLOWED  before_stop  (no before_stop hooks; 1 "
                                             "skipped: changed since trusted project hook "
                                             "proj-gate)")
    assert "not trusted" in edited.stderr  # said where a person sees it


# -- errors that teach, through the real command ---------------------------------------------


def test_validate_names_each_problem_once_with_did_you_mean(user_dir: Path) -> None:
    hook = user_dir / "typo"
    (hook / "scripts").mkdir(parents=True)
    (hook / "HOOK.md").write_text("---\nname: typo\ndescription: x\ntriger: before_tool\n"
                                  "timeout: 5\nprority: 9\n---\n")
    (hook / "scripts" / "run.sh").write_text("exit 0\n")
    done = run("validate", str(user_dir))
    assert done.returncode == 1
    hook_md = hook / "HOOK.md"
    assert done.stderr.splitlines() == [
        f"{hook_md}: triger: unknown field; did you mean 'trigger'? Rename it to trigger (an "
        "event name such as before_tool, before_stop, session_start)",
        f"{hook_md}: timeout: must be from 100 to 600000, got 5 (milliseconds, an integer from "
        "100 to 600000 (default 30000))",
        f"warning: {hook_md}: prority: unknown field; did you mean 'priority'? (extensions go "
        "under metadata)",
        "1 hook(s) checked, 2 problem(s)",
    ]
    assert "required field is missing" not in done.stderr


def test_a_crlf_hook_is_caught_by_validate_and_named_in_the_deny(user_dir: Path,
                                                                  project: Path) -> None:
    hook = write_hook(user_dir, "crlf-guard", extra="matcher:\n  tool: Shell\n")
    run_script = hook / "scripts" / "run"
    run_script.write_bytes(b"#!/bin/sh\r\nexit 0\r\n")
    crlf = ("scripts/run: the #! line ends in a carriage return (CRLF): convert scripts/run "
            "to LF line endings")
    checked = run("validate", str(user_dir))
    assert checked.returncode == 1 and f"{hook / 'HOOK.md'}: {crlf}" in checked.stderr
    fired = run("fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
                "--user-dir", str(user_dir), "--project-dir", str(project), "--no-log")
    assert fired.returncode == 2, fired.stdout
    assert crlf in fired.stdout and "not found" not in fired.stdout
    assert fired.stdout.count(crlf) == 1  # the fault text once: no warning repeating it


def test_a_fault_text_is_printed_once(user_dir: Path, project: Path) -> None:
    """A hook that cannot start (its interpreter is missing): the reason says so, and
    neither its row nor a warning says it again."""
    write_hook(user_dir, "no-interp", script="#!/nonexistent/sh\nexit 0\n")
    fired = run("fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
                "--user-dir", str(user_dir), "--project-dir", str(project), "--no-log")
    assert fired.returncode == 2
    said = "scripts/run: not found (a missing script, or a missing interpreter"
    assert fired.stdout.count(said) == 1, fired.stdout
    assert "no-interp" in fired.stdout and "(the reason above)" in fired.stdout
    assert "warning: fault:" not in fired.stdout
    as_json = json.loads(run("fire", "before_tool", "--tool", "Shell", "--input", "{}",
                             "--user-dir", str(user_dir), "--project-dir", str(project),
                             "--no-log", "--json").stdout)
    assert any(w.startswith("fault: ") for w in as_json["warnings"])  # the data keeps it


def test_new_suggests_a_fire_line_a_person_would_type(user_dir: Path, project: Path) -> None:
    made = run("new", "no-force-push", "--trigger", "pre-tool-call", "--tool", "Shell",
               "--pattern", "git push.*--force", "--user-dir", str(user_dir))
    assert made.returncode == 0, made.stderr
    line = try_it(made)
    assert """'{"command": "git push --force"}'""" in line
    (user_dir / "no-force-push" / "scripts" / "run").write_text(
        "#!/bin/sh\necho 'no force push' >&2\nexit 2\n")
    fired = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=60,
                           cwd=project, env={**os.environ,
                                             "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    assert fired.returncode == 2 and "no force push" in fired.stdout
    # a pattern a space does not fit still gets an input it matches
    tight = run("new", "tight", "--trigger", "pre-tool-call", "--pattern", "a[^ ]*b",
                "--user-dir", str(user_dir))
    assert """'{"command": "ab"}'""" in try_it(tight)


def test_new_takes_scope_and_project_is_a_deprecated_alias(user_dir: Path,
                                                           project: Path) -> None:
    folders = ["--user-dir", str(user_dir), "--project-dir", str(project)]
    user = run("new", "in-user", "--trigger", "before_stop", *folders)
    assert user.returncode == 0 and (user_dir / "in-user" / "HOOK.md").is_file()
    scoped = run("new", "scoped", "--trigger", "before_stop", "--scope", "project", *folders)
    assert scoped.returncode == 0 and scoped.stderr == ""
    assert (project / ".agents" / "hooks" / "scoped" / "HOOK.md").is_file()
    old = run("new", "old-way", "--trigger", "before_stop", "--project", *folders)
    assert old.returncode == 0 and (project / ".agents" / "hooks" / "old-way").is_dir()
    assert "--project is deprecated; write --scope project" in old.stderr
    both = run("new", "both", "--trigger", "before_stop", "--project", "--scope", "user",
               *folders)
    assert both.returncode == 64 and "contradict" in both.stderr
    assert not (user_dir / "both").exists()


def test_uninstall_with_nothing_installed_says_so_and_leaves_the_file(
        project: Path, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    settings = project / ".claude" / "settings.json"
    absent = run("uninstall", "claude-code", "--project-dir", str(project), env=env)
    assert absent.returncode == 0
    assert absent.stdout.strip() == (f"{settings}: does not exist, nothing to uninstall "
                                     "(Claude Code, project scope)")
    settings.parent.mkdir()
    settings.write_text("{}")  # the user's own file, with nothing of ours in it
    theirs = run("uninstall", "claude-code", "--project-dir", str(project), env=env)
    assert theirs.returncode == 0 and "already up to date" not in theirs.stdout
    assert "holds no entries of mcp-hooks, nothing to uninstall" in theirs.stdout
    assert settings.read_text() == "{}"  # neither reformatted nor removed


def test_init_dry_run_says_so_on_a_line_of_its_own(user_dir: Path, tmp_path: Path) -> None:
    done = run("init", "--dry-run", "--user-dir", str(user_dir),
               env={"HOME": str(tmp_path / "home"), "PATH": f"{BIN}{os.pathsep}/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "(dry run: nothing is written; this is what init would do)"
    assert lines[1] == "" and lines[2] == f"1. The recommended guards, into {user_dir}:"
    assert list(user_dir.iterdir()) == []


@pytest.mark.parametrize(("module", "extra", "framework"), [
    ("langchain", "langchain", "langchain"),
    ("openai_agents", "openai-agents", "agents"),
    ("agentscope", "agentscope", "agentscope"),
    ("agentscope_middleware", "agentscope2", "agentscope"),
])
def test_an_adapter_without_its_framework_names_the_extra(module: str, extra: str,
                                                          framework: str) -> None:
    # the framework made absent for this process, whatever this venv holds
    code = (f"import sys; sys.modules[{framework!r}] = None\n"
            "try:\n"
            f"    import mcp_hooks.adapters.{module}\n"
            "except ImportError as exc:\n"
            "    print(type(exc).__name__, isinstance(exc, ModuleNotFoundError),\n"
            "          exc.name.split('.')[0])\n"
            "    print(exc)\n")
    done = subprocess.run([str(BIN / "python"), "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    kind, message = done.stdout.splitlines()
    assert kind == f"MissingExtraError True {framework}"
    assert message.startswith(f"mcp_hooks.adapters.{module} needs ")
    assert install_command(extra) in message  # the form that works today (not on PyPI)
    assert f"pip install '.[{extra}]' in a checkout of mcp-hooks" in message


def test_serve_on_fault_warn_as_a_flag_reaches_the_bridge_endpoint(user_dir: Path,
                                                                    project: Path,
                                                                    tmp_path: Path) -> None:
    """`serve --on-fault warn`, no MCP_HOOKS_ON_FAULT: the forward endpoint's own fault
    replies (a payload it cannot read) let the call through as the engine's do (a broken
    hook), instead of denying as the environment's default would."""
    assert "MCP_HOOKS_ON_FAULT" not in os.environ
    broken = user_dir / "broken"
    (broken / "scripts").mkdir(parents=True)
    (broken / "HOOK.md").write_text("---\nname: broken\ntriger: before_tool\n---\n")
    (broken / "scripts" / "run.sh").write_text("exit 2\n")
    payload = json.dumps({"session_id": "s1", "hook_event_name": "PreToolUse",
                          "cwd": str(project), "tool_name": "Bash",
                          "tool_input": {"command": "ls"}})
    token = "on-fault-token"

    def ask(base: str, body: str) -> tuple[int, dict[str, object]]:
        answer = httpx2.post(f"{base}/hooks/bridge/claude-code?event=PreToolUse",
                             content=body.encode(), timeout=30,
                             headers={"Authorization": f"Bearer {token}"})
        return answer.status_code, (answer.json() if answer.content.strip() else {})

    for flags, denied in (((), True), (("--on-fault", "warn"), False)):
        with served(project, user_dir, tmp_path / "events.jsonl", "--token", token,
                    *flags) as base:
            for body in (payload, "this is not JSON"):  # the engine's fault; the endpoint's
                status, reply = ask(base, body)
                assert status == 200, (flags, body, reply)
                decision = reply.get("hookSpecificOutput", {})
                assert isinstance(decision, dict)
                said = json.dumps(reply)
                assert (decision.get("permissionDecision") == "deny") is denied, (flags, reply)
                if not denied:
                    assert "on-fault: warn" in said or "allowed" in said, reply
