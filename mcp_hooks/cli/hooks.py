"""The hook commands: ``validate``, ``new`` (``list``, ``show`` and ``events`` are in
``listing.py``, ``fire`` in ``fire.py``, ``log`` in ``logs.py``; ``add_parsers`` declares them all).

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hooks import options
from mcp_hooks.cli import fire, listing
from mcp_hooks.cli.logs import add_log_parser

if TYPE_CHECKING:
    pass


# -- parsers -----------------------------------------------------------------------------


def add_parsers(sub: Any) -> None:
    """Declare the hook commands on the ``mcp-hooks`` subparsers."""
    for add in (listing.add_list_parser, listing.add_show_parser, listing.add_events_parser,
                fire.add_parser, _add_validate_parser, _add_new_parser, add_log_parser):
        add(sub)


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




def cmd_validate(args: argparse.Namespace) -> int:
    # lazy: 4 ms of cold fire (python -X importtime), for validate alone
    from mcp_hooks.cli.validate import command

    return command(args)


def cmd_new(args: argparse.Namespace) -> int:
    # lazy: 2 ms of cold fire (python -X importtime)
    from mcp_hooks.cli.scaffold import new_command

    return new_command(args)
