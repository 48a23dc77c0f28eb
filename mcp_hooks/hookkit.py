"""hookkit: a Python hook as one function, run one-shot or as a persistent process.

A hook script decorates one function that takes the event (the payload dict) and returns its
answer::

    from mcp_hooks.hookkit import deny, hook

    @hook
    def main(event):
        if "prod" in (event.get("tool_input") or {}).get("command", ""):
            return deny("Production is off limits: ask a person to deploy.")
        return None  # allow

Contracts:

- **Two modes, one function.** Without ``MCP_HOOKS_PERSISTENT=1`` in the environment (every
  Agent Hooks implementation, ``mcp-hooks fire``) the script is one-shot, as the spec says:
  the event is read from stdin, the answer printed on stdout, and the process exits 0 (allow),
  2 (deny) or 1 (the function raised: its traceback on stderr, judged by the hook's
  ``metadata.on_error``). With ``MCP_HOOKS_PERSISTENT=1`` (a hook with
  ``metadata.persistent: true`` run by a long-lived engine) it reads one event per line and
  writes one answer per line, ``exit_code`` standing in for the exit status and the event's
  ``_mcp_hooks_event_id`` (``ID_FIELD``) echoed, until stdin closes (then it exits 0). The id
  is taken out of the event before the function sees it. A function that raises, or an event
  line that is not a JSON object, is a failure of that event only (``"exit_code": 1``, the
  traceback on stderr) and the loop goes on. Every answer is flushed at once.
  ``MCP_HOOKS_PERSISTENT`` is removed from the environment, so the programs a hook starts are
  not told they are persistent.
- **Answers.** ``None`` allows. The helpers build the answer object the engine reads
  (``mcp_hooks.engine.judge``): ``allow``, ``deny``, ``warn``, ``rewrite`` (``modified_input`` on
  ``before_tool``), ``replace_output`` (``modified_output`` on ``after_tool``), ``context``
  (``additional_context``). They are plain dicts, so they merge: ``{**rewrite(x), **context(
  "why")}``; a plain dict is an answer too. The answer is the same JSON object in both modes.
  A deny exits 2 (``"exit_code": 2`` persistent) with its answer on stdout, where mcp-hooks
  reads its reason; one-shot, the reason is written to stderr too, last (the spec's portable
  form, for implementations that read only the exit status and stderr). Anything else
  returned is a failure that names what was returned.
- **stdout belongs to the protocol.** While the function runs, ``print`` and child processes
  write to stderr (the hook's log), never into the answer or a deny's reason; in persistent
  mode a child process also gets an empty stdin, never the next event.
- **Per-event environment.** In persistent mode ``AGENT_HOOKS_WORK_DIR`` and
  ``AGENT_HOOKS_SESSION_ID`` are set from each event's ``work_dir`` and ``session_id`` before
  the function runs, as a one-shot run would see them (removed when longer than 4 KiB); the
  process itself runs in the project's root folder.
- **Importable.** ``@hook`` runs the function only when it is called from the script Python
  runs (``__main__``); in a module a test imports, it returns the function unchanged.
  ``serve`` runs it unconditionally and returns the exit status.
- **Cheap.** Standard library only (``json``, ``os``, ``sys``; ``traceback`` on a failure):
  a hook pays for the modules it imports itself, nothing more.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # not typing's: importing typing would cost every hook run ~5 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, BinaryIO

    Answer = dict[str, Any]
    HookFunction = Callable[[dict[str, Any]], "Answer | None"]

__all__ = ["allow", "ask", "context", "deny", "hook", "replace_output", "rewrite", "serve", "warn"]

PERSISTENT_VAR = "MCP_HOOKS_PERSISTENT"
ID_FIELD = "_mcp_hooks_event_id"  # as mcp_hooks.runner.persistent: echoed in each answer
# as mcp_hooks.runner.hookenv: longer event values never reach the environment
_ENV_VALUE_CAP = 4096
_EVENT_ENV = (("work_dir", "AGENT_HOOKS_WORK_DIR"), ("session_id", "AGENT_HOOKS_SESSION_ID"))
_DENY_WORDS = ("deny", "block")
_REASON_ONLY = frozenset({"decision", "reason"})


# -- answers ---------------------------------------------------------------------------------

def _extras(answer: Answer, context_text: str | None, log: str | None) -> Answer:
    if context_text is not None:
        answer["additional_context"] = str(context_text)
    if log is not None:
        answer["log"] = str(log)
    return answer


def allow(*, context: str | None = None, log: str | None = None) -> Answer:
    """Allow; ``context`` reaches the agent, ``log`` the event log. ``None`` allows too."""
    return _extras({}, context, log)


def deny(reason: str, *, context: str | None = None, log: str | None = None) -> Answer:
    """Deny (block) the event: ``reason`` tells the agent why, and how to do it right."""
    return _extras({"decision": "deny", "reason": str(reason)}, context, log)


def ask(reason: str, *, context: str | None = None, log: str | None = None) -> Answer:
    """Ask a person to approve this exact call: ``reason`` is what they are shown. The chain
    waits for the answer (docs/ask.md); an event that cannot block is allowed, warned."""
    return _extras({"decision": "ask", "reason": str(reason)}, context, log)


def warn(reason: str, *, context: str | None = None, log: str | None = None) -> Answer:
    """Allow with a warning the agent sees (``decision: warn``); never blocks."""
    return _extras({"decision": "warn", "reason": str(reason)}, context, log)


def rewrite(tool_input: dict[str, Any], *, context: str | None = None,
            log: str | None = None) -> Answer:
    """Allow ``before_tool`` with new tool arguments (``modified_input``)."""
    if not isinstance(tool_input, dict):
        raise TypeError(f"rewrite() takes the new tool_input as a dict, got "
                        f"{type(tool_input).__name__}: pass the whole new arguments object")
    return _extras({"modified_input": tool_input}, context, log)


def replace_output(output: Any, *, context: str | None = None, log: str | None = None) -> Answer:
    """Allow ``after_tool`` with a new tool output (``modified_output``)."""
    if output is None:
        raise TypeError("replace_output() needs the new output; return None to keep it")
    return _extras({"modified_output": output}, context, log)


def context(text: str, *, log: str | None = None) -> Answer:
    """Allow and add ``text`` to what the agent sees (``additional_context``)."""
    return _extras({}, text, log)


# -- running ---------------------------------------------------------------------------------

def _answer_of(result: object) -> Answer:
    if result is None:
        return {}
    if isinstance(result, dict):
        return result
    raise TypeError(f"the hook function returned {type(result).__name__} {result!r:.80}; return "
                    "None to allow, a dict, or allow()/deny()/warn()/rewrite()/context()")


def _read_event(raw: bytes) -> dict[str, Any]:
    try:
        event = json.loads(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"the event is not JSON ({exc}); a hook gets one JSON object per "
                         "event") from None
    if not isinstance(event, dict):
        raise ValueError(f"the event is a JSON {type(event).__name__}, not an object")
    return event


def _is_deny(answer: Answer) -> bool:
    word = answer.get("decision")
    return isinstance(word, str) and word.strip().lower() in _DENY_WORDS


def _call(fn: HookFunction, event: dict[str, Any] | ValueError,
          unreadable: Answer | None) -> tuple[Answer, int, bytes] | None:
    """``fn``'s answer to one event, its exit status (0, or 2 for a deny) and its JSON; None
    (the failure written to stderr) when there is none."""
    if isinstance(event, ValueError):
        if unreadable is None:
            print(f"hookkit: {event}", file=sys.stderr)
            return None
        answer = dict(unreadable)
    else:
        try:
            answer = dict(_answer_of(fn(event)))
        except (Exception, SystemExit):  # SystemExit: sys.exit() called where a return belongs
            _report()
            return None
    code = answer.pop("exit_code", 0)
    if code == 2 and not _is_deny(answer):
        answer["decision"] = "deny"
    try:
        if code not in (0, 2):
            raise ValueError(f"exit_code {code!r} in the answer: use 0, or 2 (deny); raise "
                             "an exception for a failure")
        line = json.dumps(answer).encode()
    except (TypeError, ValueError, RecursionError):
        _report()
        return None
    return answer, 2 if _is_deny(answer) else 0, line


def _flush_log() -> None:
    """What the function printed reaches the log before its answer is written."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 (contextlib is one more module for every hook to import)
            stream.flush()
        except (AttributeError, OSError, ValueError):  # replaced or closed by the hook
            pass


def _report() -> None:
    """The exception being handled, with its traceback, on stderr (the hook's log)."""
    import traceback  # lazy: 3 ms of a Python hook's cold start (python -X importtime)

    traceback.print_exc(file=sys.stderr)


def _parse(raw: bytes) -> dict[str, Any] | ValueError:
    try:
        return _read_event(raw)
    except ValueError as exc:
        return exc


def _set_event_env(event: dict[str, Any], previous: dict[str, str | None]) -> None:
    for field, var in _EVENT_ENV:
        value = event.get(field)
        if not (isinstance(value, str) and len(value) <= _ENV_VALUE_CAP and "\0" not in value):
            value = None
        if var in previous and previous[var] == value:
            continue
        previous[var] = value
        try:
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
        except (ValueError, UnicodeError):  # what exec cannot pass (a lone surrogate)
            os.environ.pop(var, None)


def _one_shot(fn: HookFunction, stdin: BinaryIO, stdout: BinaryIO,
              unreadable: Answer | None) -> int:
    answered = _call(fn, _parse(stdin.read()), unreadable)
    _flush_log()
    if answered is None:
        return 1
    answer, code, line = answered
    if answer:
        stdout.write(line + b"\n")
        stdout.flush()
    if code == 2:  # the reason on stderr too, last: read there by whoever ignores stdout
        reason = answer.get("reason")
        if reason:
            sys.stderr.write(f"{reason}\n")
            sys.stderr.flush()
    return code


def _persistent(fn: HookFunction, stdin: BinaryIO, stdout: BinaryIO,
                unreadable: Answer | None, event_env: bool) -> int:
    env_seen: dict[str, str | None] = {}
    for raw in iter(stdin.readline, b""):
        event = _parse(raw)
        event_id = None
        if not isinstance(event, ValueError):
            event_id = event.pop(ID_FIELD, None)
            if event_env:
                _set_event_env(event, env_seen)
        answered = _call(fn, event, unreadable)
        if answered is None:
            line = b'{"exit_code": 1'
        elif answered[0]:  # the answer's JSON object, its closing brace giving way to exit_code
            line = answered[2][:-1] + b', "exit_code": %d' % answered[1]
        else:
            line = b'{"exit_code": 0'
        if event_id is not None:
            line += b', "' + ID_FIELD.encode() + b'": ' + json.dumps(event_id).encode()
        _flush_log()  # the event's log is written before its answer
        stdout.write(line + b"}\n")
        stdout.flush()
    return 0


def _is_persistent() -> bool:
    value = os.environ.pop(PERSISTENT_VAR, "")
    return value.strip().lower() in ("1", "true", "yes")


def serve(fn: HookFunction, *, unreadable: Answer | None = None,
          persistent: bool | None = None, stdin: BinaryIO | None = None,
          stdout: BinaryIO | None = None) -> int:
    """Run ``fn`` on the event(s) on stdin; the exit status (0, 1 or 2) to exit with.

    Args:
        fn: takes the event dict, returns ``None`` or an answer dict.
        unreadable: the answer to an event that is not a JSON object (e.g. ``deny(...)`` for a
            guard that fails closed); default: a failure of that event.
        persistent: one event per line until EOF; default: ``MCP_HOOKS_PERSISTENT=1`` is set.
        stdin, stdout: binary streams to use instead of the process's own (then nothing is
            redirected and the environment is left alone).
    """
    mode = _is_persistent() if persistent is None else persistent
    own = stdin is None and stdout is None
    if own:
        sys.stdout.flush()
        out_fd = os.dup(1)
        os.dup2(2, 1)  # print() and children write to the log, never into an answer
        stdout = os.fdopen(out_fd, "wb")
        if mode:
            in_fd = os.dup(0)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)  # a child process never reads the next event
            os.close(null)
            stdin = os.fdopen(in_fd, "rb")
        else:
            stdin = sys.stdin.buffer
    assert stdin is not None and stdout is not None
    if mode:
        return _persistent(fn, stdin, stdout, unreadable, event_env=own)
    return _one_shot(fn, stdin, stdout, unreadable)


def hook(fn: HookFunction | None = None, *,
         unreadable: Answer | None = None) -> Any:
    """Decorate a hook's function: run it (and exit) when called from the script Python runs.

    ``@hook`` or ``@hook(unreadable=deny("..."))``; ``hook(check)`` in a ``run.py`` runs a
    function defined in another module. Called from an imported module, it returns the
    function unchanged (so tests can import and call it).
    """
    def run(function: HookFunction) -> HookFunction:
        if sys._getframe(1).f_globals.get("__name__") == "__main__":
            sys.exit(serve(function, unreadable=unreadable))
        return function

    if fn is None:
        return run
    if sys._getframe(1).f_globals.get("__name__") == "__main__":
        sys.exit(serve(fn, unreadable=unreadable))
    return fn
