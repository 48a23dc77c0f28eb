"""``mcp-hooks pending``, ``approve`` and ``refuse``: answer a hook's ask out of band
(issue 30, ``docs/ask.md``).

``pending`` lists the asks waiting for a person in the state store (``--state URL``,
``MCP_HOOKS_STATE``; the file store by default): id, session, tool, arguments, reason, age
and expiry (``--json``: one JSON object a line, the ``AskRequest`` fields plus
``age_seconds``). ``approve ID [--for-session] [--by NAME]`` and ``refuse ID --reason TEXT
[--by NAME]`` store the one answer (the door waiting on it sees it within ``POLL``; a
retry of the same call after the door gave up finds it) and log it (``ask_answer``, channel
``cli``). ``--by`` defaults to the OS user. ``fire`` on a terminal asks with a y/N prompt
instead (``tty_approver``; channel ``tty``).

Exit codes: 0 ok; 64 an unknown, expired or already answered id (``UnknownAsk``,
``AskExpired``, ``AskAnswered``: never a second decision); 1 a store that cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import select
import sys
import time
from typing import Any

from mcp_hooks import options
from mcp_hooks.engine.asking import NOBODY
from mcp_hooks.errors import EXIT_OK
from mcp_hooks.spec.asking import Approver, AskAnswer, AskRequest, canonical_json
from mcp_hooks.spec.outcome import cap_text
from mcp_hooks.state.asks import answer
from mcp_hooks.state.store import StateStore
from mcp_hooks.state.url import close_store, open_store


def _store(args: argparse.Namespace) -> StateStore:
    settings = options.settings(args)
    return open_store(settings.state, log=settings.log, replica=settings.replica_id)


def add_pending_parser(sub: Any) -> None:
    """Declare ``pending`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser("pending", help="list the asks waiting for a person",
                       description="List the asks of hooks waiting for a person's answer "
                       "(approve or refuse them by id).")
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    options.add_common_options(p)


def add_approve_parser(sub: Any) -> None:
    """Declare ``approve`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser("approve", help="approve a pending ask: the exact call may run",
                       description="Approve a pending ask: the call it names (that tool, "
                       "those arguments, that session) may run once, or for the session.")
    p.add_argument("ask_id", metavar="ID", help="the ask's id (mcp-hooks pending lists them)")
    p.add_argument("--for-session", action="store_true",
                   help="cover the same call (tool and arguments) for the rest of the session")
    p.add_argument("--by", metavar="NAME", help="who approves (default: the OS user)")
    options.add_common_options(p)


def add_refuse_parser(sub: Any) -> None:
    """Declare ``refuse`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser("refuse", help="refuse a pending ask: the call is denied",
                       description="Refuse a pending ask: the call is denied with your reason.")
    p.add_argument("ask_id", metavar="ID", help="the ask's id (mcp-hooks pending lists them)")
    p.add_argument("--reason", required=True, help="why, for the agent")
    p.add_argument("--by", metavar="NAME", help="who refuses (default: the OS user)")
    options.add_common_options(p)


def _age(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def format_ask(request: AskRequest, at: float) -> str:
    """One pending ask for people: id, age, expiry, session, tool, arguments, reason."""
    return (f"{request.id}  {_age(at - request.created)} old, expires in "
            f"{_age(request.expires - at)}  session={request.session_id or '-'}  "
            f"tool={request.tool_name or '-'}  hook={request.hook}\n"
            f"    arguments: {cap_text(canonical_json(request.tool_input), 300)}\n"
            f"    reason: {cap_text(request.reason, 300)}")


def pending_command(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        waiting = store.pending_asks()
    finally:
        close_store(store)
    at = time.time()
    if args.json:
        for request in waiting:
            print(json.dumps({**request.as_dict(), "age_seconds": round(at - request.created, 3)},
                             ensure_ascii=False))
    elif not waiting:
        print("no asks waiting")
    else:
        print("\n".join(format_ask(r, at) for r in waiting))
    return EXIT_OK


def _answer(args: argparse.Namespace, given: AskAnswer) -> AskRequest:
    store = _store(args)
    try:
        return answer(store, args.ask_id, given)
    finally:
        close_store(store)


def _user() -> str:
    """Who answers here: the login name."""
    # lazy: 0.9 ms of every bridge and fire start (getpass, termios); an answer only
    import getpass

    return getpass.getuser()


def approve_command(args: argparse.Namespace) -> int:
    request = _answer(args, AskAnswer(True, by=args.by or _user(), channel="cli",
                                      for_session=args.for_session))
    scope = " for the rest of the session" if args.for_session else " (one run)"
    print(f"approved {request.id}{scope}: {request.tool_name or request.event_type} in session "
          f"{request.session_id or '-'}")
    return EXIT_OK


def refuse_command(args: argparse.Namespace) -> int:
    request = _answer(args, AskAnswer(False, reason=args.reason,
                                      by=args.by or _user(), channel="cli"))
    print(f"refused {request.id}: {request.tool_name or request.event_type} in session "
          f"{request.session_id or '-'}")
    return EXIT_OK


def tty_approver(timeout: float) -> Approver | None:
    """``fire`` on a terminal: a y/N prompt on stderr, the answer read from stdin within
    ``timeout`` seconds (then the fallback, the ask left pending); None: not a terminal, so
    the ask is answered out of band."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def ask_here(request: AskRequest) -> AskAnswer | None:  # awaits nothing
        print(f"\nmcp-hooks: {request.hook} asks you to approve this call:\n"
              f"  tool: {request.tool_name or '-'}  session: {request.session_id or '-'}\n"
              f"  arguments: {cap_text(canonical_json(request.tool_input), 1000)}\n"
              f"  reason: {request.reason}\n"
              f"Approve? [y/N] (within {timeout:g} s; or later: mcp-hooks approve {request.id}) ",
              end="", file=sys.stderr, flush=True)
        line = _line_within(timeout)
        if line is None:  # nobody answered here in time (or the input ended)
            print("", file=sys.stderr)
            return AskAnswer(False, channel=NOBODY)
        approved = line.strip().lower() in ("y", "yes")
        return AskAnswer(approved, reason="" if approved else "refused at the terminal",
                         by=_user(), channel="tty")

    return ask_here


def _line_within(timeout: float) -> str | None:
    """A line of stdin typed within ``timeout`` seconds; None when none came (or it ended)."""
    try:
        ready, _, _ = select.select([sys.stdin], [], [], timeout)
        line = sys.stdin.readline() if ready else ""
    except (OSError, ValueError, KeyboardInterrupt):
        return None
    return line or None
