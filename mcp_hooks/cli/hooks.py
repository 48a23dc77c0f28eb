"""The hook commands: ``list``, ``show``, ``events``, ``validate``, ``new`` (``fire`` is in
``fire.py``, ``log`` in ``logs.py``); ``add_parsers`` declares them and ``fire``.

Each ``cmd_*`` reads its parsed arguments, calls the core (``Engine``, ``Registry``,
``load_hook``, ``EventLog``) and prints for people or, with ``--json``, for programs. Exit
codes: 0 allowed / ok, 2 denied (``fire``), 1 problems found (``validate``, ``show`` of an
invalid hook, ``new`` over an existing folder). A caller's mistake is raised as a
``ConfigError`` (``UsageError``, ``UnknownEventError``, ``InvalidEventError``), which the
command boundary in :mod:`mcp_hooks.cli` prints on one line and ends with exit 64.

Imported on every run of ``mcp-hooks`` (its parsers are part of the command line), so it
imports nothing the one-shot commands do not need: no asyncio, no MCP SDK.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hooks import options
from mcp_hooks.cli import fire
from mcp_hooks.cli.logs import add_log_parser
from mcp_hooks.errors import (
    EXIT_FAILURE,
    EXIT_OK,
    UsageError,
    did_you_mean,
)
from mcp_hooks.spec.events import EVENTS, canonical_event, catalogue

if TYPE_CHECKING:
    pass


# -- parsers -----------------------------------------------------------------------------


def add_parsers(sub: Any) -> None:
    """Declare the hook commands on the ``mcp-hooks`` subparsers."""
    for add in (_add_list_parser, _add_show_parser, _add_events_parser, fire.add_parser,
                _add_validate_parser, _add_new_parser, add_log_parser):
        add(sub)


def _add_list_parser(sub: Any) -> None:
    p = sub.add_parser("list", help="list installed hooks (and invalid ones, with their errors)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--event", metavar="EVENT", help="only hooks of this event (any alias)")
    options.add_common_options(p)


def _add_show_parser(sub: Any) -> None:
    p = sub.add_parser("show", help="print one hook's HOOK.md")
    p.add_argument("name")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document: where the hook is, its fields and its text")
    options.add_common_options(p)


def _add_events_parser(sub: Any) -> None:
    p = sub.add_parser("events", help="print the event catalogue with every alias")
    p.add_argument("--json", action="store_true")


def _add_validate_parser(sub: Any) -> None:
    p = sub.add_parser(
        "validate", help="check hook folders; exit 1 and file:field: reason for each problem"
    )
    p.add_argument(
        "dirs", nargs="*", type=Path, metavar="DIR",
        help="hook folders, or folders of hook folders (default: the user and project folders)",
    )
    p.add_argument("--strict", action="store_true", help="unknown frontmatter keys are errors")
    p.add_argument(
        "--portable", action="store_true",
        help="also report what another implementation of the current Agent Hooks spec would "
        "reject (a snake_case trigger, a name unlike its folder, an unknown top-level key, "
        "...): check a hook library before you share it",
    )
    p.add_argument("--json", action="store_true",
                   help="print one JSON document (ok, problems, hooks, entries, ...) instead "
                   "of text; the exit code is the same")
    options.add_common_options(p)


def _add_new_parser(sub: Any) -> None:
    p = sub.add_parser("new", help="scaffold a working hook")
    p.add_argument("name", help="lowercase kebab-case, e.g. check-migrations")
    p.add_argument("--trigger", required=True, metavar="EVENT", help="event to subscribe to")
    options.add_scope_option(p, default=None, default_said="user",
                             user="your hooks folder, for every project",
                             project="this project's .agents/hooks (trusted as written)")
    p.add_argument("--project", action="store_true",
                   help="deprecated: the same as --scope project")
    p.add_argument("--tool", metavar="REGEX", help="matcher.tool (tool events)")
    p.add_argument("--pattern", metavar="REGEX", help="matcher.pattern (tool events)")
    p.add_argument("--priority", type=int, default=100)
    p.add_argument("--async", dest="is_async", action="store_true", help="run in the background")
    options.add_common_options(p)


# -- commands ----------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    # lazy: 10 ms of cold bridge (python -X importtime)
    from mcp_hooks.cli.report import format_hooks

    registry = options.registry(args, watch=False)
    hooks = registry.hooks()
    if args.event:
        event = canonical_event(args.event)
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
    as_json = getattr(args, "json", False)
    if hook is None:
        invalid = [i for i in registry.invalid if i.name == args.name]
        if invalid and as_json:
            _emit_json({"name": args.name, "valid": False, "hook": None,
                        "problems": [i.as_dict() for i in invalid], "text": None})
            return EXIT_FAILURE
        if invalid:
            print(f"mcp-hooks: hook {args.name!r} is invalid: {invalid[0]}", file=sys.stderr)
            return EXIT_FAILURE
        names = [h.name for h in registry.hooks()] + [u.name for u in registry.untrusted]
        hint = did_you_mean(args.name, names)
        raise UsageError(f"no hook named {args.name!r}{f' ({hint})' if hint else ''}; "
                         "see `mcp-hooks list`")
    if as_json:
        _emit_json({"name": hook.name, "valid": True,
                    "hook": hook.frontmatter() | {"scope": hook.scope, "dir": str(hook.dir),
                                                  "file": str(hook.hook_file)},
                    "problems": [], "text": hook.read_text()})
        return EXIT_OK
    sys.stdout.write(hook.read_text())
    return EXIT_OK


def _emit_json(document: Any) -> None:
    # lazy: 10 ms of cold bridge (python -X importtime)
    from mcp_hooks.cli.report import emit_json

    emit_json(document)


def cmd_events(args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps(catalogue(), indent=2))
        return EXIT_OK
    width = max(len(n) for n in EVENTS)
    for info in EVENTS.values():
        print(f"{info.name:<{width}}  {info.layer:<8}  {info.summary}")
        print(f"{'':<{width}}  aliases: {', '.join(info.aliases)}")
        print(f"{'':<{width}}  deny: {info.on_deny}")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    # lazy: 4 ms of cold fire (python -X importtime), for validate alone
    from mcp_hooks.cli.validate import command

    return command(args)


def cmd_new(args: argparse.Namespace) -> int:
    # lazy: 2 ms of cold fire (python -X importtime)
    from mcp_hooks.cli.scaffold import new_command

    return new_command(args)
