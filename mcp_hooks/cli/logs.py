"""``mcp-hooks log`` and what it shares with ``signals``: ``print_log`` and ``--since``.

``log`` prints the event log of the configured store: the file (``--log``,
``MCP_HOOKS_LOG``) for ``file:``, else a shared store's event records (``--state URL``,
``MCP_HOOKS_STATE``; ``state/reader.py``), by session (``--session``) and time (``--since``),
the last ``-n``, ``--json`` for the raw records, ``--follow`` to keep printing new ones,
``--fail-open`` for only the events a failing hook let through (``fail_open`` in the record),
``--would`` for only the events an audit-mode hook would have changed (a hook's ``would``),
``--digest D`` for only the events a hooks version decided (``hooks_digest`` or any layer's
digest in ``layer_digests``).
Records are printed in time order (``ts``), so records a replica's spool replayed late stand
where they happened; each text line names the replica that wrote it (a shared store's) and
the outcome's warnings (the loop guard's override among them).

Imported on every run of ``mcp-hooks`` (its parser is part of the command line): the store
and the formatting are imported only when ``log`` runs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mcp_hooks import options
from mcp_hooks.errors import EXIT_OK, ConfigError

if TYPE_CHECKING:
    from mcp_hooks.state.eventlog import EventLog
    from mcp_hooks.state.reader import StoreLog


def add_log_parser(sub: Any) -> None:
    """Declare ``log`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser("log", help="print the event log")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    p.add_argument("--session", metavar="ID", help="only this session's events")
    p.add_argument("--json", action="store_true", help="print the raw JSON lines")
    p.add_argument("--fail-open", action="store_true",
                   help="only the events a failing hook let through (on_error: allow, or a "
                   "fault of ours under on_fault warn): their records' fail_open field")
    p.add_argument("--would", action="store_true",
                   help="only the events an audit-mode hook would have denied, rewritten, asked "
                   "or stop-blocked (docs/policy.md): their hooks' would field")
    p.add_argument("--digest", metavar="D",
                   help="only the events this hooks version decided: the record's hooks_digest "
                   "or the digest of any of its layers (managed, user, project, hooks.yaml)")
    p.add_argument("-n", "--lines", type=line_count, default=20, metavar="N",
                   help="how many of the latest events to print (default 20; 0 = all)")
    add_since_option(p)
    options.add_common_options(p)


_SPAN = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_TIME = re.compile(r"\d{4}-\d\d-\d\d(T\d\d(:\d\d(:\d\d(\.\d{1,3})?)?)?)?", re.ASCII)
_SINCE_HELP = ("a UTC time (2026-01-15, 2026-01-15T10:30, '2026-01-15 10:30:00') or a span "
               "back from now (90s, 10m, 2h, 7d)")


def since_time(text: str) -> str:
    """``--since``: the ISO 8601 UTC text records are compared with (``ts``, ``timestamp``)."""
    given = text.strip()
    if given[:-1].isdigit() and given[-1:] in _SPAN:
        back = time.time() - int(given[:-1]) * _SPAN[given[-1]]
        try:
            return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(max(back, 0.0)))
        except (OverflowError, OSError, ValueError):  # further back than time goes
            return "0000"
    when = given.replace(" ", "T").removesuffix("Z")
    if not _TIME.fullmatch(when):
        raise argparse.ArgumentTypeError(f"{text!r} is not a time: give {_SINCE_HELP}")
    return when


def line_count(text: str) -> int:
    """``-n``: a whole number, 0 or more (0: all)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count of lines; give 0 (all) or more")
    return value


def add_since_option(parser: argparse.ArgumentParser) -> None:
    """``--since`` on ``log`` and ``signals``."""
    parser.add_argument("--since", type=since_time, metavar="TIME",
                        help=f"only records from then on: {_SINCE_HELP}")


def cmd_log(args: argparse.Namespace) -> int:
    # lazy: 10 ms of cold bridge (python -X importtime)
    from mcp_hooks.cli.report import format_log_record

    # lazy: 3 ms of cold bridge (python -X importtime), only `log` reads a store
    from mcp_hooks.state.reader import close_log, open_log

    log = open_log(options.state_url(args), options.log_path(args), "events")
    try:
        return print_log(log, args, (lambda r: json.dumps(r)) if args.json
                         else format_log_record, "events")
    finally:
        close_log(log)


Select = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def when(record: dict[str, Any]) -> str:
    """A record's time as the logs write it (``ts`` in the event log, ``timestamp`` in the
    signal log): ISO 8601 UTC text, which sorts as time does."""
    return str(record.get("ts") or record.get("timestamp") or "")


def only_fail_open(args: argparse.Namespace, records: Iterable[dict[str, Any]],
                   ) -> Iterable[dict[str, Any]]:
    """The records the filters keep: ``--fail-open`` (a failure let them through, their
    ``fail_open`` field), ``--would`` (an audited hook would have changed them), ``--digest``
    (a hooks version decided them, ``has_digest``)."""
    if getattr(args, "fail_open", False):
        records = (r for r in records if r.get("fail_open"))
    if getattr(args, "would", False):
        records = (r for r in records if any(isinstance(h, dict) and h.get("would")
                                             for h in r.get("hooks") or []))
    digest = getattr(args, "digest", None)
    if digest is not None:
        if len(digest.strip()) < 8:
            raise ConfigError(f"--digest {digest!r}: give at least 8 characters of a digest "
                              "(a record's hooks_digest or one of its layer_digests)")
        records = (r for r in records if has_digest(r, digest))
    return records


def has_digest(record: dict[str, Any], digest: str) -> bool:
    """Whether a record was decided by this digest (its ``hooks_digest``, or a layer's in
    ``layer_digests``; a prefix of at least 8 characters matches too)."""
    wanted = digest.strip().lower()
    layers = record.get("layer_digests")
    given = [record.get("hooks_digest"), *(layers.values() if isinstance(layers, dict) else ())]
    return len(wanted) >= 8 and any(isinstance(d, str) and d.startswith(wanted) for d in given)


def print_log(log: EventLog | StoreLog, args: argparse.Namespace,
              show: Callable[[dict[str, Any]], str], what: str,
              select: Select | None = None) -> int:
    """``log`` and ``signals``: the records of ``--session`` in time order (a shared store's
    spool replays records late: they are put back where they happened), the last ``-n``,
    then with ``--follow`` each new one until interrupted (a file log or a shared store's).
    ``select``: keeps some of the records read (``signals --open``); each followed record is
    kept when ``select([record])`` keeps it."""
    since = getattr(args, "since", None)
    records = sorted((r for r in log.read(args.session) if since is None or when(r) >= since),
                     key=when)  # stable: records of the same time keep the log's order
    if select is not None:
        records = select(records)
    records = list(only_fail_open(args, records))
    if args.lines:
        records = records[-args.lines:]
    for record in records:
        print(show(record))
    if args.follow:
        try:
            for record in only_fail_open(args, log.follow(args.session)):
                if select is None or select([record]):
                    print(show(record), flush=True)
        except KeyboardInterrupt:
            return EXIT_OK
    elif not records:
        print(f"no {what} logged {f'since {since} ' if since else 'yet '}in {log.path}",
              file=sys.stderr)
    return EXIT_OK
