"""The calls of an interpreter one-liner (python, node, perl, ruby, php) that matter here.

Not a parser: regular expressions find the call sites (a recursive delete, a shell-out),
``call_args`` reads one call's arguments (with or without parentheses, quote-aware, at most
WINDOW characters) and ``path_values`` the paths an argument evidently names: its string
literals, with the usual spellings of the home folder read as ``~``. A path built at run time
from variables is not seen.
"""

from __future__ import annotations

import re

from shell_lexer import closing, unescape

WINDOW = 2000  # characters of one call's arguments read
# Patterns are compiled on first use (re's cache): most commands run no interpreter.
LITERAL = (r"'((?:[^'\\\n]|\\.){0,4096})'|\"((?:[^\"\\\n]|\\.){0,4096})\""
           r"|`((?:[^`\\]|\\.){0,4096})`")
HOME_CODE = (
    r"\bPath\s*\.\s*home\s*\(\s*\)|\b(?:os\s*\.\s*)?homedir\s*\(\s*\)|\bDir\s*\.\s*home\b"
    r"|\b(?:process|Deno|Bun)\s*\.\s*env\s*(?:\.\s*HOME\b|\[\s*['\"]HOME['\"]\s*\]"
    r"|\.\s*get\s*\(\s*['\"]HOME['\"]\s*\))|\$ENV\s*\{\s*['\"]?HOME['\"]?\s*\}"
    r"|\bENV\s*(?:\[\s*['\"]HOME['\"]\s*\]|\.\s*fetch\s*\(\s*['\"]HOME['\"][^)]*\))"
    r"|\benviron\s*(?:\[\s*['\"]HOME['\"]\s*\]|\.\s*get\s*\(\s*['\"]HOME['\"][^)]*\))"
    r"|\bgetenv\s*\(\s*['\"]HOME['\"]\s*\)")
REQUIRE = r"\b(?:require|import)\s*\(\s*['\"][^'\"]*['\"]\s*\)"
MODES = {"<", ">", ">>", "+<", "+>", "-|", "|-", "r", "w", "a"}
DELETE_CALLS = {
    "python": r"(?<![\w$])rmtree\b",
    "node": r"(?<![\w$])(?:rmSync|rmdirSync|rimraf\w*|removeSync|emptyDirSync|emptyDir)\b"
            r"|\.\s*(?:rm|rmdir|remove)\s*(?=\()",
    "perl": r"(?<![\w$])(?:rmtree|remove_tree)\b",
    "ruby": r"(?<![\w$])(?:rm_rf|rm_r|rmtree|remove_dir|remove_entry(?:_secure)?)\b",
    "php": r"(?!)",
}
SHELL_CALLS = {
    "python": r"(?<![\w$])(?:system|popen|spawn[lv]p?e?|exec[lv]p?e?|run|call|check_call"
              r"|check_output|Popen|getoutput|getstatusoutput)\s*(?=\()",
    "node": r"(?<![\w$])(?:exec|execSync|execFile|execFileSync|spawn|spawnSync|Command)\s*(?=\()",
    "perl": r"(?<![\w$])(?:system|exec|open)\b",
    "ruby": r"(?<![\w$])(?:system|exec|spawn|popen\d?|capture2e?|capture3|pipeline\w*)\b",
    "php": r"(?<![\w$])(?:system|exec|shell_exec|passthru|proc_open|popen)\b",
}
COMMAND_QUOTES = r"`([^`]{0,4096})`|\b(?:qx|%x)\s*([({\[/])"
WRITE_MODE = (r"['\"](?:[wa]b?\+?|r\+b?|rb\+|\+?[<>]{1,2})['\"]|O_WRONLY|O_RDWR|writeFile"
              r"|createWriteStream|write_bytes|write_text|\bwrite\b|syswrite|truncate")


def literals(text: str) -> list[str]:
    return [unescape(next(g for g in m.groups() if g is not None))
            for m in re.finditer(LITERAL, text[:WINDOW])]


def call_args(code: str, i: int) -> str:
    """The argument text of the call whose name ends at ``i``, with or without parentheses."""
    while i < len(code) and code[i] in " \t":
        i += 1
    if code.startswith("(", i):
        return code[i + 1:min(closing(code, i + 1, ")"), i + 1 + WINDOW)]
    j, quote = i, None
    while j < len(code) and j - i < WINDOW:
        c = code[j]
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in ";\n}":
            break
        j += 1
    return code[i:j]


def split_args(text: str) -> list[str]:
    """Top-level comma-separated arguments."""
    out, depth, quote, start = [], 0, None, 0
    for j, c in enumerate(text):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[start:j])
            start = j + 1
    out.append(text[start:])
    return [a.strip() for a in out]


def path_values(arg: str) -> list[str]:
    """The paths one argument evidently names: its string literals joined (a list: each)."""
    arg = re.sub(HOME_CODE, '"~"', re.sub(REQUIRE, "", arg))
    values = literals(arg)
    if not values:
        return []
    if arg.startswith("["):  # a list of paths
        return values
    return ["/".join(values)]
