"""One command read the way a shell reads it: ``Scan().shell(text)`` keeps the first reason
to refuse it in ``reason``.

A line is prescanned (comments, heredoc bodies, substitutions cut out: ``shell_lexer``),
split into tokens, and walked into simple commands at ``;``, ``&&``, ``||``, ``|``, newlines
and parentheses, following where each ``cd`` leads (``folders.Folders``) and what each
command prints or writes for the next (a pipe, a heredoc, a file it then runs). A simple
command's prefixes (assignments, ``sudo``, ``env``, ``timeout``, ``xargs``, runners) are
read to find its verb, which ``verb_rules`` checks; shells, ``eval`` and ``source`` read
their command lines and interpreters their programs (``program_rules``) in turn. Past
``MAX_DEPTH``, on unbalanced quotes or too long a line, the conservative scan reads the text
with its quotes dropped.
"""

from __future__ import annotations

import os
import re

from command_words import (
    ASSIGN,
    CHDIR,
    KNOWN,
    LANGS,
    MAX_CALLS,
    MAX_DEPTH,
    MAX_PARSE,
    PASS_THROUGH,
    RUNNERS,
    SHELLS,
    WRAPPERS,
    base,
)
from folders import Folders
from program_calls import DELETE_CALLS, call_args, path_values, split_args
from program_rules import code, interpreter
from shell_lexer import DISK, ansi_c, prescan, protected, read_option, unescape
from text_rules import DOWNLOAD, rule_hit
from verb_rules import check_verb

from mcp_hooks.spec.shellwords import is_operator, separates, tokens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

MAX_PRESCAN = 256_000  # characters; a longer one gets only the conservative scan
MAX_PARSED = 128_000  # characters split by shlex in all (shlex takes some 5 us a character)
MAX_STRINGS = 1000  # strings parsed per event, all levels together
MAX_WORDS = 256  # words read after a verb in the conservative scan
SEGMENTS = r"[;&|\n`(){}<>]"  # where the conservative scan cuts a text into commands
Feed = tuple[str, str]  # what a command prints: ("text", it), ("list", folder), ("download", "")
Env = dict[str, str | None]  # a command's own variables (None: unset)


class Prefixes:
    """What a simple command's prefixes say: its stdin for ``xargs``, its assignments, the
    folder ``env -C``/``sudo -D`` runs it in, and whether a nested shell ran it already."""

    def __init__(self) -> None:
        self.fed: Feed | None = None
        self.assigns: list[str] = []
        self.chdir: str | None = None
        self.ran = False


class Scan:
    """Reads one command, nested levels and all, and keeps the first reason to refuse it."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.strings = 0
        self.parsed = 0  # characters split by shlex so far
        self.written: dict[str, str] = {}  # file -> what this command wrote into it
        self.folders = Folders(os.environ.get("CDPATH"))  # where its cd's lead, when evident

    def deny(self, why: str) -> None:
        if self.reason is None:
            self.reason = why

    def budget(self) -> bool:
        self.strings += 1
        if self.strings > MAX_STRINGS:
            self.deny("the command nests too many commands to check; split it into simpler ones")
        return self.reason is None

    # -- shell -----------------------------------------------------------------------------

    def shell(self, text: str, depth: int = 0, same: bool = False) -> None:
        """Read a command line; ``same`` when the current shell runs it (eval, source), so
        its cd moves the rest of the command too."""
        if self.reason or not text or not self.budget():
            return
        outer = self.folders  # a nested shell starts where its parent is; its cd stays inside
        if not same:
            self.folders = outer.nested()
        try:
            self.read_shell(text, depth)
        finally:
            if not same:
                self.folders = outer

    def read_shell(self, text: str, depth: int) -> None:
        if depth > MAX_DEPTH or len(text) > MAX_PRESCAN:
            self.conservative(text)
            return
        line, bodies, inner = prescan(text)
        self.parsed += len(line)
        if len(line) > MAX_PARSE or self.parsed > MAX_PARSED:
            self.conservative(text)
            return
        for body in inner:
            self.shell(body, depth + 1)
        words = tokens(line)
        if words is None:  # unbalanced quotes: read it the careful way
            self.conservative(text)
            return
        self.walk(words, bodies, depth)

    def walk(self, toks: list[str], bodies: list[str], depth: int) -> None:
        heredocs = iter(bodies)
        words: list[str] = []
        redirects: list[str] = []
        stdin: str | None = None
        feed: Feed | None = None
        piped = False  # the command ends a pipeline (a subshell in bash, not in zsh)
        outside: list[Folders] = []  # where each open ( ... ) subshell started
        i = 0
        while i < len(toks):
            tok = toks[i]
            if not is_operator(tok):
                words.append(tok)
                i += 1
                continue
            if separates(tok):
                bare = tok.replace("(", "").replace(")", "")
                out = self.run_simple(words, stdin, redirects, feed, depth,
                                      bare in ("|", "|&", "&"), piped or bare != "&&")
                piped = bare in ("|", "|&")
                feed = out if piped else None
                words, redirects, stdin = [], [], None
                self.subshells(tok, outside)
            if "<" in tok or ">" in tok:
                if words and words[-1].isdigit():
                    words.pop()  # 2> : a descriptor, not an argument
                target = toks[i + 1] if i + 1 < len(toks) and not is_operator(toks[i + 1]) else ""
                i += 1 if target else 0
                stdin = self.redirect(tok, target, heredocs, stdin, redirects)
            i += 1
        self.run_simple(words, stdin, redirects, feed, depth, False, piped)

    def redirect(self, tok: str, target: str, heredocs: Iterator[str], stdin: str | None,
                 redirects: list[str]) -> str | None:
        """A redirection ``tok target``: the command's stdin after it (a here-string, the
        next heredoc's body, a file this command wrote), or an output in ``redirects``."""
        if tok.endswith("<<<"):
            return target
        if tok.endswith("<<"):
            return next(heredocs, "")
        if tok.endswith("<"):
            return self.written.get(target)
        if not tok.endswith("&") or not (target.isdigit() or target == "-"):
            redirects.append(target)
        return stdin

    def run_simple(self, words: list[str], stdin: str | None, redirects: list[str],
                   feed: Feed | None, depth: int, alone: bool, unsure: bool) -> Feed | None:
        """``simple``. ``alone``: it runs in a subshell (``a | b``'s ``a``, ``a &``), so where
        its cd leads is forgotten after it. ``unsure``: what follows runs whether its cd
        worked or not (``;``, a newline, ``||``), or it ends a pipeline (a subshell in bash,
        not in zsh): the folder after it is either."""
        before = self.folders.copy() if (alone or unsure) and words else None
        out = self.simple(words, stdin, redirects, feed, depth)
        if before is not None and alone:
            self.folders = before
        elif before is not None:
            self.folders.either(before)
        return out

    def subshells(self, tok: str, outside: list[Folders]) -> None:
        """``(`` opens a subshell (a copy of where the command is), ``)`` returns from it."""
        for c in tok:
            if c == "(":
                outside.append(self.folders)
                self.folders = self.folders.copy()
            elif c == ")" and outside:
                self.folders = outside.pop()

    def simple(self, words: list[str], stdin: str | None, redirects: list[str],
               feed: Feed | None, depth: int) -> Feed | None:
        """One simple command; returns what it prints when that is evident (for a pipe)."""
        if self.reason:
            return None
        for target in redirects:
            if DISK.match(target):
                self.deny("writing straight to a disk device destroys its data")
        pre = Prefixes()
        i = 0
        while i < len(words) and not pre.ran:
            step = self.prefix(words, i, stdin, feed, depth, pre)
            if step == i:
                break
            i = step
        if pre.ran:
            return None
        if i >= len(words):
            for word in pre.assigns:  # NAME=value alone sets a shell variable
                self.folders.assign(word)
            return None
        env = self.folders.command_env(pre.assigns) if pre.assigns else None
        with self.folders.inside(pre.chdir, env):  # env -C DIR, sudo -D DIR: this command alone
            return self.command(words[i], words[i + 1:], stdin, redirects, feed, pre.fed, env,
                                depth)

    def prefix(self, words: list[str], i: int, stdin: str | None, feed: Feed | None,
               depth: int, pre: Prefixes) -> int:
        """Where the command goes on past the assignment or prefix at ``words[i]`` (``i``
        when it is the verb); ``su -c``, ``watch`` and the like run their command here."""
        word, name = words[i], base(words[i])
        if ASSIGN.match(word):
            pre.assigns.append(word)
            return i + 1
        if name in WRAPPERS:
            if name == "xargs":  # its arguments come from stdin
                pre.fed = ("text", stdin) if stdin is not None else feed or ("text", "")
            i, moved = self.options(name, words, i + 1, depth)
            pre.chdir = moved or pre.chdir
            return i
        if self.runs_inside(name, words, i, pre.chdir, depth):
            pre.ran = True
            return len(words)
        if name == "timeout":
            return _after(words, i + 1, ("-s", "-k", "--signal", "--kill-after")) + 1
        if name == "flock":  # flock [options] FILE COMMAND...
            return _after(words, i + 1, ("-w", "-E", "--timeout", "--conflict-exit-code")) + 1
        if name in RUNNERS:
            i += 1
            if i < len(words) and words[i] in ("run", "exec", "tool"):
                i += 1
            return _after(words, i, ("--with", "--python", "-p", "--from", "-w"))
        return i

    def runs_inside(self, name: str, words: list[str], i: int, chdir: str | None,
                    depth: int) -> bool:
        """Whether the prefix ``name`` at ``words[i]`` runs the rest as a command line of its
        own (``su -c``, ``flock ... -c``, ``script -c``, ``watch``), read here."""
        if name in ("su", "flock", "script") and "-c" in words[i + 1:-1]:
            login = name == "su" and any(w in ("-", "-l", "--login") for w in words[i + 1:])
            with self.folders.inside("~root" if login else chdir):  # su -: root's home
                self.shell(words[words.index("-c", i + 1) + 1], depth + 1)
            return True
        if name == "watch":  # watch runs its words through sh -c
            i = _after(words, i + 1, ("-n", "--interval", "-d"))
            self.shell(" ".join(words[i:]), depth + 1)
            return True
        return False

    def options(self, name: str, words: list[str], i: int, depth: int) -> tuple[int, str | None]:
        """A wrapper's options from ``words[i]`` on: (where its command starts, the folder it
        runs it in when an option says so: ``env -C``, ``sudo -D``, ``sudo -i``)."""
        chdir = None
        while i < len(words) and words[i].startswith("-") and words[i] != "-":
            option = words[i]
            if option == "--":
                return i + 1, chdir
            flag, value, letters, i = read_option(words, i, WRAPPERS[name])
            if name == "env" and flag in ("-S", "--split-string") and value is not None:
                self.shell(value, depth + 1)
            if (name, flag) in CHDIR and value is not None:
                chdir = value
            if name == "sudo" and (option == "--login" or "i" in letters):
                chdir = "~root"  # a login shell starts in the target user's home
        return i, chdir

    def command(self, word: str, rest: list[str], stdin: str | None, redirects: list[str],
                feed: Feed | None, fed: Feed | None, env: Env | None,
                depth: int) -> Feed | None:
        """A simple command's verb ``word`` and its arguments, prefixes read."""
        verb, args = base(word), [ansi_c(w) for w in rest]
        text = stdin if stdin is not None else feed[1] if feed and feed[0] == "text" else None
        check_verb(self, verb, args, depth, fed, env)
        if verb in SHELLS or verb in ("eval", "source", ".") or word in self.written:
            self.run_shell(verb, args, word, text, feed, depth)
        elif LANGS.get(re.sub(r"[\d.]+$", "", verb)):
            interpreter(self, LANGS[re.sub(r"[\d.]+$", "", verb)], args, text, feed, depth)
        out = self.output(verb, args, stdin, feed)
        for target in redirects:
            if out and out[0] == "text":
                self.written[target] = out[1]
        return out

    def output(self, verb: str, args: list[str], stdin: str | None,
               feed: Feed | None) -> Feed | None:
        if verb == "echo":
            return ("text", " ".join(a for a in args if a not in ("-n", "-e", "-E")))
        if verb == "printf":
            return ("text", unescape(" ".join(args)))
        if verb in PASS_THROUGH:
            return ("text", stdin) if stdin is not None else feed
        if verb in ("find", "ls"):
            starts = [a for a in args if not a.startswith("-")][:8] or ["."]
            root = next((p for a in starts if (p := self.where(a))), None)
            return ("list", root) if root else None
        if verb in ("curl", "wget", "fetch"):
            return ("download", "")
        return None

    def run_shell(self, verb: str, args: list[str], program: str, text: str | None,
                  feed: Feed | None, depth: int) -> None:
        if verb == "eval":
            self.shell(" ".join(args), depth + 1, same=True)
            return
        if program in self.written:  # a file this command wrote, run at once
            self.program(self.written[program], depth)
            return
        command, script = _shell_args(verb, args)
        if command is not None:
            self.shell(command, depth + 1)
        elif script is not None and script != "-":
            if script in self.written:
                self.program(self.written[script], depth, same=verb in ("source", "."))
        elif text is not None:
            self.shell(text, depth + 1)
        elif feed and feed[0] == "download":
            self.deny(DOWNLOAD)

    def program(self, text: str, depth: int, same: bool = False) -> None:
        first = text.split("\n", 1)[0]
        lang = next((LANGS[k] for k in LANGS if first.startswith("#!") and k in first), None)
        if lang:
            code(self, lang, text, depth + 1)
        else:
            self.shell(text, depth + 1, same)

    def where(self, word: str, here: bool = False) -> str | None:
        """The protected folder ``word`` names, read where this command's cd's lead."""
        return self.folders.where(word, here)

    # -- what cannot be parsed -------------------------------------------------------------

    def conservative(self, text: str) -> None:
        """Quotes dropped, every dangerous verb checked wherever it stands."""
        bare = re.sub(r"['\"\\]", "", text)
        why = rule_hit(bare)
        if why:
            self.deny(why)
            return
        calls = [m for lang in ("python", "node", "perl", "ruby")
                 for m in re.finditer(DELETE_CALLS[lang], text)]
        verbs = [w for segment in re.split(SEGMENTS, bare) for w in segment.split()
                 if _checked(w)]
        if len(calls) + len(verbs) > MAX_CALLS:
            self.deny("the command is too long and too tangled to check; split it up")
            return
        for m in calls:
            arg = split_args(call_args(text, m.end()))[0]
            hit = next((p for v in path_values(arg) if (p := protected(v, here=False))), None)
            if hit:
                self.deny(f"{m.group(0).strip(' .')}() on {hit} would destroy the system")
                return
        for segment in re.split(SEGMENTS, bare):
            self.conservative_verbs(segment.split())
            if self.reason:
                return

    def conservative_verbs(self, words: list[str]) -> None:
        """The verbs of one segment of the conservative scan, wherever they stand."""
        for k, word in enumerate(words):
            if base(word) in ("cd", "pushd", "popd"):  # wherever it stands, as verbs are
                self.folders.chdir(base(word), words[k + 1:k + 3])
            elif _checked(word):
                rest = words[k + 1:]  # its head and tail: a -delete or / may come last
                if len(rest) > 2 * MAX_WORDS:
                    rest = rest[:MAX_WORDS] + rest[-MAX_WORDS:]
                check_verb(self, base(word), rest, MAX_DEPTH + 1, None)
                if self.reason:
                    return


def _checked(word: str) -> bool:
    """A verb the conservative scan checks: a known one, but for shells and interpreters."""
    name = base(word)
    return name in KNOWN and name not in SHELLS and name not in LANGS


def _after(words: list[str], i: int, takes: tuple[str, ...]) -> int:
    """Where the options from ``words[i]`` end (those in ``takes`` with their value)."""
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in takes else 1
    return i


def _shell_args(verb: str, args: list[str]) -> tuple[str | None, str | None]:
    """(the ``-c`` command, the script) a shell's (or ``source``'s) arguments give."""
    j = 0
    while j < len(args):
        arg = args[j]
        if verb in ("source", "."):
            return None, arg
        if arg == "--":
            return None, args[j + 1] if j + 1 < len(args) else None
        if arg in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            j += 2
            continue
        if arg[:1] in "-+" and len(arg) > 1:
            if arg[0] == "-" and not arg.startswith("--") and "c" in arg:
                return args[j + 1] if j + 1 < len(args) else "", None
            j += 1
            continue
        return None, arg
    return None, None
