"""``mcp-hooks validate``: check hook folders and the hooks.yaml layers, every problem found.

Each hook folder is loaded as discovery would (every problem of its HOOK.md, not only the
first); with ``--portable``, what another implementation of the spec would reject is a
problem too. Without folders named, the project's hooks.yaml layers are read as well (every
problem of every entry; a custom oracle's file parsed with ``ast``, never run).

What is found is gathered in a :class:`Validation` first, then printed: for people (``ok``
lines on stdout, problems and warnings on stderr, in the order found) or, with ``--json``,
one JSON document on stdout (its keys: :data:`JSON_KEYS`, documented in docs/cli.md).
Exit codes: 0 no problem, 1 a problem found (the same with ``--json``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_hooks import options
from mcp_hooks.cli.report import emit_json
from mcp_hooks.errors import EXIT_FAILURE, EXIT_OK, HookFileError
from mcp_hooks.registry.discovery import project_hooks_dir
from mcp_hooks.settings import Settings
from mcp_hooks.spec.hookfields import problems_of, warnings_of
from mcp_hooks.spec.hookfile import find_hook_file, load_hook

# The keys of ``validate --json``, stable: a new key may be added, none renamed or removed.
JSON_KEYS = ("ok", "checked", "problem_count", "hooks", "entries", "problems", "warnings",
             "untrusted")


@dataclass
class Validation:
    """What one ``validate`` found, in the order found.

    ``lines`` keeps the text report: (``out`` or ``err``, line); the other lists hold the
    same findings for ``--json``.
    """

    checked: int = 0
    hooks: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    untrusted: list[dict[str, Any]] = field(default_factory=list)
    lines: list[tuple[str, str]] = field(default_factory=list)

    def problem(self, source: str, text: str, *, file: Path | None = None,
                field_: str | None = None, entry: str | None = None,
                reason: str | None = None, prefix: str = "") -> None:
        """One problem: ``source`` is ``folder``, ``HOOK.md``, ``portable`` or
        ``hooks.yaml``; ``text`` the whole line (``file: field: reason``)."""
        self.problems.append({"source": source, "file": str(file) if file else None,
                              "entry": entry, "field": field_, "reason": reason or text,
                              "message": text})
        self.lines.append(("err", prefix + text))

    def warning(self, text: str) -> None:
        self.warnings.append(text)
        self.lines.append(("err", f"warning: {text}"))

    def ok(self, line: str, record: dict[str, Any], *, hook: bool) -> None:
        (self.hooks if hook else self.entries).append(record)
        self.lines.append(("out", line))

    def as_json(self) -> dict[str, Any]:
        doc = {"ok": not self.problems, "checked": self.checked,
               "problem_count": len(self.problems), "hooks": self.hooks,
               "entries": self.entries, "problems": self.problems, "warnings": self.warnings,
               "untrusted": self.untrusted}
        assert tuple(doc) == JSON_KEYS
        return doc


def _hook_dirs(target: Path) -> list[Path]:
    if find_hook_file(target) is not None or (target / "scripts").is_dir():
        return [target]
    return sorted(p for p in target.iterdir() if p.is_dir() and not p.name.startswith("."))


def _check_hook(found: Validation, hook_dir: Path, scope: str, args: argparse.Namespace) -> None:
    """One hook folder: every problem of its HOOK.md, its warnings, and (``--portable``)
    what another implementation would reject."""
    found.checked += 1
    try:
        spec, warnings = load_hook(hook_dir, "project" if scope == "project" else "user",
                                   strict=args.strict)
    except HookFileError as exc:
        for problem in problems_of(exc):  # every problem of the hook, a line each
            found.problem("HOOK.md", str(problem), file=problem.file, field_=problem.field,
                          reason=problem.reason)
        for warning in warnings_of(exc):
            found.warning(warning)
        return
    for warning in warnings:
        found.warning(warning)
    if args.portable:
        # lazy: 11 ms of cold fire (python -X importtime)
        from mcp_hooks.spec.portable import check_hook

        unportable = check_hook(hook_dir)
        for item in unportable:
            found.problem("portable", str(item), file=item.file, field_=item.field,
                          reason=item.message, prefix="not portable: ")
        if unportable:
            return
    found.ok(f"ok  {spec.name}  ({spec.trigger}, {spec.hook_file})",
             {"name": spec.name, "trigger": spec.trigger, "event": spec.event,
              "scope": spec.scope, "file": str(spec.hook_file), "dir": str(spec.dir)},
             hook=True)


def validate(args: argparse.Namespace) -> Validation:
    """Everything ``validate`` finds for its parsed arguments."""
    found = Validation()
    given = options.settings(args)  # once: the folders, and what trust is asked of
    project = options.project_of(given)
    targets: list[tuple[str, Path]]
    if args.dirs:
        targets = [("user", d) for d in args.dirs]
    else:
        targets = [("user", options.user_hooks_of(given)),
                   ("project", project_hooks_dir(project))]
    for scope, target in targets:
        if not target.is_dir():
            if args.dirs:
                found.problem("folder", f"{target}: not a folder", file=target,
                              reason="not a folder")
            continue
        for hook_dir in _hook_dirs(target):
            _check_hook(found, hook_dir, scope, args)
    if not args.dirs:
        _check_hooks_yaml(found, project, given)
    return found


def _check_hooks_yaml(found: Validation, project: Path, given: Settings) -> None:
    """The hooks.yaml layers (``~/.ahp``, the project's, the local one), the project's
    trusted as ``given`` says (``--trust-project-hooks``, the trust store it names).

    Reads and never imports: a custom oracle is checked by the allow-list and, for a file,
    parsed with ``ast``, never run; one of an untrusted layer is not checked until trusted.
    """
    # lazy: the control layer, 42 ms of cold fire (python -X importtime)
    from mcp_hooks.control import load_config

    # lazy: 29 ms of cold fire (python -X importtime)
    from mcp_hooks.control.oracles import HeldBack, UnknownOracleError, inspect_reference

    config = load_config(project, trust_project=given.trust_project_hooks,
                         trust_store=options.registry_trust(given), resolve=False)
    for problem in config.problems:
        found.problem("hooks.yaml", str(problem), file=problem.file, entry=problem.entry,
                      field_=problem.key, reason=problem.reason)
    for entry in config.untrusted:
        what = ("custom oracle, not checked until trusted" if isinstance(entry.oracle, HeldBack)
                else "runs commands or writes files")
        found.untrusted.append({"file": str(entry.file), "entry": entry.label,
                                "oracle": entry.oracle_name, "why": what})
        found.lines.append(("err", f"untrusted: {entry.file}: {entry.label}: {what}; it runs "
                            f"once the project's .ahp folder is trusted (mcp-hooks trust "
                            f"{project})"))
    for note in config.notes:
        found.warning(str(note))
    for entry in config.entries:
        checked = None
        if isinstance(entry.oracle, HeldBack):
            base = entry.file.parent
            try:
                checked = inspect_reference(entry.oracle_name, base, roots=[base],
                                            project_dir=project)
            except UnknownOracleError as exc:
                found.problem("hooks.yaml", f"{entry.file}: {entry.label}: oracle: {exc}",
                              file=entry.file, entry=entry.label, field_="oracle",
                              reason=str(exc))
                continue
        found.ok(f"ok  {entry.oracle_name}  ({entry.written_trigger}, {entry.file})"
                 + (f"  [{checked}]" if checked else ""),
                 {"oracle": entry.oracle_name, "trigger": entry.written_trigger,
                  "event": entry.trigger, "entry": entry.label, "file": str(entry.file),
                  "checked": checked}, hook=False)


def command(args: argparse.Namespace) -> int:
    """``mcp-hooks validate``: print what :func:`validate` found; 1 when a problem was."""
    found = validate(args)
    if getattr(args, "json", False):
        emit_json(found.as_json())
        return EXIT_FAILURE if found.problems else EXIT_OK
    for stream, line in found.lines:
        print(line, file=sys.stdout if stream == "out" else sys.stderr)
    if found.checked == 0 and not found.problems:
        print("no hooks found", file=sys.stderr)
    summary = f"{found.checked} hook(s) checked, {len(found.problems)} problem(s)"
    if args.portable and found.checked and not found.problems:
        summary += "; portable: another implementation of the current spec reads them too"
    print(summary, file=sys.stderr if found.problems else sys.stdout)
    return EXIT_FAILURE if found.problems else EXIT_OK
