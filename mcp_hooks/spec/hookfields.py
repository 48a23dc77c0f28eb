"""The HOOK.md frontmatter schema: every field's kind, bounds and default, and our extensions
under ``metadata``, each problem collected rather than only the first.

``FIELDS`` and ``MATCHER_FIELDS`` declare the Agent Hooks spec's appendix once; every message
names the field at fault and says how to fix it. A key the schema has not is named with the
field it looks like (``triger`` -> ``trigger``, ``closest``): an error when it stands for a
missing required field or under ``strict``, else a warning. ``extensions`` reads what
mcp-hooks adds under ``metadata`` (``on_error``, ``limits``, ``persistent``, ``processes``).
``HookFileProblems`` carries every problem of one HOOK.md and the warnings found beside them.

``hookfile.py`` reads a HOOK.md and builds its ``HookSpec`` from what this module checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcp_hooks.errors import HookFileError
from mcp_hooks.spec.limits import DEFAULT_LIMITS, Limits, parse_limits
from mcp_hooks.spec.toolmatch import ToolMatcher


@dataclass(frozen=True)
class _Field:
    """One frontmatter field: its JSON kind, bounds, default, and how to write it right."""

    kind: str  # "string", "integer", "boolean" or "mapping"
    hint: str
    required: bool = False
    default: Any = None
    bounds: tuple[int, int] | None = None  # a range for integers, a length for strings


# The frontmatter schema of the Agent Hooks spec's appendix, declared once; every message
# names the field at fault and says how to fix it.
FIELDS: dict[str, _Field] = {
    "name": _Field("string", "1-64 lowercase letters, digits and single hyphens, equal to "
                   "the folder name", required=True, bounds=(1, 64)),
    "description": _Field("string", "a string of 1-1024 characters saying what the hook does",
                          required=True, bounds=(1, 1024)),
    "trigger": _Field("string", "an event name such as before_tool, before_stop, "
                      "session_start", required=True),
    "matcher": _Field("mapping", "a mapping with optional keys tool and pattern (regular "
                      "expressions)"),
    "timeout": _Field("integer", "milliseconds, an integer from 100 to 600000 (default 30000)",
                      default=30000, bounds=(100, 600000)),
    "async": _Field("boolean", "true or false (default false)", default=False),
    "priority": _Field("integer", "an integer from 0 to 1000, higher runs first (default 100)",
                       default=100, bounds=(0, 1000)),
    "metadata": _Field("mapping", "a mapping of free keys"),
}
MATCHER_FIELDS: dict[str, _Field] = {
    "tool": _Field("string", "a regular expression that must match the whole tool name"),
    "pattern": _Field("string", "a regular expression searched in the tool input's strings"),
}
KNOWN_KEYS = frozenset(FIELDS)
_ON_ERROR_HINT = "allow (fail open, the default) or block (fail closed)"
_KIND_WORDS = {"string": "a string", "integer": "an integer", "boolean": "true or false",
               "mapping": "a mapping"}


def _kind_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    return isinstance(value, dict)


def _check(hook_file: Path, name: str, spec: _Field, value: Any) -> Any:
    """The value of one field, or a HookFileError saying what is wrong and how to fix it."""
    if not _kind_ok(spec.kind, value):
        shown = "a mapping" if isinstance(value, dict) else "a list" if isinstance(
            value, list) else repr(value)
        raise HookFileError(hook_file, name,
                            f"must be {_KIND_WORDS[spec.kind]}, got {shown} ({spec.hint})")
    if spec.bounds is not None:
        low, high = spec.bounds
        if spec.kind == "integer" and not low <= value <= high:
            raise HookFileError(hook_file, name,
                                f"must be from {low} to {high}, got {value} ({spec.hint})")
        if spec.kind == "string" and not low <= len(value) <= high:
            raise HookFileError(hook_file, name, f"must be {low}-{high} characters long, got "
                                f"{len(value)} ({spec.hint})")
    return value


class HookFileProblems(HookFileError):
    """Every problem of one HOOK.md, and the warnings found beside them.

    With one problem, ``field`` and ``reason`` are its own. With more, ``field`` is None and
    ``reason`` joins them (``field: reason; field: reason``), so one line still says it all
    where one line is shown (``list``, a fault's reason); ``validate`` prints each of
    ``problems`` on its own line, then ``warnings`` (unknown keys, say), which would have
    been shown had the hook loaded.
    """

    def __init__(self, file: Path, problems: list[HookFileError],
                 warnings: list[str] | None = None, matcher: ToolMatcher | None = None) -> None:
        self.problems = tuple(problems)
        self.warnings = tuple(warnings or ())
        self.matcher = matcher  # the matcher it declares, when readable: the calls it guards
        if len(problems) == 1:
            super().__init__(problems[0].file, problems[0].field, problems[0].reason)
            return
        super().__init__(file, None, "; ".join(
            f"{p.field}: {p.reason}" if p.field else p.reason for p in problems))


def problems_of(exc: HookFileError) -> tuple[HookFileError, ...]:
    """Each problem an error stands for: its ``problems``, or the error itself."""
    return exc.problems if isinstance(exc, HookFileProblems) else (exc,)


def warnings_of(exc: HookFileError) -> tuple[str, ...]:
    """The warnings found beside the problems of an invalid hook (unknown keys, ...)."""
    return exc.warnings if isinstance(exc, HookFileProblems) else ()


def closest(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The choice a mistyped ``word`` most likely meant (``triger`` -> ``trigger``), or None
    when none is close (``difflib``'s ratio under ``cutoff``)."""
    # lazy: 11 ms of cold start (difflib), only on an error's path
    import difflib  # only on an error's path: loading a valid hook never needs it

    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return found[0] if found else None


def unknown_keys(hook_file: Path, data: dict[str, Any], strict: bool,
                  problems: list[HookFileError], warnings: list[str]) -> set[str]:
    """Report each top-level key the schema has not, naming the field it looks like a
    misspelling of. Returns the missing required fields a misspelled key stands for (their
    own "required field is missing" would only repeat it)."""
    meant: set[str] = set()
    for key in sorted(set(data) - KNOWN_KEYS, key=str):
        close = closest(str(key), FIELDS)
        if close is not None and data.get(close) is None and FIELDS[close].required:
            problems.append(HookFileError(
                hook_file, str(key), f"unknown field; did you mean {close!r}? Rename it to "
                f"{close} ({FIELDS[close].hint})"))
            meant.add(close)
            continue
        if close is not None:
            reason = f"unknown field; did you mean {close!r}? (extensions go under metadata)"
        else:
            reason = "unknown field; put extensions under metadata"
        if strict:
            problems.append(HookFileError(hook_file, str(key), reason))
        else:
            warnings.append(f"{hook_file}: {key}: {reason}")
    return meant


def validate_fields(hook_file: Path, data: dict[str, Any], problems: list[HookFileError],
              meant: set[str]) -> dict[str, Any]:
    """Every known field checked and defaulted, each problem added to ``problems`` (a field
    at fault reads as None, or its default when it has one); unknown keys are left to
    ``unknown_keys``, a missing field one of them stands for (``meant``) to it."""
    values: dict[str, Any] = {}
    for name, spec in FIELDS.items():
        values[name] = spec.default
        if data.get(name) is None:
            if spec.required and name not in meant:
                problems.append(HookFileError(hook_file, name,
                                              f"required field is missing ({spec.hint})"))
            continue
        try:
            values[name] = _check(hook_file, name, spec, data[name])
        except HookFileError as exc:
            problems.append(exc)
    matcher = values["matcher"]
    if matcher is not None:
        checked: dict[str, Any] = {}
        for key in matcher:
            if key not in MATCHER_FIELDS:
                close = closest(str(key), MATCHER_FIELDS)
                hint = f"did you mean {close!r}? " if close else ""
                problems.append(HookFileError(hook_file, f"matcher.{key}", f"unknown key; "
                                              f"{hint}a matcher takes tool and pattern"))
        for key, spec in MATCHER_FIELDS.items():
            if matcher.get(key) is not None:
                try:
                    checked[key] = _check(hook_file, f"matcher.{key}", spec, matcher[key])
                except HookFileError as exc:
                    problems.append(exc)
        values["matcher"] = checked
    return values


# The keys of metadata mcp-hooks reads; any other key is the author's own. A key this close
# to one of them (``on_eror``) is most likely a typo that would silently keep the default.
_EXTENSION_KEYS = ("on_error", "limits", "persistent", "processes", "mode", "ask_timeout",
                   "on_ask_unavailable")  # the last two: read when a hook asks (docs/ask.md)
MAX_PROCESSES = 32  # metadata.processes: 1..MAX_PROCESSES


def extensions(hook_file: Path, metadata: dict[str, Any], is_async: bool,
                problems: list[HookFileError],
                warnings: list[str],
                ) -> tuple[Literal["allow", "block"], Limits, bool, int | None]:
    """Our extensions under ``metadata``: ``on_error``, ``limits``, ``persistent`` and
    ``processes``."""
    for key in metadata:
        if key not in _EXTENSION_KEYS:
            close = closest(str(key), _EXTENSION_KEYS, cutoff=0.75)
            if close is not None:
                warnings.append(f"{hook_file}: metadata.{key}: not a key mcp-hooks reads; did "
                                f"you mean {close!r}? (as written, {close} keeps its default)")
    on_error = metadata.get("on_error", "allow")
    if on_error not in ("allow", "block"):
        problems.append(HookFileError(hook_file, "metadata.on_error",
                                      f"{on_error!r}: {_ON_ERROR_HINT}"))
        on_error = "allow"
    limits = DEFAULT_LIMITS
    try:
        limits = parse_limits(metadata.get("limits"), hook_file)
    except HookFileError as exc:
        problems.append(exc)
    persistent = metadata.get("persistent", False)
    if not isinstance(persistent, bool):
        problems.append(HookFileError(hook_file, "metadata.persistent", f"{persistent!r}: true "
                                      "(one process serves every event) or false (a process "
                                      "per event)"))
        persistent = False
    if is_async and persistent:
        warnings.append(f"{hook_file}: metadata.persistent: ignored on an async hook, which "
                        "runs a process per event")
        persistent = False
    if is_async and on_error == "block":
        warnings.append(
            f"{hook_file}: metadata.on_error: ignored on an async hook, which cannot block"
        )
    return on_error, limits, persistent, _processes(hook_file, metadata, persistent, problems,
                                                    warnings)


def _processes(hook_file: Path, metadata: dict[str, Any], persistent: bool,
               problems: list[HookFileError], warnings: list[str]) -> int | None:
    """``metadata.processes``: an int in 1..MAX_PROCESSES, or None (not given)."""
    value = metadata.get("processes")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not (
            1 <= value <= MAX_PROCESSES):
        problems.append(HookFileError(hook_file, "metadata.processes", f"{value!r}: a whole "
                                      f"number from 1 to {MAX_PROCESSES} (the most resident "
                                      "processes of this persistent hook)"))
        return None
    if not persistent:
        warnings.append(f"{hook_file}: metadata.processes: ignored without metadata.persistent: "
                        "true (a one-shot hook runs a process per event)")
        return None
    return value
