"""User and project hook folders -> ``Registry``: the metadata index, invalid hooks, reload.

Discovery roots: the user folder ``$XDG_CONFIG_HOME/agents/hooks`` (default
``~/.config/agents/hooks``) and the project folder ``<project>/.agents/hooks``. A project hook
replaces a user hook of the same name. Only frontmatter is read to build the index; the prose
is read when asked for and the script only when run.

Changes on disk (a hook added, edited, removed, a script made executable) are seen by the
next ``refresh()``: a watcher says whether anything changed, and a rescan re-parses only the
files whose stat signature moved.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hooks.errors import HookFileError
from mcp_hooks.hookfile import HOOK_FILES, HookSpec, Scope, load_hook

if TYPE_CHECKING:
    from mcp_hooks.watch import ChangeWatcher

# What decides whether a hook folder must be read again: its HOOK.md, the scripts folder
# (an entry script added, removed or renamed changes its mtime) and scripts/run itself
# (chmod +x). Content edits of run.sh / run.py do not matter: scripts are read when run.
_SIGNATURE_FILES = ("HOOK.md", "scripts", "scripts/run")


def default_user_dir() -> Path:
    """``$XDG_CONFIG_HOME/agents/hooks``, or ``~/.config/agents/hooks``."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "agents" / "hooks"


def project_hooks_dir(project_dir: Path) -> Path:
    return project_dir / ".agents" / "hooks"


def find_project_dir(start: Path, stop: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` that has ``.agents/hooks`` (not above ``stop``),
    else ``start`` itself: hooks of a project apply in its subfolders too."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if project_hooks_dir(candidate).is_dir():
            return candidate
        if stop is not None and candidate == stop:
            break
    return start


@dataclass(frozen=True)
class InvalidHook:
    """A hook folder that could not be loaded, and why."""

    name: str
    scope: Scope
    file: Path
    field: str | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else str(self.file)
        return f"{where}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scope": self.scope,
            "file": str(self.file),
            "field": self.field,
            "reason": self.reason,
        }


@dataclass
class _EventIndex:
    """Hooks of one canonical event, in run order, with tool-name lookups for literal matchers."""

    hooks: list[HookSpec] = field(default_factory=list)
    by_tool: dict[str, list[HookSpec]] = field(default_factory=dict)
    generic: list[HookSpec] = field(default_factory=list)
    rank: dict[str, int] = field(default_factory=dict)


def run_order(hook: HookSpec) -> tuple[int, int, str]:
    """Sort key of sync hooks: priority descending, then user before project, then name."""
    return (-hook.priority, 0 if hook.scope == "user" else 1, hook.name)


_Loaded = tuple[HookSpec, list[str]] | InvalidHook


class Registry:
    """The hooks of one user folder and (optionally) one project.

    Args:
        user_dir: the user hooks folder; None means ``default_user_dir()``.
        project_dir: the project whose ``.agents/hooks`` to load; None for none.
        strict: unknown frontmatter keys make a hook invalid instead of a warning.
        watch: follow changes on disk (``refresh``); False for one-shot callers such as
            ``mcp-hooks fire`` and the host bridges, which read the folders once.
    """

    def __init__(
        self, user_dir: Path | None = None, project_dir: Path | None = None, *,
        strict: bool = False, watch: bool = True,
    ) -> None:
        self.user_dir = Path(user_dir) if user_dir is not None else default_user_dir()
        self.project_dir = Path(project_dir) if project_dir is not None else None
        self.strict = strict
        self.generation = 0
        self._roots: list[tuple[Scope, Path]] = [("user", self.user_dir)]
        if self.project_dir is not None:
            self._roots.append(("project", project_hooks_dir(self.project_dir)))
        self._cache: dict[Path, tuple[tuple[Any, ...], _Loaded]] = {}
        self._watcher: ChangeWatcher | None = None
        if watch:
            from mcp_hooks.watch import ChangeWatcher

            self._watcher = ChangeWatcher()
        self._hooks: list[HookSpec] = []
        self._by_name: dict[str, HookSpec] = {}
        self._index: dict[str, _EventIndex] = {}
        self.invalid: list[InvalidHook] = []
        self.warnings: list[str] = []
        self._scan()

    # -- reading -------------------------------------------------------------------------

    def hooks(self) -> list[HookSpec]:
        """Every valid hook, in run order."""
        return list(self._hooks)

    def get(self, name: str) -> HookSpec | None:
        return self._by_name.get(name)

    def for_event(self, event: str) -> list[HookSpec]:
        """Every valid hook of a canonical event, in run order, matchers not applied."""
        index = self._index.get(event)
        return list(index.hooks) if index else []

    def select(
        self, event: str, tool_name: str | None = None, tool_input: Any = None
    ) -> list[HookSpec]:
        """The hooks a canonical event wakes, in run order, matchers applied."""
        index = self._index.get(event)
        if index is None:
            return []
        if not index.by_tool:
            candidates = index.generic
        else:
            literal = index.by_tool.get(tool_name, []) if tool_name is not None else []
            if not literal:
                candidates = index.generic
            elif not index.generic:
                candidates = literal
            else:
                candidates = sorted((*literal, *index.generic), key=lambda h: index.rank[h.name])
        return [h for h in candidates if not h.has_matcher or h.matches(tool_name, tool_input)]

    # -- reloading ------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Pick up changes on disk; True if the set of hooks or invalid hooks changed."""
        if self._watcher is None or not self._watcher.changed():
            return False
        return self._scan()

    def rescan(self) -> bool:
        """Re-stat everything now, regardless of the watcher."""
        return self._scan()

    def _hook_dirs(self) -> Iterator[tuple[Scope, Path]]:
        for scope, root in self._roots:
            try:
                entries = sorted(os.scandir(root), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or not entry.is_dir():
                    continue
                yield scope, Path(entry.path)

    def _load(self, scope: Scope, hook_dir: Path) -> _Loaded:
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
        if cached is not None and cached[0] == key:
            return cached[1]
        run = signature[-1]  # scripts/run, as just seen: not looked up again
        loaded: _Loaded
        try:
            loaded = load_hook(hook_dir, scope, strict=self.strict, hook_file=hook_file,
                               run_is_file=run is not None and stat.S_ISREG(run[3]))
        except HookFileError as exc:
            loaded = InvalidHook(hook_dir.name, scope, exc.file, exc.field, exc.reason)
        self._cache[hook_dir] = (key, loaded)
        return loaded

    def _scan(self) -> bool:
        valid: dict[str, HookSpec] = {}
        invalid: list[InvalidHook] = []
        warnings: list[str] = []
        watched: list[str] = []
        seen: set[Path] = set()
        for scope, hook_dir in self._hook_dirs():
            seen.add(hook_dir)
            folder = str(hook_dir)
            watched.append(folder)
            watched.append(f"{folder}/scripts")  # a missing one is skipped by the watcher
            loaded = self._load(scope, hook_dir)
            if isinstance(loaded, InvalidHook):
                invalid.append(loaded)
                continue
            spec, spec_warnings = loaded
            warnings.extend(spec_warnings)
            valid[spec.name] = spec  # project folders come second: project replaces user
        for stale in set(self._cache) - seen:
            del self._cache[stale]

        if self._watcher is not None:
            roots = [root for _, root in self._roots]
            self._watcher.watch(
                [str(r) for r in roots if r.is_dir()] + watched,
                missing=[r for r in roots if not r.is_dir()],
            )

        hooks = sorted(valid.values(), key=run_order)
        changed = hooks != self._hooks or invalid != self.invalid
        self._hooks = hooks
        self._by_name = {h.name: h for h in hooks}
        self.invalid = invalid
        self.warnings = warnings
        self._index = _build_index(hooks)
        if changed:
            self.generation += 1
        return changed

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()


def _build_index(hooks: list[HookSpec]) -> dict[str, _EventIndex]:
    index: dict[str, _EventIndex] = {}
    for rank, hook in enumerate(hooks):
        entry = index.setdefault(hook.event, _EventIndex())
        entry.hooks.append(hook)
        entry.rank[hook.name] = rank
        if hook.tool_names is not None:
            for name in hook.tool_names:
                entry.by_tool.setdefault(name, []).append(hook)
        else:
            entry.generic.append(hook)
    return index
