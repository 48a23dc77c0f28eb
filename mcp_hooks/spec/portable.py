"""What another implementation of the current Agent Hooks spec would reject in a hook folder.

``mcp-hooks validate --portable`` runs these checks on top of our own validation, so a hook
library can be checked before it is shared. mcp-hooks reads more than the spec does (every
event alias, ``hook.md``, a byte order mark, CRLF); another implementation reads only what the
current spec and its reference validator (``hooks-ref``) accept:

- a HOOK.md that starts with ``---`` (no byte order mark) and whose frontmatter is block-style
  YAML (the reference reads it with strictyaml, which refuses ``{...}`` and ``[...]``);
- only the spec's top-level fields (``SPEC_FIELDS``): an unknown key is an error there, so our
  extensions (``on_error``, ``limits``, ``max_blocks``) live under ``metadata``;
- ``name``: at most 64 lowercase letters, digits and single hyphens (after NFKC
  normalisation), not starting or ending with a hyphen, equal to its folder's name;
  ``description``: 1-1024 characters;
- ``trigger``: one of the current spec's kebab-case names (``events.SPEC_NAMES``); the
  snake_case names and other aliases are ours only;
- ``timeout`` 100-600000 and ``priority`` 0-1000 (integers), ``async`` true or false;
  ``matcher`` a mapping of ``tool`` and ``pattern``, each a regular expression Python's ``re``
  compiles (the reference's engine);
- and one check of our own doors: a names-only ``matcher.tool`` that names a host's own tool
  (``Bash``) without its canonical name (``Shell``) misses every call, because every door
  hands hooks the canonical name (``vocabulary.matcher_problem``).

Each problem names the file and the field and says what to write instead. The checks read
files only; they run nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mcp_hooks.errors import HookFileError
from mcp_hooks.spec.events import SPEC_NAMES, is_known_event, spec_name
from mcp_hooks.spec.hookfile import (
    LITERAL_TOOLS,
    find_hook_file,
    parse_frontmatter,
    read_hook_file,
)
from mcp_hooks.spec.vocabulary import matcher_problem

# The frontmatter fields of the spec's appendix; anything else belongs under metadata.
SPEC_FIELDS: tuple[str, ...] = (
    "name", "description", "trigger", "matcher", "timeout", "async", "priority", "metadata",
)
MATCHER_KEYS: tuple[str, ...] = ("tool", "pattern")
_Report = Callable[[str | None, str], None]  # problem(field, message)
_BLOCK = re.compile(r"\A---[ \t]*\n(.*?)^---[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class PortableProblem:
    """One thing another implementation would reject: the file, the field (None: the whole
    file) and what to do about it."""

    file: Path
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else str(self.file)
        return f"{where}: {self.message}"


def check_hook(hook_dir: Path) -> list[PortableProblem]:
    """Every portability problem of one hook folder (empty: portable)."""
    hook_file = find_hook_file(hook_dir)
    if hook_file is None:
        return [PortableProblem(hook_dir, None, "no HOOK.md in this hook folder; add one")]
    try:
        text = read_hook_file(hook_file)
    except HookFileError as exc:
        return [PortableProblem(hook_file, None, exc.reason)]
    problems: list[PortableProblem] = []

    def problem(field: str | None, message: str) -> None:
        problems.append(PortableProblem(hook_file, field, message))

    if hook_file.name != "HOOK.md":
        problem(None, "name the file HOOK.md (upper case), as the spec does")
    if text.startswith("\ufeff"):
        problem(None, "starts with a byte order mark; save it as UTF-8 without one")
    try:
        data = parse_frontmatter(hook_file, text)
    except HookFileError as exc:
        problem(exc.field, exc.reason)
        return problems
    _check_block_style(text, problem)
    for key in data:
        if key not in SPEC_FIELDS:
            problem(str(key), "not a field of the spec (another implementation rejects the "
                    "hook); move it under metadata")
    _check_name(hook_dir, data, problem)
    _check_trigger(data.get("trigger"), problem)
    _check_numbers(data, problem)
    _check_matcher(data.get("matcher"), problem)
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        problem("metadata", "must be a mapping of keys to values")
    return problems


def _check_block_style(text: str, problem: _Report) -> None:
    """Flow-style collections (``{a: b}``, ``[a, b]``), which strictyaml refuses."""
    found = _BLOCK.match(text.lstrip("\ufeff").replace("\r\n", "\n"))
    if found is None:
        return
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        for event in yaml.parse(found.group(1), Loader=loader):
            flow = isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)) and (
                event.flow_style)
            if flow:
                line = event.start_mark.line + 2 if event.start_mark is not None else "?"
                problem(None, f"line {line}: a flow-style {{...}} or [...] collection; write "
                        "it in block style (one key or '- item' a line): the spec's reference "
                        "parser (strictyaml) refuses flow style")
                return
    except yaml.YAMLError:  # parse_frontmatter has already read it; nothing more to say
        return


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _check_name(hook_dir: Path, data: dict[str, Any], problem: _Report) -> None:
    for key, limit in (("name", 64), ("description", 1024)):
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            problem(key, "required: a non-empty string")
        elif len(value) > limit:
            problem(key, f"is {len(value)} characters long; the spec allows {limit}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        return
    name = _nfkc(name.strip())
    if name != name.lower():
        problem("name", f"{name!r} must be lowercase")
    if name.startswith("-") or name.endswith("-"):
        problem("name", f"{name!r} cannot start or end with a hyphen")
    if "--" in name:
        problem("name", f"{name!r} cannot hold consecutive hyphens")
    if any(not (c.isalnum() or c == "-") for c in name):
        problem("name", f"{name!r} may hold only letters, digits and hyphens")
    if name != _nfkc(hook_dir.name):
        problem("name", f"is {name!r} but the folder is {hook_dir.name!r}; the spec wants "
                "them equal: rename one")


def _check_trigger(trigger: Any, problem: _Report) -> None:
    if not isinstance(trigger, str) or not trigger:
        problem("trigger", "required: one of " + ", ".join(SPEC_NAMES.values()))
    elif trigger not in SPEC_NAMES.values():
        if is_known_event(trigger) and spec_name(trigger) not in SPEC_NAMES.values():
            problem("trigger", f"{trigger!r} is an issue-lifecycle event of mcp-hooks' control "
                    "layer; another implementation of the spec will not fire it")
        elif is_known_event(trigger):
            problem("trigger", f"{trigger!r} is read by mcp-hooks only; write "
                    f"{spec_name(trigger)!r}, the current spec's name")
        else:
            problem("trigger", f"{trigger!r} is not an event of the spec; use one of "
                    + ", ".join(SPEC_NAMES.values()))


def _check_numbers(data: dict[str, Any], problem: _Report) -> None:
    for key, low, high in (("timeout", 100, 600000), ("priority", 0, 1000)):
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            problem(key, f"must be an integer from {low} to {high}, got {value!r}")
        elif not low <= value <= high:
            problem(key, f"must be from {low} to {high}, got {value}")
    if "async" in data and not isinstance(data["async"], bool):
        problem("async", f"must be true or false, got {data['async']!r}")


def _check_matcher(matcher: Any, problem: _Report) -> None:
    if matcher is None:
        return
    if not isinstance(matcher, dict):
        problem("matcher", "must be a mapping with the keys tool and/or pattern")
        return
    for key, value in matcher.items():
        if key not in MATCHER_KEYS:
            problem(f"matcher.{key}", "not a matcher key of the spec (tool, pattern)")
            continue
        if not isinstance(value, str):
            problem(f"matcher.{key}", f"must be a regular expression (a string), got {value!r}")
            continue
        try:
            re.compile(value)
        except re.error as exc:
            problem(f"matcher.{key}", f"{value!r} is not a regular expression other "
                    f"implementations read (Python re: {exc})")
    tool = matcher.get("tool")
    if isinstance(tool, str) and LITERAL_TOOLS.fullmatch(tool):
        missing = matcher_problem(tool)
        if missing is not None:
            problem("matcher.tool", missing)
