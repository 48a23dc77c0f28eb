"""The ``mcp-hooks`` command: its parser, its table of commands, and the error boundary.

Each command group lives in a module of this package, which parses its arguments, turns
them into the typed options of its adapter and calls it::

    hooks    list, show, events, validate, new, log   (the core; always imported)
    fire     fire: one event, its decision (always imported, with hooks)
    serve    serve: the MCP server (mcp_hooks.server)
    proxy    proxy: the gating proxy (mcp_hooks.proxy)
    hosts    bridge, install, uninstall, doctor (mcp_hooks.hosts)
    trust    trust: review and trust a project's hooks (mcp_hooks.registry.trust)
    setup    add, init: the bundled hook library, the first run (mcp_hooks.registry.bundle)
    signals  signals, respond: the signal log of the control layer (mcp_hooks.state.signallog)
    asks     pending, approve, refuse: a hook's ask answered out of band (docs/ask.md)
    replay   replay: logged events fired again against another hooks folder
    dashboard  dashboard: the web pages and /metrics (mcp_hooks.dashboard)
    report   what people read: an outcome, the hook table, event-log lines

Every group but ``hooks`` and ``fire`` is imported, and its parser built, only when its
command runs, so ``fire`` and ``bridge`` (run by hosts on every tool call) start fast.

The shared options (``--user-dir``, ``--project-dir``, ``--log``, ``--on-fault``, ...:
:func:`mcp_hooks.options.add_common_options`) are accepted before the command as well as
after it; after it wins. A command's ``--help`` shows only the ones it reads
(``options.READ_BY``), and ``--scope user|project`` is one option wherever a command writes
to one of the two (``options.add_scope_option``). Every command's ``--help`` ends with
examples (``EXAMPLES``), each of which parses (``tests/cli/test_cli_help.py``). A mistyped
command, event, host or hook name is answered with "did you mean"
(:func:`mcp_hooks.errors.did_you_mean`).

Exit codes (:mod:`mcp_hooks.errors`): 0 allowed / ok; 2 denied (so ``fire`` works from shell
and git hooks); 1 a run-time error (:class:`~mcp_hooks.errors.RunError`) or problems found
(``validate``, ``doctor``); 64 the caller's mistake (a bad option, an unknown event,
malformed JSON: :class:`~mcp_hooks.errors.ConfigError`).

The boundary (:func:`main`) prints any :class:`~mcp_hooks.errors.MCPHooksError` a command
raises as one line, ``mcp-hooks <command>: <message>``, and exits with its code. Task groups
(anyio) wrap what fails inside them in exception groups, nested as deep as the tasks were: a
group whose leaves are all ours (or a busy port, ``OSError`` ``EADDRINUSE``) is reported by
its first leaf the same way. Anything else is a bug and keeps its traceback. Ctrl-C exits 130.

Gates are the exception (``GATES``: ``fire`` and ``bridge``, whose answer a host, a shell or a
git hook reads as allow or deny): Ctrl-C, a ``SystemExit`` or a bug escaping them is answered
with the command's own deny (printed after the traceback of a bug), with its exit code, never
130 or a crash with no answer. This is ``fire``'s one guard (``guard.py``): the engine under
it raises what broke (having logged the event as that fault). ``bridge`` has its own,
``hosts.bridge.answer``, which answers in the host's form and never raises, so this one
answers only what breaks around it (the arguments, writing the answer).

Commands whose stdout is a protocol (the gates, ``serve`` and ``proxy`` over stdio) own it
from the start (:func:`mcp_hooks.ownstdout.owned_stdout`): what anything else prints (a module
printing at import, an oracle, a library) goes to stderr, never before or inside the answer.
"""

from __future__ import annotations

import argparse
import builtins
import errno
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from mcp_hooks import __version__, options
from mcp_hooks.cli import fire, hooks, listing, logs
from mcp_hooks.errors import (
    EXIT_OK,
    EXIT_USAGE,
    ConfigError,
    MCPHooksError,
    did_you_mean,
    exit_code,
)
from mcp_hooks.guard import named
from mcp_hooks.ownstdout import owned_stdout

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it

Command = Callable[[argparse.Namespace], int]


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<word>[^']*)' \(choose from (?P<choices>.*)\)")


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing shutil (2 ms of every bridge
    start: it imports zlib, bz2 and lzma): ``COLUMNS``, else the terminal's, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0 and sys.__stdout__ is not None:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)  # argparse's, sized without shutil
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        found = _INVALID_CHOICE.search(message)
        if found:  # a mistyped command or choice: say which one was meant
            choices = re.findall(r"'([^']*)'", found["choices"])
            hint = did_you_mean(found["word"], choices)
            message += f"; {hint}" if hint else ""
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps descriptions as usual, but keeps an examples epilog line for line."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _terminal_columns() - 2 if width is None else width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


# Two or three real command lines per command, shown at the end of its --help (and checked to
# parse by tests/cli/test_cli_help.py, so they cannot rot). A command added to the parser needs
# its row here.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        "mcp-hooks init",
        "mcp-hooks fire pre-tool-call --tool Shell --input '{\"command\": \"rm -rf /\"}'",
        "mcp-hooks --user-dir ./hooks list",
    ),
    "list": (
        "mcp-hooks list",
        "mcp-hooks list --event pre-tool-call --json",
        "mcp-hooks --project-dir ~/src/app list",
    ),
    "show": (
        "mcp-hooks show block-dangerous-commands",
        "mcp-hooks show enforce-tests --project-dir .",
    ),
    "events": (
        "mcp-hooks events",
        "mcp-hooks events --json",
    ),
    "fire": (
        "mcp-hooks fire pre-tool-call --tool Shell --input '{\"command\": \"rm -rf /\"}'",
        "mcp-hooks fire pre-agent-turn-stop --session s1 --payload "
        "'{\"stop_reason\": \"no_tool_calls\"}' --verbose",
        "echo '{\"command\": \"ls\"}' | mcp-hooks fire before_tool --tool Shell --input - "
        "--json",
    ),
    "validate": (
        "mcp-hooks validate",
        "mcp-hooks validate --strict .agents/hooks",
        "mcp-hooks validate ~/.config/agents/hooks/my-guard",
    ),
    "new": (
        "mcp-hooks new no-force-push --trigger pre-tool-call --tool Shell "
        "--pattern 'git push.*--force'",
        "mcp-hooks new run-tests --trigger pre-agent-turn-stop --scope project",
    ),
    "log": (
        "mcp-hooks log",
        "mcp-hooks log --follow --session s1",
        "mcp-hooks log -n 0 --json",
    ),
    "serve": (
        "claude mcp add hooks -- mcp-hooks serve",
        "mcp-hooks serve --transport http --port 8765",
        "MCP_HOOKS_TOKEN=$(openssl rand -hex 32) mcp-hooks serve --transport http "
        "--host 0.0.0.0",
    ),
    "proxy": (
        "mcp-hooks proxy --config .mcp.json",
        "mcp-hooks proxy --upstream 'fs=npx -y @modelcontextprotocol/server-filesystem .'",
        "mcp-hooks proxy --config .mcp.json --transport http --port 8766",
    ),
    "bridge": (
        "mcp-hooks bridge claude-code < payload.json",
        "mcp-hooks bridge codex --event PreToolUse < payload.json",
    ),
    "install": (
        "mcp-hooks install claude-code",
        "mcp-hooks install gemini-cli --scope user --dry-run",
        "mcp-hooks install claude-code --via server --token \"$MCP_HOOKS_TOKEN\"",
    ),
    "uninstall": (
        "mcp-hooks uninstall claude-code",
        "mcp-hooks uninstall cursor --scope user --dry-run",
    ),
    "doctor": (
        "mcp-hooks doctor",
        "mcp-hooks doctor --host claude-code --json",
    ),
    "trust": (
        "mcp-hooks trust",
        "mcp-hooks trust ~/src/app --hook enforce-tests --yes",
        "mcp-hooks trust --list",
    ),
    "add": (
        "mcp-hooks add --list",
        "mcp-hooks add block-dangerous-commands",
        "mcp-hooks add block-dangerous-commands --scope project --force",
    ),
    "signals": (
        "mcp-hooks signals",
        "mcp-hooks signals --follow --session s1",
        "mcp-hooks signals -n 0 --json",
    ),
    "respond": (
        "mcp-hooks respond 0b7c3f9e-5d2a-4c1e-9f6b-2a8d4e6c1b3a retry_after_fix",
        "mcp-hooks respond 0b7c3f9e-5d2a-4c1e-9f6b-2a8d4e6c1b3a acknowledge "
        "--details '{\"why\": \"25 files is fine here\"}'",
    ),
    "pending": (
        "mcp-hooks pending",
        "mcp-hooks pending --json --state redis://localhost:6379/0",
    ),
    "approve": (
        "mcp-hooks approve ask-3f9e5d2a4c",
        "mcp-hooks approve ask-3f9e5d2a4c --for-session --by ann",
    ),
    "refuse": (
        "mcp-hooks refuse ask-3f9e5d2a4c --reason 'not on the production database'",
        "mcp-hooks refuse ask-3f9e5d2a4c --reason 'use the staging copy' --by ann",
    ),
    "replay": (
        "mcp-hooks replay --hooks ./next-hooks",
        "mcp-hooks replay --since 7d --hooks ./next-hooks --json",
        "mcp-hooks replay --session s1 --hooks ./next-hooks",
    ),
    "init": (
        "mcp-hooks init",
        "mcp-hooks init --host claude-code --scope user",
        "mcp-hooks init --dry-run",
    ),
    "dashboard": (
        "mcp-hooks dashboard",
        "mcp-hooks dashboard --state redis://redis:6379/0 --host 0.0.0.0 "
        "--token \"$MCP_HOOKS_TOKEN\"",
    ),
}


def examples_epilog(command: str) -> str | None:
    """The ``examples:`` block ending ``command``'s ``--help`` ("" for ``mcp-hooks``)."""
    lines = EXAMPLES.get(command)
    if not lines:
        return None
    return "examples:\n" + "".join(f"  {line}\n" for line in lines)


def _command_word(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is neither an option nor the
    value of a shared option given before the command (``--user-dir X list``)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in options.VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


# Where each command after the hook commands declares its parser (module, function), in the
# order of --help. Each is imported and built only when its command runs (or for --help):
# the serving options cost a hook host's `fire` and `bridge` runs milliseconds.
_PARSERS: dict[str, tuple[str, str]] = {
    "serve": ("mcp_hooks.cli.serve", "add_parser"),
    "proxy": ("mcp_hooks.cli.proxy", "add_parser"),
    "bridge": ("mcp_hooks.cli.hosts", "add_bridge_parser"),
    "install": ("mcp_hooks.cli.hosts", "add_install_parser"),
    "uninstall": ("mcp_hooks.cli.hosts", "add_uninstall_parser"),
    "doctor": ("mcp_hooks.cli.hosts", "add_doctor_parser"),
    "trust": ("mcp_hooks.cli.trust", "add_parser"),
    "add": ("mcp_hooks.cli.setup", "add_add_parser"),
    "init": ("mcp_hooks.cli.setup", "add_init_parser"),
    "signals": ("mcp_hooks.cli.signals", "add_signals_parser"),
    "respond": ("mcp_hooks.cli.signals", "add_respond_parser"),
    "pending": ("mcp_hooks.cli.asks", "add_pending_parser"),
    "approve": ("mcp_hooks.cli.asks", "add_approve_parser"),
    "refuse": ("mcp_hooks.cli.asks", "add_refuse_parser"),
    "replay": ("mcp_hooks.cli.replay", "add_parser"),
    "dashboard": ("mcp_hooks.cli.dashboard", "add_parser"),
}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments, only the command they name gets its options beyond
    the hook commands' (see ``_PARSERS``), and a command of ``_PARSERS`` is the one command
    it has."""
    parser = _Parser(
        prog="mcp-hooks",
        description="Run HOOK.md lifecycle hooks for any AI agent.",
        epilog=f"{examples_epilog('')}\nexit codes: 0 allowed/ok, 2 denied, 1 problem found "
        "or run-time error, 64 usage error.",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mcp-hooks {_version()}")
    options.add_common_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    command = _command_word(sys.argv[1:] if argv is None else argv)
    alone = command in _PARSERS  # a bridge, every tool call: its parser only (4 ms less)
    if not alone:
        hooks.add_parsers(sub)
    built = set(sub.choices)
    for name, (module, func) in _PARSERS.items():
        if command in (None, name):
            getattr(importlib.import_module(module), func)(sub)
            built.add(name)
        elif not alone:  # another command runs: not imported, not built
            sub.add_parser(name)
    for name in built:
        command_parser = sub.choices[name]
        epilog = examples_epilog(name)
        if epilog is not None and not command_parser.epilog:
            command_parser.epilog = epilog
            command_parser.formatter_class = _HelpFormatter
    return parser


def _version() -> str:
    return __version__


# -- commands ----------------------------------------------------------------------------


def _lazy(module: str, func: str) -> Command:
    """The command ``module.func``, imported when it runs."""
    def run(args: argparse.Namespace) -> int:
        result: int = getattr(importlib.import_module(module), func)(args)
        return result

    return run


COMMANDS: dict[str, Command] = {
    "fire": fire.cmd_fire,
    "list": listing.cmd_list,
    "show": listing.cmd_show,
    "events": listing.cmd_events,
    "validate": hooks.cmd_validate,
    "new": hooks.cmd_new,
    "log": logs.cmd_log,
    "serve": _lazy("mcp_hooks.cli.serve", "command"),
    "proxy": _lazy("mcp_hooks.cli.proxy", "command"),
    "bridge": _lazy("mcp_hooks.cli.hosts", "bridge_command"),
    "install": _lazy("mcp_hooks.cli.hosts", "install_command"),
    "uninstall": _lazy("mcp_hooks.cli.hosts", "uninstall_command"),
    "doctor": _lazy("mcp_hooks.cli.hosts", "doctor_command"),
    "trust": _lazy("mcp_hooks.cli.trust", "command"),
    "add": _lazy("mcp_hooks.cli.setup", "add_command"),
    "init": _lazy("mcp_hooks.cli.setup", "init_command"),
    "signals": _lazy("mcp_hooks.cli.signals", "signals_command"),
    "respond": _lazy("mcp_hooks.cli.signals", "respond_command"),
    "pending": _lazy("mcp_hooks.cli.asks", "pending_command"),
    "approve": _lazy("mcp_hooks.cli.asks", "approve_command"),
    "refuse": _lazy("mcp_hooks.cli.asks", "refuse_command"),
    "replay": _lazy("mcp_hooks.cli.replay", "command"),
    "dashboard": _lazy("mcp_hooks.cli.dashboard", "command"),
}


# The gates: what answers a deny, in each one's form, when something escapes the command.
GATES: dict[str, Callable[[argparse.Namespace, str], int]] = {
    "fire": fire.fire_fault,
    "bridge": lambda args, what: importlib.import_module(  # imported when it answers
        "mcp_hooks.cli.hosts").bridge_fault(args, what),
}


def _owns_stdout(args: argparse.Namespace) -> bool:
    """Whether the command's stdout is a protocol (see the module docstring)."""
    if args.command in GATES:
        return True
    return args.command in ("serve", "proxy") and getattr(args, "transport", None) == "stdio"


# -- the boundary ------------------------------------------------------------------------


def _group_type() -> type[BaseException] | None:
    """``BaseExceptionGroup``: built in from Python 3.11; on 3.10 the backport's, which is
    imported already whenever a group of it was raised."""
    found = getattr(builtins, "BaseExceptionGroup", None)
    if found is None:
        found = getattr(sys.modules.get("exceptiongroup"), "BaseExceptionGroup", None)
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions an exception group holds, however deeply nested, in order (an
    exception that is not a group is its own one leaf)."""
    group = _group_type()
    leaves: list[BaseException] = []
    stack = [exc]
    while stack:
        current = stack.pop()
        if group is not None and isinstance(current, group):
            stack.extend(reversed(current.exceptions))  # type: ignore[attr-defined]
        else:
            leaves.append(current)
    return leaves


def _ours(exc: BaseException) -> bool:
    """An error that says what went wrong in its message: ours, or a port already taken."""
    return isinstance(exc, MCPHooksError) or (
        isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE)


def reportable(exc: BaseException) -> BaseException | None:
    """The error to report on one line for ``exc``, or None when it is a bug (a traceback).

    ``exc`` itself when it is ours; for an exception group, its first leaf when every leaf
    is ours (one of ours beside a bug is still a bug).
    """
    leaves = _leaves(exc)
    return leaves[0] if all(_ours(leaf) for leaf in leaves) else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mcp-hooks`` with ``argv`` (default ``sys.argv[1:]``); the exit code."""
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    gate = GATES.get(args.command)
    _warn_state_argv(args)
    try:
        if _owns_stdout(args):
            with owned_stdout():
                code: int = COMMANDS[args.command](args)
        else:
            code = COMMANDS[args.command](args)
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED if gate is None else gate(args, _INTERRUPTED)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except BaseException as exc:  # re-raised below unless it is ours (or a gate answers)
        leaves = _leaves(exc)
        if leaves and all(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
            return EXIT_INTERRUPTED if gate is None else gate(args, _INTERRUPTED)
        error = reportable(exc)
        if error is None:
            if gate is None:
                raise
            # lazy: 1.5 ms of every cold start, for the crash path only (python -X importtime)
            import traceback

            traceback.print_exception(exc)  # a bug (or a SystemExit): for whoever reads stderr
            return gate(args, f"mcp-hooks {args.command} failed: {named(exc)}")
        if gate is not None and not isinstance(error, ConfigError):
            # a run-time error of ours under a gate: its deny, never exit 1 ("carry on")
            return gate(args, f"mcp-hooks {args.command} failed: {named(error)}")
        print(f"mcp-hooks {args.command}: {error}", file=sys.stderr)
        return exit_code(error)


def _warn_state_argv(args: argparse.Namespace) -> None:
    """Every command that takes ``--state``: a password in it is said on stderr (argv is
    public: ``ps``, ``/proc/PID/cmdline``); ``MCP_HOOKS_STATE`` is the fix."""
    if not getattr(args, "state", None):
        return
    # lazy: 1 ms of cold start (python -X importtime), only when --state is given
    from mcp_hooks.state.exposure import argv_warning

    warning = argv_warning(args.command, args.state)
    if warning:
        print(warning, file=sys.stderr, flush=True)


_INTERRUPTED = "interrupted (SIGINT, KeyboardInterrupt) before it could decide"
