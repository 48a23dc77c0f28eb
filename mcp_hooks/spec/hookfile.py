"""HOOK.md -> ``HookSpec``: frontmatter validation and entry-script resolution.

A hook is a folder ``<name>/`` holding ``HOOK.md`` (YAML frontmatter, then prose for people)
and an entry script, the first found of ``scripts/run`` (executable), ``scripts/run.sh``
(executed directly when executable, else with ``sh``) and ``scripts/run.py`` (run with this
Python). Fields, types and ranges follow the appendix of the Agent Hooks spec; our own
extensions live under ``metadata`` so a hook stays valid for every other implementation.

The YAML block is read by ``frontmatter`` and its mapping checked field by field by
``hookfields`` (every problem collected, not only the first: ``HookFileProblems``; a
misspelled key named with the field it looks like, ``triger`` -> ``trigger``); here the
name, trigger and matcher are checked against the folder and the event catalogue, the entry
script is found, and a script the kernel cannot start because its first line ends in a
carriage return (a CRLF checkout) is refused by name.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp_hooks.errors import HookFileError, UnknownEventError
from mcp_hooks.paths import read_plain
from mcp_hooks.spec import matching
from mcp_hooks.spec.events import TOOL_EVENTS, canonical_event
from mcp_hooks.spec.frontmatter import FRONTMATTER as _FRONTMATTER  # noqa: F401 (tests read it)
from mcp_hooks.spec.frontmatter import parse_frontmatter as parse_frontmatter  # re-exported
from mcp_hooks.spec.frontmatter import trigger_hint
from mcp_hooks.spec.hookfields import (
    FIELDS,
    HookFileProblems,
    extensions,
    unknown_keys,
    validate_fields,
)
from mcp_hooks.spec.limits import DEFAULT_LIMITS, Limits
from mcp_hooks.spec.toolmatch import LITERAL_TOOLS as LITERAL_TOOLS  # re-exported
from mcp_hooks.spec.toolmatch import NO_MATCHER, ToolMatcher

Scope = Literal["managed", "user", "project"]
HOOK_FILES = ("HOOK.md", "hook.md")
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_HOOK_FILE = 1 << 20  # bytes: a HOOK.md is a page of prose, never a megabyte
# A tool matcher that is only names (``Shell``, ``Write|Edit``, ``toolmatch.LITERAL_TOOLS``)
# is matched by a set lookup and never compiled: most are, and compiling thousands of them is
# most of an index build.


@dataclass(frozen=True)
class HookSpec:
    """One valid hook, as the index holds it.

    Attributes:
        name: the hook's name (equal to its folder name).
        trigger: the event as the hook spells it (its payload's ``event_type`` uses this).
        event: the canonical event name the trigger resolves to.
        timeout: milliseconds.
        entry: the argv that runs the hook's entry script.
        on_error: ``allow`` fails open (the spec's default); ``block`` fails closed.
        limits: resource limits of its processes (``metadata.limits``, ``mcp_hooks.spec.limits``).
        persistent: ``metadata.persistent``: a long-lived engine keeps one process of it and
            sends it one event per line (``mcp_hooks.runner.persistent``); sync hooks only.
        processes: ``metadata.processes``: at most this many resident processes of a
            persistent hook (1..32, each one event at a time); None: the engine's default.
    """

    name: str
    description: str
    trigger: str
    event: str
    scope: Scope
    dir: Path
    hook_file: Path
    entry: tuple[str, ...]
    matcher_tool: str | None = None
    matcher_pattern: str | None = None
    timeout: int = 30000
    is_async: bool = False
    priority: int = 100
    metadata: dict[str, Any] = field(default_factory=dict)
    on_error: Literal["allow", "block"] = "allow"
    limits: Limits = DEFAULT_LIMITS
    persistent: bool = False
    processes: int | None = None
    _matcher: ToolMatcher = field(default=NO_MATCHER, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.matcher_tool is not None or self.matcher_pattern is not None:
            object.__setattr__(self, "_matcher",
                               ToolMatcher(self.matcher_tool, self.matcher_pattern))

    @property
    def audit(self) -> bool:
        """``metadata.mode: audit``: its verdicts are recorded as "would ...", never enforced."""
        return self.metadata.get("mode") == "audit"

    @property
    def has_matcher(self) -> bool:
        return self._matcher.given

    @property
    def tool_names(self) -> frozenset[str] | None:
        """The tool names a names-only ``matcher.tool`` stands for (with the canonical names
        of any host tool names in it: ``Bash`` -> ``Bash``, ``Shell``); None for a regex."""
        return self._matcher.tool_names

    @property
    def tool_re(self) -> matching.Matcher | None:
        """The linear-time matcher of ``matcher.tool`` (compiled now for a names-only one)."""
        return self._matcher.tool_re

    def matches(self, tool_name: str | None, tool_input: Any) -> bool:
        """Whether the matcher admits this tool call (hooks without one match every call;
        the rule: ``toolmatch.ToolMatcher``)."""
        return self._matcher.matches(tool_name, tool_input)

    def frontmatter(self) -> dict[str, Any]:
        """The metadata a client sees in listings (no prose, no script)."""
        matcher = {
            k: v for k, v in (("tool", self.matcher_tool), ("pattern", self.matcher_pattern)) if v
        }
        return {
            "name": self.name,
            "description": self.description,
            "trigger": self.trigger,
            "event": self.event,
            "scope": self.scope,
            "priority": self.priority,
            "async": self.is_async,
            "timeout": self.timeout,
            "matcher": matcher or None,
            "on_error": self.on_error,
            "mode": "audit" if self.audit else "enforce",
        }

    def read_text(self) -> str:
        """The whole HOOK.md, read now (progressive disclosure: only when asked); raises
        HookFileError when it cannot be (``read_hook_file``)."""
        return read_hook_file(self.hook_file)


def read_hook_file(hook_file: Path) -> str:
    """A HOOK.md's text, read now and never waited on (``paths.read_plain``: a FIFO swapped
    in since the folder was listed is refused, not opened for a writer that never comes), of
    at most ``MAX_HOOK_FILE``, UTF-8. Raises HookFileError naming the file and the fix."""
    try:
        raw = read_plain(hook_file, MAX_HOOK_FILE)
    except OSError as exc:
        raise HookFileError(hook_file, None, f"cannot be read: {exc.strerror}") from None
    except ValueError as exc:
        why = (f"is over {MAX_HOOK_FILE >> 20} MiB; a HOOK.md is frontmatter and a page of "
               "prose: shorten it") if "larger" in str(exc) else f"is {exc}; make it a plain file"
        raise HookFileError(hook_file, None, why) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HookFileError(hook_file, None, "not UTF-8 text; save it as UTF-8") from None


def find_hook_file(hook_dir: Path) -> Path | None:
    for name in HOOK_FILES:
        if os.path.isfile(f"{hook_dir}/{name}"):
            return hook_dir / name
    return None


def resolve_entry(hook_dir: Path, hook_file: Path,
                  run_is_file: bool | None = None) -> tuple[str, ...]:
    """The argv that runs a hook, by the spec's order ``scripts/run`` > ``run.sh`` > ``run.py``.

    Raises:
        HookFileError: no entry script, ``scripts/run`` is not executable, or a script run
            directly whose first line ends in a carriage return (a CRLF checkout).
    """
    scripts = f"{hook_dir}/scripts"
    run = f"{scripts}/run"
    if run_is_file if run_is_file is not None else os.path.isfile(run):
        if not os.access(run, os.X_OK):
            raise HookFileError(
                hook_file, "scripts/run", f"{run} is not executable; fix it with: chmod +x {run}"
            )
        _refuse_crlf(hook_file, run, "scripts/run", shebang_only=True)
        return (run,)
    run_sh = f"{scripts}/run.sh"
    if os.path.isfile(run_sh):
        _refuse_crlf(hook_file, run_sh, "scripts/run.sh", shebang_only=False)
        return (run_sh,) if os.access(run_sh, os.X_OK) else ("/bin/sh", run_sh)
    run_py = f"{scripts}/run.py"
    if os.path.isfile(run_py):
        return (sys.executable, run_py)  # Python reads CRLF sources, and its #! is not used
    raise HookFileError(
        hook_file,
        "scripts",
        f"no entry script: add an executable {scripts}/run, or {scripts}/run.sh or run.py",
    )


def _refuse_crlf(hook_file: Path, script: str, rel: str, *, shebang_only: bool) -> None:
    """A script whose first line ends in a carriage return (``#!/bin/sh\\r``, as a Windows
    checkout writes it) cannot start: the kernel looks for an interpreter named ``sh\\r``,
    and the spawn fails with a "not found" that names neither. Say so at load, by name.

    The first 256 bytes are read (the kernel reads no more of a ``#!`` line either); an
    unreadable script is left to the run, which reports why it cannot start. ``shebang_only``:
    only a ``#!`` line counts (``scripts/run`` may be a binary); a shell script (``run.sh``)
    with a carriage return in its first line has them in every line, and sh fails on each.
    """
    # os.open/os.read: half of what a file object costs, on every hook of an index build;
    # O_NONBLOCK: a FIFO swapped in since the stat cannot hang the open
    try:
        fd = os.open(script, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            head = os.read(fd, 256)
        finally:
            os.close(fd)
    except OSError:
        return
    line = head.split(b"\n", 1)[0]
    if b"\r" not in line or (shebang_only and not head.startswith(b"#!")):
        return
    what = "the #! line" if head.startswith(b"#!") else "its first line"
    raise HookFileError(
        hook_file, rel, f"{what} ends in a carriage return (CRLF): convert {rel} to LF line "
        f"endings (sed -i 's/\\r$//' {shlex.quote(script)}, or dos2unix)")


def load_hook(
    hook_dir: Path, scope: Scope, *, strict: bool = False, hook_file: Path | None = None,
    run_is_file: bool | None = None,
) -> tuple[HookSpec, list[str]]:
    """Load and validate one hook folder.

    Args:
        hook_dir: the hook's folder (its name is the hook's name).
        scope: ``user`` or ``project``.
        strict: unknown frontmatter keys are errors instead of warnings.
        hook_file, run_is_file: its HOOK.md, and whether ``scripts/run`` is a file, when
            the caller has just looked (the index has): not looked up again.

    Returns:
        The spec, and warnings (unknown keys) that did not stop it loading.

    Raises:
        HookFileError: the hook is invalid; the error names file, field and fix.
    """
    if hook_file is None:
        hook_file = find_hook_file(hook_dir)
    if hook_file is None:
        raise HookFileError(hook_dir, None, "no HOOK.md in this hook folder; add one")
    text = read_hook_file(hook_file)
    try:
        return _load_text(hook_dir, scope, hook_file, text, strict, run_is_file)
    except HookFileError as exc:
        exc.trigger = trigger_hint(text)
        raise


def _load_text(hook_dir: Path, scope: Scope, hook_file: Path, text: str, strict: bool,
               run_is_file: bool | None) -> tuple[HookSpec, list[str]]:
    """The spec of a HOOK.md's text. Past a frontmatter that cannot be read at all, every
    problem is collected (each field, the name, the trigger, the matcher, metadata, the
    entry script) and raised together, so one ``validate`` shows them all."""
    data = parse_frontmatter(hook_file, text)
    problems: list[HookFileError] = []
    warnings: list[str] = []
    meant = unknown_keys(hook_file, data, strict, problems, warnings)
    fm = validate_fields(hook_file, data, problems, meant)

    name = fm["name"]
    _check_name(hook_file, name, hook_dir.name, problems)
    event = _event_of(hook_file, fm["trigger"], problems)
    tool, pattern = _matcher_of(hook_file, fm["matcher"], event, problems, warnings)

    metadata = fm["metadata"] or {}
    on_error, limits, persistent, processes = extensions(hook_file, metadata, fm["async"],
                                                          problems, warnings)
    if metadata.get("mode", "enforce") not in ("enforce", "audit"):
        problems.append(HookFileError(hook_file, "metadata.mode", f"{metadata['mode']!r}: "
                                      "use enforce (the default) or audit"))
    entry: tuple[str, ...] = ()
    try:
        entry = resolve_entry(hook_dir, hook_file, run_is_file)
    except HookFileError as exc:
        problems.append(exc)
    if problems:  # the matcher it declared still says which calls it could have guarded
        unread = any((p.field or "").startswith(("matcher", "trigger")) for p in problems)
        raise HookFileProblems(hook_file, problems, warnings,
                               None if unread else ToolMatcher(tool, pattern))

    spec = HookSpec(
        name=name,
        description=fm["description"],
        trigger=fm["trigger"],
        event=event or "",
        matcher_tool=tool,
        matcher_pattern=pattern,
        timeout=fm["timeout"],
        is_async=fm["async"],
        priority=fm["priority"],
        metadata=metadata,
        scope=scope,
        dir=hook_dir,
        hook_file=hook_file,
        entry=entry,
        on_error=on_error,
        limits=limits,
        persistent=persistent,
        processes=processes,
    )
    return spec, warnings


def _check_name(hook_file: Path, name: str | None, folder: str,
                problems: list[HookFileError]) -> None:
    if name is not None and not NAME_RE.match(name):
        problems.append(HookFileError(
            hook_file, "name", f"{name!r} is not lowercase kebab-case ({FIELDS['name'].hint})"))
    elif name is not None and name != folder:
        problems.append(HookFileError(
            hook_file, "name",
            f"is {name!r} but the folder is {folder!r}; rename one so they match"))


def _event_of(hook_file: Path, trigger: str | None, problems: list[HookFileError],
              ) -> str | None:
    if trigger is None:
        return None
    try:
        return canonical_event(trigger)
    except UnknownEventError as exc:
        problems.append(HookFileError(hook_file, "trigger", str(exc)))
        return None


def _matcher_of(hook_file: Path, matcher: dict[str, Any] | None, event: str | None,
                problems: list[HookFileError], warnings: list[str],
                ) -> tuple[str | None, str | None]:
    """(tool, pattern) of the matcher, each compiled once to report its problem."""
    if not matcher:
        return None, None
    tool, pattern = matcher.get("tool"), matcher.get("pattern")
    for key, regex in (("matcher.tool", tool), ("matcher.pattern", pattern)):
        if regex is not None and not (key == "matcher.tool" and LITERAL_TOOLS.fullmatch(regex)):
            try:
                matching.compile_matcher(regex)
            except matching.MatcherError as exc:
                problems.append(HookFileError(hook_file, key, f"{regex!r} {exc}"))
    if event is not None and event not in TOOL_EVENTS and (tool or pattern):
        warnings.append(
            f"{hook_file}: matcher: ignored, matchers apply to tool events only "
            f"({', '.join(sorted(TOOL_EVENTS))})"
        )
        return None, None
    return tool, pattern
