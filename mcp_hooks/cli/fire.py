"""``mcp-hooks fire``: one event fired at the hooks, its decision printed (exit 2 when denied).

The door builds one ``Settings`` from its flags and the environment (``options.settings``:
flags, then ``MCP_HOOKS_*``) once the arguments are checked, and passes it down: to the
server it may forward to (``--server``, ``hosts/fire_client.py``), to the ``Registry`` and the
one-shot ``Engine`` that run the event here, and to the report of why no hook ran. The
decision is printed on the stdout ``fire`` owns (``ownstdout``); ``fire_fault`` is the gate's
answer when something escaped the command (``cli/__init__.py``).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hooks import options
from mcp_hooks.cli.asks import tty_approver
from mcp_hooks.engine.engine import Engine, HookDone
from mcp_hooks.engine.wiring import wire
from mcp_hooks.errors import EXIT_DENIED, EXIT_OK, UsageError
from mcp_hooks.ownstdout import owned_stdout
from mcp_hooks.registry.discovery import Registry, project_hooks_dir
from mcp_hooks.settings import OnFault
from mcp_hooks.spec.events import canonical_event
from mcp_hooks.spec.outcome import Event, HookRun, Outcome, fault_outcome
from mcp_hooks.spec.toolcall import NAMED_TOOL_EVENTS, CallerTool, answered, read_tool_call

if TYPE_CHECKING:
    from mcp_hooks.hosts.fire_client import Server

PROGRESS_AFTER = 1.0  # seconds: on a terminal, an event running longer shows each hook's end


def add_parser(sub: Any) -> None:
    """Declare ``fire`` on the ``mcp-hooks`` subparsers."""
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
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also say which hooks were considered and why each did or did not "
                   "match (on stderr)")
    server = p.add_mutually_exclusive_group()
    server.add_argument(
        "--server", metavar="URL",
        help="send the event to this running `mcp-hooks serve --transport http --token ...` "
        "(or MCP_HOOKS_SERVER), where persistent hooks stay resident; no answer there, "
        "the event runs here instead, with a note on stderr; an error status (a proxy's "
        "404, a 401) denies it, naming the URL and status")
    server.add_argument("--no-server", action="store_true",
                        help="run the hooks in this process even if MCP_HOOKS_SERVER is set")
    p.add_argument("--token", metavar="TOKEN",
                   help="the server's bearer token (or MCP_HOOKS_TOKEN, or the one `install "
                   "--via server` saved)")
    options.add_common_options(p)


def _json_arg(text: str | None, what: str, *, want_object: bool = True) -> Any:
    """The JSON value of an argument (``-`` reads stdin); None when it was not given.

    Raises:
        UsageError: not JSON, or not an object where one is needed.
        RecursionError: valid JSON nested deeper than Python's parser goes.
    """
    if text is None:
        return None
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{what}: not valid JSON ({exc})") from None
    if want_object and not isinstance(value, dict):
        raise UsageError(f"{what}: must be a JSON object, got {type(value).__name__}")
    return value


_JSON_ARGS = (("tool_input", "--input", True), ("tool_output", "--output", False),
              ("payload", "--payload", True))


def _json_args(args: argparse.Namespace) -> tuple[dict[str, Any], str | None]:
    """``fire``'s JSON arguments by event field, read in order, and the fault that stopped
    the reading, if any: valid JSON nested too deep to read is input we cannot process,
    answered as a fault (a deny), not as the caller's mistake."""
    values: dict[str, Any] = {}
    for field, flag, want_object in _JSON_ARGS:
        try:
            values[field] = _json_arg(getattr(args, flag[2:]), flag, want_object=want_object)
        except RecursionError:
            return values, f"{flag}: nested too deep to read"
    return values, None


@dataclass(frozen=True)
class FireCall:
    """What ``fire`` was asked, read from its command line once (the door's typed options).

    Attributes:
        event_type: the canonical event.
        event: the event to fire (None when ``fault``); its tool call in one vocabulary.
        fields: the fields it was made of (what a server is sent).
        call: how a rewrite goes back in the caller's tool's keys (``read_tool_call``).
        tool: ``--tool`` as given.
        json, verbose, no_server: the flags.
        fault: why the event cannot be read (a JSON argument nested too deep): its deny.
    """

    event_type: str
    event: Event | None
    fields: dict[str, Any]
    call: CallerTool | None
    tool: str | None
    json: bool = False
    verbose: bool = False
    no_server: bool = False
    fault: str | None = None

    @classmethod
    def read(cls, args: argparse.Namespace) -> FireCall:
        """The call a parsed ``fire`` command line makes. Raises UsageError (and the event's
        own ConfigErrors) for a command line that cannot be fired."""
        event_type = canonical_event(args.event)
        _check_sources(args)
        values, fault = _json_args(args)
        if event_type in NAMED_TOOL_EVENTS and not args.tool:
            raise UsageError(
                f"{args.event} is a tool event: name the tool with --tool NAME (e.g. --tool "
                "Shell; a host's own name such as Bash is read as Shell), or no hook with a "
                "tool matcher can match it")
        fields, call = ({}, None) if fault is not None else _fields(args, values)
        event = None if fault is not None else Event.create(**fields)
        return cls(event_type, event, fields, call, args.tool, json=bool(args.json),
                   verbose=bool(getattr(args, "verbose", False)),
                   no_server=bool(getattr(args, "no_server", False)), fault=fault)


def cmd_fire(args: argparse.Namespace) -> int:
    with owned_stdout():  # from the start: an oracle printing at import lands on stderr
        return _fire(args)


def _fire(args: argparse.Namespace) -> int:
    """The command line read, then the one ``Settings`` of this door built (flags, then
    ``MCP_HOOKS_*``); from there neither goes back to a function of this module (the walk of
    docs/development.md): what the helpers below need, they are given."""
    asked = FireCall.read(args)
    settings = options.settings(args, door="fire", server=getattr(args, "server", None),
                                token=getattr(args, "token", None))
    load = functools.partial(options.registry_of, settings, watch=False)
    registry: Registry | None = None
    served: Outcome | None = None
    if asked.event is None:  # the fault that stopped the reading: its deny
        outcome = fault_outcome(asked.event_type, asked.fault or "", on_fault=settings.on_fault)
    else:
        server = None if asked.no_server else _server(
            settings.server, settings.token, settings.forward_timeout,
            settings.forward_timeout_warning)
        if server is not None:
            served = _fire_on_server(server, asked, options.project_of(settings),
                                     options.user_hooks_of(settings), settings.on_fault)
        if served is None:
            registry = load()
            engine = Engine(registry, settings, wire(registry, settings, one_shot=True))
            outcome = engine.fire_blocking(
                asked.event, on_hook_done=_progress(asked.event_type),
                approve=tty_approver(settings.ask_timeout))
        else:
            outcome = served
        outcome = answered(asked.event_type, outcome, asked.call, settings.on_fault, asked.tool)
    return _report(asked, outcome, registry, load,
                   answerable=served is not None or settings.log is not None)


def _report(asked: FireCall, outcome: Outcome, registry: Registry | None,
            load: Callable[[], Registry], *, answerable: bool) -> int:
    """What ``fire`` prints: with ``--verbose`` the hooks considered, the warnings of hooks
    held back, the outcome and why no hook ran (``registry``: the one the event ran on; None,
    ``load`` reads the folders this command would load); the exit code."""
    if asked.verbose and asked.event is not None:
        # lazy: 10 ms of cold bridge (python -X importtime)
        from mcp_hooks.cli.report import format_considered

        registry = registry or load()
        print(format_considered(registry, asked.event_type, asked.event.tool_name,
                                asked.event.tool_input), file=sys.stderr)
    # a hook that would have run but did not is said on stderr: held back by trust always;
    # a fault that let the event through also under --json (the text report shows it)
    skipped = [w for w in outcome.warnings if _untrusted(w) or (asked.json and _faulted(w))]
    for warning in skipped:
        print(f"mcp-hooks fire: {warning}", file=sys.stderr)
    why, notes = (NOT_RUN, []) if asked.fault is not None else ("", []) if asked.json else (
        _why_none(registry, load, asked, outcome))
    return _answer(asked.json, outcome, why, notes, answerable=answerable, skipped=skipped)


def _check_sources(args: argparse.Namespace) -> None:
    """``fire``'s input sources usable: stdin read once at most, the work dir a folder."""
    if args.input == "-" and args.payload == "-":
        raise UsageError("only one of --input and --payload can read stdin")
    if args.work_dir and not Path(args.work_dir).is_dir():
        raise UsageError(f"--work-dir {args.work_dir}: not an existing folder")


def _fields(args: argparse.Namespace, values: dict[str, Any]
            ) -> tuple[dict[str, Any], CallerTool | None]:
    """The event's fields the arguments give, its tool call in one vocabulary: ``--tool Bash``
    reaches hooks as Shell (``read_tool_call``), as through ``fire_hook_event`` and the
    bridges; a rewrite goes back in the ``--input`` keys (the ``CallerTool``)."""
    fields: dict[str, Any] = {
        "event_type": args.event,
        "session_id": args.session,
        "work_dir": str(Path(args.work_dir).resolve()) if args.work_dir else None,
        "tool_name": args.tool,
        "tool_input": values["tool_input"],
        "tool_output": values["tool_output"],
        "error": args.error,
        "tool_use_id": args.tool_use_id,
        "payload": values["payload"] or {},
    }
    _, fields, call = read_tool_call(args.event, fields)
    return fields, call


def _answer(as_json: bool, outcome: Outcome, why: str = "",
            notes: list[str] | None = None, *, answerable: bool = False,
            skipped: list[str] | None = None) -> int:
    """Print the outcome on the stdout ``fire`` owns (``ownstdout``: nothing else printing
    while it runs lands there), less the warnings said on stderr already; its exit code."""
    with owned_stdout() as out:
        if as_json:
            text = outcome.to_json(indent=2)
        else:
            # lazy: 10 ms of cold bridge (python -X importtime)
            from mcp_hooks.cli.report import format_outcome

            shown = replace(outcome, warnings=[w for w in outcome.warnings
                                               if w not in (skipped or ())])
            text = format_outcome(shown, color=out.isatty(), why_none=why, notes=notes or [],
                                  answerable=answerable)
        out.write((text + "\n").encode("utf-8", "backslashreplace"))
    return EXIT_DENIED if outcome.denied else EXIT_OK


def fire_fault(args: argparse.Namespace, what: str) -> int:
    """``fire``'s deny when something escaped it (the command line's boundary calls this:
    Ctrl-C outside the hooks, a bug): ``fault_outcome`` in ``fire``'s own form, exit 2."""
    try:
        event = canonical_event(args.event)
    except Exception:  # an unknown event is one that can block
        event = str(args.event)
    settings = options.settings(args)
    return _answer(bool(args.json), fault_outcome(event, what, on_fault=settings.on_fault),
                   NOT_RUN, answerable=settings.log is not None)


# said instead of "no hook matched" when a fault stopped the hooks before they ran (a store
# that cannot be used, input too deep to read): hooks may well match, and did not run
NOT_RUN = "no hook ran: mcp-hooks could not run this event's hooks; the warning says why"


def _untrusted(warning: str) -> bool:
    """Whether a warning says hooks were held back by trust (the engine's and hooks.yaml's
    "..., so not run: ...")."""
    return ", so not run: " in warning


def _faulted(warning: str) -> bool:
    """Whether a warning says a fault let the event through (``fault_outcome``: under
    ``--on-fault warn``, or on an event that cannot block)."""
    return warning.startswith("fault: ") and "; allowed (" in warning


def _server(url: str | None, token: str | None, timeout: float,
            warning: str | None) -> Server | None:
    """The server to forward to (``hosts/fire_client.configured``); None: none configured."""
    if not url:
        return None  # the client is not even imported
    # lazy: 34 ms of cold bridge (python -X importtime)
    from mcp_hooks.hosts.fire_client import configured

    return configured(url, token, timeout, warning=warning)


def _fire_on_server(server: Server, asked: FireCall, project: Path, user_dir: Path,
                    on_fault: OnFault) -> Outcome | None:
    """The outcome of the configured server (``--server``/``MCP_HOOKS_SERVER``), or None: it
    did not answer for sure (then why, on stderr), and the event runs here. An error status
    from the server's address is the fault outcome naming it. The work dir sent is the
    project's (``project``) when none was given, so the server answers for the project this
    command would load (and only if it loads the same hooks folders)."""
    # lazy: 0 ms more (_server imported it)
    from mcp_hooks.hosts.fire_client import forward_fire

    fields = asked.fields | {"event_type": asked.event_type,
                             "work_dir": asked.fields["work_dir"] or str(project)}
    answer = forward_fire(server, fields, user_dir=user_dir, project_dir=project)
    if answer.refused:  # the server's path is broken: deny (fault), never decide here quietly
        print(f"mcp-hooks fire: refused by the server's address: {answer.why}", file=sys.stderr)
        return fault_outcome(asked.event_type, answer.why, on_fault=on_fault)
    if answer.outcome is None:
        print(f"mcp-hooks fire: not answered by the server: {answer.why}; the hooks run "
              "here instead", file=sys.stderr)
    return answer.outcome


def _progress(event_type: str) -> HookDone | None:
    """On a terminal (stderr), a callback that shows each sync hook as it finishes once the
    event has run for ``PROGRESS_AFTER`` seconds (the ones before, at that moment); None
    otherwise, so nothing is added where no one watches."""
    if not sys.stderr.isatty():
        return None
    # lazy: 10 ms of cold bridge (python -X importtime)
    from mcp_hooks.cli.report import format_progress

    start = time.monotonic()
    waiting: list[HookRun] = []

    async def done(run: HookRun) -> None:  # awaits nothing: fire_blocking runs it in step
        waiting.append(run)
        if time.monotonic() - start >= PROGRESS_AFTER:
            for finished in waiting:
                print(format_progress(event_type, finished), file=sys.stderr, flush=True)
            waiting.clear()

    return done


def _why_none(registry: Registry | None, load: Callable[[], Registry], asked: FireCall,
              outcome: Outcome) -> tuple[str, list[str]]:
    """When no hook ran: why (no hooks at all, none for this event, none matched; what the
    hooks.yaml entries did instead; the untrusted ones skipped) and what to do about it;
    ("", []) when a hook ran or the event was denied. ``registry`` None (a server answered):
    the folders this command would load (``load``) are read to say why."""
    if outcome.hooks or outcome.denied:
        return "", []
    if outcome.signals or outcome.additional_context:
        return "no HOOK.md hook ran; " + _what_spoke(outcome), []
    if registry is None:
        registry = load()
    if not registry.hooks() and not registry.untrusted and not registry.invalid:
        return _none_installed(registry)
    event_type = asked.event_type
    skipped = _held_back(registry, event_type)
    candidates = registry.for_event(event_type)
    if not candidates:
        return f"no {event_type} hooks{skipped}", [
            f"{len(registry.hooks())} hook(s) installed and trusted, none for {event_type}; "
            "`mcp-hooks list` shows them"]
    given = f"tool {asked.tool!r}" if asked.tool else "no --tool given"
    more = "" if asked.verbose else "; --verbose shows why"
    return f"no hook matched{skipped}", [
        f"{len(candidates)} {event_type} hook(s), none matched ({given}){more}"]


def _none_installed(registry: Registry) -> tuple[str, list[str]]:
    """No hook at all: the folders searched, and how to add one."""
    searched = [f"{registry.user_dir} (user)"]
    if registry.project_dir is not None:
        searched.append(f"{project_hooks_dir(registry.project_dir)} (project)")
    return "no hooks installed", [
        f"searched: {', '.join(searched)}",
        "add the bundled guards with `mcp-hooks init` (or pick from `mcp-hooks add "
        "--list`), or write one with `mcp-hooks new NAME --trigger EVENT`",
    ]


def _held_back(registry: Registry, event_type: str) -> str:
    """The project hooks for ``event_type`` held back by trust, as a clause ("" when none)."""
    held = [u for u in registry.untrusted if u.spec.event == event_type]
    states = {"changed since trusted" if u.status == "changed" else "untrusted" for u in held}
    return (f"; {len(held)} skipped: {' or '.join(sorted(states))} project hook"
            f"{'s' if len(held) > 1 else ''} {', '.join(u.name for u in held)}"
            if held else "")  # how to trust them: the engine's warning says


def _what_spoke(outcome: Outcome) -> str:
    """What sent the signals of an outcome no HOOK.md hook ran on: hooks.yaml entries, or
    an async hook's result arriving."""
    said: list[str] = []
    for signal in outcome.signals:
        a = "an" if signal.intensity == "aid" else "a"
        kind = signal.header.type
        said.append(f"{signal.source}'s async result arrived ({signal.intensity})"
                    if kind == "async_result"
                    else "hooks.yaml has problems, let through with the warning below"
                    if kind == "config_error"
                    else f"hooks.yaml: {signal.source} sent {a} {signal.intensity}")
    return "; ".join(dict.fromkeys(said)) or "context was added"


__all__ = ["add_parser", "cmd_fire", "fire_fault"]
