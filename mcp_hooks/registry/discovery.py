"""Managed, user and project hook folders -> ``Registry``: the index, invalid hooks, trust, reload.

Discovery roots: the managed folder (``managed.py``: an administrator's, trusted by where it
is; its hooks run first and no hook of the same name below replaces them), the user folder
``$XDG_CONFIG_HOME/agents/hooks`` (default ``~/.config/agents/hooks``) and the project folder
``<project>/.agents/hooks``. Only
frontmatter is read to build the index; the prose is read when asked for and the script only
when run.

Project hooks come with a cloned repository, so they run only once the user has trusted their
exact content (``trust``: a SHA-256 over the whole hook folder). An untrusted project hook,
or one changed since it was trusted, is listed in ``untrusted`` and neither runs nor replaces
the user hook of the same name; a trusted one replaces it (listed in ``replaced``).
``trust_project_hooks`` (``MCP_HOOKS_TRUST_PROJECT_HOOKS=1``) trusts every project hook.

Nothing in a hooks folder makes discovery raise: an entry that cannot be read (a symlink
loop, a dangling link, a FIFO, an unreadable or malformed HOOK.md) becomes an
``InvalidHook`` with its reason (``folders.py`` lists and loads the folders), and its
``event`` tells which events it could have woken (None: any), so the engine can fail closed
on exactly those.

Changes on disk (a hook added, edited, removed, a script made executable) are seen by the
next ``refresh()``: a watcher says whether anything changed, and a rescan re-parses only the
files whose stat signature moved. ``refresh`` and ``rescan`` may be called from many threads
at once (``Hooks.fire`` from a thread pool): one lock makes asking the watcher and rescanning
one step, so a caller that arrives during a rescan waits for it and sees its result.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from mcp_hooks import paths
from mcp_hooks.registry.digest import hook_digest, set_digest
from mcp_hooks.registry.folders import FolderLoader, InvalidHook, Loaded, folders_in, out_of_scope
from mcp_hooks.registry.gate import (
    Known,
    TrustStatus,
    deep_signature,
    digest_of,
    held_note,
    project_of,
)
from mcp_hooks.registry.gate import UntrustedHook as UntrustedHook  # its old home, still public
from mcp_hooks.registry.index import EventIndex, build_index
from mcp_hooks.registry.index import run_order as run_order  # its old home, still public
from mcp_hooks.registry.managed import location_problem, read_settings
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.settings import managed_dir_from_env, trust_all_from_env
from mcp_hooks.spec.hookfile import HookSpec, Scope

if TYPE_CHECKING:
    from mcp_hooks.registry.trust import TrustStore
    from mcp_hooks.registry.watch import ChangeWatcher


class CallableSource(Protocol):
    """The Python callables a registry merges into ``select`` (``engine/callables.py``)."""

    def wakes(self, event: str) -> bool: ...

    def select(self, event: str, tool_name: str | None,
               tool_input: Any) -> Sequence[HookSpec]: ...


def default_user_dir() -> Path:
    """The user hooks folder (``paths.user_hooks_dir``); kept for the public API."""
    return paths.user_hooks_dir()


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


@dataclass
class _Scan:
    """What one scan of the hook folders found."""

    valid: dict[str, HookSpec] = field(default_factory=dict)
    invalid: list[InvalidHook] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    watched: list[str] = field(default_factory=list)
    seen: set[Path] = field(default_factory=set)
    untrusted: list[UntrustedHook] = field(default_factory=list)
    replaced: dict[str, HookSpec] = field(default_factory=dict)
    deep: dict[Path, Known] = field(default_factory=dict)
    shadowed: list[HookSpec] = field(default_factory=list)


class Registry:
    """The hooks of one user folder and (optionally) one project.

    Args:
        user_dir: the user hooks folder; None means ``paths.user_hooks_dir()``. A relative
            folder is resolved once, here, against the current folder.
        project_dir: the project whose ``.agents/hooks`` to load; None for none.
        strict: unknown frontmatter keys make a hook invalid instead of a warning.
        watch: follow changes on disk (``refresh``); False for one-shot callers such as
            ``mcp-hooks fire`` and the host bridges, which read the folders once.
        trust_project_hooks: run every project hook without checking the trust store (CI,
            containers).
        trust_store: where trusted digests are kept (a door passes the one its ``Settings``
            names: ``options.trust_store_of``).
        managed_dir: the managed folder; False for none.

    A value left None is "not said" by a library caller: this process's environment's
    (``MCP_HOOKS_TRUST_PROJECT_HOOKS``, ``MCP_HOOKS_TRUST_STORE``, ``MCP_HOOKS_MANAGED_DIR``,
    else ``/etc/agents/hooks`` where it exists). Every door passes its ``Settings``' values.
    """

    def __init__(
        self, user_dir: Path | None = None, project_dir: Path | None = None, *,
        strict: bool = False, watch: bool = True, trust_project_hooks: bool | None = None,
        trust_store: TrustStore | None = None, managed_dir: Path | Literal[False] | None = None,
    ) -> None:
        self.user_dir = Path(os.path.abspath(user_dir if user_dir is not None
                                             else paths.user_hooks_dir()))
        self.project_dir = Path(os.path.abspath(project_dir)) if project_dir is not None else None
        self.strict = strict
        if trust_project_hooks is None:
            trust_project_hooks = trust_all_from_env()
        self.trust_project_hooks = trust_project_hooks
        self._trust_store = trust_store
        # a file store is looked at from when a project hook first asks it (no stat before)
        self._trust_live = trust_store is not None and trust_store.shared is not None
        self._trust_seen: object = None  # the trust store's signature when last read
        self._deep: dict[Path, Known] = {}  # project hook folder -> its digest (gate.py)
        self._listed: list[tuple[Scope, Path, str | None]] = []  # the folders last listed
        self.untrusted: list[UntrustedHook] = []
        self.replaced: dict[str, HookSpec] = {}  # name -> the user hook a project hook replaces
        self.generation = 0
        self._scans = 0  # scans published; hooks_digest is computed once per scan
        self._digest: tuple[int, dict[str, str]] | None = None
        if managed_dir is None:  # not said: the environment's (a library caller's door)
            managed_dir = managed_dir_from_env() or False
        self.managed_dir = Path(os.path.abspath(managed_dir)) if managed_dir else None
        self.managed_only = False  # the managed folder's settings.json, read at each scan
        self.shadowed: list[HookSpec] = []  # hooks named like a managed one: never run
        self._roots: list[tuple[Scope, Path]] = [("user", self.user_dir)]
        if self.managed_dir is not None:
            self._roots.insert(0, ("managed", self.managed_dir))
        if self.project_dir is not None:
            self._roots.append(("project", project_hooks_dir(self.project_dir)))
        self._folders = FolderLoader(strict)
        self._lock = threading.Lock()  # one refresh/rescan at a time (see the docstring)
        self._watcher: ChangeWatcher | None = None
        if watch:
            # lazy: 19 ms of cold start (the watcher's threads), only when watching
            from mcp_hooks.registry.watch import ChangeWatcher

            self._watcher = ChangeWatcher()
        self._hooks: list[HookSpec] = []
        self._by_name: dict[str, HookSpec] = {}
        self._index: dict[str, EventIndex] = {}
        self.invalid: list[InvalidHook] = []
        self.warnings: list[str] = []
        # Python callables merged into ``select`` (``CallableSource``; the library)
        self.callables: CallableSource | None = None
        self._scan()

    # -- reading -------------------------------------------------------------------------

    def hooks(self) -> list[HookSpec]:
        """Every valid hook, in run order."""
        return list(self._hooks)

    def has_patterns(self, event: str) -> bool:
        """Whether any hook of this event searches the tool input (``matcher.pattern``)."""
        index = self._index.get(event)
        return index is not None and index.patterns

    def get(self, name: str) -> HookSpec | None:
        return self._by_name.get(name)

    def for_event(self, event: str) -> list[HookSpec]:
        """Every valid hook of a canonical event, in run order, matchers not applied."""
        index = self._index.get(event)
        return list(index.hooks) if index else []

    def select(
        self, event: str, tool_name: str | None = None, tool_input: Any = None
    ) -> list[HookSpec]:
        """The hooks a canonical event wakes, in run order, matchers applied (with the
        ``callables`` among them, when set). A project hook is among them only while it
        still hashes to its trusted digest (``recheck``)."""
        selected = self._select(event, tool_name, tool_input)
        if self._deep and not self.trust_project_hooks:
            selected = [h for h in selected if self.recheck(h)]
        calls = ([] if self.callables is None
                 else self.callables.select(event, tool_name, tool_input))
        if calls and selected:
            return sorted([*selected, *calls], key=run_order)
        return list(calls) if calls else selected  # callables alone: in run order already

    def wakes(self, event: str) -> bool:
        """Whether a canonical event has anything here: a hook (or callable), a hook that
        did not load but could have woken it, an untrusted project hook to warn of."""
        return (event in self._index
                or (self.callables is not None and self.callables.wakes(event))
                or any(i.wakes(event) for i in self.invalid)
                or any(u.spec.event == event for u in self.untrusted))

    def _select(self, event: str, tool_name: str | None, tool_input: Any) -> list[HookSpec]:
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

    @property
    def watching(self) -> bool:
        """Whether changes on disk are followed (False: the folders were read once)."""
        return self._watcher is not None

    def hooks_digest(self) -> str:
        """``digest.set_digest`` of the hooks that decide, made once per scan (a project
        hook's folder digest is trust's, already made)."""
        return self._digests()[""]

    def layer_digests(self) -> dict[str, str]:
        """``hooks_digest`` of each layer that has hooks (``managed``, ``user``,
        ``project``), made once per scan: the event log's ``layer_digests``."""
        return {k: v for k, v in self._digests().items() if k}

    def _digests(self) -> dict[str, str]:
        scans, cached = self._scans, self._digest
        if cached is None or cached[0] != scans:
            known = {d: v.digest for d, v in self._deep.items()}
            each = [(h.scope, h.name, known.get(h.dir) or hook_digest(h.dir))
                    for h in self._hooks]
            digests = {"": set_digest(each)}
            for scope in dict.fromkeys(h.scope for h in self._hooks):
                digests[scope] = set_digest(e for e in each if e[0] == scope)
            cached = self._digest = (scans, digests)
        return cached[1]

    # -- reloading ------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Pick up changes on disk; True if the set of hooks or invalid hooks changed.

        With project hooks, also re-checks what trust rests on, without a watcher
        (``--no-watch``) too: the trust store, and every file of each project hook folder (a
        script edited after it was trusted stops it). Without a watcher the folders listed
        at start are the ones checked (a hook added later is not picked up).
        """
        with self._lock:
            if self._watcher is not None and self._watcher.changed():
                return self._scan()
            if self._deep and self._trust_moved():
                return self._scan(self._listed if self._watcher is None else None)
        return False

    def recheck(self, hook: HookSpec, notes: list[str] | None = None) -> bool:
        """Whether a hook may run now, asked just before it runs: a project hook only while
        its folder still hashes to the digest the store trusts (one ``stat`` per file; hashed
        again when one moved, ``gate.digest_of``). When not, the hook folders are checked
        again (it is listed in ``untrusted`` from now on) and ``notes`` gets the warning."""
        if type(hook) is not HookSpec or hook.scope != "project" or self.trust_project_hooks:
            return True
        with self._lock:
            known = digest_of(hook.dir, self._deep.get(hook.dir), [])
            self._deep[hook.dir] = known
            if self._store().status(project_of(hook.dir), hook.name, known.digest) == "trusted":
                return True
            self._scan(self._listed if self._watcher is None else None)
        held = [u for u in self.untrusted if u.spec.dir == hook.dir]
        if notes is not None:
            notes.append(held_note(held or [UntrustedHook(hook, "changed", known.digest,
                                                          project_of(hook.dir))]))
        return False

    def rescan(self) -> bool:
        """Re-stat everything now, regardless of the watcher."""
        with self._lock:
            return self._scan()

    def _hook_dirs(self) -> Iterator[tuple[Scope, Path, str | None]]:
        """Each candidate hook folder, with why it cannot be one (None when it may be)."""
        for scope, root in self._roots:
            if scope == "managed" and os.path.lexists(root):
                problem = self._managed_problem(root)
                if problem is not None:
                    yield scope, root, problem
                    continue
            elif self.managed_only:
                continue
            try:
                entries = sorted(os.scandir(root), key=lambda e: e.name)
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno == errno.ENOTDIR:
                    continue
                yield scope, root, f"the hooks folder cannot be read: {exc.strerror}"
                continue
            except ValueError as exc:  # a NUL in the path: no folder of that name can exist
                yield scope, root, f"the hooks folder path is not valid: {exc}"
                continue
            yield from folders_in(scope, entries)

    def _scan(self, listed: list[tuple[Scope, Path, str | None]] | None = None) -> bool:
        """Read the hook folders (``listed``: these, as listed before; else listed now)."""
        found = _Scan()
        if self._trust_live and self._trust_store is not None:  # before any digest is read:
            self._trust_seen = self._trust_store.signature()  # a change is seen next scan
        self._listed = list(self._hook_dirs()) if listed is None else listed
        for scope, hook_dir, problem in self._listed:
            self._take(found, scope, hook_dir, problem)
        self._folders.keep_only(found.seen)
        if self._watcher is not None:
            roots = [root for _, root in self._roots]
            self._watcher.watch(
                [str(r) for r in roots if r.is_dir()] + found.watched,
                missing=[r for r in roots if not r.is_dir()],
            )
        return self._publish(found)

    def _take(self, found: _Scan, scope: Scope, hook_dir: Path, problem: str | None) -> None:
        """One hook folder into the scan: valid, invalid, or held back until trusted."""
        if problem is not None:
            found.invalid.append(InvalidHook(hook_dir.name, scope, hook_dir, None, problem))
            return
        found.seen.add(hook_dir)
        folder = str(hook_dir)
        found.watched.append(folder)
        found.watched.append(f"{folder}/scripts")  # a missing one is skipped by the watcher
        loaded = self._folders.load(scope, hook_dir)
        if scope == "project" and not self.trust_project_hooks:
            gated = self._trust_gate(found, hook_dir, loaded)
            if gated is None:
                return
            loaded = gated
        if isinstance(loaded, InvalidHook):
            found.invalid.append(loaded)
            return
        spec, spec_warnings = loaded
        found.warnings.extend(spec_warnings)
        held = found.valid.get(spec.name)
        if held is not None and held.scope == "managed":  # a managed hook is never replaced
            found.shadowed.append(spec)
            found.warnings.append(f"{spec.dir}: not run: a managed hook is named {spec.name!r} "
                                  f"({held.dir}) and cannot be replaced; rename this one")
            return
        if spec.scope == "project" and spec.name in found.valid:
            found.replaced[spec.name] = found.valid[spec.name]
        found.valid[spec.name] = spec  # project folders come second: project replaces user

    def _trust_gate(self, found: _Scan, hook_dir: Path, loaded: Loaded) -> Loaded | None:
        """A project hook as loaded, or None when it waits for trust (``found.untrusted``)."""
        status, digest = self._trust_of(self._store(), hook_dir, found.deep, found.watched)
        if isinstance(loaded, InvalidHook):
            # an untrusted hook would not run, broken or not: it decides nothing
            return out_of_scope(loaded) if status == "untrusted" else loaded
        if status != "trusted":
            found.untrusted.append(UntrustedHook(loaded[0], status, digest,
                                                 project_of(hook_dir)))
            return None
        return loaded

    def _publish(self, found: _Scan) -> bool:
        """Make the scan the registry's view; whether anything changed."""
        hooks = sorted(found.valid.values(), key=run_order)
        changed = (hooks != self._hooks or found.invalid != self.invalid
                   or found.untrusted != self.untrusted)
        self._hooks = hooks
        self._by_name = {h.name: h for h in hooks}
        self.invalid = found.invalid
        self.warnings = found.warnings
        self.untrusted = found.untrusted
        self.replaced = found.replaced
        self.shadowed = found.shadowed
        self._deep = found.deep
        self._index = build_index(hooks)
        self._scans += 1  # after the hooks: a reader that sees the count sees them
        if changed:
            self.generation += 1
        return changed

    def _managed_problem(self, root: Path) -> str | None:
        """Why the managed folder is refused whole (``managed.py``); reads its settings."""
        settings = read_settings(root)
        self.managed_only = settings.managed_only
        return location_problem(root, parents=True) or settings.problem

    # -- trust ----------------------------------------------------------------------------

    @property
    def trust_store(self) -> TrustStore:
        """The store project hooks are checked against (the hooks.yaml layer checks the
        same one: ``engine/wiring.py``)."""
        if self._trust_store is None:  # not said: the environment's file (a library door)
            self._trust_store = TrustStore()
        return self._trust_store

    def _store(self) -> TrustStore:
        store = self.trust_store
        if not self._trust_live:
            self._trust_live, self._trust_seen = True, store.signature()
        return store

    def _trust_of(self, store: TrustStore, hook_dir: Path, deep: dict[Path, Known],
                  watched: list[str]) -> tuple[TrustStatus, str]:
        """A project hook's trust, hashing its folder only when a file in it moved. Every
        folder below it is watched, so an edit anywhere in it is seen by the next event."""
        known = digest_of(hook_dir, self._deep.get(hook_dir), watched)
        deep[hook_dir] = known
        status: TrustStatus = store.status(project_of(hook_dir), hook_dir.name, known.digest)
        return status, known.digest

    def _trust_moved(self) -> bool:
        """Whether the trust store changed since the scan (shared: read at most every
        ``trust.SHARED_REFRESH`` seconds; the file: one stat), or, without a live watcher,
        any project hook file did (or changed too recently to be sure: ``gate.py``)."""
        if (self._trust_live and self._trust_store is not None
                and self._trust_store.signature() != self._trust_seen):
            return True
        if self._watcher is not None and self._watcher.live:
            return False
        return any(not known.settled or deep_signature(d, [])[0] != known.signature
                   for d, known in self._deep.items())

    def held_notes(self, event: str, tool_name: str | None = None,
                   tool_input: Any = None) -> list[str]:
        """The warning an event carries for the project hooks trust held back, if any."""
        if not self.untrusted:
            return []
        held = self.untrusted_for(event, tool_name, tool_input)
        return [held_note(held)] if held else []

    def untrusted_for(self, event: str, tool_name: str | None = None,
                      tool_input: Any = None) -> list[UntrustedHook]:
        """The untrusted project hooks this event would have woken."""
        return [u for u in self.untrusted if u.spec.event == event and (
            not u.spec.has_matcher or u.spec.matches(tool_name, tool_input))]

    def faults_for(self, event: str, call: tuple[str | None, Any] | None = None,
                   ) -> list[InvalidHook]:
        """The invalid hooks in scope that could have subscribed to this event; with
        ``call`` (tool name, tool input), only those whose declared matcher admits it."""
        if call is None:
            return [i for i in self.invalid if i.wakes(event)]
        return [i for i in self.invalid if i.guards(event, *call)]

    def close(self) -> None:
        if self._watcher is not None:
            with self._lock:
                self._watcher.close()
