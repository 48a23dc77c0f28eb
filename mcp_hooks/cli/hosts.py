"""The host commands: ``bridge``, ``install``, ``uninstall`` and ``doctor``.

Each ``add_*_parser`` declares a command on the ``mcp-hooks`` subparsers; each ``*_command``
turns the parsed arguments into the adapter's typed options (``BridgeOptions``,
``InstallOptions``, ``DoctorOptions``, all in :mod:`mcp_hooks.hosts`) and runs it. The
adapters are imported only when their command runs: a host runs ``bridge`` on every tool
call, so this module imports nothing but argparse and the shared options.

Exit codes are the adapters' own (``bridge``: the host's answer; ``install``: 64 for options
the host cannot take, 1 for a config it must not touch; ``doctor``: 1 when the gate is not
whole); an error raised (an unknown ``doctor --host``) reaches the boundary in
:func:`mcp_hooks.cli.main`.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hooks import options
from mcp_hooks.errors import MCPHooksError
from mcp_hooks.hosts import UnknownHostError, get_host
from mcp_hooks.options import CommonOptions

if TYPE_CHECKING:
    from mcp_hooks.hosts.install import InstallOptions

HOST_NAMES = ("claude-code, codex, gemini-cli, cursor, copilot-cli, kimi-cli, qwen-code, cline, "
              "opencode")


# -- parsers -------------------------------------------------------------------------------


def add_bridge_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bridge", help="answer an agent host's native hook (its payload on stdin)",
        description="The command an agent host's hook config runs: reads the host's JSON "
        "payload on stdin, fires our event, answers in the host's own JSON and exit code. "
        "What mcp-hooks cannot decide (an unreadable payload, an engine fault) is a deny in "
        "the host's own form, a warning only for events that cannot block; --on-fault warn "
        "or MCP_HOOKS_ON_FAULT=warn lets it through with the warning.",
    )
    p.add_argument("host", help=HOST_NAMES)
    p.add_argument("--event", metavar="NAME",
                   help="the host's event name (default: the payload's hook_event_name)")
    options.add_common_options(p)


def _add_target_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("host", help=HOST_NAMES)
    options.add_scope_option(p, default=None, user="the user's config of the host, for every "
                             "project", project="this project's config of the host",
                             default_said="project; Kimi CLI and Cline: user (Kimi CLI has no "
                             "project config)")
    p.add_argument("--dry-run", action="store_true", help="print the diff; write nothing")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout (host, scope, config, changed, "
                   "exit_code); the text goes to stderr")
    p.add_argument("--config", "--hooks-dir", dest="config", type=Path, metavar="FILE",
                   help="write this config file instead of the host's usual one (Cline: "
                   "the hooks folder, as given to cline --hooks-dir)")


def add_install_parser(sub: Any) -> None:
    p = sub.add_parser(
        "install", help="write an agent host's hook config to run our hooks",
        description="Merge our entries into the host's hook config (keeping every other "
        "entry, with a backup of the previous file). Running it again changes nothing.",
    )
    _add_target_arguments(p)
    p.add_argument("--via", choices=("command", "server", "http", "mcp"), default="command",
                   help="command: run `mcp-hooks bridge` (default); server: a small script "
                   "that forwards to a running `mcp-hooks serve --transport http`, falling "
                   "back to the bridge; http / mcp: Claude Code's native http / mcp_tool hook "
                   "types")
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


def add_uninstall_parser(sub: Any) -> None:
    p = sub.add_parser("uninstall", help="remove our entries from an agent host's hook config")
    _add_target_arguments(p)
    options.add_common_options(p)


def add_doctor_parser(sub: Any) -> None:
    p = sub.add_parser(
        "doctor", help="check that the gate is whole: host wiring, hooks, log, trust, server",
        description="For each agent host: where our hooks are wired, whether the command "
        "there resolves and really denies a probe tool call; then invalid, untrusted and "
        "shadowed hooks, whether the event log and trust store can be written, and whether "
        "a --via server server answers and authenticates. Exit 1 when anything is broken.",
    )
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--host", dest="hosts", action="append", metavar="HOST",
                   help="only this host (repeatable; default all)")
    options.add_common_options(p)


# -- commands ------------------------------------------------------------------------------


def bridge_command(args: argparse.Namespace) -> int:
    """``mcp-hooks bridge <host>``: answer one host hook call (stdin in, answer out)."""
    # lazy: 23 ms of cold start for install and doctor, which do not need it
    from mcp_hooks.hosts.bridge import BridgeOptions, run_bridge

    return run_bridge(args.host, BridgeOptions(event=getattr(args, "event", None),
                                               common=CommonOptions.from_args(args)))


def bridge_fault(args: argparse.Namespace, what: str) -> int:
    """The bridge's deny when something escaped it (``mcp_hooks.cli.GATES``)."""
    # lazy: 23 ms of cold start for install and doctor, which do not need it
    from mcp_hooks.hosts.bridge import BridgeOptions, fault_exit

    return fault_exit(args.host, BridgeOptions(event=getattr(args, "event", None),
                                               common=CommonOptions.from_args(args)), what)


def install_options(args: argparse.Namespace) -> InstallOptions:
    """The ``InstallOptions`` of a parsed ``install`` or ``uninstall`` command line."""
    # lazy: 71 ms of cold start for bridge and doctor, which do not need it
    from mcp_hooks.hosts.install import InstallOptions

    return InstallOptions(
        host=args.host,
        scope=getattr(args, "scope", None),
        dry_run=bool(getattr(args, "dry_run", False)),
        config=getattr(args, "config", None),
        via=getattr(args, "via", None) or "command",
        events=tuple(getattr(args, "events", None) or ()),
        url=getattr(args, "url", None),
        token=getattr(args, "token", None),
        server_name=getattr(args, "server_name", None),
        bridge_command=getattr(args, "bridge_command", None),
        common=CommonOptions.from_args(args),
    )


def install_command(args: argparse.Namespace) -> int:
    """``mcp-hooks install <host>``: merge our entries into the host's hook config."""
    # lazy: 71 ms of cold start for bridge and doctor, which do not need it
    from mcp_hooks.hosts.install import install

    if getattr(args, "json", False):
        return _as_json("install", install_options(args), install)
    return install(install_options(args))


def uninstall_command(args: argparse.Namespace) -> int:
    """``mcp-hooks uninstall <host>``: remove only our entries from the host's hook config."""
    # lazy: 71 ms of cold start for bridge and doctor, which do not need it
    from mcp_hooks.hosts.install import uninstall

    if getattr(args, "json", False):
        return _as_json("uninstall", install_options(args), uninstall)
    return uninstall(install_options(args))


def _as_json(verb: str, opts: InstallOptions, change: Callable[[InstallOptions], int]) -> int:
    """``install``/``uninstall --json``: the command's text on stderr, then one JSON document
    on stdout: what was asked, the config file, whether it changed, the exit code."""
    # lazy: 11 ms of cold start (python -X importtime) for install --json only
    from mcp_hooks.cli.report import emit_json

    # lazy: 47 ms of cold start (cli.setup, the bundled library) for install --json only
    from mcp_hooks.cli.setup import init_project

    # lazy: 0 ms more (install_command and uninstall_command imported it already)
    from mcp_hooks.hosts.install import with_settings

    config = Path(opts.config).expanduser().resolve() if opts.config is not None else None
    name, scope = opts.host, opts.scope
    try:
        host = get_host(opts.host)
        name, scope = host.name, opts.scope or host.default_scope
        opts = with_settings(opts)  # built once: the command reads the same record
        if config is None and opts.settings is not None:
            config = host.config_path(scope, init_project(opts.settings))
    except (UnknownHostError, MCPHooksError):  # the command itself says so
        pass
    before = _fingerprint(config)
    with contextlib.redirect_stdout(sys.stderr):
        code = change(opts)
    emit_json({"command": verb, "host": name, "scope": scope,
               "config": str(config) if config is not None else None,
               "dry_run": opts.dry_run, "changed": _fingerprint(config) != before,
               "exit_code": code, "ok": code == 0})
    return code


def _fingerprint(path: Path | None) -> object:
    """What a host config holds now: a file's bytes, a folder's files (Cline), or None."""
    if path is None:
        return None
    try:
        if path.is_dir():
            return sorted((p.name, p.read_bytes()) for p in path.iterdir() if p.is_file())
        return path.read_bytes()
    except OSError:
        return None


def doctor_command(args: argparse.Namespace) -> int:
    """``mcp-hooks doctor``: check the wiring of every host, the hooks, the log and trust."""
    # lazy: 58 ms of cold start for install and bridge, which do not need it
    from mcp_hooks.hosts.doctor import DoctorOptions, run_doctor

    return run_doctor(DoctorOptions(hosts=tuple(getattr(args, "hosts", None) or ()),
                                    json=bool(getattr(args, "json", False)),
                                    common=CommonOptions.from_args(args)))


__all__ = ["add_bridge_parser", "add_doctor_parser", "add_install_parser",
           "add_uninstall_parser", "bridge_command", "doctor_command", "install_command",
           "install_options", "uninstall_command"]
