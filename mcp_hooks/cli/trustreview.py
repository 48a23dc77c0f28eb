"""What ``mcp-hooks trust`` shows before it asks: each hook folder and the project's control
layer, inspected and described.

``inspect_hook`` loads one folder of ``.agents/hooks`` (its spec, or why it is invalid) and
hashes it before and after: a folder that changed while being read is not trustable, so what
is shown is what is trusted. ``inspect_ahp`` reads the ``.ahp`` layer as trust sees it
(every entry, the files trust covers, the custom oracles' files parsed, never imported) and
its digest, the same way. ``describe_hook`` and ``describe_ahp`` are the review's text;
``as_dict`` the records of ``trust --json``.

``cli/trust.py`` chooses what to review, asks, and records the trust.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_hooks.control.config import TRUST_NAME, load_config, needs_trust
from mcp_hooks.control.files import AhpFile, ahp_snapshot
from mcp_hooks.errors import HookFileError
from mcp_hooks.registry.digest import UNVERIFIABLE_DIGEST, digest_report
from mcp_hooks.registry.trust import Status, TrustStore
from mcp_hooks.spec.hookfile import HookSpec, load_hook


@dataclass
class ReviewedHook:
    """One folder of ``.agents/hooks``: its spec (or why it is invalid) and its digest."""

    name: str
    dir: Path
    spec: HookSpec | None = None
    error: str | None = None
    digest: str = UNVERIFIABLE_DIGEST
    notes: list[str] = field(default_factory=list)
    status: Status = "untrusted"

    @property
    def trustable(self) -> bool:
        return self.spec is not None and self.digest != UNVERIFIABLE_DIGEST

    def as_dict(self) -> dict[str, Any]:
        """``trust --json``'s record of one hook."""
        spec = self.spec
        return {"name": self.name, "kind": "hook", "dir": str(self.dir), "status": self.status,
                "trustable": self.trustable, "sha256": _digest(self.digest),
                "error": self.error, "notes": list(self.notes),
                "trigger": spec.trigger if spec else None,
                "event": spec.event if spec else None,
                "matcher": {"tool": spec.matcher_tool, "pattern": spec.matcher_pattern}
                if spec else None,
                "runs": list(spec.entry) if spec else None}


def _digest(digest: str) -> str | None:
    return None if digest == UNVERIFIABLE_DIGEST else digest


def hook_folders(root: Path) -> list[Path]:
    """The hook folders the Registry would load from ``root`` (same rule: no dot names)."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    return [Path(e.path) for e in entries if not e.name.startswith(".") and e.is_dir()]


def inspect_hook(folder: Path, project: Path, store: TrustStore) -> ReviewedHook:
    hook = ReviewedHook(folder.name, folder)
    before, _ = digest_report(folder)
    try:
        hook.spec, _ = load_hook(folder, "project")
    except HookFileError as exc:
        hook.error = str(exc)
    hook.digest, hook.notes = digest_report(folder)
    if hook.digest != before:  # what is shown must be what is trusted
        hook.digest = UNVERIFIABLE_DIGEST
        hook.notes.append("the folder changed while being read; run this again")
    hook.status = store.status(project, hook.name, hook.digest)
    return hook


@dataclass
class ReviewedAhp:
    """The project's control layer (``.ahp``): its files, entries, digest and trust."""

    dir: Path
    files: list[AhpFile] = field(default_factory=list)  # every file trust covers
    oracles: dict[Path, str] = field(default_factory=dict)  # .py file -> the entry naming it
    runs: list[str] = field(default_factory=list)  # entries that run commands or custom code
    changes: list[str] = field(default_factory=list)  # user entries it changes once trusted
    reads: list[str] = field(default_factory=list)  # entries that only read
    problems: list[str] = field(default_factory=list)
    digest: str = UNVERIFIABLE_DIGEST
    status: Status = "untrusted"
    name: str = TRUST_NAME

    @property
    def trustable(self) -> bool:
        return not self.problems and self.digest != UNVERIFIABLE_DIGEST

    def as_dict(self) -> dict[str, Any]:
        """``trust --json``'s record of the control layer."""
        return {"name": self.name, "kind": "control_layer", "dir": str(self.dir),
                "status": self.status, "trustable": self.trustable,
                "sha256": _digest(self.digest), "problems": list(self.problems),
                "files": [{"path": f.rel, "kind": f.kind,
                           "oracle_of": self.oracles.get(f.path.resolve())}
                          for f in self.files],
                "runs": list(self.runs), "changes": list(self.changes),
                "reads": list(self.reads)}


def project_has_ahp(project: Path) -> bool:
    return any(os.path.lexists(project / ".ahp" / f) for f in ("hooks.yaml", "hooks.local.yaml"))


def inspect_ahp(project: Path, store: TrustStore) -> ReviewedAhp | None:
    """The project's hooks.yaml layers as trust sees them, read without importing anything;
    None when it has none."""
    # lazy: 84 ms of cold start (the oracles) for every trust command but --ahp
    from mcp_hooks.control.oracles import HeldBack, UnknownOracleError, inspect_reference

    root = project / ".ahp"
    if not project_has_ahp(project):
        return None
    ahp = ReviewedAhp(root)
    before = ahp_snapshot(project)
    config = load_config(project, trust_project=True, resolve=False)  # every entry, as if
    for entry in config.entries:                                       # trusted, no code run
        if entry.layer == "user":
            continue
        label = f"{entry.label}{'' if entry.enabled else ' (disabled)'}"
        if isinstance(entry.oracle, HeldBack):
            base = entry.file.parent
            try:
                what = inspect_reference(entry.oracle_name, base, roots=[base],
                                         project_dir=project)
            except UnknownOracleError as exc:
                ahp.problems.append(f"{entry.file}: {entry.label}: {exc}")
                what = "refused"
            ahp.runs.append(f"{label}: custom code: {what}")
            where = entry.oracle_name.rpartition(":")[0]
            if where.endswith(".py"):
                ahp.oracles[(base / where).resolve()] = entry.label
        elif needs_trust(entry):
            command = entry.config.get("command")
            ahp.runs.append(label + (f": {command}" if command else ""))
        else:
            ahp.reads.append(label)
    ahp.changes = [str(note) for note in config.overrides]
    ahp.problems += [str(p) for p in config.problems if p.file.is_relative_to(root)]
    after = ahp_snapshot(project)
    ahp.files = list(after.files)
    if after.problem:
        ahp.problems.append(after.problem)
    elif after.digest == before.digest:  # what is shown must be what is trusted
        ahp.digest = after.digest
    else:
        ahp.problems.append(f"{root} changed while being read; run this again")
    ahp.status = store.status(project, TRUST_NAME, after.digest)
    return ahp


def file_lines(ahp: ReviewedAhp) -> list[str]:
    """Each file trust covers: hooks*.yaml first, then the Python files."""
    files = sorted(ahp.files, key=lambda f: (not f.rel.endswith(".yaml"), f.rel != "hooks.yaml",
                                             f.rel))
    lines = []
    for i, f in enumerate(files):
        named = ahp.oracles.get(f.path.resolve()) if f.kind in ("file", "symlink") else None
        role = f"  oracle of {named}" if named else ""
        lines.append(f"    {'files:' if i == 0 else '':<10}{f.describe()}{role}")
    return lines


def describe_ahp(ahp: ReviewedAhp) -> list[str]:
    lines = [f"  {ahp.name}  [{ahp.status}]  the control layer (hooks.yaml and its Python "
             "files)", *file_lines(ahp)]
    lines.extend(f"    runs:     {label}" for label in ahp.runs)
    if not ahp.runs:
        lines.append("    runs:     (no entry runs a command or custom code)")
    lines.extend(f"    changes:  {label} (your own entry, once trusted)" for label in ahp.changes)
    lines.extend(f"    reads:    {label} (applies untrusted too)" for label in ahp.reads)
    lines.extend(f"    INVALID, will not be trusted: {problem}" for problem in ahp.problems)
    if ahp.digest != UNVERIFIABLE_DIGEST:
        lines.append(f"    sha256:   {ahp.digest}")
    return lines


def describe_hook(hook: ReviewedHook) -> list[str]:
    lines = [f"  {hook.name}  [{hook.status}]"]
    if hook.spec is None:
        lines.append(f"    INVALID, will not be trusted: {hook.error}")
    else:
        spec = hook.spec
        lines.append(f"    trigger:  {spec.trigger}"
                     + (f" ({spec.event})" if spec.event != spec.trigger else ""))
        matcher = [f"{k}={v!r}" for k, v in (("tool", spec.matcher_tool),
                                              ("pattern", spec.matcher_pattern)) if v]
        lines.append(f"    matcher:  {'  '.join(matcher) if matcher else '(none: every event)'}")
        lines.append(f"    runs:     {' '.join(spec.entry)}")
        lines.append(f"    about:    {spec.description}")
    if hook.digest == UNVERIFIABLE_DIGEST:
        lines.append("    sha256:   (cannot be hashed in full: will not be trusted)")
    else:
        lines.append(f"    sha256:   {hook.digest}")
    lines.extend(f"    note:     {note}" for note in hook.notes)
    return lines
