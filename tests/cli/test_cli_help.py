"""The command line helps: examples in every --help (and they parse), shared options on either
side of the command, "did you mean", and what serve/proxy say on a terminal."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import re
import select
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_hooks.cli import COMMANDS as TABLE
from mcp_hooks.cli import EXAMPLES, build_parser, main
from mcp_hooks.options import READ_BY
from mcp_hooks.spec.events import canonical_event
from tests.conftest import MCP_HOOKS, write_hook

COMMANDS = sorted(TABLE)


def run(*args: str, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, timeout=60,
                          stdin=stdin)


def help_text(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return out.getvalue()


def command_line(example: str) -> list[str]:
    """The mcp-hooks arguments of an example line (past `mcp-hooks`, up to a pipe or a
    redirection)."""
    words = shlex.split(example)
    args = words[words.index("mcp-hooks") + 1:]
    for stop in ("|", "<", ">", "&&"):
        if stop in args:
            args = args[:args.index(stop)]
    return args


# -- examples ------------------------------------------------------------------------------


def test_every_command_has_examples() -> None:
    assert {"fire", "list", "serve", "proxy", "install", "trust"} <= set(COMMANDS)
    for command in COMMANDS:
        assert 2 <= len(EXAMPLES.get(command, ())) <= 3, f"{command} needs 2-3 examples"
    assert len(EXAMPLES[""]) >= 2


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_ends_with_examples_that_parse(command: str) -> None:
    text = help_text(*([command] if command else []))
    block = text[text.rindex("examples:"):].splitlines()
    shown = [line.strip() for line in block[1:] if line.startswith("  ")]
    assert shown == list(EXAMPLES[command])
    if command:  # nothing after the examples (the top level adds its exit codes)
        assert text.rstrip().endswith(EXAMPLES[command][-1])
    for example in shown:
        argv = command_line(example)
        if command:
            assert command in argv, example
        args = build_parser(argv).parse_args(argv)  # exits 64 on a rotten example
        if getattr(args, "event", None) and args.command == "fire":
            canonical_event(args.event)
        if args.command == "new":
            canonical_event(args.trigger)


def test_examples_keep_their_lines_and_descriptions_still_wrap() -> None:
    text = help_text("serve")
    assert "  mcp-hooks serve --transport http --port 8765\n" in text
    assert max(len(line) for line in text.split("examples:")[0].splitlines()) <= 100


# -- shared options on either side ---------------------------------------------------------

SHARED_COMMANDS = [
    ["list"], ["fire", "before_tool"], ["validate"], ["log"], ["serve"],
    ["proxy", "--upstream", "a=true"], ["install", "claude-code"], ["doctor"], ["trust"],
    ["bridge", "codex"], ["show", "x"],
]


@pytest.mark.parametrize("command", SHARED_COMMANDS, ids=lambda c: c[0])
def test_shared_options_before_or_after_the_command(command: list[str]) -> None:
    def parse(*argv: str) -> object:
        return build_parser(list(argv)).parse_args(list(argv))

    before = parse("--user-dir", "A", "--on-fault", "warn", "--no-log", *command)
    after = parse(*command, "--user-dir", "A", "--on-fault", "warn", "--no-log")
    for args in (before, after):
        assert args.user_dir == Path("A") and args.on_fault == "warn"  # type: ignore[attr-defined]
        assert args.no_log is True  # type: ignore[attr-defined]
    both = parse("--user-dir", "A", "--log", "L", *command, "--user-dir", "B")
    assert both.user_dir == Path("B") and both.log == Path("L")  # type: ignore[attr-defined]
    neither = parse(*command)
    assert neither.user_dir is None and neither.no_log is False  # type: ignore[attr-defined]
    assert neither.on_fault is None and neither.trust_project_hooks is None  # type: ignore[attr-defined]


def test_shared_options_first_reach_the_command(user_dir: Path, project: Path) -> None:
    write_hook(user_dir, "no-rm", extra="matcher:\n  tool: Shell\n  pattern: rm\n",
               script="echo 'rm refused' >&2\nexit 2\n")
    folders = ["--user-dir", str(user_dir), "--project-dir", str(project)]
    first = run(*folders, "list")
    last = run("list", *folders)
    assert first.returncode == last.returncode == 0
    assert first.stdout == last.stdout and "no-rm" in first.stdout
    fired = run(*folders, "fire", "before_tool", "--tool", "Shell", "--input",
                '{"command": "rm -rf /"}')
    assert fired.returncode == 2 and "DENIED" in fired.stdout
    # a command parsed lazily (serve: its parser is built only when it runs) still is found
    served = run(*folders, "serve", "--transport", "http", "--port", "99999")
    assert served.returncode == 64 and "--port 99999" in served.stderr


# -- did you mean --------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "meant"), [
    (["fire", "befor_tool"], "before_tool"),
    (["fire", "pre-tool-cal"], "pre-tool-call"),
    (["new", "x", "--trigger", "pre_tool_call"], "pre-tool-call"),
    (["install", "claud-code"], "claude-code"),
    (["bridge", "gemini-clii"], "gemini-cli"),
    (["lsit"], "list"),
    (["fire", "before_tool", "--on-fault", "wrn"], "warn"),
])
def test_did_you_mean(argv: list[str], meant: str, user_dir: Path) -> None:
    done = run(*argv, "--user-dir", str(user_dir), stdin=subprocess.DEVNULL)
    assert done.returncode == 64, done.stderr
    said = [line for line in done.stderr.splitlines() if "did you mean" in line]
    assert len(said) == 1 and f"did you mean {meant!r}?" in said[0]
    assert said[0].startswith("mcp-hooks")


def test_did_you_mean_a_hook_name(user_dir: Path, project: Path) -> None:
    write_hook(user_dir, "block-dangerous-commands")
    done = run("show", "block-dangerous-comands", "--user-dir", str(user_dir),
               "--project-dir", str(project))
    assert done.returncode == 64
    assert done.stderr.strip() == ("mcp-hooks show: no hook named 'block-dangerous-comands' "
                                   "(did you mean 'block-dangerous-commands'?); see "
                                   "`mcp-hooks list`")
    far = run("show", "zzz", "--user-dir", str(user_dir), "--project-dir", str(project))
    assert "did you mean" not in far.stderr


# -- serve and proxy on a terminal ---------------------------------------------------------


@contextlib.contextmanager
def on_a_terminal(argv: list[str], cwd: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The command with its stdin and stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=subprocess.DEVNULL, stderr=slave, cwd=cwd,
                            start_new_session=True)
    os.close(slave)
    try:
        yield proc, master
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the proxy's upstream too
        proc.wait(timeout=10)
        os.close(master)


def read_until(fd: int, needle: bytes, timeout: float = 30) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            seen += chunk
    return seen


@pytest.mark.parametrize("command", [
    ["serve"], ["proxy", "--upstream", "up=python3 -c 'import time; time.sleep(60)'"],
], ids=["serve", "proxy"])
def test_stdio_on_a_terminal_says_it_waits_for_a_client(command: list[str], user_dir: Path,
                                                        project: Path) -> None:
    argv = [MCP_HOOKS, *command, "--user-dir", str(user_dir), "--project-dir", str(project)]
    with on_a_terminal(argv, project) as (_, master):
        said = read_until(master, b"Ctrl-C").decode()
    assert f"mcp-hooks {command[0]}: waiting for an MCP client on stdio" in said
    assert f"claude mcp add mcp-hooks -- mcp-hooks {command[0]}" in said
    assert "docs/server.md" in said


def test_stdio_from_pipes_says_nothing(user_dir: Path, project: Path) -> None:
    done = subprocess.run([MCP_HOOKS, "serve", "--user-dir", str(user_dir), "--project-dir",
                           str(project)], input="", capture_output=True, text=True, timeout=60)
    assert "waiting for an MCP client" not in done.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1"])
def test_http_announces_urls_that_reach_it(host: str, user_dir: Path, project: Path) -> None:
    port = free_port()
    argv = [MCP_HOOKS, "serve", "--transport", "http", "--host", host, "--port", str(port),
            "--token", "t0k3n", "--user-dir", str(user_dir), "--project-dir", str(project)]
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, start_new_session=True) as proc:
        check_announcement(proc, host, port)


def check_announcement(proc: subprocess.Popen[str], host: str, port: int) -> None:
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"serving http at (http://\S+)/mcp", line)
        assert found, line
        assert found[1] == f"http://127.0.0.1:{port}"  # the loopback URL reaches any bind
        if host == "0.0.0.0":
            assert "bound to 0.0.0.0 (every address of this machine)" in line
            others = re.findall(r"http://(\S+?):(\d+)/mcp", line.split("also at", 1)[-1]) \
                if "also at" in line else []
            assert all("127.0.0.1" not in address for address, _ in others)
            for address, shown_port in others:  # each one really reaches the server
                assert int(shown_port) == port
                with socket.create_connection((address.strip("[]"), port), timeout=5):
                    pass
        else:
            assert "bound to" not in line and "also at" not in line
    finally:
        proc.terminate()
        proc.wait(timeout=20)


# -- each command's --help: what it reads, its scope -----------------------------------------

SHARED_FLAGS = {"user_dir": "--user-dir", "project_dir": "--project-dir", "log": "--log FILE",
                "no_log": "--no-log", "stop_block_cap": "--stop-block-cap",
                "on_fault": "--on-fault", "trust_project_hooks": "--trust-project-hooks",
                "state": "--state URL", "chain_timeout": "--chain-timeout SECONDS",
                "managed_dir": "--managed-dir DIR", "mode": "--mode {enforce,audit}"}


def test_every_command_says_which_shared_options_it_reads() -> None:
    assert set(READ_BY) == set(COMMANDS)
    assert all(set(reads) <= set(SHARED_FLAGS) for reads in READ_BY.values())


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_help_shows_only_the_shared_options_it_reads(command: str) -> None:
    done = run(command, "--help")
    assert done.returncode == 0
    text = done.stdout
    for dest, flag in SHARED_FLAGS.items():
        assert (flag in text) == (dest in READ_BY[command]), (command, flag)
    if not READ_BY[command]:
        assert "hook folders and log" not in text and "safety" not in text


def test_the_top_level_help_lists_every_shared_option() -> None:
    text = run("--help").stdout
    assert all(flag in text for flag in SHARED_FLAGS.values())
    assert "each command's --help lists the ones it reads" in text


def test_a_shared_option_a_command_does_not_read_is_still_accepted_after_it(
        user_dir: Path) -> None:
    """Global options: a wrapper may pass the same ones to every command."""
    write_hook(user_dir, "fine")
    done = run("validate", str(user_dir), "--on-fault", "warn", "--stop-block-cap", "3")
    assert done.returncode == 0 and "ok  fine" in done.stdout, done.stderr


@pytest.mark.parametrize(("command", "default"), [
    (["new", "x"], "user"), (["add"], "user"), (["init"], "user"),
    (["install", "codex"], "project; Kimi CLI and Cline: user (Kimi CLI has no project config)"),
    (["uninstall", "codex"], "project; Kimi CLI and Cline: user (Kimi CLI has no project config)"),
])
def test_scope_is_one_option_with_its_default_in_the_help(command: list[str],
                                                          default: str) -> None:
    text = " ".join(run(*command, "--help").stdout.split())  # unwrapped
    assert "--scope {user,project} user: " in text
    assert f"(default: {default})" in text
    args = build_parser([*command, "--scope", "project"]).parse_args(
        [*command, "--scope", "project"] + (["--trigger", "before_tool"] if command[0] == "new"
                                            else []))
    assert args.scope == "project"


# -- docs/cli.md stays true -------------------------------------------------------------------

DOCS_CLI = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_every_option_in_the_docs_synopsis_is_the_command_s() -> None:
    text = DOCS_CLI.read_text(encoding="utf-8")
    synopsis = text.split("```", 2)[1]
    checked = 0
    command = ""
    helps: dict[str, str] = {}
    for line in synopsis.splitlines():
        words = line.split()
        if words[:1] == ["mcp-hooks"] and len(words) > 1:
            command = words[1]
        if command not in COMMANDS:
            continue
        shown = helps.setdefault(command, help_text(command))
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line):
            assert flag in shown, f"docs/cli.md: {line.strip()!r}: {flag} is not {command}'s"
            checked += 1
    assert checked >= 20
