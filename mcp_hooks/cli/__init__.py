"""The ``mcp-hooks`` command: its parser, its table of commands, and the error boundary.

Each command lives in a module of this package and is imported only when it runs, so ``fire``
and ``bridge`` (run by hosts on every tool call) start fast::

    hooks    fire, list, show, events, validate, new, log
    trust    trust (review and trust a project's hooks)
    report   what people read: an outcome, the hook table, event-log lines

The serving doors (``serve``, ``proxy``) and the host commands (``bridge``, ``install``,
``uninstall``, ``doctor``) turn their arguments into typed options and call their adapters.

Exit codes (:mod:`mcp_hooks.errors`): 0 allowed / ok; 2 denied (so ``fire`` works from shell
and git hooks); 1 a run-time error (:class:`~mcp_hooks.errors.RunError`) or problems found
(``validate``, ``doctor``); 64 the caller's mistake (a bad option, an unknown event,
malformed JSON: :class:`~mcp_hooks.errors.ConfigError`).

The boundary (:func:`main`) prints any :class:`~mcp_hooks.errors.MCPHooksError` a command
raises as one line, ``mcp-hooks <command>: <message>``, and exits with its code. Task groups
(anyio) wrap what fails inside them in exception groups, nested as deep as the tasks were: a
group whose leaves are all ours (or a busy port, ``OSError`` ``EADDRINUSE``) is reported by
its first leaf the same way. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import builtins
import errno
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from mcp_hooks import options
from mcp_hooks.cli import hooks
from mcp_hooks.errors import EXIT_OK, EXIT_USAGE, MCPHooksError, exit_code

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it

Command = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


# -- parsers of the doors (until their cli modules declare them) ------------------------


def _add_serve_parser(sub: Any, full: bool = True) -> None:
    help_text = "run the MCP server (stdio, streamable HTTP or SSE)"
    if not full:  # another command runs: its options need not be built
        sub.add_parser("serve", help=help_text)
        return
    from mcp_hooks.server.transport import add_transport_arguments  # imports no SDK

    p = sub.add_parser(
        "serve", help=help_text,
        description="Serve fire_hook_event, list_hooks, get_hook and the hooks:// resources "
        "over MCP. HTTP and SSE bind 127.0.0.1 unless told otherwise; any other address "
        "needs a token (--token or MCP_HOOKS_TOKEN).",
    )
    add_transport_arguments(p)
    p.add_argument("--root", action="append", type=Path, metavar="DIR", default=[],
                   help="a folder whose subfolders clients may name as work_dir "
                   "(repeatable; default the project dir)")
    p.add_argument("--bridge-tool", action="store_true",
                   help="also serve bridge_hook, the tool Claude Code mcp_tool hooks call "
                   "(mcp-hooks install claude-code --via mcp)")
    options.add_common_options(p)


def _add_proxy_parser(sub: Any, full: bool = True) -> None:
    help_text = "gate every tool of upstream MCP servers through the hooks"
    if not full:
        sub.add_parser("proxy", help=help_text)
        return
    from mcp_hooks.server.transport import add_transport_arguments

    p = sub.add_parser(
        "proxy", help=help_text,
        description="Serve the tools, resources and prompts of upstream MCP servers; every "
        "tools/call passes through the before_tool / after_tool hooks first.",
    )
    up = p.add_argument_group("upstream servers")
    up.add_argument("--config", type=Path, metavar="FILE",
                    help="an mcpServers JSON file (Claude Desktop, .mcp.json, Cursor, VS Code)")
    up.add_argument("--upstream", action="append", metavar="NAME=COMMAND", default=[],
                    help="one more upstream without a file: NAME='command args' (stdio) or "
                    "NAME=https://host/mcp (streamable HTTP); repeatable")
    up.add_argument("--prefix", action="store_true",
                    help="prefix every tool and prompt <server>__ (default: only on collisions)")
    up.add_argument("--timeout", type=float, metavar="SECONDS", default=60.0,
                    help="how long one upstream call may take (default 60)")
    up.add_argument("--startup-timeout", type=float, metavar="SECONDS", default=30.0,
                    help="how long an upstream may take to start (default 30)")
    add_transport_arguments(p, default_port=8766)
    options.add_common_options(p)


def _add_bridge_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bridge", help="answer an agent host's native hook (its payload on stdin)",
        description="The command an agent host's hook config runs: reads the host's JSON "
        "payload on stdin, fires our event, answers in the host's own JSON and exit code. "
        "What mcp-hooks cannot decide (an unreadable payload, an engine fault) is a deny in "
        "the host's own form, a warning only for events that cannot block; --on-fault warn "
        "or MCP_HOOKS_ON_FAULT=warn lets it through with the warning.",
    )
    p.add_argument("host", help="claude-code, codex, gemini-cli, cursor, copilot-cli, kimi-cli")
    p.add_argument("--event", metavar="NAME",
                   help="the host's event name (default: the payload's hook_event_name)")
    options.add_common_options(p)


def _add_install_parser(sub: Any) -> None:
    p = sub.add_parser(
        "install", help="write an agent host's hook config to run our hooks",
        description="Merge our entries into the host's hook config (keeping every other "
        "entry, with a backup of the previous file). Running it again changes nothing.",
    )
    p.add_argument("host", help="claude-code, codex, gemini-cli, cursor, copilot-cli, kimi-cli")
    p.add_argument("--scope", choices=("project", "user"), default=None,
                   help="the project's config (default) or the user's (Kimi CLI: user only)")
    p.add_argument("--dry-run", action="store_true", help="print the diff; write nothing")
    p.add_argument("--config", type=Path, metavar="FILE",
                   help="write this config file instead of the host's usual one")
    p.add_argument("--via", choices=("command", "server", "http", "mcp"), default="command",
                   help="command: run `mcp-hooks bridge` (default); server: forward to a "
                   "running `mcp-hooks serve --transport http` with curl, falling back to the "
                   "bridge; http / mcp: Claude Code's native http / mcp_tool hook types")
    p.add_argument("--event", dest="events", action="append", metavar="EVENT",
                   help="only this event (host or canonical name; repeatable; default all)")
    p.add_argument("--url", metavar="URL",
                   help="the server for --via server/http (default http://127.0.0.1:8765)")
    p.add_argument("--token", help="the server's bearer token (or MCP_HOOKS_TOKEN)")
    p.add_argument("--server-name", metavar="NAME",
                   help="--via mcp: our server's name in Claude Code's MCP config "
                   "(default mcp-hooks)")
    p.add_argument("--bridge-command", metavar="CMD",
                   help="how the host starts mcp-hooks (or MCP_HOOKS_BRIDGE_COMMAND; default: "
                   "plain `mcp-hooks` for project scope, a stable absolute one for user scope)")
    options.add_common_options(p)


def _add_uninstall_parser(sub: Any) -> None:
    p = sub.add_parser("uninstall", help="remove our entries from an agent host's hook config")
    p.add_argument("host", help="claude-code, codex, gemini-cli, cursor, copilot-cli, kimi-cli")
    p.add_argument("--scope", choices=("project", "user"), default=None,
                   help="the project's config (default) or the user's (Kimi CLI: user only)")
    p.add_argument("--dry-run", action="store_true", help="print the diff; write nothing")
    p.add_argument("--config", type=Path, metavar="FILE",
                   help="write this config file instead of the host's usual one")
    options.add_common_options(p)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments, only the command they name gets the serving options
    (building those costs a hook host's ``fire`` and ``bridge`` runs a few milliseconds)."""
    parser = _Parser(
        prog="mcp-hooks",
        description="Run HOOK.md lifecycle hooks for any AI agent.",
        epilog="Exit codes: 0 allowed/ok, 2 denied, 1 problem found or run-time error, "
        "64 usage error.",
    )
    parser.add_argument("--version", action="version", version=f"mcp-hooks {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    words = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
    command = words[0] if words else None
    hooks.add_parsers(sub)
    _add_serve_parser(sub, full=command in (None, "serve"))
    _add_proxy_parser(sub, full=command in (None, "proxy"))
    for add in (_add_bridge_parser, _add_install_parser, _add_uninstall_parser):
        add(sub)
    for name, module, func in (("doctor", "mcp_hooks.doctor", "add_doctor_parser"),
                               ("trust", "mcp_hooks.cli.trust", "add_parser")):
        if command in (None, name):
            getattr(importlib.import_module(module), func)(sub)
        else:  # another command runs (a bridge, every tool call): not imported, not built
            sub.add_parser(name)
    return parser


def _version() -> str:
    from mcp_hooks import __version__

    return __version__


# -- commands ----------------------------------------------------------------------------


def _lazy(module: str, func: str) -> Command:
    """The command ``module.func``, imported when it runs."""
    def run(args: argparse.Namespace) -> int:
        result: int = getattr(importlib.import_module(module), func)(args)
        return result

    return run


COMMANDS: dict[str, Command] = {
    "fire": hooks.cmd_fire,
    "list": hooks.cmd_list,
    "show": hooks.cmd_show,
    "events": hooks.cmd_events,
    "validate": hooks.cmd_validate,
    "new": hooks.cmd_new,
    "log": hooks.cmd_log,
    "serve": _lazy("mcp_hooks.server", "serve_command"),
    "proxy": _lazy("mcp_hooks.proxy.app", "proxy_command"),
    "bridge": _lazy("mcp_hooks.hosts.bridge", "bridge_command"),
    "install": _lazy("mcp_hooks.hosts.install", "install_command"),
    "uninstall": _lazy("mcp_hooks.hosts.install", "uninstall_command"),
    "doctor": _lazy("mcp_hooks.doctor", "doctor_command"),
    "trust": _lazy("mcp_hooks.cli.trust", "command"),
}


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
    try:
        code: int = COMMANDS[args.command](args)
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except BaseException as exc:  # re-raised below unless it is ours
        leaves = _leaves(exc)
        if leaves and all(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
            return EXIT_INTERRUPTED
        error = reportable(exc)
        if error is None:
            raise
        print(f"mcp-hooks {args.command}: {error}", file=sys.stderr)
        return exit_code(error)
