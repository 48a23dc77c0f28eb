"""Deny shell commands that destroy a system or pipe the internet into a shell.

Contract: ``check(event)`` reads one pre-tool-call event and returns the reason to deny it,
or None; run.py serves it with ``mcp_hooks.hookkit`` (one-shot: exit 2 with the reason on
stderr; persistent: one answer per event line). The command is read the way a shell reads
it: quotes, ``;``/``&&``/``||``/``|`` chains, newlines, ``$(...)``/backticks, heredocs and
here-strings, nested ``sh -c``/``eval``, wrapper prefixes (``sudo``, ``env``, ``timeout``,
``xargs``, ...) and a file a heredoc writes and the same command then runs. Where ``cd``,
``pushd``/``popd``, ``cd -``, CDPATH, ``env -C``/``sudo -D`` lead is followed
(``folders.Folders``), so a relative target of a later delete is read where it lands:
``cd / && rm -rf *`` deletes ``/*``, and where that place cannot be known (``cd -`` before any
``cd``, ``cd ~user``, ``popd`` past what was pushed) a delete of everything there is refused.
A nested shell starts in its parent's folder and its own ``cd`` does not leak out. Interpreter
one-liners (python, node, perl, ruby, php) are searched for their recursive-delete calls,
disk writes and shell-outs, whose strings are read as commands in turn.

Bounded work on hostile input: past MAX_DEPTH nested levels, on text shlex cannot split, on
a line over MAX_PARSE characters (MAX_PARSED in all levels together), the conservative scan
runs instead (quotes dropped, every dangerous verb checked wherever it stands). The hook
fails closed, so what cannot be read at all is refused: an event that is not JSON, a command
that is not text, one over MAX_COMMAND characters, one that needs more than MAX_STRINGS
nested strings, or more than MAX_CALLS calls or verbs in one program or conservative scan.

The modules, lowest first: ``shell_lexer`` (a line's words, and the folders that must not
be deleted), ``text_rules`` (the patterns read on the text), ``command_words`` (shells,
interpreters, wrappers; the bounds), ``folders`` (where ``cd`` leads), ``program_calls`` (an
interpreter program's call sites), ``verb_rules`` (the dangerous verbs), ``program_rules``
(interpreter programs), ``command_scan`` (``Scan``: a whole command, nesting and all), and
this module: the answer.

Python 3.10+, standard library only (this folder is copied alone; run.py adds hookkit).
"""

from __future__ import annotations

import shlex

from command_scan import Scan
from text_rules import rule_hit

MAX_COMMAND = 1_000_000  # characters; a longer command is refused unread

UNREADABLE = ("Dangerous command blocked: the event could not be read, so the command cannot "
              "be checked. Command: ")


def check(payload: dict[str, object]) -> str | None:
    """The refusal for one pre-tool-call event (its reason for the agent), or None to allow."""
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, str):
        tool_input = {"command": tool_input}
    if not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command", tool_input.get("cmd"))
    if command is None:
        return None
    commands = [command]
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        commands = [shlex.join(command)] + (command if len(command) == 1 else [])
    if not all(isinstance(c, str) for c in commands):
        return refusal("the command is not text, so it cannot be checked", repr(command))
    for text in commands:
        if len(text) > MAX_COMMAND:
            return refusal(f"the command is over {MAX_COMMAND} characters, too long to check; "
                           "write the script to a file and review it", text)
        why = rule_hit(text)
        if why is None:
            scan = Scan()
            scan.shell(text)
            why = scan.reason
        if why:
            return refusal(why, text)
    return None


def refusal(why: str, command: str) -> str:
    return f"Dangerous command blocked: {why}. Command: {command.strip()[:300]}"
