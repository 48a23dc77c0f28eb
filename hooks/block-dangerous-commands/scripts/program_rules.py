"""Interpreter programs (python, node, perl, ruby, php): ``interpreter(scan, lang, args, ...)``
finds a command's one-liners (``-c``, ``-e``, ``deno eval``), a program fed on stdin or
written by the same command, and ``code(scan, lang, code, depth)`` denies their recursive
deletes of ``/``, ``~`` or a system folder and their writes to a disk device, and reads their
shell-outs (``os.system``, ``subprocess.run([...])``, backticks, ``qx{}``) as commands.
Standard library only.
"""

from __future__ import annotations

import re
import shlex

from command_words import MAX_CALLS, MAX_DEPTH, MAX_PARSE
from program_calls import (
    COMMAND_QUOTES,
    DELETE_CALLS,
    MODES,
    SHELL_CALLS,
    WRITE_MODE,
    call_args,
    literals,
    path_values,
    split_args,
)
from shell_lexer import DISK
from text_rules import DOWNLOAD

TYPE_CHECKING = False
if TYPE_CHECKING:
    from command_scan import Feed, Scan

# the option that gives a one-liner's code, per language
CODE_FLAG = {"python": r"-[a-zA-Z]*c", "node": r"-[a-zA-Z]*[ep]|--eval|--print",
             "perl": r"-[a-zA-Z]*[eE]", "ruby": r"-[a-zA-Z]*e", "php": r"-r"}
NOT_CODE = {"perl": ("-M", "-m", "-I", "-x"), "ruby": ("-r", "-I")}
TAKES = {"-W", "-X", "-I", "-r", "--require", "--import", "--loader", "-x"}
PAIRS = {"(": ")", "{": "}", "[": "]", "/": "/"}


def interpreter(scan: Scan, lang: str, args: list[str], text: str | None,
                feed: Feed | None, depth: int) -> None:
    """The programs an interpreter's command line runs: its one-liners, else what stdin
    feeds it or a script this command wrote."""
    codes, script = _one_liners(lang, args)
    if not codes:
        if script in (None, "-"):
            if text is not None:
                codes.append(text)
            elif feed and feed[0] == "download":
                scan.deny(DOWNLOAD)
        elif script in scan.written:
            codes.append(scan.written[script])
    for code_text in codes:
        code(scan, lang, code_text, depth + 1)


def _one_liners(lang: str, args: list[str]) -> tuple[list[str], str | None]:
    """(the one-liners' code, the script it runs when there is none) of an interpreter's
    arguments."""
    flag = re.compile(CODE_FLAG[lang])
    not_code = NOT_CODE.get(lang, ("--",))
    codes: list[str] = []
    script, j = None, 0
    if lang == "node" and args[:1] == ["eval"] and len(args) > 1:  # deno eval CODE
        codes.append(args[1])
    while j < len(args):
        arg = args[j]
        if flag.fullmatch(arg) and not arg.startswith(not_code):
            codes.append(args[j + 1] if j + 1 < len(args) else "")
            j += 2
        elif lang == "node" and arg.startswith(("--eval=", "--print=")):
            codes.append(arg.split("=", 1)[1])
            j += 1
        elif arg == "-m" and lang == "python":
            break
        elif arg.startswith("-") and arg != "-":
            j += 1 + (arg in TAKES)
        else:
            script = None if codes else arg
            break
    return codes, script


def code(scan: Scan, lang: str, text: str, depth: int) -> None:
    """An interpreter program: its recursive deletes, disk writes and shell-outs."""
    if scan.reason or not text or not scan.budget():
        return
    if depth > MAX_DEPTH:
        scan.conservative(text)
        return
    text = text[:MAX_PARSE]
    deletes = list(re.finditer(DELETE_CALLS[lang], text))
    shells = list(re.finditer(SHELL_CALLS[lang], text))
    if len(deletes) + len(shells) > MAX_CALLS:
        scan.deny("the program makes too many calls to check; write it to a file and review it")
        return
    if _deletes(scan, lang, text, deletes):
        return
    if DISK.search(text) and re.search(WRITE_MODE, text):
        scan.deny("writing straight to a disk device destroys its data")
        return
    for m in shells:
        values = [v for v in literals(call_args(text, m.end())) if v not in MODES]
        if values:
            scan.shell(values[0].strip("|"), depth + 1)  # a command line for a shell
        if len(values) > 1:
            scan.shell(shlex.join(values), depth + 1)  # an argument vector
    if lang in ("perl", "ruby", "php"):
        _command_quotes(scan, text, depth)


def _deletes(scan: Scan, lang: str, text: str, deletes: list[re.Match[str]]) -> bool:
    """Deny the first recursive delete of a protected folder; whether one was found."""
    for m in deletes:
        args = split_args(call_args(text, m.end()))
        for arg in args if lang == "perl" else args[:1]:
            hit = next((p for v in path_values(arg) if (p := scan.where(v))), None)
            if hit:
                scan.deny(f"{m.group(0).strip(' .')}() on {hit} would destroy the system or "
                          "the user's files")
                return True
    return False


def _command_quotes(scan: Scan, text: str, depth: int) -> None:
    """perl's, ruby's and php's backticks, ``qx{}`` and ``%x()``, read as commands."""
    for m in list(re.finditer(COMMAND_QUOTES, text))[:MAX_CALLS]:
        if m.group(1) is not None:
            scan.shell(m.group(1), depth + 1)
        else:
            end = text.find(PAIRS[m.group(2)], m.end())
            scan.shell(text[m.end():end if end >= 0 else None], depth + 1)
