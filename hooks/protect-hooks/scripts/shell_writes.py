"""What a shell command writes: ``Shell(guard, bases).run(command)`` sets ``found``.

The command is split with ``shlex`` into simple commands at ``;``, ``&&``, ``||``, ``|``,
newlines and parentheses; ``$(...)``, backticks, ``sh -c``, ``eval`` and ``env -S`` are read
recursively; wrappers (``sudo``, ``env``, ``timeout``, ``xargs``, ...) and assignments are
skipped to find the verb, whose writes ``verb_writes.VERBS`` knows. Past ``MAX_DEPTH``, on
unbalanced quotes or a very long command, and for a write through a variable or ``xargs``,
the conservative scan refuses a protected path anywhere in a command that writes anywhere.
"""

from __future__ import annotations

import os
import re

from protected_paths import MAGIC, Guard, Whole
from shell_words import SHELLS, WRITE_VERBS, braces, substitutions
from verb_writes import VERBS, users_command

from mcp_hooks.spec.patchtext import applies_patch, patch_paths
from mcp_hooks.spec.shellwords import is_operator, separates
from mcp_hooks.spec.shellwords import tokens as tokens_of

MAX_SHELL = 100_000  # longer commands get the conservative scan, not shlex
MAX_DEPTH = 8  # nested sh -c / $(...) / eval levels before the conservative scan
Found = tuple[str, ...]  # (what, path, label[, advice]) of the first protected write

ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=")
WRAPPERS = {
    "sudo": {"-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-T", "-D", "--user", "--group"},
    "doas": {"-u", "-C"}, "env": {"-u", "--unset", "-C", "--chdir"}, "nohup": set(),
    "nice": {"-n", "--adjustment"}, "ionice": {"-c", "-n", "-p"}, "time": {"-f", "-o"},
    "command": set(), "builtin": set(), "exec": {"-a"}, "stdbuf": {"-i", "-o", "-e"},
    "chronic": set(), "unbuffer": set(), "caffeinate": set(), "chroot": set(),
    "setsid": set(), "flock": {"-w", "-E", "--timeout", "--conflict-exit-code"},
    "then": set(), "do": set(), "else": set(), "elif": set(), "if": set(), "while": set(),
    "until": set(), "!": set(), "{": set(), "}": set(), "fakeroot": set(), "strace": {"-o", "-e"},
}
INTERPRETERS = {"python", "python3", "python2", "pypy", "pypy3", "node", "nodejs", "deno", "bun",
                "ruby", "php", "perl", "lua", "osascript", "pwsh", "powershell", "Rscript"}
WRITE_API = re.compile(
    r"open\s*\(|write|unlink|remove|rmtree|rename|replace|mkdir|makedirs|copy|move|symlink|chmod|"
    r"truncate|touch|appendFile|rm\b|fs\.|File\.|IO\.|Path\s*\(|shutil|system|popen|exec|spawn|"
    r"subprocess|`", re.I)
LITERAL = re.compile(r"'((?:[^'\\\n]|\\.){1,4096})'|\"((?:[^\"\\\n]|\\.){1,4096})\"")
CODE_FLAGS = ("-c", "-e", "-E", "--eval", "-p", "--print", "-r")


class Shell:
    """Collects what a shell command would write."""

    def __init__(self, guard: Guard, bases: list[str]) -> None:
        self.guard = guard
        self.bases = list(bases)
        self.found: Found | None = None  # (what, path, label) of the first protected write
        self.words: list[str] = []  # every word seen, for the conservative scan
        self.blind_write = False  # a write whose target we cannot read (a variable, xargs)

    def hit(self, path: object, what: str, whole: Whole = True,
            bases: list[str] | None = None) -> None:
        if self.found is not None or not isinstance(path, str):
            return
        if "$" in path and re.search(r"\$[{A-Za-z_(]", os.path.expandvars(path)):
            self.blind_write = True
        for candidate in braces(path):
            label = self.guard.why(candidate, bases or self.bases, whole)
            if label:
                self.found = (what, path, label)
                return

    # The conservative scan: a protected path anywhere in a command that writes somewhere.
    def conservative(self, text: str) -> None:
        if self.found is not None:
            return
        words = dict.fromkeys(re.findall(r"[^\s;&|<>()`'\"]+", text))  # each word once
        writes = ">" in text or any(os.path.basename(w) in WRITE_VERBS for w in words)
        if writes:
            self.scan(words, "a command that writes files and names")

    def scan(self, words: dict[str, None], what: str) -> None:
        """The first of ``words`` that names a protected location, as ``found``."""
        for word in words:
            for candidate in braces(word):
                label = self.guard.why(candidate, self.bases)
                if label:
                    self.found = (what, candidate, label)
                    return

    def run(self, text: str, depth: int = 0) -> None:
        if self.found is not None or not text:
            return
        if depth > MAX_DEPTH or len(text) > MAX_SHELL:
            self.conservative(text)
            return
        text = text.replace("\\\n", "")
        for inner in substitutions(text):
            self.run(inner, depth + 1)
        if applies_patch(text):
            for path in patch_paths(text):
                self.hit(path, "a patch that writes")
        tokens = tokens_of(text)
        if tokens is None:  # unbalanced quotes: read it the careful way
            self.conservative(text)
            return
        self.walk(tokens, depth)
        if self.blind_write and self.found is None:
            self.scan(dict.fromkeys(self.words),
                      "a command that writes through a variable or xargs and names")

    def walk(self, tokens: list[str], depth: int) -> None:
        """The simple commands and redirections of one split command line."""
        words: list[str] = []
        redirect = None
        for token in tokens:
            if is_operator(token):
                if separates(token):
                    self.simple(words, depth)
                    words = []
                redirect = self.redirection(token, words) or redirect
                continue
            if redirect is not None:
                if ">" in redirect and not (redirect.endswith("&") and
                                            (token.isdigit() or token == "-")):
                    self.hit(token, f"the redirection {redirect}")
                redirect = None
                continue
            words.append(token)
            self.words.append(token)
        self.simple(words, depth)

    @staticmethod
    def redirection(token: str, words: list[str]) -> str | None:
        """The redirection an operator token starts (``>``, ``2>``, ``<``), or None."""
        if ">" in token:
            if words and words[-1].isdigit():
                words.pop()  # 2> : the number is a descriptor, not an argument
            return token
        return "<" if "<" in token else None

    def simple(self, words: list[str], depth: int) -> None:
        """One simple command: strip assignments and wrappers, then look at the verb."""
        if self.found is not None or not words:
            return
        i = 0
        while i < len(words):
            step = self.prefix(words, i, depth)
            if step == i:
                break
            i = step
        if i < len(words):
            self.verb(os.path.basename(words[i]), words[i + 1:], depth)

    def prefix(self, words: list[str], i: int, depth: int) -> int:
        """Where the command goes on past the assignment or wrapper at ``words[i]`` (``i``
        when it is the verb)."""
        word = words[i]
        name = os.path.basename(word)
        if ASSIGN.match(word):
            return i + 1
        if name in WRAPPERS:
            return self.wrapper(name, words, i + 1, depth)
        if name == "timeout":
            return _after_timeout(words, i + 1)
        if name in ("xargs", "parallel"):
            if any(os.path.basename(w) in WRITE_VERBS for w in words[i + 1:]):
                self.blind_write = True
            return _after_options(words, i + 1, ("-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"))
        if name in ("uvx", "npx", "pipx", "uv") and i + 1 < len(words):
            i += 2 if words[i + 1] in ("run", "tool") else 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
            return i
        return i

    def wrapper(self, name: str, words: list[str], i: int, depth: int) -> int:
        """The options of wrapper ``name`` from ``words[i]`` on; ``env -C`` moves, ``env -S``
        runs its string."""
        takes = WRAPPERS[name]
        while i < len(words) and words[i].startswith("-") and words[i] != "-":
            option = words[i]
            i += 1
            if option in ("-C", "--chdir") and name == "env" and i < len(words):
                self.cd(words[i])
            if option == "-S" and name == "env" and i < len(words):
                self.run(words[i], depth + 1)
            if option in takes and "=" not in option:
                i += 1
        return i

    def verb(self, verb: str, args: list[str], depth: int) -> None:
        """The verb of a simple command, its prefixes gone."""
        handler = VERBS.get(verb)
        if handler is not None:
            handler(self, verb, args, depth)
        elif verb in SHELLS:
            self.shell_c(args, depth)
        elif verb.rstrip("0123456789.") in INTERPRETERS or verb in INTERPRETERS:
            self.interpreter(verb, args)
        elif verb == "eval":
            self.run(" ".join(args), depth + 1)
        elif verb == "mcp_hooks" or (args[:2] == ["-m", "mcp_hooks"]):
            self.mcp_hooks(verb, args[2:] if args[:1] == ["-m"] else args, depth)

    def is_dir(self, word: str) -> bool:
        if word.endswith("/") or word in (".", ".."):
            return True
        return any(os.path.isdir(p) for p in self.guard.resolve(word, self.bases)[:4]
                   if not MAGIC.search(p))

    def cd(self, target: str) -> None:
        new = []
        for base in self.bases:
            for path in self.guard.resolve(target, [base])[:1]:
                new.append(path.rstrip("/") or "/")
        self.bases = list(dict.fromkeys(self.bases + new))[:16]

    def shell_c(self, args: list[str], depth: int) -> None:
        for j, arg in enumerate(args):
            if arg.startswith("-") and "c" in arg.lstrip("-") and not arg.startswith("--"):
                if j + 1 < len(args):
                    self.run(args[j + 1], depth + 1)
                return
            if not arg.startswith("-") and arg not in ("sh", "bash"):  # a script file
                return

    def interpreter(self, verb: str, args: list[str]) -> None:
        for j, arg in enumerate(args[:4]):  # python [-I] [-P] -m mcp_hooks[.cli] COMMAND ...
            if arg == "-m" and j + 1 < len(args):
                if args[j + 1] in ("mcp_hooks", "mcp_hooks.cli"):
                    self.mcp_hooks(verb, args[j + 2:], 0)
                    return
                break
        code = _code_of(args)
        if verb == "perl" or verb == "ruby":
            self.in_place(verb, args)
        if code is None or not WRITE_API.search(code):
            return
        for m in LITERAL.finditer(code[:MAX_SHELL]):
            literal = m.group(1) or m.group(2)
            self.hit(literal, f"a {verb} one-liner that writes files and names")
            if self.found:
                return

    def in_place(self, verb: str, args: list[str]) -> None:
        operands, inplace = [], False
        j = 0
        while j < len(args):
            arg = args[j]
            if arg == "--":
                operands.extend(args[j + 1:])
                break
            if arg.startswith("-") and len(arg) > 1:
                cluster = arg[1:]
                if cluster.startswith("i") or re.match(r"^[a-zA-Z]*i", cluster):
                    inplace = True
                if re.search(r"[eE]$", cluster) or cluster in ("I", "M", "x"):
                    j += 1  # the code, or the option's value
            else:
                operands.append(arg)
            j += 1
        if inplace:
            for operand in operands:
                self.hit(operand, f"{verb} -i on")

    def mcp_hooks(self, verb: str, args: list[str], depth: int) -> None:
        if self.found is None:
            self.found = users_command(args)


def _code_of(args: list[str]) -> str | None:
    """The code an interpreter's ``-c``/``-e``/``--eval``/... option gives, or None."""
    for j, arg in enumerate(args):
        if (arg in CODE_FLAGS or re.match(r"^-[a-zA-Z]*[ce]$", arg)) and j + 1 < len(args):
            return args[j + 1]
    return None


def _after_timeout(words: list[str], i: int) -> int:
    """Where ``timeout [options] DURATION COMMAND`` has its command."""
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in ("-s", "-k", "--signal", "--kill-after") else 1
    return i + 1  # the duration


def _after_options(words: list[str], i: int, takes: tuple[str, ...]) -> int:
    """Where the options from ``words[i]`` end (those in ``takes`` with their value)."""
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in takes else 1
    return i
