"""A shell command's words, as the bundled guards read them: split as a POSIX shell splits
it, with its operators as tokens of their own.

Contracts:

- ``tokens(text)`` is ``text`` split by ``shlex`` in POSIX mode, ``();<>|&`` and newlines as
  punctuation (so ``a;b`` is three tokens), no comments; None on an unbalanced quote (a guard
  refuses what it cannot read).
- ``is_operator(token)``: a token made only of those punctuation characters.
- ``separates(token)``: an operator that ends a simple command (``;``, a newline, ``(``,
  ``)``, ``&&``, ``||``, ``|`` but not the redirection ``>|``, ``&`` but not in a
  redirection such as ``2>&1``).

Imported by the bundled guards (block-dangerous-commands, protect-hooks) on every event they
check: standard library (``shlex``) only.
"""

from __future__ import annotations

import shlex

OPERATOR_CHARS = "();<>|&\n"


def tokens(text: str) -> list[str] | None:
    """``text`` split as a POSIX shell splits it, operators as their own tokens; None on
    unbalanced quotes."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=OPERATOR_CHARS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


def is_operator(token: str) -> bool:
    """A token made only of operator characters (``;``, ``&&``, ``>``, ``2>&1``'s ``>&``)."""
    return bool(token) and all(c in OPERATOR_CHARS for c in token)


def separates(token: str) -> bool:
    """An operator that ends a simple command (not a redirection such as ``>|`` or ``>&``)."""
    redirect = ">" in token or "<" in token
    return (any(c in token for c in ";\n()") or "&&" in token or "||" in token
            or ("|" in token and token != ">|") or ("&" in token and not redirect))


__all__ = ["OPERATOR_CHARS", "is_operator", "separates", "tokens"]
