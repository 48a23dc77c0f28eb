"""Hook folders on disk -> a ``HookSpec`` each, or an ``InvalidHook`` saying why not.

``folders_in`` lists the entries of one hooks root that may be hook folders, with why an
entry cannot be one (a dangling link, a FIFO, a folder that cannot be read). ``FolderLoader``
loads one folder (``hookfile.load_hook``) and keeps the result under the folder's stat
signature (``_SIGNATURE_FILES``): a rescan reads again only the folders whose HOOK.md,
``scripts`` folder or ``scripts/run`` moved, and every invalid one (its fix may be in a
file the signature does not cover). Nothing in a folder makes it raise: whatever cannot be
loaded becomes an ``InvalidHook`` with its reason and the events it could have woken.

``discovery.Registry`` lists the roots, gates project hooks on trust and publishes the scan.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_hooks.errors import HookFileError, UnknownEventError
from mcp_hooks.registry.managed import tree_problem
from mcp_hooks.spec.events import canonical_event
from mcp_hooks.spec.hookfields import HookFileProblems
from mcp_hooks.spec.hookfile import HOOK_FILES, HookSpec, Scope, load_hook
from mcp_hooks.spec.toolmatch import ToolMatcher

# What decides whether a hook folder must be read again: its HOOK.md, the scripts folder
# (an entry script added, removed or renamed changes its mtime) and scripts/run itself
# (chmod +x). Content edits of run.sh / run.py do not matter: scripts are read when run.
_SIGNATURE_FILES = ("HOOK.md", "scripts", "scripts/run")


@dataclass(frozen=True)
class InvalidHook:
    """A hook folder that could not be loaded, and why."""

    name: str
    scope: Scope
    file: Path
    field: str | None
    reason: str
    event: str | None = None  # the canonical event its trigger names; None: unreadable, any
    in_scope: bool = True  # False for a project hook that would not run anyway (untrusted)
    matcher: ToolMatcher | None = None  # the matcher its HOOK.md declares; None: unreadable

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else str(self.file)
        return f"{where}: {self.reason}"

    def wakes(self, event: str) -> bool:
        """Whether, were it valid, it could subscribe to this canonical event."""
        return self.in_scope and (self.event is None or self.event == event)

    def guards(self, event: str, tool_name: str | None, tool_input: Any) -> bool:
        """Whether, were it valid, it could have decided this call: its event, and the
        matcher it declared admits the call (any call when that cannot be read)."""
        return self.wakes(event) and (self.matcher is None
                                      or self.matcher.matches(tool_name, tool_input))

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scope": self.scope,
            "file": str(self.file),
            "field": self.field,
            "reason": self.reason,
            "event": self.event,
            "in_scope": self.in_scope,
        }


Loaded = tuple[HookSpec, list[str]] | InvalidHook


def folders_in(scope: Scope, entries: list[os.DirEntry[str]],
                ) -> Iterator[tuple[Scope, Path, str | None]]:
    """Each entry of one hooks root that may be a hook folder (dot names skipped), with why
    it cannot be one (None when it may be): ``Registry``'s listing of a root."""
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        try:
            if entry.is_dir():
                yield scope, path, tree_problem(path) if scope == "managed" else None
                continue
            if entry.is_symlink():
                yield scope, path, "a symbolic link to nothing (dangling); remove it " \
                    "or point it at a hook folder"
            elif not entry.is_file():
                yield scope, path, "not a folder (a FIFO, socket or device); remove it"
        except OSError as exc:  # a symlink loop, a folder we may not search
            yield scope, path, f"cannot be read: {exc.strerror}; remove or fix it"


class FolderLoader:
    """Hook folders loaded once, each kept while its stat signature holds."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self._cache: dict[Path, tuple[tuple[Any, ...], Loaded]] = {}

    def load(self, scope: Scope, hook_dir: Path) -> Loaded:
        """One hook folder loaded, or read from the cache while its signature holds."""
        signature: list[Any] = [scope]
        base = str(hook_dir)
        hook_file: Path | None = None
        for rel in _SIGNATURE_FILES:
            try:
                st = os.stat(f"{base}/{rel}")
            except OSError:
                if rel != "HOOK.md":
                    signature.append(None)
                    continue
                try:
                    st = os.stat(f"{base}/hook.md")
                except OSError:
                    signature.append(None)
                    continue
                rel = "hook.md"
            if rel in HOOK_FILES and stat.S_ISREG(st.st_mode):
                hook_file = hook_dir / rel
            signature.append((st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode))
        key = tuple(signature)
        cached = self._cache.get(hook_dir)
        # an invalid hook is read again on every rescan: they are few, and its fix may be in
        # a file the signature does not cover (a run.sh converted to LF line endings in place)
        if cached is not None and cached[0] == key and not isinstance(cached[1], InvalidHook):
            return cached[1]
        run = signature[-1]  # scripts/run, as just seen: not looked up again
        loaded: Loaded
        try:
            loaded = load_hook(hook_dir, scope, strict=self.strict, hook_file=hook_file,
                               run_is_file=run is not None and stat.S_ISREG(run[3]))
        except HookFileError as exc:
            loaded = InvalidHook(hook_dir.name, scope, exc.file, exc.field, exc.reason,
                                 event_of(exc.trigger), matcher=exc.matcher
                                 if isinstance(exc, HookFileProblems) else None)
        except (OSError, ValueError) as exc:  # never let one folder stop the others loading
            loaded = InvalidHook(hook_dir.name, scope, hook_dir, None,
                                 f"cannot be loaded: {exc}")
        self._cache[hook_dir] = (key, loaded)
        return loaded

    def keep_only(self, seen: set[Path]) -> None:
        """Forget the folders a scan no longer saw."""
        for stale in set(self._cache) - seen:
            del self._cache[stale]


def event_of(trigger: str | None) -> str | None:
    """The canonical event a broken hook's trigger names; None when it names none we know
    (then it could have been any event, and is counted as a fault on each)."""
    if trigger is None:
        return None
    try:
        return canonical_event(trigger)
    except UnknownEventError:
        return None


def out_of_scope(invalid: InvalidHook) -> InvalidHook:
    """``invalid`` as an untrusted project hook's fault: out of scope, it decides nothing."""
    return InvalidHook(invalid.name, invalid.scope, invalid.file, invalid.field,
                       invalid.reason + " (an untrusted project hook: it would not run anyway)",
                       invalid.event, in_scope=False, matcher=invalid.matcher)
