"""The YAML frontmatter of a HOOK.md -> a mapping, refusing what would make reading it costly.

A HOOK.md starts with a line ``---``, then YAML, then a line ``---``. A byte order mark and
CRLF or CR line breaks (a Windows checkout, an editor) are read as YAML reads them. The
common shapes are read by ``yamlsubset`` without PyYAML; the rest by PyYAML's safe loader,
after its parser's events showed no anchor or alias ("billion laughs") and no nesting deeper
than a HOOK.md needs (which overflows the C loader's stack). Every failure is a
``HookFileError`` with the line, when there is one, and the fix. ``hookfile`` validates the
mapping.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mcp_hooks.errors import HookFileError
from mcp_hooks.spec import yamlsubset

FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?)^---[ \t]*$", re.S | re.M)
_OPENING = re.compile(r"\A---[ \t]*$", re.M)
_TRIGGER_LINE = re.compile(r"^trigger:[ \t]*[\"']?([A-Za-z_][A-Za-z0-9_-]*)", re.M)


def parse_frontmatter(hook_file: Path, text: str) -> dict[str, Any]:
    """The frontmatter of a HOOK.md as a mapping.

    Raises:
        HookFileError: no frontmatter block, malformed YAML, or not a mapping.
    """
    if text.startswith("\ufeff"):  # a byte order mark, as editors on Windows write it
        text = text[1:]
    if "\r" in text:  # CRLF (a Windows checkout) or CR line breaks: YAML reads them as LF
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not _OPENING.match(text):
        raise HookFileError(
            hook_file, None, "no YAML frontmatter: the file must start with a line '---'"
        )
    found = FRONTMATTER.match(text)
    if found is None:
        raise HookFileError(
            hook_file, None, "the frontmatter is not closed: add a line '---' after it"
        )
    fm_text = found.group(1)
    simple = yamlsubset.load(fm_text)
    if simple is not None:
        return simple
    # lazy: 25 ms (PyYAML) of cold `fire`: the subset parser reads most HOOK.md
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _refuse_hostile(hook_file, yaml.parse(fm_text, Loader=loader))
        data = yaml.load(fm_text, Loader=loader)
    except RecursionError:  # the pure-Python loader, on nesting _refuse_hostile let through
        raise HookFileError(hook_file, None, "the frontmatter nests too deep") from None
    except yaml.YAMLError as exc:
        # The YAML text starts on the line after the opening '---': its line i is file line i+2.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 2}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise HookFileError(hook_file, None, f"{line}malformed YAML: {problem}") from None
    if not isinstance(data, dict):
        raise HookFileError(
            hook_file, None, "the frontmatter must be a mapping of fields (name: ..., trigger: ...)"
        )
    return data


_MAX_YAML_DEPTH = 64  # nesting of frontmatter collections; HOOK.md needs three at most


def _refuse_hostile(hook_file: Path, events: Any) -> None:
    """Refuse, from the parser's events and before anything is built, what would make
    building it costly: anchors and aliases (``&a``, ``*a``) can expand a page of YAML into
    gigabytes ("billion laughs"), and deep nesting overflows the C loader's stack (a
    segfault at some tens of thousands of levels). Frontmatter needs neither."""
    # lazy: 25 ms (PyYAML) of cold `fire`: the subset parser reads most HOOK.md
    import yaml

    try:
        _walk_events(hook_file, events)
    except yaml.YAMLError as exc:
        # PyYAML >= 6.0.4 refuses deep nesting in its own scanner (at 1,000 flow levels),
        # which runs ahead of the events, so its error can come before our count says so
        if "nesting depth" not in str(exc):
            raise
        raise HookFileError(hook_file, None, "the frontmatter nests more than "
                            f"{_MAX_YAML_DEPTH} levels deep; flatten it") from None


def _walk_events(hook_file: Path, events: Any) -> None:
    # lazy: 25 ms (PyYAML) of cold `fire`: the subset parser reads most HOOK.md
    import yaml

    depth = 0
    for event in events:
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > _MAX_YAML_DEPTH:
                line = event.start_mark.line + 2 if event.start_mark is not None else None
                raise HookFileError(
                    hook_file, None, (f"line {line}: " if line else "") + "the frontmatter "
                    f"nests more than {_MAX_YAML_DEPTH} levels deep; flatten it")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        anchored = isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None)
        if anchored:
            line = event.start_mark.line + 2 if event.start_mark is not None else None
            raise HookFileError(
                hook_file, None,
                (f"line {line}: " if line else "") + "YAML anchors and aliases (&name, *name) "
                "are not allowed in HOOK.md frontmatter; write the value out in full")


def trigger_hint(text: str) -> str | None:
    """The trigger a HOOK.md that does not load seems to name (to tell which events it would
    have woken), or None when none can be read."""
    found = _TRIGGER_LINE.search(text)
    return found.group(1) if found else None


__all__ = ["FRONTMATTER", "parse_frontmatter", "trigger_hint"]
