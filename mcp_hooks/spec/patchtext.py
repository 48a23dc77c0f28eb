"""What a patch writes: the files it names and the lines it adds (the ``ApplyPatch`` tools).

Two formats. The apply_patch envelope that Codex, Cline and OpenCode's ``apply_patch`` (and
OpenCode's older ``patch``) take: ``*** Begin Patch``, then ``*** Add File: p``,
``*** Update File: p`` (with ``*** Move to: q``), ``*** Delete File: p``; headers are
read with leading blanks and in any case, as lenient parsers (OpenCode's trims each line)
accept them. And unified diffs: ``--- a/p``, ``+++ b/p``, ``diff --git a/p b/p``,
``rename from p`` / ``rename to q``.

Contracts:

- ``patch_paths(text)`` lists every path a header names, in order (``/dev/null`` left out);
  it over-reads rather than under-reads (a removed line ``-- x`` reads as a header).
- ``added_text(text)`` is the text of every added line (``+...`` but ``+++`` headers).
- ``patch_strings(value)`` is every string in a tool input, walked without recursion: hosts
  carry the patch under different keys (``patch``, ``input``, ``command``, OpenCode's
  ``patchText``), so a guard reads them all. Past ``MAX_STRINGS`` values it raises
  ``TooManyValues`` (a guard refuses what it cannot read whole).
- ``is_patch_tool(name)``: a name that says patch (``ApplyPatch``, ``apply_patch``,
  ``patch``, ``mcp__x__apply_patch``); ``applies_patch(command)``: a shell command that
  may apply one (``apply_patch``, ``patch``, ``git apply``, an envelope in a heredoc).

Imported by the bundled guards (protect-hooks, protect-secrets) on every event they check:
standard library (``re``) only, nothing compiled before it is used.
"""

from __future__ import annotations

import re

MAX_STRINGS = 20_000  # values walked in one tool input
_HEADERS = (
    r"(?im)^[ \t]*\*\*\*[ \t]*(?:add|update|delete)[ \t]+file[ \t]*:[ \t]*(.+?)[ \t\r]*$"
    r"|^[ \t]*\*\*\*[ \t]*move[ \t]+to[ \t]*:[ \t]*(.+?)[ \t\r]*$"
    r"|^(?:\+\+\+|---)[ \t]+(?:[ab]/)?([^\t\r\n]+?)(?:\t.*)?[ \t\r]*$"
    r"|^diff --git a/(\S+) b/(\S+)"
    r"|^rename (?:from|to) (.+?)[ \t\r]*$")


def patch_paths(text: str) -> list[str]:
    """Every path a patch header in ``text`` names, in order; ``/dev/null`` left out."""
    out: list[str] = []
    if "***" not in text and "--" not in text and "++" not in text and "rename" not in text:
        return out
    for m in re.finditer(_HEADERS, text):
        for path in m.groups():
            if path and path != "/dev/null":
                out.append(path)
    return out


def added_text(text: str) -> str:
    """The lines a patch adds, without their ``+`` (``+++`` headers left out)."""
    return "\n".join(line[1:] for line in text.splitlines()
                     if line.startswith("+") and not line.startswith("+++"))


class TooManyValues(ValueError):
    """A tool input holds more values than ``MAX_STRINGS``: not read halfway."""


def patch_strings(value: object) -> list[str]:
    """Every string in ``value`` (a tool input: dicts, lists, strings); dict keys are not read.

    Raises:
        TooManyValues: more than ``MAX_STRINGS`` values to walk.
    """
    out: list[str] = []
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > MAX_STRINGS:
            raise TooManyValues(f"the tool input holds more than {MAX_STRINGS} values")
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return out


def is_patch_tool(name: object) -> bool:
    """A tool whose name says it applies a patch."""
    return isinstance(name, str) and "patch" in name.lower()


def applies_patch(command: str) -> bool:
    """A shell command that may apply a patch (``apply_patch``, ``patch``, ``git apply``, or
    an apply_patch envelope anywhere in it)."""
    return "*** Begin Patch" in command or re.search(
        r"\b(?:apply_patch|patch|git\s+apply)\b", command) is not None
