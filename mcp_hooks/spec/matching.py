"""Matchers that cannot stall an event: linear-time regular expressions over bounded input.

A HOOK.md ``matcher`` is a regular expression, and the text it runs over (the tool input) is
written by the agent, or by whatever prompt was injected into it. A backtracking engine
(Python's ``re``) can take exponential time on a pattern such as ``(a+)+b``; an event that
stalls past the host's own hook timeout is read by every host as "carry on". So matchers are
compiled with RE2 (``google-re2``), whose running time is linear in the input, and walked
without recursion, so no nesting depth can raise ``RecursionError``.

RE2 refuses what it cannot run in linear time: backreferences (``\\1``), lookahead and
lookbehind (``(?=``, ``(?!``, ``(?<=``, ``(?<!``), possessive and atomic groups, and a few
Python-only escapes (``\\Z``: use ``\\z``). ``compile_matcher`` names the construct in its
error so the HOOK.md can be fixed. RE2 is imported only when a hook has a matcher that is
more than a list of tool names, so the common index never pays for it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any, Protocol

from mcp_hooks.errors import ConfigError

MAX_DEPTH = 256  # nesting levels of an event's JSON that mcp-hooks reads; deeper is a fault

# Python constructs RE2 refuses, and how to say so.
_REFUSED = (
    (re.compile(r"\(\?<?[=!]"), "lookahead and lookbehind ((?=, (?!, (?<=, (?<!)"),
    (re.compile(r"\\[1-9]|\(\?P=[A-Za-z_]"), "backreferences (\\1, (?P=name))"),
    (re.compile(r"\(\?>|[*+?}]\+"), "atomic groups and possessive quantifiers"),
    (re.compile(r"\\Z"), "\\Z (write \\z)"),
)


class MatcherError(ConfigError, ValueError):
    """A pattern that is not a linear-time regular expression; the message says why."""


class Matcher(Protocol):
    def search(self, text: str) -> object: ...
    def fullmatch(self, text: str) -> object: ...


@functools.lru_cache(maxsize=1)
def _re2() -> tuple[Any, Any]:
    # lazy: 19 ms of cold start, and an optional dependency (google-re2)
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # our error names the problem; RE2 must not print its own
    return re2, options


@functools.lru_cache(maxsize=65536)  # once per distinct pattern, however many hooks share it
def compile_matcher(pattern: str) -> Matcher:
    """The linear-time matcher of a pattern.

    Raises:
        MatcherError: the pattern does not compile, or uses a construct RE2 refuses.
    """
    re2, options = _re2()
    try:
        compiled: Matcher = re2.compile(pattern, options)
        return compiled
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
    for construct, words in _REFUSED:
        if construct.search(pattern):
            raise MatcherError(
                f"uses {words}, which linear-time matching (RE2) does not support; "
                "rewrite the pattern without it") from None
    raise MatcherError(f"does not compile: {detail}") from None


def _text(text: str) -> str:
    """Text RE2 can take: lone surrogates (valid in JSON, not in UTF-8) become U+FFFD."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def search(matcher: Matcher, text: str) -> bool:
    try:
        return matcher.search(text) is not None
    except UnicodeEncodeError:
        return matcher.search(_text(text)) is not None


def fullmatch(matcher: Matcher, text: str) -> bool:
    try:
        return matcher.fullmatch(text) is not None
    except UnicodeEncodeError:
        return matcher.fullmatch(_text(text)) is not None


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, object keys included (``{"rm -rf /": 1}`` must not slip
    past a guard), depth first, without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                stack.append(child)
                stack.append(key)
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))


def search_strings(matcher: Matcher, value: Any) -> bool:
    """Whether the pattern is found in any string value of ``value``, at any depth."""
    return any(search(matcher, text) for text in strings(value))


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep a JSON value nests (a scalar is 0), counting no further than ``limit + 1``."""
    if not isinstance(value, (dict, list, tuple)):
        return 0
    return _depth(value, 1, limit)


def _depth(item: Any, level: int, limit: int) -> int:
    """``item`` (a dict, list or tuple) sits at ``level``: the deepest level below it, or
    ``limit + 1`` as soon as that is passed."""
    if level > limit:
        return level
    deepest = level
    for child in item.values() if isinstance(item, dict) else item:
        if isinstance(child, (dict, list, tuple)):
            below = _depth(child, level + 1, limit)
            if below > limit:
                return below
            if below > deepest:
                deepest = below
    return deepest


def larger_than(value: Any, size: int) -> bool:
    """Whether the strings of a JSON value hold more than ``size`` characters in all
    (stops counting as soon as they do)."""
    total = 0
    for text in strings(value):
        total += len(text)
        if total > size:
            return True
    return False
