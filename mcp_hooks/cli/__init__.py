"""The ``mcp-hooks`` command.

Exit codes: 0 allowed / ok, 2 denied (so ``fire`` works from shell and git hooks), 1 a
problem found (``validate``) or an internal failure, 64 a usage error (bad option, unknown
event, malformed JSON argument). The commands that serve (``serve``, ``proxy``) and the host
bridges import their modules only when run, so ``fire`` and ``bridge`` start fast.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from mcp_hooks import options
from mcp_hooks.discovery import default_user_dir, project_hooks_dir
from mcp_hooks.engine import Engine, Event, fault_outcome
from mcp_hooks.errors import HookFileError, MCPHooksError
from mcp_hooks.events import EVENTS, canonical_event
from mcp_hooks.hookfile import NAME_RE, find_hook_file, load_hook

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_DENIED = 2
EXIT_USAGE = 64


class UsageError(MCPHooksError):
    """A command-line mistake; exits 64 with the message."""


class _Fault(MCPHooksError):
    """Input ``fire`` cannot process although it is valid: answered as a fault (a deny)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


# -- parsers -----------------------------------------------------------------------------


def _add_list_parser(sub: Any) -> None:
    p = sub.add_parser("list", help="list installed hooks (and invalid ones, with their errors)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--event", metavar="EVENT", help="only hooks of this event (any alias)")
    options.add_common_options(p)


def _add_show_parser(sub: Any) -> None:
    p = sub.add_parser("show", help="print one hook's HOOK.md")
    p.add_argument("name")
    options.add_common_options(p)


def _add_events_parser(sub: Any) -> None:
    p = sub.add_parser("events", help="print the event catalogue with every alias")
    p.add_argument("--json", action="store_true")


def _add_fire_parser(sub: Any) -> None:
    p = sub.add_parser(
        "fire", help="fire one event at the hooks and print the decision (exit 2 when denied)"
    )
    p.add_argument("event", help="event type: canonical name or alias (see `mcp-hooks events`)")
    p.add_argument("--tool", metavar="NAME", help="tool name (tool events)")
    p.add_argument("--input", metavar="JSON", help="tool input, a JSON object ('-' reads stdin)")
    p.add_argument("--output", metavar="JSON", help="tool output (after_tool), any JSON")
    p.add_argument("--error", metavar="TEXT", help="the tool's error (after_tool_failure)")
    p.add_argument("--tool-use-id", metavar="ID")
    p.add_argument(
        "--payload", metavar="JSON",
        help="further payload fields, a JSON object ('-' reads stdin), e.g. "
        '\'{"stop_reason": "no_tool_calls"}\'',
    )
    p.add_argument("--session", metavar="ID",
                   help="session id (the stop loop guard counts per session)")
    p.add_argument("--work-dir", metavar="DIR", help="the hooks' working folder (default: project)")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    options.add_common_options(p)


def _add_validate_parser(sub: Any) -> None:
    p = sub.add_parser(
        "validate", help="check hook folders; exit 1 and file:field: reason for each problem"
    )
    p.add_argument(
        "dirs", nargs="*", type=Path, metavar="DIR",
        help="hook folders, or folders of hook folders (default: the user and project folders)",
    )
    p.add_argument("--strict", action="store_true", help="unknown frontmatter keys are errors")
    options.add_common_options(p)


def _add_new_parser(sub: Any) -> None:
    p = sub.add_parser("new", help="scaffold a working hook")
    p.add_argument("name", help="lowercase kebab-case, e.g. check-migrations")
    p.add_argument("--trigger", required=True, metavar="EVENT", help="event to subscribe to")
    p.add_argument("--project", action="store_true",
                   help="create it in the project's .agents/hooks (default: the user folder)")
    p.add_argument("--tool", metavar="REGEX", help="matcher.tool (tool events)")
    p.add_argument("--pattern", metavar="REGEX", help="matcher.pattern (tool events)")
    p.add_argument("--priority", type=int, default=100)
    p.add_argument("--async", dest="is_async", action="store_true", help="run in the background")
    options.add_common_options(p)


def _add_log_parser(sub: Any) -> None:
    p = sub.add_parser("log", help="print the event log")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    p.add_argument("--session", metavar="ID", help="only this session's events")
    p.add_argument("--json", action="store_true", help="print the raw JSON lines")
    p.add_argument("-n", "--lines", type=int, default=20, metavar="N",
                   help="how many of the latest events to print (default 20; 0 = all)")
    options.add_common_options(p)


def _add_serve_parser(sub: Any, full: bool = True) -> None:
    help_text = "run the MCP server (stdio, streamable HTTP or SSE)"
    if not full:  # another command runs: its options need not be built
        sub.add_parser("serve", help=help_text)
        return
    from mcp_hooks.transport import add_transport_arguments  # imports no SDK

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
    from mcp_hooks.transport import add_transport_arguments

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
        epilog="Exit codes: 0 allowed/ok, 2 denied, 1 problem found, 64 usage error.",
    )
    parser.add_argument("--version", action="version", version=f"mcp-hooks {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    words = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
    command = words[0] if words else None
    for add in (_add_list_parser, _add_show_parser, _add_events_parser, _add_fire_parser,
                _add_validate_parser, _add_new_parser, _add_log_parser):
        add(sub)
    _add_serve_parser(sub, full=command in (None, "serve"))
    _add_proxy_parser(sub, full=command in (None, "proxy"))
    for add in (_add_bridge_parser, _add_install_parser, _add_uninstall_parser):
        add(sub)
    for name, module in (("doctor", "mcp_hooks.doctor"), ("trust", "mcp_hooks.trust_cli")):
        if command in (None, name):
            import importlib

            getattr(importlib.import_module(module), f"add_{name}_parser")(sub)
        else:  # another command runs (a bridge, every tool call): not imported, not built
            sub.add_parser(name)
    return parser


def _version() -> str:
    from mcp_hooks import __version__

    return __version__


# -- commands ----------------------------------------------------------------------------


def _json_arg(text: str | None, what: str, *, want_object: bool = True) -> Any:
    if text is None:
        return None
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{what}: not valid JSON ({exc})") from None
    except RecursionError:  # valid JSON, nested deeper than Python's parser goes
        raise _Fault(f"{what}: nested too deep to read") from None
    if want_object and not isinstance(value, dict):
        raise UsageError(f"{what}: must be a JSON object, got {type(value).__name__}")
    return value


def cmd_fire(args: argparse.Namespace) -> int:
    try:
        canonical_event(args.event)
    except MCPHooksError as exc:
        raise UsageError(str(exc)) from None
    if args.input == "-" and args.payload == "-":
        raise UsageError("only one of --input and --payload can read stdin")
    if args.work_dir and not Path(args.work_dir).is_dir():
        raise UsageError(f"--work-dir {args.work_dir}: not an existing folder")
    try:
        event: Event | None = Event.create(
            event_type=args.event,
            session_id=args.session,
            work_dir=str(Path(args.work_dir).resolve()) if args.work_dir else None,
            tool_name=args.tool,
            tool_input=_json_arg(args.input, "--input"),
            tool_output=_json_arg(args.output, "--output", want_object=False),
            error=args.error,
            tool_use_id=args.tool_use_id,
            payload=_json_arg(args.payload, "--payload") or {},
        )
    except _Fault as exc:
        event, fault = None, str(exc)
    if event is None:
        outcome = fault_outcome(canonical_event(args.event), fault,
                                on_fault=options.on_fault(args))
    else:
        registry = options.registry(args, watch=False)
        engine = Engine(registry, log=options.event_log(args),
                        stop_block_cap=options.stop_block_cap(args), one_shot=True,
                        on_fault=options.on_fault(args))
        outcome = engine.fire_blocking(event)
    if args.json:
        print(outcome.to_json(indent=2))
    else:
        from mcp_hooks.report import format_outcome

        print(format_outcome(outcome, color=sys.stdout.isatty()))
    return EXIT_DENIED if outcome.denied else EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from mcp_hooks.report import format_hooks

    registry = options.registry(args, watch=False)
    hooks = registry.hooks()
    if args.event:
        try:
            event = canonical_event(args.event)
        except MCPHooksError as exc:
            raise UsageError(str(exc)) from None
        hooks = [h for h in hooks if h.event == event]
    if args.json:
        print(json.dumps({
            "user_dir": str(registry.user_dir),
            "project_dir": str(registry.project_dir),
            "hooks": [h.frontmatter() | {"dir": str(h.dir), "trust": "trusted",
                                         "replaces": str(registry.replaced[h.name].dir)
                                         if h.scope == "project" and h.name in registry.replaced
                                         else None}
                      for h in hooks],
            "untrusted": [u.as_dict() for u in registry.untrusted],
            "invalid": [i.as_dict() for i in registry.invalid],
            "warnings": registry.warnings,
        }, indent=2))
    else:
        print(format_hooks(registry, hooks))
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    registry = options.registry(args, watch=False)
    hook = registry.get(args.name)
    if hook is None:
        invalid = [i for i in registry.invalid if i.name == args.name]
        if invalid:
            print(f"mcp-hooks: hook {args.name!r} is invalid: {invalid[0]}", file=sys.stderr)
            return EXIT_PROBLEM
        raise UsageError(f"no hook named {args.name!r}; see `mcp-hooks list`")
    sys.stdout.write(hook.read_text())
    return EXIT_OK


def cmd_events(args: argparse.Namespace) -> int:
    from mcp_hooks.events import catalogue

    if args.json:
        print(json.dumps(catalogue(), indent=2))
        return EXIT_OK
    width = max(len(n) for n in EVENTS)
    for info in EVENTS.values():
        print(f"{info.name:<{width}}  {info.layer:<8}  {info.summary}")
        print(f"{'':<{width}}  aliases: {', '.join(info.aliases)}")
        print(f"{'':<{width}}  deny: {info.on_deny}")
    return EXIT_OK


def _hook_dirs(target: Path) -> list[Path]:
    if find_hook_file(target) is not None or (target / "scripts").is_dir():
        return [target]
    return sorted(p for p in target.iterdir() if p.is_dir() and not p.name.startswith("."))


def cmd_validate(args: argparse.Namespace) -> int:
    targets: list[tuple[str, Path]]
    if args.dirs:
        targets = [("user", d) for d in args.dirs]
    else:
        user = options.user_dir(args) or default_user_dir()
        targets = [("user", user), ("project", project_hooks_dir(options.project_dir(args)))]
    problems = checked = 0
    for scope, target in targets:
        if not target.is_dir():
            if args.dirs:
                print(f"{target}: not a folder", file=sys.stderr)
                problems += 1
            continue
        for hook_dir in _hook_dirs(target):
            checked += 1
            try:
                spec, warnings = load_hook(hook_dir, "project" if scope == "project" else "user",
                                           strict=args.strict)
            except HookFileError as exc:
                problems += 1
                print(f"{exc}", file=sys.stderr)
                continue
            for warning in warnings:
                print(f"warning: {warning}", file=sys.stderr)
            print(f"ok  {spec.name}  ({spec.trigger}, {spec.hook_file})")
    if checked == 0 and not problems:
        print("no hooks found", file=sys.stderr)
    summary = f"{checked} hook(s) checked, {problems} problem(s)"
    print(summary, file=sys.stderr if problems else sys.stdout)
    return EXIT_PROBLEM if problems else EXIT_OK


_SCRIPT = """#!/bin/sh
# {name}: runs on {trigger}. The event arrives as one JSON object on stdin.
# Allow: exit 0 (stdout may carry JSON: decision, reason, modified_input,
# additional_context). Deny: print the reason on stderr and exit 2.
payload=$(cat)
# Example: deny when the payload mentions something you never want.
# case "$payload" in *"rm -rf /"*) echo "refused: rm -rf /" >&2; exit 2;; esac
exit 0
"""


def cmd_new(args: argparse.Namespace) -> int:
    name = args.name
    if not NAME_RE.match(name) or len(name) > 64:
        raise UsageError(f"{name!r}: a hook name is 1-64 lowercase letters, digits and hyphens")
    try:
        event = canonical_event(args.trigger)
    except MCPHooksError as exc:
        raise UsageError(str(exc)) from None
    if not 0 <= args.priority <= 1000:
        raise UsageError("--priority must be from 0 to 1000")
    if (args.tool or args.pattern) and not EVENTS[event].is_tool_event:
        raise UsageError("--tool and --pattern apply to tool events only")
    root = (project_hooks_dir(options.project_dir(args)) if args.project
            else options.user_dir(args) or default_user_dir())
    hook_dir = root / name
    if hook_dir.exists():
        print(f"mcp-hooks: {hook_dir} already exists; nothing written", file=sys.stderr)
        return EXIT_PROBLEM
    lines = ["---", f"name: {name}", f"description: TODO say what {name} checks and why",
             f"trigger: {args.trigger}"]
    if args.tool or args.pattern:
        lines.append("matcher:")
        if args.tool:
            lines.append(f"  tool: {json.dumps(args.tool)}")
        if args.pattern:
            lines.append(f"  pattern: {json.dumps(args.pattern)}")
    lines += ["timeout: 30000", f"async: {'true' if args.is_async else 'false'}",
              f"priority: {args.priority}", "---", "", f"# {name}", "",
              "What this hook checks, when it denies, and what the agent should do then.", ""]
    (hook_dir / "scripts").mkdir(parents=True)
    (hook_dir / "HOOK.md").write_text("\n".join(lines), encoding="utf-8")
    script = hook_dir / "scripts" / "run"
    script.write_text(_SCRIPT.format(name=name, trigger=args.trigger), encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    print(f"created {hook_dir}/HOOK.md and {script}")
    print(f"try it: mcp-hooks fire {args.trigger}" + (f" --tool {args.tool}" if args.tool else ""))
    return EXIT_OK


def cmd_log(args: argparse.Namespace) -> int:
    from mcp_hooks.eventlog import EventLog
    from mcp_hooks.report import format_log_record

    log = EventLog(options.log_path(args))
    records = list(log.read(args.session))
    if args.lines:
        records = records[-args.lines:]
    show = (lambda r: json.dumps(r)) if args.json else format_log_record
    for record in records:
        print(show(record))
    if args.follow:
        try:
            for record in log.follow(args.session):
                print(show(record), flush=True)
        except KeyboardInterrupt:
            return EXIT_OK
    elif not records:
        print(f"no events logged yet in {log.path}", file=sys.stderr)
    return EXIT_OK


def _lazy(module: str, func: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        import importlib

        result: int = getattr(importlib.import_module(module), func)(args)
        return result

    return run


COMMANDS: dict[str, Any] = {
    "fire": cmd_fire,
    "list": cmd_list,
    "show": cmd_show,
    "events": cmd_events,
    "validate": cmd_validate,
    "new": cmd_new,
    "log": cmd_log,
    "serve": _lazy("mcp_hooks.server", "serve_command"),
    "proxy": _lazy("mcp_hooks.proxy.app", "proxy_command"),
    "bridge": _lazy("mcp_hooks.hosts.bridge", "bridge_command"),
    "install": _lazy("mcp_hooks.hosts.install", "install_command"),
    "uninstall": _lazy("mcp_hooks.hosts.install", "uninstall_command"),
    "doctor": _lazy("mcp_hooks.doctor", "doctor_command"),
    "trust": _lazy("mcp_hooks.trust_cli", "trust_command"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        code: int = COMMANDS[args.command](args)
        return code
    except UsageError as exc:
        print(f"mcp-hooks {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except MCPHooksError as exc:
        print(f"mcp-hooks {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
