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

Python 3.10+, standard library only (this folder is copied alone; run.py adds hookkit).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex

from folders import SETTERS, Folders
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
from shell_lexer import (
    DISK,
    GLOB,
    HARMLESS_DEV,
    ansi_c,
    is_operator,
    prescan,
    protected,
    read_option,
    separates,
    tokens,
    unescape,
)

MAX_COMMAND = 1_000_000  # characters; a longer command is refused unread
MAX_PRESCAN = 256_000  # characters; a longer one gets only the conservative scan
MAX_PARSE = 32_000  # characters split by shlex at once (heredoc bodies cut out) ...
MAX_PARSED = 128_000  # ... and in all (shlex takes some 5 us a character)
MAX_DEPTH = 8  # nested sh -c / eval / $(...) / interpreter levels
MAX_STRINGS = 1000  # strings parsed per event, all levels together
MAX_WORDS = 256  # words read after a verb in the conservative scan
MAX_CALLS = 200  # call sites (or verbs, in the conservative scan) read per program

# (words one of which the command must hold, pattern, why): a pattern is compiled only when
# one of its words is there, so a plain command pays for none of them.
RULES = [
    (("mkfs", "wipefs", "mke2fs", "mkswap"), r"\b(?:mkfs(?:\.\w+)?|wipefs|mke2fs|mkswap)\b",
     "formatting a filesystem destroys everything on it"),
    (("disk", "parted"), r"\b(?:fdisk|sfdisk|parted|gdisk)\b[^;&|]*/dev/",
     "repartitioning a disk destroys its data"),
    (("of=/dev/",), r"\bdd\b[^|;&]*\bof=/dev/(?!null\b|zero\b|stdout\b|stderr\b)",
     "dd onto a device overwrites a disk"),
    (("/dev/",), r">\s*/dev/(?:sd[a-z]|nvme\d|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d)",
     "writing straight to a disk device destroys its data"),
    (("shred",), r"\bshred\b[^|;&]*/dev/", "shredding a device destroys its data"),
    ((":",), r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:\s*&[^}]*\}\s*;\s*:",
     "a fork bomb exhausts the machine"),
    (("curl", "wget", "fetch"), r"\b(?:curl|wget|fetch)\b[^|;&]*\|\s*(?:sudo\s+)?(?:env\s+\S+\s+)?"
     r"(?:sh|bash|zsh|dash|ksh|fish|python[\d.]*|perl|ruby|node)\b",
     "piping a download into an interpreter runs unreviewed code; download it, read it, "
     "then run it"),
    (("curl", "wget"), r"\b(?:sh|bash|zsh)\s+(?:-c\s+)?[\"']?(?:\$\(|<\()\s*(?:curl|wget)\b",
     "running a downloaded script unseen"),
    (("chmod",), r"\bchmod\s+(?:-\w*R\w*\s+|--recursive\s+)[0-7]*777\s+/(?:\s|$)",
     "chmod -R 777 / breaks every permission on the system"),
    (("chown",), r"\bchown\s+(?:-\w*R\w*\s+|--recursive\s+)\S+\s+/(?:\s|$)",
     "chown -R on / breaks the system"),
]
FORMAT = "formatting a filesystem destroys everything on it"
DOWNLOAD = ("piping a download into an interpreter runs unreviewed code; download it, read it, "
            "then run it")

# -- the words of a command ------------------------------------------------------------------

SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "tcsh", "csh", "yash"}
LANGS = {"python": "python", "pypy": "python", "node": "node", "nodejs": "node", "deno": "node",
         "bun": "node", "perl": "perl", "ruby": "ruby", "jruby": "ruby", "php": "php"}
WRAPPERS = {  # prefix -> its options that take a value
    "sudo": {"-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-T", "-D", "--user", "--group",
             "--chdir"},
    "doas": {"-u", "-C"}, "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "nohup": set(),
    "nice": {"-n", "--adjustment"}, "ionice": {"-c", "-n", "-p"}, "time": {"-f", "-o"},
    "command": set(), "builtin": set(), "exec": {"-a"}, "stdbuf": {"-i", "-o", "-e"},
    "setsid": set(), "chronic": set(), "unbuffer": set(), "caffeinate": set(), "busybox": set(),
    "toybox": set(), "fakeroot": set(), "nocache": set(), "then": set(), "do": set(),
    "else": set(), "elif": set(), "if": set(), "while": set(), "until": set(), "!": set(),
    "{": set(), "xargs": {"-I", "-i", "-n", "-P", "-d", "-L", "-l", "-s", "-E", "-e", "-a",
                          "--max-args", "--max-procs", "--delimiter", "--arg-file"},
}
RUNNERS = {"uv", "uvx", "poetry", "pipenv", "pdm", "hatch", "rye", "npx", "bunx", "pnpx"}
DELETERS = {"rm", "unlink", "shred", "srm", "rmdir", "trash", "trash-put"}
PASS_THROUGH = {"cat", "tee", "sort", "uniq", "head", "tail"}
KNOWN = sorted({"rm", "find", "chmod", "chown", "chgrp", "rsync", "mv", "dd", "shred", "mkfs",
                "wipefs", "fdisk", "sfdisk", "parted", "gdisk", "eval", "xargs", *SHELLS, *LANGS})
ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=")
CHDIR = {("env", "-C"), ("env", "--chdir"), ("sudo", "-D"), ("sudo", "--chdir")}


def rule_hit(text: str) -> str | None:
    return next((why for words, rule, why in RULES
                 if any(w in text for w in words) and re.search(rule, text)), None)


def base(word: str) -> str:
    name = word.rsplit("/", 1)[-1]
    if GLOB.search(name):  # /bin/r? -rf /
        name = next((k for k in KNOWN if fnmatch.fnmatchcase(k, name)), name)
    return name


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
        feed: tuple[str, str] | None = None
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
                if tok.endswith("<<<"):
                    stdin = target
                elif tok.endswith("<<"):
                    stdin = next(heredocs, "")
                elif tok.endswith("<"):
                    stdin = self.written.get(target)
                elif not tok.endswith("&") or not (target.isdigit() or target == "-"):
                    redirects.append(target)
            i += 1
        self.run_simple(words, stdin, redirects, feed, depth, False, piped)

    def run_simple(self, words: list[str], stdin: str | None, redirects: list[str],
                   feed: tuple[str, str] | None, depth: int, alone: bool,
                   unsure: bool) -> tuple[str, str] | None:
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
               feed: tuple[str, str] | None, depth: int) -> tuple[str, str] | None:
        """One simple command; returns what it prints when that is evident (for a pipe)."""
        if self.reason:
            return None
        for target in redirects:
            if DISK.match(target):
                self.deny("writing straight to a disk device destroys its data")
        i, fed, assigns, chdir = 0, None, [], None
        while i < len(words):
            word, name = words[i], base(words[i])
            if ASSIGN.match(word):
                assigns.append(word)
                i += 1
            elif name in WRAPPERS:
                i += 1
                if name == "xargs":  # its arguments come from stdin
                    fed = ("text", stdin) if stdin is not None else feed or ("text", "")
                i, moved = self.options(name, words, i, depth)
                chdir = moved or chdir
            elif name == "timeout":
                i += 1
                while i < len(words) and words[i].startswith("-"):
                    i += 2 if words[i] in ("-s", "-k", "--signal", "--kill-after") else 1
                i += 1  # the duration
            elif name in ("su", "flock", "script") and "-c" in words[i + 1:-1]:
                login = name == "su" and any(w in ("-", "-l", "--login") for w in words[i + 1:])
                with self.folders.inside("~root" if login else chdir):  # su -: root's home
                    self.shell(words[words.index("-c", i + 1) + 1], depth + 1)
                return None
            elif name == "flock":  # flock [options] FILE COMMAND...
                i += 1
                while i < len(words) and words[i].startswith("-"):
                    i += 2 if words[i] in ("-w", "-E", "--timeout", "--conflict-exit-code") else 1
                i += 1
            elif name == "watch":  # watch runs its words through sh -c
                i += 1
                while i < len(words) and words[i].startswith("-"):
                    i += 2 if words[i] in ("-n", "--interval", "-d") else 1
                self.shell(" ".join(words[i:]), depth + 1)
                return None
            elif name in RUNNERS:
                i += 1
                if i < len(words) and words[i] in ("run", "exec", "tool"):
                    i += 1
                while i < len(words) and words[i].startswith("-"):
                    i += 2 if words[i] in ("--with", "--python", "-p", "--from", "-w") else 1
            else:
                break
        if i >= len(words):
            for word in assigns:  # NAME=value alone sets a shell variable
                self.folders.assign(word)
            return None
        env = self.folders.command_env(assigns) if assigns else None
        with self.folders.inside(chdir, env):  # env -C DIR, sudo -D DIR: this command alone
            return self.command(words[i], words[i + 1:], stdin, redirects, feed, fed, env, depth)

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
                feed: tuple[str, str] | None, fed: tuple[str, str] | None,
                env: dict[str, str | None] | None, depth: int) -> tuple[str, str] | None:
        """A simple command's verb ``word`` and its arguments, prefixes read."""
        verb, args = base(word), [ansi_c(w) for w in rest]
        text = stdin if stdin is not None else feed[1] if feed and feed[0] == "text" else None
        self.verb(verb, args, depth, fed, env)
        if verb in SHELLS or verb in ("eval", "source", ".") or word in self.written:
            self.run_shell(verb, args, word, text, feed, depth)
        elif LANGS.get(re.sub(r"[\d.]+$", "", verb)):
            self.interpreter(LANGS[re.sub(r"[\d.]+$", "", verb)], args, text, feed, depth)
        out = self.output(verb, args, stdin, feed)
        for target in redirects:
            if out and out[0] == "text":
                self.written[target] = out[1]
        return out

    def output(self, verb: str, args: list[str], stdin: str | None,
               feed: tuple[str, str] | None) -> tuple[str, str] | None:
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
                  feed: tuple[str, str] | None, depth: int) -> None:
        if verb == "eval":
            self.shell(" ".join(args), depth + 1, same=True)
            return
        if program in self.written:  # a file this command wrote, run at once
            self.program(self.written[program], depth)
            return
        code, script, j = None, None, 0
        while j < len(args):
            arg = args[j]
            if verb in ("source", "."):
                script = arg
                break
            if arg == "--":
                script = args[j + 1] if j + 1 < len(args) else None
                break
            if arg in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                j += 2
                continue
            if arg[:1] in "-+" and len(arg) > 1:
                if arg[0] == "-" and not arg.startswith("--") and "c" in arg:
                    code = args[j + 1] if j + 1 < len(args) else ""
                    break
                j += 1
                continue
            script = arg
            break
        if code is not None:
            self.shell(code, depth + 1)
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
            self.code(lang, text, depth + 1)
        else:
            self.shell(text, depth + 1, same)

    # -- folders ---------------------------------------------------------------------------

    def where(self, word: str, here: bool = False) -> str | None:
        """The protected folder ``word`` names, read where this command's cd's lead."""
        return self.folders.where(word, here)

    # -- verbs -----------------------------------------------------------------------------

    def verb(self, verb: str, args: list[str], depth: int, fed: tuple[str, str] | None,
             env: dict[str, str | None] | None = None) -> None:
        if verb in ("rm", "unlink") and fed is not None:  # xargs rm
            if fed[0] == "list":
                self.deny(f"xargs {verb} on a listing of {fed[1]} would destroy the system or "
                          "the user's files")
            elif fed[0] == "text":
                args = args + fed[1].split()
        if verb == "rm":
            self.rm(args)
        elif verb in ("cd", "pushd", "popd"):
            self.folders.chdir(verb, args, env)
        elif verb in SETTERS or verb == "unset":
            self.folders.setter(verb, args)
        elif verb == "find":
            self.find(args, depth)
        elif verb in ("chmod", "chown", "chgrp"):
            recursive = any(a == "--recursive" or re.match(r"^-[a-zA-Z]*R", a) for a in args)
            operands = [a for a in args if not a.startswith("-")][1:]
            hit = next((p for a in operands if (p := protected(a, here=False))), None)
            if recursive and hit:
                self.deny(f"{verb} -R on {hit} breaks the permissions of the whole system")
        elif verb == "rsync":
            operands = [a for a in args if not a.startswith("-")]
            if any(a.startswith("--del") for a in args) and operands:
                hit = protected(operands[-1], here=False)
                if hit:
                    self.deny(f"rsync --delete into {hit} deletes everything not in the source")
        elif verb == "mv":
            operands = [a for a in args if not a.startswith("-")]
            hit = next((p for a in operands[:-1] if (p := protected(a, here=False))), None)
            if hit:
                self.deny(f"moving {hit} away breaks the system or the user's files")
        elif re.fullmatch(r"mkfs(?:\.\w+)?|mke2fs|mkswap|wipefs", verb):
            self.deny(FORMAT)
        elif verb in ("fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk"):
            if any(a.startswith("/dev/") for a in args):
                self.deny("repartitioning a disk destroys its data")
        elif verb == "dd":
            if any(a.startswith("of=/dev/") and not HARMLESS_DEV.match(a[3:]) for a in args):
                self.deny("dd onto a device overwrites a disk")
        elif verb == "shred" and any(a.startswith("/dev/") for a in args):
            self.deny("shredding a device destroys its data")

    def rm(self, args: list[str]) -> None:
        recursive, targets, end = False, [], False
        for word in args:
            if not end and word == "--":
                end = True
            elif not end and word.startswith("--"):
                name = word[2:].split("=", 1)[0]
                recursive |= bool(name) and "recursive".startswith(name)  # GNU takes prefixes
            elif not end and word.startswith("-") and len(word) > 1:
                recursive |= "r" in word or "R" in word
            else:
                targets.append(word)
        hit = next((h for t in targets if (h := self.where(t, here=True))), None) \
            if recursive else None
        if hit:
            self.deny(f"rm -r on {hit} would destroy the system or the user's files")

    def find(self, args: list[str], depth: int) -> None:
        j = 0
        while j < len(args) and (args[j] in ("-H", "-L", "-P", "-D") or args[j].startswith("-O")):
            j += 2 if args[j] == "-D" else 1
        starts = []
        while j < len(args) and not args[j].startswith(("-", "(", "!", ")", ",")):
            starts.append(args[j])
            j += 1
        expr = args[j:]
        deletes = "-delete" in expr
        for k, arg in enumerate(expr):
            if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((e for e in range(k + 1, len(expr)) if expr[e] in (";", "+")), len(expr))
                command = expr[k + 1:end]
                if command:
                    deletes |= base(command[0]) in DELETERS or any(
                        re.search(r"\b(?:rm|unlink|shred)\b", w) for w in command[1:])
                    if depth <= MAX_DEPTH:
                        self.simple(command, None, [], None, depth + 1)
        root = next((p for s in starts or ["."] if (p := self.where(s))), None)
        if root and deletes:
            self.deny(f"find {root} ... deleting files walks the whole of "
                      f"{root.rsplit(' in ', 1)[-1]}; start it in the folder you mean to clean")

    # -- interpreters ----------------------------------------------------------------------

    def interpreter(self, lang: str, args: list[str], text: str | None,
                    feed: tuple[str, str] | None, depth: int) -> None:
        flag = re.compile({"python": r"-[a-zA-Z]*c", "node": r"-[a-zA-Z]*[ep]|--eval|--print",
                           "perl": r"-[a-zA-Z]*[eE]", "ruby": r"-[a-zA-Z]*e", "php": r"-r"}[lang])
        not_code = {"perl": ("-M", "-m", "-I", "-x"), "ruby": ("-r", "-I")}.get(lang, ("--",))
        takes = {"-W", "-X", "-I", "-r", "--require", "--import", "--loader", "-x"}
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
                j += 1 + (arg in takes)
            else:
                script = None if codes else arg
                break
        if not codes:
            if script in (None, "-"):
                if text is not None:
                    codes.append(text)
                elif feed and feed[0] == "download":
                    self.deny(DOWNLOAD)
            elif script in self.written:
                codes.append(self.written[script])
        for code in codes:
            self.code(lang, code, depth + 1)

    def code(self, lang: str, code: str, depth: int) -> None:
        """An interpreter program: its recursive deletes, disk writes and shell-outs."""
        if self.reason or not code or not self.budget():
            return
        if depth > MAX_DEPTH:
            self.conservative(code)
            return
        code = code[:MAX_PARSE]
        deletes = list(re.finditer(DELETE_CALLS[lang], code))
        shells = list(re.finditer(SHELL_CALLS[lang], code))
        if len(deletes) + len(shells) > MAX_CALLS:
            self.deny("the program makes too many calls to check; write it to a file and review it")
            return
        for m in deletes:
            args = split_args(call_args(code, m.end()))
            for arg in args if lang == "perl" else args[:1]:
                hit = next((p for v in path_values(arg) if (p := self.where(v))), None)
                if hit:
                    self.deny(f"{m.group(0).strip(' .')}() on {hit} would destroy the system or "
                              "the user's files")
                    return
        if DISK.search(code) and re.search(WRITE_MODE, code):
            self.deny("writing straight to a disk device destroys its data")
            return
        for m in shells:
            values = [v for v in literals(call_args(code, m.end())) if v not in MODES]
            if values:
                self.shell(values[0].strip("|"), depth + 1)  # a command line for a shell
            if len(values) > 1:
                self.shell(shlex.join(values), depth + 1)  # an argument vector
        if lang in ("perl", "ruby", "php"):
            for m in list(re.finditer(COMMAND_QUOTES, code))[:MAX_CALLS]:
                if m.group(1) is not None:
                    self.shell(m.group(1), depth + 1)
                else:
                    pair = {"(": ")", "{": "}", "[": "]", "/": "/"}[m.group(2)]
                    end = code.find(pair, m.end())
                    self.shell(code[m.end():end if end >= 0 else None], depth + 1)

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
        verbs = [(k, w) for segment in re.split(r"[;&|\n`(){}<>]", bare)
                 for words in [segment.split()] for k, w in enumerate(words)
                 if base(w) in KNOWN and base(w) not in SHELLS and base(w) not in LANGS]
        if len(calls) + len(verbs) > MAX_CALLS:
            self.deny("the command is too long and too tangled to check; split it up")
            return
        for m in calls:
                arg = split_args(call_args(text, m.end()))[0]
                hit = next((p for v in path_values(arg) if (p := protected(v, here=False))), None)
                if hit:
                    self.deny(f"{m.group(0).strip(' .')}() on {hit} would destroy the system")
                    return
        for segment in re.split(r"[;&|\n`(){}<>]", bare):
            words = segment.split()
            for k, word in enumerate(words):
                if base(word) in ("cd", "pushd", "popd"):  # wherever it stands, as verbs are
                    self.folders.chdir(base(word), words[k + 1:k + 3])
                elif base(word) in KNOWN and base(word) not in SHELLS and base(word) not in LANGS:
                    rest = words[k + 1:]  # its head and tail: a -delete or / may come last
                    if len(rest) > 2 * MAX_WORDS:
                        rest = rest[:MAX_WORDS] + rest[-MAX_WORDS:]
                    self.verb(base(word), rest, MAX_DEPTH + 1, None)
                    if self.reason:
                        return


UNREADABLE = ("Dangerous command blocked: the event could not be read, so the command cannot "
              "be checked. Command: ")


def check(payload: dict) -> str | None:
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
