"""The plain subset of YAML that HOOK.md frontmatter is written in, read without PyYAML.

Building the index of 10,000 hooks, or starting ``mcp-hooks fire``, should not pay for a
general YAML parser when the frontmatter is ``key: value`` lines and one level of nested
mappings. ``load`` reads exactly that subset and returns None for anything else, so the
caller hands the text to PyYAML and every answer is the one PyYAML would give:

- keys are plain words; values are single-line scalars or a block of indented ``key: value``
  lines one level deep;
- scalars: integers, ``true``/``false``, ``null``/``~``, quoted strings without escapes, and
  plain strings that no YAML 1.1 implicit type could claim (they start with a letter and are
  not a boolean or null word);
- anything else - flow collections, lists, block scalars, anchors, tags, comments after a
  value, tabs, duplicate keys, deeper nesting, floats, dates - is declined.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from mcp_hooks.errors import ConfigError

_LINE = re.compile(r"( *)([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*))?")  # value: rstrip it
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_SINGLE = re.compile(r"'((?:[^']|'')*)'")
_DOUBLE = re.compile(r'"([^"\\]*)"')
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False,
          "FALSE": False}
_NULLS = {"null", "Null", "NULL", "~"}
# YAML 1.1 booleans PyYAML resolves that a person may not mean as such: let PyYAML decide.
_AMBIGUOUS = {"yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"}
_DECLINE = object()
# Characters YAML refuses, or that ``str.splitlines`` would take for line breaks: declined.
# Written as the ranges outside YAML's printable set: the same class as [^...] of the ranges
# inside it takes 5 ms to compile, on every start of a bridge (python -X importtime).
_NOT_YAML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")


def _scalar(text: str) -> Any:
    if _INT.fullmatch(text):
        return int(text)
    if text in _BOOLS:
        return _BOOLS[text]
    if text in _NULLS:
        return None
    first = text[0]
    if first == "'":
        quoted = _SINGLE.fullmatch(text)
        return quoted.group(1).replace("''", "'") if quoted else _DECLINE
    if first == '"':
        quoted = _DOUBLE.fullmatch(text)
        return quoted.group(1) if quoted else _DECLINE
    if (not first.isalpha() or text in _AMBIGUOUS or " #" in text or ": " in text
            or text.endswith(":")):
        return _DECLINE
    return text


def load(text: str) -> dict[str, Any] | None:
    """The mapping the text holds, or None when it is outside the subset (use PyYAML)."""
    if _NOT_YAML.search(text):
        return None
    try:
        root = _tree(text)
    except ConfigError:  # outside the subset (nothing else here raises it)
        return None
    if not root:  # an empty document is null to YAML, not {}
        return None
    return {k: (v if v != {} else None) for k, v in root.items()}


def _outside() -> ConfigError:
    """The text is outside the subset: PyYAML reads it (caught in ``load``, never raised out)."""
    return ConfigError("outside the YAML subset")


def _tree(text: str) -> dict[str, Any]:
    """Top-level keys, each a scalar or a block of scalars one indent deeper."""
    root: dict[str, Any] = {}
    block: dict[str, Any] | None = None
    block_indent = 0
    for indent, key, value in _entries(text):
        if indent == 0:
            if key in root:
                raise _outside()
            block = None if value else {}
            block_indent = 0
            root[key] = _value(value) if value else block
            continue
        if block is None or not value or key in block:
            raise _outside()
        if block_indent == 0:
            block_indent = indent
        elif indent != block_indent:
            raise _outside()
        block[key] = _value(value)
    return root


def _entries(text: str) -> Iterator[tuple[int, str, str]]:
    """(indent, key, value) of each line that is not blank or a comment."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        found = _LINE.fullmatch(line)
        if found is None or "\t" in line:
            raise _outside()
        spaces, key, value = found.groups()
        if key in _BOOLS or key in _NULLS or key in _AMBIGUOUS:  # PyYAML reads `on:` as True
            raise _outside()
        yield len(spaces), key, (value.rstrip(" ") if value else "")


def _value(text: str) -> Any:
    parsed = _scalar(text)
    if parsed is _DECLINE:
        raise _outside()
    return parsed
