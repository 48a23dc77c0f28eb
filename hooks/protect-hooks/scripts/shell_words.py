"""The words of a shell command: substitutions and braces expanded, GNU-style options read,
and the verbs that write files (split into tokens by ``mcp_hooks.spec.shellwords``, shared with
block-dangerous-commands). Standard library only.
"""

from __future__ import annotations

import re

SUBST = re.compile(r"[$<>]\(")
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox"}
# every verb that writes files, for the conservative scans
WRITE_VERBS = {
    "rm", "rmdir", "unlink", "shred", "srm", "trash", "trash-put", "mv", "cp", "install", "ln",
    "link", "rsync", "scp", "tee", "touch", "mkdir", "truncate", "chmod", "chown", "chgrp",
    "chattr", "setfacl", "dd", "sed", "perl", "ruby", "git", "patch", "curl", "wget", "tar",
    "unzip", "vi", "vim", "nvim", "nano", "emacs", "ed", "ex", "sponge", "mcp-hooks", "find",
    "apply_patch", "python", "python3", "node", "gio", "rename", "xargs", "cpio", "7z", "bsdtar",
}
Option = tuple[str, str]  # (name, value: "" for a flag)


def substitutions(text: str) -> list[str]:
    """The bodies of $(...), <(...), >(...) and `...` in ``text`` (one level)."""
    out = []
    i, n = 0, len(text)
    while True:
        m = SUBST.search(text, i)
        if m is None:
            break
        j, depth = m.end(), 1
        while j < n and depth:
            c = text[j]
            depth += (c == "(") - (c == ")")
            j += 1
        out.append(text[m.end():j - 1] if depth == 0 else text[m.end():])
        i = j
    out.extend(re.findall(r"`([^`]*)`", text))
    return out


def braces(word: str, limit: int = 64) -> list[str]:
    """Brace expansion of one word (a{b,c}d -> abd acd), at most ``limit`` results."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if m is None:
        return [word]
    out: list[str] = []
    for choice in m.group(1).split(","):
        for expanded in braces(word[:m.start()] + choice + word[m.end():], limit):
            out.append(expanded)
            if len(out) >= limit:
                return out
    return out


def options(args: list[str], with_value: set[str] | tuple[str, ...] = (),
            long_with_value: set[str] | tuple[str, ...] = ()) -> tuple[list[str], list[Option]]:
    """(operands, [(option, value)]) of a GNU-style argument list."""
    operands: list[str] = []
    found: list[Option] = []
    j = 0
    while j < len(args):
        arg = args[j]
        if arg == "--":
            operands.extend(args[j + 1:])
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if not eq and name in long_with_value and j + 1 < len(args):
                j += 1
                value = args[j]
            found.append((name, value))
        elif arg.startswith("-") and len(arg) > 1:
            j = _short_options(args, j, with_value, found)
        else:
            operands.append(arg)
        j += 1
    return operands, found


def _short_options(args: list[str], j: int, with_value: set[str] | tuple[str, ...],
                   found: list[Option]) -> int:
    """The cluster of short options at ``args[j]`` into ``found``; the index of its last word
    (the next one when the last option takes its value from it)."""
    arg = args[j]
    for k, ch in enumerate(arg[1:], 1):
        if ch in with_value:
            value = arg[k + 1:]
            if not value and j + 1 < len(args):
                j += 1
                value = args[j]
            found.append(("-" + ch, value))
            break
        found.append(("-" + ch, ""))
    return j
