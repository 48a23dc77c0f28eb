"""The bundled hook library: the hooks that ship inside the package, and copying them out.

The library lives in the checkout's top-level ``hooks/<name>/`` (a HOOK.md and its
``scripts/``) and installs as package data at ``mcp_hooks/library/<name>/`` (setup.py), in the
wheel and from the sdist alike, so installing mcp-hooks (``pip install .`` in a checkout; the
PyPI package once published) brings it. ``LIBRARY_DIR`` is the installed folder, or the
checkout's ``hooks/`` when mcp-hooks runs from its source tree (``python -m mcp_hooks.cli`` there,
an editable install). Nothing runs from there: a hook runs once it is copied into a hooks
folder (the user's, or a project's ``.agents/hooks``), where it can be read, changed or
deleted like any other.

Contracts:

- ``bundled_hooks()`` lists every folder of the library that loads as a valid hook, sorted
  by name (a broken one is a packaging bug: it raises, it is never skipped in silence).
- ``add_hooks`` copies whole folders, file modes kept, never byte-code (``__pycache__``,
  ``*.pyc``) or a tool's cache (``.mypy_cache``, ...).
  A destination that already holds the same files (same relative paths, bytes and executable
  bits; byte-code ignored) is left alone and reported ``same``; a different one is reported
  ``conflict`` and left alone unless ``force``, which replaces it and keeps the old folder
  under ``paths.backups_dir()/hooks/``. A copy is written beside its destination and renamed
  into place, so a hook folder is never seen half-copied.
- Project copies are trusted (``trust.TrustStore``): they are our own code, byte for byte,
  and an untrusted project hook would not run. User copies need no trust.
- With ``dry_run`` nothing is written; the results say what would happen.

Standard library and core modules only: ``mcp-hooks add`` and ``init`` are one-shot commands.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mcp_hooks import paths
from mcp_hooks.errors import ConfigError, did_you_mean
from mcp_hooks.registry.digest import hook_digest
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.spec.hookfile import load_hook


def _library_dir() -> Path:
    """The installed package data, else the source tree's ``hooks/`` (see the docstring).

    A folder counts only if a hook is in it: an installed copy is never shadowed, and a
    leftover ``mcp_hooks/library`` of byte-code in an old checkout is not taken for one.
    """
    package = Path(__file__).resolve().parents[1]  # mcp_hooks/
    installed = package / "library"
    checkout = package.parent / "hooks"
    if any(installed.glob("*/HOOK.md")):
        return installed
    if (package.parent / "pyproject.toml").is_file() and any(checkout.glob("*/HOOK.md")):
        return checkout
    return installed


LIBRARY_DIR = _library_dir()

# What `mcp-hooks init` adds, and why (printed by init).
RECOMMENDED: dict[str, str] = {
    "block-dangerous-commands": "stops shell commands that wipe a disk, a home folder or the "
                                "system, and curl|sh",
    "protect-secrets": "stops writes to .env files, private keys and cloud credentials",
    "protect-hooks": "stops the agent from changing its own hooks, their trust or the "
                     "hosts' hook configs",
}

# byte-code and tool caches (a linter run inside a hook folder), never part of a hook
_SKIPPED = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
_SENTENCE_END = re.compile(r"(?<=[\w)][.!?])\s+(?=[A-Z])")
_SKIPPED_SUFFIXES = (".pyc", ".pyo")

Status = Literal["added", "same", "replaced", "conflict"]


class UnknownBundledHookError(ConfigError, ValueError):
    """Names that are not hooks of the bundled library (a caller's mistake: exit 64).

    Attributes:
        names: the unknown names, as given.
        known: every bundled hook's name.
    """

    def __init__(self, names: Sequence[str], known: Sequence[str]) -> None:
        self.names = list(names)
        self.known = list(known)
        parts = []
        for name in self.names:
            hint = did_you_mean(name, self.known)
            parts.append(f"{name!r}" + (f" ({hint})" if hint else ""))
        super().__init__(
            f"no bundled hook named {', '.join(parts)}; the library has: "
            f"{', '.join(self.known)} (see `mcp-hooks add --list`)")


@dataclass(frozen=True)
class BundledHook:
    """One hook of the library.

    Attributes:
        name: the hook's name (its folder's).
        trigger: the event as its HOOK.md spells it (the spec's kebab-case name).
        event: the canonical event the trigger resolves to.
        description: its HOOK.md description.
        fail_closed: ``metadata.on_error: block``: a crash or timeout of the hook denies.
        path: its folder inside the installed package.
    """

    name: str
    trigger: str
    event: str
    description: str
    fail_closed: bool
    path: Path

    @property
    def summary(self) -> str:
        """The description's first sentence: one line of what it does."""
        text = " ".join(self.description.split())
        found = _SENTENCE_END.search(text)
        return text[: found.start()] if found else text

    @property
    def recommended(self) -> bool:
        """One of the guards ``mcp-hooks init`` adds."""
        return self.name in RECOMMENDED

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "trigger": self.trigger, "event": self.event,
                "description": self.description, "summary": self.summary,
                "fail_closed": self.fail_closed, "recommended": self.recommended,
                "path": str(self.path)}


@dataclass(frozen=True)
class Added:
    """What ``add_hooks`` did (or, in a dry run, would do) with one hook.

    Attributes:
        name: the hook.
        source: its folder in the library.
        dest: its folder in the hooks folder.
        status: ``added`` (new), ``same`` (already there, unchanged), ``replaced`` (a
            different one was there; ``force``), ``conflict`` (a different one is there and
            was left alone).
        backup: where the replaced folder was kept (``replaced`` only, not in a dry run).
        trusted: a project copy recorded as trusted.
    """

    name: str
    source: Path
    dest: Path
    status: Status
    backup: Path | None = None
    trusted: bool = False


def bundled_hooks(library: Path | None = None) -> list[BundledHook]:
    """Every hook of the library, sorted by name.

    Raises:
        HookFileError: a bundled HOOK.md does not load (a packaging bug, never hidden).
    """
    root = library or LIBRARY_DIR
    found: list[BundledHook] = []
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or folder.name in _SKIPPED or folder.name.startswith("."):
            continue
        spec, _warnings = load_hook(folder, "user")
        found.append(BundledHook(name=spec.name, trigger=spec.trigger, event=spec.event,
                                 description=spec.description,
                                 fail_closed=spec.on_error == "block", path=folder))
    return found


def select(names: Iterable[str], library: Path | None = None) -> list[BundledHook]:
    """The bundled hooks named, in the order given (each once).

    Raises:
        UnknownBundledHookError: a name the library has not, with "did you mean" and the list.
    """
    hooks = {h.name: h for h in bundled_hooks(library)}
    wanted = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    unknown = [n for n in wanted if n not in hooks]
    if unknown:
        raise UnknownBundledHookError(unknown, sorted(hooks))
    return [hooks[n] for n in wanted]


def _skipped(name: str) -> bool:
    return name in _SKIPPED or name.endswith(_SKIPPED_SUFFIXES)


def _content(folder: Path) -> dict[str, tuple[str, bytes, int]]:
    """relative path -> (kind, content, executable bits) of a hook folder, byte-code and
    tool caches left out. Symlinks count by their target text."""
    found: dict[str, tuple[str, bytes, int]] = {}
    stack = [folder]
    while stack:
        current = stack.pop()
        for entry in os.scandir(current):
            if _skipped(entry.name):
                continue
            path = Path(entry.path)
            rel = path.relative_to(folder).as_posix()
            if entry.is_symlink():
                found[rel] = ("link", os.readlink(path).encode(), 0)
            elif entry.is_dir():
                found[rel] = ("dir", b"", 0)
                stack.append(path)
            else:
                mode = entry.stat().st_mode
                found[rel] = ("file", path.read_bytes(), mode & 0o111)
    return found


def same_content(a: Path, b: Path) -> bool:
    """Whether two hook folders hold the same files (byte-code and tool caches ignored)."""
    try:
        return _content(a) == _content(b)
    except OSError:
        return False


def _ignore(_dir: str, names: list[str]) -> set[str]:
    return {n for n in names if _skipped(n)}


def _copy_into_place(source: Path, dest: Path) -> Path | None:
    """Copy ``source`` to ``dest`` through a sibling temporary folder and a rename; an
    existing ``dest`` moves to the backups first. Returns that backup (None: none)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f".{dest.name}.adding-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    shutil.copytree(source, staging, ignore=_ignore, symlinks=True)
    _make_writable(staging)
    backup = None
    try:
        if dest.exists() or dest.is_symlink():
            backup = _backup_path(dest.name)
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(dest), str(backup))
        os.rename(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return backup


def _make_writable(folder: Path) -> None:
    """A package installed read-only (a system site-packages) gives read-only copies; the
    user owns the copy and may edit it."""
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = Path(root, name)
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _backup_path(name: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    base = paths.backups_dir() / "hooks" / f"{name}.{stamp}"
    candidate, n = base, 1
    while candidate.exists():
        candidate, n = base.with_name(f"{base.name}.{n}"), n + 1
    return candidate


def add_hooks(hooks: Sequence[BundledHook], hooks_dir: Path, *, force: bool = False,
              dry_run: bool = False, trust_project: Path | None = None,
              trust_store: TrustStore | None = None) -> list[Added]:
    """Copy bundled hooks into ``hooks_dir`` (see the module docstring for the rules).

    Args:
        hooks: what to copy (``select`` or ``bundled_hooks``).
        hooks_dir: the user hooks folder, or a project's ``.agents/hooks``.
        force: replace a different hook of the same name (kept in the backups).
        dry_run: write nothing; say what would happen.
        trust_project: the project whose ``.agents/hooks`` this is: the copies (and hooks
            found already there, unchanged) are recorded as trusted for it, in
            ``trust_store`` (the door's: ``options.trust_store_of``; required then, but for
            a dry run, which writes nothing).

    Raises:
        OSError: a folder could not be written (what was copied before stays).
        TrustStoreError: the trust store cannot be written.
        TypeError: ``trust_project`` without ``trust_store``.
    """
    if trust_project is not None and trust_store is None and not dry_run:
        raise TypeError("add_hooks: trust_project needs trust_store (the door's: "
                        "options.trust_store_of)")
    results = [_add(hook, hooks_dir, force, dry_run) for hook in hooks]
    if trust_project is not None and trust_store is not None and not dry_run:
        return _trust(results, trust_project, trust_store)
    if trust_project is not None:
        return [_with_trust(r, r.status != "conflict") for r in results]
    return results


def _add(hook: BundledHook, hooks_dir: Path, force: bool, dry_run: bool) -> Added:
    """One bundled hook copied into ``hooks_dir`` (or, for a dry run, what would be)."""
    dest = hooks_dir / hook.name
    status: Status
    backup = None
    if not (dest.exists() or dest.is_symlink()):
        status = "added"
    elif same_content(hook.path, dest):
        status = "same"
    elif not force:
        status = "conflict"
    else:
        status = "replaced"
    if status in ("added", "replaced") and not dry_run:
        backup = _copy_into_place(hook.path, dest)
    return Added(hook.name, hook.path, dest, status, backup)


def _with_trust(result: Added, trusted: bool) -> Added:
    return dataclasses.replace(result, trusted=trusted)


def _trust(results: list[Added], project: Path, store: TrustStore) -> list[Added]:
    """Trust the project copies that hold our code (not a conflicting one left alone)."""
    ours = [r for r in results if r.status != "conflict"]
    digests = {r.name: hook_digest(r.dest) for r in ours}
    if digests:
        store.trust(project, digests)
    return [_with_trust(r, r.name in digests) for r in results]


__all__ = ["LIBRARY_DIR", "RECOMMENDED", "Added", "BundledHook", "UnknownBundledHookError",
           "add_hooks", "bundled_hooks", "same_content", "select"]
