"""``mcp-hooks signals`` and ``mcp-hooks respond``: read the signal log, answer a signal.

``signals`` prints the signal log (``signallog.py``, beside the event log ``--log`` names):
one line per signal sent and per response, in time order, ``--session`` for one session,
``--open`` for the signals no response answers yet, ``--follow`` to keep printing,
``--json`` for the raw lines (the seed's shape: ``timestamp, hook, intensity, source,
consumed, action`` and more). ``respond SIGNAL_ID ACTION [--details JSON]`` records an
answer for a script, as ``respond_to_signal`` does over MCP, and says what it recorded
(``--json``: the line written). SIGNAL_ID may be any unambiguous start of the id. With
``--state URL`` (``MCP_HOOKS_STATE``) a shared store's signal log is read and answered
(``state/reader.py``): every replica's signals, one answer each.

Exit codes: 0 ok; 64 an action that does not fit the signal's intensity, an unknown action or
signal, an ambiguous id, a signal already answered, ``--details`` that is not a JSON object, a
log that is not a regular file (``ConfigError``); 1 a log that cannot be written (``RunError``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mcp_hooks import options
from mcp_hooks.cli.logs import add_since_option, line_count, print_log
from mcp_hooks.errors import EXIT_OK, UsageError
from mcp_hooks.spec.signals import ACTIONS
from mcp_hooks.state.reader import StoreLog, close_log, open_signal_log
from mcp_hooks.state.signallog import SignalLog


def _log(args: argparse.Namespace) -> SignalLog | StoreLog:
    """The signal log the options name: beside the event log (``file:``), else the shared
    store's (``--state``, ``MCP_HOOKS_STATE``)."""
    return open_signal_log(options.state_url(args), options.log_path(args))


def add_signals_parser(sub: Any) -> None:
    """Declare ``signals`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser(
        "signals", help="print the signal log (the control layer's interventions, answers)",
        description="Print the signal log, beside the event log: every signal a hook or "
        "oracle sent (block, control, prompt, aid) and every response to one.")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    p.add_argument("--session", metavar="ID", help="only this session's signals")
    p.add_argument("--json", action="store_true", help="print the raw JSON lines")
    p.add_argument("--open", action="store_true",
                   help="only signals not answered yet (no response; responses left out)")
    p.add_argument("-n", "--lines", type=line_count, default=20, metavar="N",
                   help="print the last N lines (0: all; default 20)")
    add_since_option(p)
    options.add_common_options(p)


def unanswered(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``signals --open``: the signals among ``records`` that no response among them
    answers."""
    answered = {r.get("signal_id") for r in records if r.get("kind") == "response"}
    return [r for r in records
            if r.get("kind") == "signal" and r.get("signal_id") not in answered]


def add_respond_parser(sub: Any) -> None:
    """Declare ``respond`` on the ``mcp-hooks`` subparsers."""
    every = "; ".join(f"{i}: {', '.join(a)}" for i, a in ACTIONS.items())
    p = sub.add_parser(
        "respond", help="answer a signal (for scripts; agents use respond_to_signal)",
        description=f"Record the answer to a signal in the signal log. Actions by intensity: "
        f"{every}.")
    p.add_argument("signal_id", metavar="SIGNAL_ID",
                   help="the signal's id (header.id), or any unambiguous start of it")
    p.add_argument("action", metavar="ACTION", help="an action of the signal's intensity")
    p.add_argument("--details", metavar="JSON", help="a JSON object kept with the answer")
    p.add_argument("--session", metavar="ID", help="who answers (default: the signal's session)")
    p.add_argument("--json", action="store_true", help="print the line written, as JSON")
    options.add_common_options(p)


def format_signal_line(record: dict[str, Any]) -> str:
    """One signal-log line on one line, for people."""
    ts = str(record.get("timestamp", ""))[:23].replace("T", " ")
    head = (f"{ts}  {record.get('hook') or '?':<20} {record.get('intensity') or '?':<7} "
            f"{record.get('source') or '?'}")
    if record.get("kind") == "response":
        return f"{head}: answered {record.get('action')} ({record.get('signal_id')})"
    signal = record.get("signal") or {}
    payload = signal.get("payload") or {} if isinstance(signal, dict) else {}
    text = str(payload.get("reason") or payload.get("message") or payload.get("context_info")
               or f"{len(payload.get('modifications') or [])} modification(s)")
    first, *rest = text.strip().splitlines() or [""]
    # A reason of several lines stays under its entry: the next entry still starts a line.
    more = "".join(f"\n{'':25}{line}" for line in rest)
    return f"{head}: {first} ({record.get('signal_id')}){more}"


def signals_command(args: argparse.Namespace) -> int:
    log = _log(args)
    try:
        return print_log(log, args, json.dumps if args.json else format_signal_line,
                         "unanswered signals" if args.open else "signals",
                         unanswered if args.open else None)
    finally:
        close_log(log)


def respond_command(args: argparse.Namespace) -> int:
    details = None
    if args.details is not None:
        try:
            details = json.loads(args.details)
        except ValueError as exc:
            raise UsageError(f"--details is not JSON: {exc}") from None
    log = _log(args)
    try:
        signal_id = log.resolve(args.signal_id)
        line = log.respond(signal_id, args.action, details, session_id=args.session)
    finally:
        close_log(log)
    if args.json:
        print(json.dumps(line, ensure_ascii=False))
    else:
        print(f"answered signal {signal_id} ({line.get('hook') or '?'}, "
              f"{line.get('intensity') or '?'}) with {line['action']}")
    return EXIT_OK
