"""The words of a shell command line, and the folders they name.

``prescan`` is one quote-aware pass over a line: it drops comments, cuts heredoc bodies out
(returned in order, for the command that reads them) and returns the bodies of ``$(...)``,
``<(...)``, ``>(...)`` and backticks, which shlex cannot see into. ``tokens`` then splits the
line as a POSIX shell would (operators apart), or returns None when it cannot. ``protected``
says whether a word names a folder whose deletion wrecks the system or the user's files.
Every loop here is linear in its input.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import shlex

SYSTEM_DIRS = ("bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt",
               "root", "sbin", "srv", "sys", "usr", "var", "mnt", "media", "snap", "nix",
               "Users", "System", "Library", "Applications", "Volumes", "private")
HOME = re.compile(r"^(?:~|\$HOME\b|\$\{HOME(?:[:%#?=+-][^}]*)?\})")
GLOB = re.compile(r"[*?\[]")
EXPANSION = re.compile(r"\$(?:[A-Za-z_0-9{(@*#?$!-]|$)")  # $NAME, ${...}, $(...), $1, $?, a lone $
EVERYTHING = r"[.\[\]!^]*[*?][.*?\[\]!^]*"  # *, .*, .[!.]*, ?* ...
DISK = re.compile(r"/dev/(?:sd[a-z]|nvme\d|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d|mapper/)")
HARMLESS_DEV = re.compile(r"/dev/(?:null|zero|stdout|stderr|stdin|tty|fd/\d+|full|u?random)$")
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
    m = HOME.match(word)
    root, rest = (("~", word[m.end():]) if m else ("/", word) if word.startswith("/")
                  else (".", word))
    if rest and not rest.startswith("/") and root == "~":
        return None  # ~user or $HOMEDIR
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
    if root == ".":
        return word if here and not parts and ("." in word) else None
    while parts and re.fullmatch(EVERYTHING, parts[-1]):
        parts.pop()  # /* and ~/.* empty the folder
    if root == "~":
        return "~" if not parts or (above and root == "~") else None
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


def tokens(text: str) -> list[str] | None:
    lexer = shlex.shlex(text, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


def is_operator(token: str) -> bool:
    return bool(token) and all(c in "();<>|&\n" for c in token)


def separates(token: str) -> bool:
    redirect = ">" in token or "<" in token
    return (any(c in token for c in ";\n()") or "&&" in token or "||" in token
            or ("|" in token and token != ">|") or ("&" in token and not redirect))


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
    text = text.replace("\\\r\n", "").replace("\\\n", "")
    out: list[str] = []
    bodies: list[str] = []
    inner: list[str] = []
    pending: list[tuple[str, bool]] = []
    i, n, quote = 0, len(text), ""
    while i < n:
        c = text[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":  # escapes the next character everywhere but inside '...'
            out.append(text[i:i + 2])
            i += 2
            continue
        elif quote == "$'":
            quote = "" if c == "'" else quote
        elif c == "`" or (c in "$<>" and text.startswith("(", i + 1)
                          and (c == "$" or not quote)):
            start = i + (1 if c == "`" else 2)
            end = closing(text, start, "`" if c == "`" else ")")
            inner.append(text[start:end])
            out.append("$(:)")
            i = end + 1
            continue
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = "$'" if c == "'" and out and out[-1] == "$" else c
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;&|()"):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif c == "<" and (found := heredoc_at(text, i)):
            pending.append(found[:2])
            out.append(text[i:found[2]])
            i = found[2]
            continue
        elif c == "\n" and pending:
            out.append("\n")
            i, read = read_bodies(text, i + 1, pending)
            bodies.extend(read)
            pending = []
            continue
        out.append(c)
        i += 1
    bodies.extend("" for _ in pending)
    return "".join(out), bodies, inner


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)
