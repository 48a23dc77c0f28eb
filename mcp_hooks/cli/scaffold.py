"""``mcp-hooks new``: scaffold a working hook, and print the ``fire`` line that runs it.

What it writes, for any valid name:

- ``HOOK.md`` whose frontmatter PyYAML reads back as written: a value YAML would read as
  another type (``no``, ``on``, ``null``, ``1e3``, ``2024-01-01``) or that carries YAML syntax
  (``:``, ``#``, quotes) is written double-quoted (JSON's string syntax, which YAML reads);
- the trigger under the current spec's kebab-case name (``pre-tool-call``,
  ``pre-agent-turn-stop``, ...) whatever spelling was given;
- ``scripts/run``, a shell script that allows (exit 0) and shows how to deny.

The ``try it`` line it prints is a ``mcp-hooks fire`` command line that wakes the hook it
wrote: the folders it was written to, a tool name ``matcher.tool`` admits and a tool input
``matcher.pattern`` is found in (an example built from the regex, then checked with the
hook's own matcher; when no example can be built, the line says so). A project hook is
trusted as written (the scaffold's own content); an edit to it needs ``mcp-hooks trust``
again, and the output says so.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

from mcp_hooks import options
from mcp_hooks.errors import EXIT_FAILURE, EXIT_OK, UsageError
from mcp_hooks.registry.digest import hook_digest
from mcp_hooks.registry.discovery import project_hooks_dir
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.spec.events import EVENTS, canonical_event
from mcp_hooks.spec.hookfile import LITERAL_TOOLS, NAME_RE, HookSpec, load_hook

try:  # Python's own regex parser (re is imported at every start: no cost)
    from re import _parser as sre  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_parse as sre

_SCRIPT = """#!/bin/sh
# {name}: runs on {trigger}. The event arrives as one JSON object on stdin.
# Allow: exit 0 (stdout may carry JSON: decision, reason, modified_input,
# additional_context). Deny: print the reason on stderr and exit 2.
payload=$(cat)
# Example: deny when the payload mentions something you never want.
# case "$payload" in *"rm -rf /"*) echo "refused: rm -rf /" >&2; exit 2;; esac
exit 0
"""

# A plain YAML scalar that every YAML reader takes as this very string: starts with a
# letter, no indicator or comment characters, no trailing space.
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_ ./()-]*[A-Za-z0-9_./()-]|[A-Za-z]")
# Words YAML 1.1 (PyYAML) or 1.2 read as booleans, null or numbers.
_TYPED_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null",
                          "nan", "inf"})


def yaml_scalar(text: str) -> str:
    """``text`` as a YAML scalar that reads back as the same string."""
    if _PLAIN.fullmatch(text) and text.lower() not in _TYPED_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def spec_trigger(event: str) -> str:
    """The current spec's (kebab-case) name of a canonical event."""
    return next((a for a in EVENTS[event].aliases if "-" in a), event)


def example_of(pattern: str, *, spaced: bool = True) -> str | None:
    """A short string the regex ``pattern`` matches, or None when none can be built.

    Built from Python's parse of the pattern (the constructs a matcher uses: literals,
    classes, repeats at their minimum, the first branch); the caller checks the result
    with the hook's own (RE2) matcher. ``spaced``: an optional run of any character after
    a word (``git push.*--force``) is one space, as a person would type the command
    (``git push --force``, not ``git push--force``); the caller tries without when the
    space does not match.
    """
    try:
        tree = sre.parse(pattern)
    except Exception:  # RE2 syntax Python does not read: no example
        return None
    out: list[str] = []
    stack: list[Any] = [iter(tree)]
    while stack:  # a stack, not recursion: the pattern is the user's
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        if not _example_step(str(item[0]), item[1], out, stack, spaced):
            return None
    text = "".join(out)
    return text.rstrip(" ") if spaced else text  # no space after the last word


# What one plain item of the parse adds to the example (its argument in, the text out).
_EXAMPLE_TEXT: dict[str, Any] = {
    "LITERAL": chr,
    "NOT_LITERAL": lambda arg: "y" if chr(arg) == "x" else "x",
    "ANY": lambda arg: "x",
    "IN": lambda arg: _member(arg),
}
_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
_ZERO_WIDTH = ("AT", "ASSERT", "ASSERT_NOT")


def _example_step(op: str, arg: Any, out: list[str], stack: list[Any], spaced: bool) -> bool:
    """Add one parsed item of the pattern to ``out`` (text) or ``stack`` (its parts to
    walk); False when the item is a construct no example is built for."""
    if op in _EXAMPLE_TEXT:
        out.append(_EXAMPLE_TEXT[op](arg))
    elif op in _REPEATS:
        low, _, sub = arg
        if spaced and int(low) == 0 and out and out[-1] != " " and _any_char(sub):
            out.append(" ")
        for _ in range(min(int(low), 64)):
            stack.append(iter(sub))
    elif op in ("SUBPATTERN", "ATOMIC_GROUP"):
        stack.append(iter(arg[-1] if isinstance(arg, tuple) else arg))
    elif op == "BRANCH":
        stack.append(iter(arg[1][0]))
    else:
        return op in _ZERO_WIDTH
    return True


def _any_char(sub: Any) -> bool:
    """Whether a repeated item is ``.`` (any character), so a space fits in it."""
    items = list(sub)
    return len(items) == 1 and str(items[0][0]) == "ANY"


_CATEGORY = {"CATEGORY_DIGIT": "0", "CATEGORY_SPACE": " ", "CATEGORY_WORD": "a",
             "CATEGORY_NOT_DIGIT": "a", "CATEGORY_NOT_SPACE": "a", "CATEGORY_NOT_WORD": " "}


def _member(items: list[Any]) -> str:
    """A character of a class (``[a-z]``, ``\\s``, ``[^/]``: the last one only roughly)."""
    if items and str(items[0][0]) == "NEGATE":
        return "x"
    op, arg = str(items[0][0]), items[0][1]
    if op == "LITERAL":
        return chr(arg)
    if op == "RANGE":
        return chr(arg[0])
    return _CATEGORY.get(str(arg), "a")


def _tool_example(matcher_tool: str | None, event: str) -> str | None:
    if matcher_tool is None:
        return "Shell" if EVENTS[event].is_tool_event else None
    if LITERAL_TOOLS.fullmatch(matcher_tool):
        return matcher_tool.split("|")[0]
    return example_of(matcher_tool)


def fire_line(spec: HookSpec, folders: list[str]) -> tuple[str, bool]:
    """The ``mcp-hooks fire`` command line that wakes ``spec``, and whether its matcher was
    checked to admit it (False: no example input could be built for the pattern)."""
    words = ["mcp-hooks", "fire", spec.trigger]
    tool = _tool_example(spec.matcher_tool, spec.event)
    tool_input: dict[str, Any] | None = None
    admitted = True
    if EVENTS[spec.event].is_tool_event:
        for spaced in (True, False):  # "git push --force" if the pattern takes it
            text = example_of(spec.matcher_pattern, spaced=spaced) if spec.matcher_pattern \
                else "ls"
            tool_input = {"command": text if text is not None else "..."}
            admitted = spec.matches(tool, tool_input)
            if admitted:
                break
    if tool is not None:
        words += ["--tool", tool]
    if tool_input is not None:
        words += ["--input", json.dumps(tool_input)]
    return " ".join(shlex.quote(w) for w in [*words, *folders]), admitted


def new_command(args: argparse.Namespace) -> int:
    """``mcp-hooks new``."""
    name, event = args.name, _checked_event(args)
    project = options.project_dir(args) if _scope(args) == "project" else None
    root = project_hooks_dir(project) if project is not None else options.user_hooks_dir(args)
    hook_dir = root / name
    if hook_dir.exists():
        print(f"mcp-hooks: {hook_dir} already exists; nothing written", file=sys.stderr)
        return EXIT_FAILURE
    trigger = spec_trigger(event)
    (hook_dir / "scripts").mkdir(parents=True)
    (hook_dir / "HOOK.md").write_text("\n".join(_hook_md(args, trigger)), encoding="utf-8")
    script = hook_dir / "scripts" / "run"
    script.write_text(_SCRIPT.format(name=name, trigger=trigger), encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    print(f"created {hook_dir}/HOOK.md and {script}")
    _print_try_it(args, hook_dir, project)
    return EXIT_OK


def _checked_event(args: argparse.Namespace) -> str:
    """``new``'s arguments checked (name, event, priority, matcher): the canonical event."""
    name = args.name
    if not NAME_RE.match(name) or len(name) > 64:
        raise UsageError(f"{name!r}: a hook name is 1-64 lowercase letters, digits and hyphens")
    event = canonical_event(args.trigger)
    if not 0 <= args.priority <= 1000:
        raise UsageError("--priority must be from 0 to 1000")
    if (args.tool or args.pattern) and not EVENTS[event].is_tool_event:
        raise UsageError("--tool and --pattern apply to tool events only")
    return event


def _hook_md(args: argparse.Namespace, trigger: str) -> list[str]:
    """The new hook's HOOK.md, line by line: frontmatter from the arguments, a body to fill."""
    name = args.name
    lines = ["---", f"name: {yaml_scalar(name)}",
             f"description: {yaml_scalar(f'TODO say what {name} checks and why')}",
             f"trigger: {yaml_scalar(trigger)}"]
    if args.tool or args.pattern:
        lines.append("matcher:")
        if args.tool:
            lines.append(f"  tool: {json.dumps(args.tool, ensure_ascii=False)}")
        if args.pattern:
            lines.append(f"  pattern: {json.dumps(args.pattern, ensure_ascii=False)}")
    lines += ["timeout: 30000", f"async: {'true' if args.is_async else 'false'}",
              f"priority: {args.priority}", "---", "", f"# {name}", "",
              "What this hook checks, when it denies, and what the agent should do then.", ""]
    return lines


def _print_try_it(args: argparse.Namespace, hook_dir: Path, project: Path | None) -> None:
    """The ``mcp-hooks fire`` line that runs the new hook (a project hook trusted first)."""
    spec, _ = load_hook(hook_dir, "project" if project is not None else "user")
    folders: list[str] = []
    if options.user_dir(args) is not None:
        folders += ["--user-dir", str(options.user_hooks_dir(args))]
    if project is not None:
        _trust_scaffold(project, hook_dir, options.trust_writer(options.settings(args), "new"))
        folders += ["--project-dir", str(project)]
    line, admitted = fire_line(spec, folders)
    print(f"try it: {line}")
    if not admitted:
        print("  (no example tool input could be built from the matcher: put one it "
              "matches in --input)")
    if project is not None:
        print(f"  (trusted as written; after an edit, trust it again: mcp-hooks trust "
              f"{shlex.quote(str(project))} --hook {hook_dir.name})")


def _scope(args: argparse.Namespace) -> str:
    """``--scope`` (default user), or ``--project``, its deprecated spelling (said so)."""
    scope: str | None = getattr(args, "scope", None)
    if getattr(args, "project", False):
        if scope == "user":
            raise UsageError("--project and --scope user contradict each other; give one")
        print("mcp-hooks new: --project is deprecated; write --scope project (as add, init "
              "and install take it)", file=sys.stderr)
        return "project"
    return scope or "user"


def _trust_scaffold(project: Path, hook_dir: Path, store: TrustStore) -> None:
    """Trust the project hook just written (our own scaffold), so the ``try it`` line runs
    (``store``: the one the settings name, a shared ``--state``'s too)."""
    store.trust(project, {hook_dir.name: hook_digest(hook_dir)})
