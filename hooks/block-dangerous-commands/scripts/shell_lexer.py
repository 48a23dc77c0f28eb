"""The words of a shell command line, and the folders they name.

``prescan`` is one quote-aware pass over a line: it drops comments, cuts heredoc bodies out
(returned in order, for the command that reads them) and returns the bodies of ``$(...)``,
``<(...)``, ``>(...)`` and backticks, which shlex cannot see into.
``mcp_hooks.spec.shellwords.tokens`` then splits the line as a POSIX shell would (operators
apart), or returns None when it cannot. ``protected`` says whether a word names a folder
whose deletion wrecks the system or the user's files.
Every loop here is linear in its input.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re

SYSTEM_DIRS = ("bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt",
               "root", "sbin", "srv", "sys", "usr", "var", "mnt", "media", "snap", "nix",
               "Users", "System", "Library", "Applications", "Volumes", "private")
HOME = re.compile(r"^(?:~|\$HOME\b|\$\{HOME(?:[:%#?=+-][^}]*)?\})")
GLOB = re.compile(r"[*?\[]")
EXPANSION = re.compile(r"\$(?:[A-Za-z_0-9{(@*#?$!-]|$)")  # $NAME, ${...}, $(...), $1, $?, a lone $
EVERYTHING = r"[.\[\]!^]*[*?][.*?\[\]!^]*"  # *, .*, .[!.]*, ?* ...
DISK = re.compile(r"/dev/(?:sd[a-z]|nvme\d|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d|mapper/)")
HARMLESS_DEV = re.compile(r"/dev/(?:null|zero|stdout|stderr|stdin|tty|fd/\d+|full|u?random)$")
PLAIN = re.compile(r"[^'\"\\`$<>#\n]+")  # characters no quote state reads specially
HEREDOC = r"<<(-?)[ \t]*((?:'[^'\n]*'|\"[^\"\n]*\"|[^\s;&|<>()])+)"  # compiled when used


def ansi_c(word: str) -> str:
    """The value of a $'...' (or $"...") word: shlex drops the quotes and leaves the ``$`` and
    the escapes, so ``$'/'`` reaches us as ``$/``. A ``$`` that cannot start an expansion is
    such a quote's."""
    if not word.startswith("$"):
        return word
    if "\\" in word:
        try:
            return word[1:].encode("latin-1", "backslashreplace").decode("unicode_escape")
        except (UnicodeError, ValueError):
            return word
    return word if EXPANSION.match(word) else word[1:]


def braces(word: str, limit: int = 64) -> list[str]:
    """Brace expansion of one word (a{b,c}d -> abd acd), at most ``limit`` results."""
    out: list[str] = []
    todo, steps = [word], 0
    while todo and len(out) < limit and steps < 8 * limit:  # depth first: bounded
        item, steps = todo.pop(), steps + 1
        m = re.search(r"\{([^{}]*,[^{}]*)\}", item)
        if m is None:
            out.append(item)
        else:
            choices = m.group(1).split(",")[:limit]
            todo.extend(item[:m.start()] + c + item[m.end():] for c in reversed(choices))
    return out


def protected(word: str, here: bool = True) -> str | None:
    """The folder ``word`` names if deleting it wrecks the system or the user's files:
    /, ~, a system folder, your own home by its path; . and .. too when ``here``."""
    for each in braces(ansi_c(word)):
        found = _protected(each.strip(), here)
        if found:
            return found
    return None


def _protected(word: str, here: bool) -> str | None:
    if not word:
        return None
    start = _root(word)
    if start is None:
        return None  # ~user or $HOMEDIR
    root, rest = start
    parts, above = _components(rest)
    if root == ".":
        return word if here and not parts and ("." in word) else None
    while parts and re.fullmatch(EVERYTHING, parts[-1]):
        parts.pop()  # /* and ~/.* empty the folder
    if root == "~":
        return "~" if not parts or above else None
    return _system(parts)


def _root(word: str) -> tuple[str, str] | None:
    """(where ``word`` starts: ``~``, ``/`` or ``.``, the rest of it); None for ``~user``."""
    m = HOME.match(word)
    root, rest = (("~", word[m.end():]) if m else ("/", word) if word.startswith("/")
                  else (".", word))
    if rest and not rest.startswith("/") and root == "~":
        return None
    return root, rest


def _components(rest: str) -> tuple[list[str], bool]:
    """(the components of a path, ``.`` and ``..`` applied; whether ``..`` went above it)."""
    parts: list[str] = []
    above = False
    for part in rest.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            else:
                above = True
        else:
            parts.append(part)
    return parts, above


def _system(parts: list[str]) -> str | None:
    """``/``, a system folder or the user's home by its path, from the components of an
    absolute path."""
    if not parts:
        return "/"
    path = "/" + "/".join(parts)
    home = os.environ.get("HOME", "")
    if home and posixpath.normpath(home) not in ("/", ".") and path == posixpath.normpath(home):
        return path
    if len(parts) == 1 and (parts[0] in SYSTEM_DIRS if not GLOB.search(parts[0]) else
                            any(fnmatch.fnmatchcase(d, parts[0]) for d in SYSTEM_DIRS)):
        return path
    return None


def read_option(words: list[str], i: int,
                takes: set[str]) -> tuple[str, str | None, str, int]:
    """The option at ``words[i]`` of a program whose options ``takes`` take a value: (the
    option, its value or None, the short flags before it in a cluster, where the next word
    is). ``--opt=v``, ``--opt v``, ``-o v``, ``-ov`` and clusters (``-iu root``, ``-iC/``)."""
    option = words[i]
    i += 1
    if option.startswith("--"):
        flag, eq, glued = option.partition("=")
        if eq:
            return flag, glued, "", i
        if flag in takes and i < len(words):
            return flag, words[i], "", i + 1
        return flag, None, "", i
    for j, letter in enumerate(option[1:], 1):
        if "-" + letter in takes:
            if option[j + 1:]:
                return "-" + letter, option[j + 1:], option[1:j], i
            if i < len(words):
                return "-" + letter, words[i], option[1:j], i + 1
            return "-" + letter, None, option[1:j], i
    return option, None, option[1:], i


def heredoc_at(text: str, i: int) -> tuple[str, bool, int] | None:
    """The heredoc operator at ``i`` (``<<``, not ``<<<``): (delimiter, <<-, where it ends)."""
    if not text.startswith("<<", i) or text.startswith("<<<", i):
        return None
    m = re.compile(HEREDOC).match(text, i)
    if m is None:
        return None
    return re.sub(r"['\"\\]", "", m.group(2)), m.group(1) == "-", m.end()


def read_bodies(text: str, i: int, pending: list[tuple[str, bool]]) -> tuple[int, list[str]]:
    """The bodies of the pending heredocs, read from ``i`` (just past their line's newline)."""
    bodies = []
    for delim, dash in pending:
        lines = []
        while i < len(text):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            line, i = text[i:end], end + 1
            if (line.lstrip("\t") if dash else line) == delim:
                break
            lines.append(line)
        bodies.append("\n".join(lines))
    return i, bodies


def closing(text: str, i: int, close: str) -> int:
    """Where the substitution opened just before ``i`` ends (``len(text)`` if never); quotes
    and heredoc bodies inside it are skipped (git commit -m "$(cat <<'EOF' ... EOF)")."""
    depth, quote = 1, None
    pending: list[tuple[str, bool]] = []
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if quote:
            quote = None if c == quote else quote
        elif c == "\n" and pending:
            i, _ = read_bodies(text, i + 1, pending)
            pending = []
            continue
        elif c == "<" and (found := heredoc_at(text, i)):
            pending.append(found[:2])
            i = found[2]
            continue
        elif close == "`":
            if c == "`":
                return i
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)


def prescan(text: str) -> tuple[str, list[str], list[str]]:
    """One pass over a command line, quote-aware: (the line without comments and heredoc
    bodies, the heredoc bodies in order, the bodies of $(...), <(...), >(...) and `...`,
    which stand in the line as ``$(:)``: they are read on their own)."""
    return _Prescan(text.replace("\\\r\n", "").replace("\\\n", "")).run()


class _Prescan:
    """The state of ``prescan``'s pass: where it is, in which quote, what it has kept."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.bodies: list[str] = []
        self.inner: list[str] = []
        self.pending: list[tuple[str, bool]] = []
        self.i = 0
        self.quote = ""

    def run(self) -> tuple[str, list[str], list[str]]:
        text, n = self.text, len(self.text)
        while self.i < n:
            plain = PLAIN.match(text, self.i)  # nothing special in any quote: kept as it is
            if plain:
                self.out.append(plain.group(0))
                self.i = plain.end()
            elif not self.step(text[self.i]):
                self.out.append(text[self.i])
                self.i += 1
        self.bodies.extend("" for _ in self.pending)
        return "".join(self.out), self.bodies, self.inner

    def step(self, c: str) -> bool:
        """Read the special character ``c``; False when it is kept as it is (and passed)."""
        quote = self.quote
        if quote == "'":
            self.quote = _closed(quote, c, "'")
        elif c == "\\":  # escapes the next character everywhere but inside '...'
            self.out.append(self.text[self.i:self.i + 2])
            self.i += 2
            return True
        elif quote == "$'":
            self.quote = _closed(quote, c, "'")
        elif _substitution_at(self.text, self.i, quote):
            self.substitution(c)
            return True
        elif quote == '"':
            self.quote = _closed(quote, c, '"')
        elif c in "'\"":
            self.quote = "$'" if c == "'" and self.out and self.out[-1] == "$" else c
        else:
            return self.unquoted(c)
        return False

    def substitution(self, c: str) -> None:
        """``$(``, ``<(``, ``>(`` or a backtick at ``i``: its body read on its own."""
        start = self.i + (1 if c == "`" else 2)
        end = closing(self.text, start, "`" if c == "`" else ")")
        self.inner.append(self.text[start:end])
        self.out.append("$(:)")
        self.i = end + 1

    def unquoted(self, c: str) -> bool:
        """A comment, a heredoc operator or the newline that starts the heredocs' bodies."""
        text, i = self.text, self.i
        if c == "#" and (i == 0 or text[i - 1] in " \t\n;&|()"):
            while i < len(text) and text[i] != "\n":
                i += 1
        elif c == "<" and (found := heredoc_at(text, i)):
            self.pending.append(found[:2])
            self.out.append(text[i:found[2]])
            i = found[2]
        elif c == "\n" and self.pending:
            self.out.append("\n")
            i, read = read_bodies(text, i + 1, self.pending)
            self.bodies.extend(read)
            self.pending = []
        else:
            return False
        self.i = i
        return True


def _closed(quote: str, c: str, closer: str) -> str:
    """The quote after ``c`` inside ``quote``: none once ``closer`` closes it."""
    return "" if c == closer else quote


def _substitution_at(text: str, i: int, quote: str) -> bool:
    """A backtick, or ``$(`` (also in double quotes), ``<(`` or ``>(`` outside quotes."""
    c = text[i]
    return c == "`" or (c in "$<>" and text.startswith("(", i + 1) and (c == "$" or not quote))


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)
