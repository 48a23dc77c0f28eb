"""The commands that show what is there: ``list`` (the installed hooks, and the invalid and
untrusted ones), ``show`` (one hook's HOOK.md) and ``events`` (the event catalogue with every
alias); their parsers are declared by ``hooks.add_parsers``, in the order ``--help`` lists them.

Imported on every run of ``mcp-hooks`` (its parsers are part of the command line), so it
imports nothing the one-shot commands do not need.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mcp_hooks import options
from mcp_hooks.errors import EXIT_FAILURE, EXIT_OK, UsageError, did_you_mean
from mcp_hooks.spec.events import EVENTS, canonical_event, catalogue


def add_list_parser(sub: Any) -> None:
    p = sub.add_parser("list", help="list installed hooks (and invalid ones, with their errors)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--event", metavar="EVENT", help="only hooks of this event (any alias)")
    options.add_common_options(p)


def add_show_parser(sub: Any) -> None:
    p = sub.add_parser("show", help="print one hook's HOOK.md")
    p.add_argument("name")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document: where the hook is, its fields and its text")
    options.add_common_options(p)


def add_events_parser(sub: Any) -> None:
    p = sub.add_parser("events", help="print the event catalogue with every alias")
    p.add_argument("--json", action="store_true")



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
