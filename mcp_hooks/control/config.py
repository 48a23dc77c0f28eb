"""hooks.yaml: the control layer's configuration, layered, validated, trusted.

Three layers, read in this order (the seed's ``5.1``); a later layer overrides an earlier
one entry by entry, below a fourth, the managed folder's (``registry/managed.py``), read first,
whose entries run first and which no layer below may change, disable or demote::

    <managed>/hooks.yaml         an administrator's                  (layer "managed")
    ~/.ahp/hooks.yaml            user defaults                       (layer "user")
    ./.ahp/hooks.yaml            the project's, committed            (layer "project")
    ./.ahp/hooks.local.yaml      local overrides, git-ignored        (layer "local")

Shape::

    hooks:
      <trigger>:                 # pre-issue-submit, pre-tool-use, before_issue_submit, ...
        - oracle: TestGate       # required: a built-in name, path/file.py:Class, module:Class
          config: {...}          # the oracle's options (checked: unknown keys are errors)
          when: {...}            # conditions, all must hold; default: always
          priority: 1            # >= 1 run in ascending order, then 0 ("unordered") in file order
          enabled: true
          async: false           # true: runs in the background, its signal is aid
          id: name               # optional: tells apart two entries of one oracle
          escalation: [prompt, control, block]   # optional ladder (see ladder.py); true: this one

The shape, its validation and the records (``Entry``, ``ControlConfig``) live in
``schema.py`` and are re-exported here; this module merges the layers under the trust rules.

Contracts a caller may rely on:

- Triggers: the seed's spellings (``TRIGGERS``: ``pre-tool-use`` is ``before_tool``,
  ``post-tool-use`` is ``after_tool``, ``pre-issue-submit`` is ``before_issue_submit``,
  ...), canonical event names, and any alias ``events.canonical_event`` knows. Entries are
  stored under the canonical name.
- Override: an entry is keyed by (trigger, ``id`` or ``oracle``). A later layer's entry
  with the same key changes only the keys it writes: ``config`` is merged key by key,
  ``when`` is replaced whole; ``enabled: false`` in ``hooks.local.yaml`` switches one off.
- ``when``: ``tool`` (a name or a list), ``environment`` (a name or a list, see
  ``context.OracleContext.environment``), and dotted paths into ``issue.*``, ``files.*``
  (``files.changed_count``), ``tool_input.*``, ``env.NAME``, ``session_id``. A value is an
  exact match, a list (any of them) or a comparison string (``"> 10"``, ``"<= 3"``,
  ``"== 2"``, ``"!= 0"``) on a number.
- Errors: every problem is a ``HooksYamlError`` naming the file, the entry
  (``pre-issue-submit[2] (TestGate)``) and the key (``config.max_files``); ``load_config``
  never raises for a file's content: it collects them in ``ControlConfig.problems`` (with
  the trigger each could have woken, None for the whole file) so the caller fails closed
  on exactly those triggers, as a broken HOOK.md does.
- Trust (docs/safety.md, "Control layer trust"): the project layers come with a cloned
  repository. Nothing of an untrusted layer is imported, executed or opened as code: its
  YAML is parsed, its built-in oracles are built (that only checks their options), and an
  entry naming a custom oracle is held back unresolved (``oracles.HeldBack``). An entry that
  runs or writes anything (``Oracle.runs_commands()``: TestGate, LintChecker, custom
  oracles, a configured command, ChangeLogger, an archive) applies from a project layer only
  while the project's ``.ahp`` is trusted (``trust_config``;
  ``MCP_HOOKS_TRUST_PROJECT_HOOKS=1`` trusts all); otherwise it is listed in
  ``ControlConfig.untrusted``. The digest
  (``files.ahp_snapshot``) covers ``.ahp/hooks*.yaml`` and every ``.py`` under ``.ahp``;
  a custom oracle's file must lie inside the ``.ahp`` of the hooks.yaml that names it and is
  imported only with the bytes that were trusted.
- An untrusted layer only adds restrictions: it may add entries (read-only ones apply at
  once), but an entry whose key a trusted layer already wrote is ignored when it would change
  anything (``enabled``, ``when``, ``config``, ``async``, ``escalation``, ``priority``, the
  oracle), with a ``LayerNote`` in ``ControlConfig.notes`` naming the file, the entry and
  the fix. ``hooks.local.yaml`` is the user's own ("local") only while git ignores it
  (``files.git_ignores``); tracked, not ignored, or no git: it counts as the project's. A
  local layer may override as a trusted one does, but what it makes run still needs trust.
- How the layers merge, entry by entry (``_Merger.add``): a layer is *trusted* (it may run
  code: the user's; the project's two while ``.ahp`` is trusted with the bytes just read)
  and *may override* (a trusted layer, or a ``hooks.local.yaml`` git ignores). An entry
  whose key a trusted layer wrote (``_Merged.guarded``), from a layer that may not
  override, is ignored when it changes anything. Otherwise it merges; the merged entry is
  built (a built-in from its options; a custom oracle resolved only when its oracle and
  config come from trusted layers alone, ``_Merged.vouched``, and ``resolve`` is on, else a
  ``HeldBack``); one that needs trust (``needs_trust``) and is not vouched for is held back
  and what was there stays.
- A later layer's entry that overrides nothing (``enabled: false`` under a key nothing above
  has, or a ``hooks.local.yaml`` entry whose ``id`` misses an entry of the same oracle
  above) is added as written, with a ``LayerNote`` saying so.
- Files: each hooks.yaml is read only if it is a regular file of at most ``MAX_HOOKS_YAML``
  (``files.read_bounded``: never blocking, a project's never through a link out of
  ``.ahp``); anything else is a ``HooksYamlError`` for the whole file (fail closed).
- PyYAML is imported only when a hooks.yaml exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_hooks.control.files import LayerFileError, ahp_snapshot, git_ignores, read_bounded
from mcp_hooks.control.oracles import (
    BUILTIN,
    HeldBack,
    build_oracle,
    oracle_file,
    parse_reference,
)
from mcp_hooks.control.oracles.base import Oracle, OracleConfigError
from mcp_hooks.control.schema import (
    ENTRY_KEYS,
    INTENSITY_STEPS,
    LOCAL_FILE,
    MAX_HOOKS_YAML,
    PROJECT_FILE,
    TRIGGERS,
    TRUST_NAME,
    WHEN_ROOTS,
    ControlConfig,
    Entry,
    HooksYamlError,
    Layer,
    LayerNote,
    canonical_trigger,
    condition_holds,
    entries_of,
    lookup,
    parse_yaml,
    read_yaml,
    user_config_path,
)
from mcp_hooks.control.trust import (
    TrustCheck,
    TrustedDigest,
    config_digest,
    trust_config,
    trust_status,
)
from mcp_hooks.errors import ConfigError
from mcp_hooks.registry.managed import location_problem
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.settings import trust_all_from_env


class _Unbuilt(ConfigError):
    """An entry whose oracle could not be built: every problem found (``_Reader.build``)."""

    def __init__(self, problems: list[HooksYamlError]) -> None:
        super().__init__(problems[0] if problems else "")
        self.problems = problems


# -- merging the layers (the rules: the module doc) ----------------------------------------

Key = tuple[str, str]
_DEFAULTS: dict[str, Any] = {"enabled": True, "async": False, "priority": 0, "when": {},
                             "escalation": None, "config": {}}


@dataclass
class _Merged:
    """One key's entry as the layers so far wrote it."""

    raw: dict[str, Any]
    file: Path  # the last file that wrote to it
    source: Path  # the file that wrote its oracle (a .py oracle is relative to its folder)
    layer: Layer
    order: tuple[int, int]
    written: str
    guarded: bool  # a trusted layer wrote it: a layer that may not override leaves it alone
    vouched: bool  # its oracle and config come from trusted layers only: it may run code


def _merge(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    if old is None:
        return dict(new)
    merged = {**old, **new}
    if "config" in new:
        merged["config"] = {**(old.get("config") or {}), **new["config"]}
    return merged


def _same(a: Any, b: Any) -> bool:
    """Equal as YAML values (``1`` is not ``true``)."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True,
                                                                      default=str)


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The keys (``enabled``, ``config.max_files``) that merging ``new`` over ``old`` changes."""
    out = []
    for key, value in new.items():
        if key == "id":
            continue
        if key == "config" and isinstance(value, dict):
            was = old.get("config") or {}
            out += [f"config.{k}" for k, v in value.items() if k not in was
                    or not _same(was[k], v)]
        elif not _same(old.get(key, _DEFAULTS.get(key)), value):
            out.append(key)
    return out


def needs_trust(entry: Entry) -> bool:
    """Whether an entry runs a command or custom code, or writes a file (``runs_commands``)."""
    return entry.oracle.runs_commands()


def _candidate(old: _Merged | None, merged: dict[str, Any], file: Path, layer: Layer,
               order: tuple[int, int], written: str, trusted: bool) -> _Merged:
    """The entry ``merged`` makes of ``old`` (None: a new one), and what it inherits."""
    if old is None:
        return _Merged(merged, file, file, layer, order, written, guarded=trusted,
                       vouched=trusted)
    same_oracle = merged["oracle"] == old.raw["oracle"]
    same_code = same_oracle and _same(merged.get("config") or {}, old.raw.get("config") or {})
    return _Merged(merged, file, old.source if same_oracle else file, layer, old.order,
                   old.written, guarded=trusted or old.guarded,
                   vouched=trusted or (old.vouched and same_code))


class _Merger:
    def __init__(self, project_dir: Path | None, *, trust_project: bool,
                 trust_store: TrustCheck, resolve: bool) -> None:
        self.config = ControlConfig()
        self.project_dir = project_dir
        self.trust_project = trust_project
        self.store = trust_store
        self.resolve = resolve
        self.merged: dict[Key, _Merged] = {}
        self.built: dict[Key, Entry] = {}
        self.seen: set[Key] = set()  # every key written so far, held back ones included
        self._local_own: bool | None = None

    # -- the facts about a layer -----------------------------------------------------------

    def trusted(self, layer: Layer, file: Path, data: bytes | None) -> bool:
        config = self.config
        if layer in ("user", "managed"):
            return True
        if self.trust_project:
            config.trust = "trusted"
            return True
        assert self.project_dir is not None
        if config.snapshot is None:
            config.snapshot = ahp_snapshot(self.project_dir)
            config.trust = self.store.status(
                self.project_dir, TRUST_NAME, config.snapshot.digest)
        if config.trust != "trusted":
            return False
        if data is not None and (hashlib.sha256(data).hexdigest()
                                 != config.snapshot.sha_of(file)):
            config.trust = "changed"  # edited between the digest and this read
            return False
        return True

    def local_is_own(self, file: Path) -> bool:
        if self._local_own is None:
            assert self.project_dir is not None
            self._local_own = git_ignores(self.project_dir, file)
        return self._local_own

    # -- one layer ---------------------------------------------------------------------------

    def read(self, rank: int, layer: Layer, file: Path) -> None:
        if not os.path.lexists(file):
            return
        self.config.files.append(file)
        inside = None if layer in ("user", "managed") or self.project_dir is None else (
            self.project_dir / ".ahp")
        first = len(self.config.problems)
        raw: bytes | None = None
        try:
            if layer == "managed" and (where := location_problem(file)) is not None:
                raise LayerFileError(file, where)
            raw = read_bounded(file, MAX_HOOKS_YAML, inside=inside)
            self.config.sources.append(hashlib.sha256(raw).hexdigest())
            data = parse_yaml(file, raw)
        except LayerFileError as exc:
            self.config.problems.append(HooksYamlError(file, None, None, exc.reason))
        except HooksYamlError as exc:
            self.config.problems.append(exc)
        else:
            trusted = self.trusted(layer, file, raw)
            for trigger, written, position, entry in entries_of(file, data,
                                                                self.config.problems):
                self.add(rank, layer, file, trusted, (trigger, written, position), entry)
        if len(self.config.problems) > first and self.stranger(layer, file, raw):
            for problem in self.config.problems[first:]:
                problem.untrusted = True  # skipped with a warning, never a deny

    def stranger(self, layer: Layer, file: Path, raw: bytes | None) -> bool:
        """Whether a layer is a never-trusted project's: its problems are skipped with a
        warning, never a deny (a stranger's file cannot deny every event, as a broken HOOK.md
        of a never-trusted project cannot); one changed since it was trusted fails closed."""
        if layer in ("user", "managed") or (layer == "local" and self.local_is_own(file)):
            return False
        return not self.trusted(layer, file, raw) and self.config.trust == "untrusted"

    def add(self, rank: int, layer: Layer, file: Path, trusted: bool,
            where: tuple[str, str, int], raw: dict[str, Any]) -> None:
        trigger, written, position = where
        key: Key = (trigger, raw.get("id") or raw["oracle"])
        label = f"{written}[{position}] ({raw['oracle']})"
        old = self.merged.get(key)
        if old is not None and self.refused(old, layer, file, trusted, (label, trigger, key),
                                            raw):
            return
        if old is None and key not in self.seen and rank > 0:
            self.check_overrides_something(layer, file, label, key, raw)
        self.seen.add(key)
        if old is not None and old.layer == "user" and layer != "user":
            self.note_user_override(old, file, (label, trigger, key), raw)
        candidate = _candidate(old, _merge(old.raw if old else None, raw), file, layer,
                               (rank, position), written, trusted)
        try:
            entry = self.build(key, candidate)
        except _Unbuilt as exc:
            self.config.problems.extend(HooksYamlError(p.file, label, p.key, p.reason, trigger)
                                        for p in exc.problems)
            return
        if not candidate.vouched and needs_trust(entry):
            self.config.untrusted.append(entry)
            return  # neither runs nor overrides what was there
        self.merged[key], self.built[key] = candidate, entry

    def managed_keeps(self, old: _Merged, layer: Layer, file: Path, what: tuple[str, str, Key],
                      raw: dict[str, Any]) -> bool:
        """Whether ``old`` is a managed entry, which no other layer may change, disable or
        demote (noted when it tried)."""
        if old.layer != "managed" or layer == "managed":
            return False
        label, trigger, key = what
        if changes(old.raw, raw):
            self.note(file, label, trigger, f"ignored: the entry {key[1]!r} is managed "
                      f"({old.file}); no {layer} layer may change, disable or demote it")
        return True

    def refused(self, old: _Merged, layer: Layer, file: Path, trusted: bool,
                what: tuple[str, str, Key], raw: dict[str, Any]) -> bool:
        """Whether a guarded entry stays as it is (an untrusted layer may not change it; no
        layer but the managed one may change a managed entry)."""
        if self.managed_keeps(old, layer, file, what, raw):
            return True
        if not old.guarded or trusted or (layer == "local" and self.local_is_own(file)):
            return False
        label, trigger, key = what
        changed = changes(old.raw, raw)
        if changed:
            self.note(file, label, trigger, self.refusal(layer, key, old, changed))
        return True

    def note_user_override(self, old: _Merged, file: Path, what: tuple[str, str, Key],
                           raw: dict[str, Any]) -> None:
        label, trigger, key = what
        changed = changes(old.raw, raw)
        if changed:
            self.config.overrides.append(LayerNote(file, label, trigger, (
                f"changes {old.file}'s entry {key[1]!r}: {', '.join(changed)}")))

    # -- notes -----------------------------------------------------------------------------

    def note(self, file: Path, label: str, trigger: str, reason: str) -> None:
        self.config.notes.append(LayerNote(file, label, trigger, reason))

    def refusal(self, layer: Layer, key: Key, old: _Merged, changed: list[str]) -> str:
        project = shlex.quote(str(self.project_dir)) if self.project_dir else "PROJECT"
        who = ("this hooks.local.yaml counts as the project's (git does not ignore it) and "
               "is not trusted" if layer == "local" else "the project's .ahp is not trusted")
        fix = (" To keep it yours, untrack it and list it in .gitignore; or read .ahp/ and "
               if layer == "local" else " Read .ahp/, then ")
        return (f"ignored: {who}, so it may only add entries, not change the entry "
                f"{key[1]!r} of {old.file} (it would change {', '.join(changed)}).{fix}"
                f"trust it with: mcp-hooks trust {project}")

    def check_overrides_something(self, layer: Layer, file: Path, label: str, key: Key,
                                  raw: dict[str, Any]) -> None:
        trigger, ident = key
        if raw.get("enabled") is False:
            self.note(file, label, trigger, (
                f"overrides nothing: no entry above is keyed {ident!r} on this trigger, so "
                "`enabled: false` switches nothing off; write the id of the entry you mean "
                "(its oracle's name when it has no id)"))
            return
        if layer != "local":
            return
        like = [(k, m) for k, m in self.merged.items()
                if k[0] == trigger and m.raw["oracle"] == raw["oracle"]]
        if like:
            (_, other), there = like[0]
            how = f"write `id: {other}`" + (" or leave id out" if other == raw["oracle"]
                                             else "")
            self.note(file, label, trigger, (
                f"overrides nothing: no entry above is keyed {ident!r}, so this adds a second "
                f"{raw['oracle']} entry beside the one of {there.file} (keyed {other!r}); to "
                f"change that entry instead, {how}"))

    # -- building ----------------------------------------------------------------------------

    def build(self, key: Key, merged: _Merged) -> Entry:
        """The entry of ``merged``.

        Raises:
            _Unbuilt: its oracle cannot be built (every problem found).
        """
        raw = merged.raw
        name, config = raw["oracle"], raw.get("config") or {}
        base = merged.source.parent
        try:
            ref = parse_reference(name)
            if ref.kind == "file":
                oracle_file(ref, base)  # by stat: inside its .ahp, regular, bounded
            oracle: Oracle
            if ref.kind == "builtin":
                oracle = BUILTIN[name](config)
            elif merged.vouched and self.resolve:
                oracle = build_oracle(name, config, base, roots=[base],
                                      project_dir=self.project_dir,
                                      snapshot=self.config.snapshot)
            else:
                oracle = HeldBack(name, config)
        except OracleConfigError as exc:  # every option at fault, a problem each
            raise _Unbuilt([HooksYamlError(merged.file, None, "oracle" if name == "oracle"
                                           else f"config.{name}", reason, key[0])
                            for name, reason in exc.every()]) from None
        except ConfigError as exc:
            raise _Unbuilt([HooksYamlError(merged.file, None, "oracle", str(exc),
                                           key[0])]) from None
        ladder = raw.get("escalation")
        return Entry(
            trigger=key[0], written_trigger=merged.written, oracle_name=name, oracle=oracle,
            config=dict(config), when=dict(raw.get("when") or {}),
            priority=int(raw.get("priority", 0)), enabled=bool(raw.get("enabled", True)),
            async_=bool(raw.get("async", False)), id=str(raw.get("id") or name),
            escalation=INTENSITY_STEPS if ladder is True else (
                tuple(ladder) if ladder else None),
            file=merged.file, layer=merged.layer, order=merged.order,
            ask=bool(raw.get("ask", False)), audit=raw.get("mode") == "audit")


def load_config(project_dir: Path | None, *, user_file: Path | None = None,
                trust_project: bool | None = None, trust_store: TrustCheck | None = None,
                resolve: bool = True, managed_file: Path | None = None,
                managed_only: bool = False) -> ControlConfig:
    """Read and merge the hooks.yaml layers of a project (see the module docstring).

    Args:
        project_dir: the project, or None for the user layer alone.
        user_file: the user layer; None for ``~/.ahp/hooks.yaml``.
        trust_project: trust the project layers without the store.
        trust_store: the store to check (a door's: ``options.trust_store_of``).
        resolve: import and build the custom oracles of trusted layers; False reads only
            (``validate``, the trust review): every custom oracle is a ``HeldBack``.
        managed_file: the managed folder's hooks.yaml (read first, never overridden).
        managed_only: read the managed layer alone (its ``settings.json``).

    ``trust_project`` or ``trust_store`` left None is "not said" by a library caller: the
    environment's (``MCP_HOOKS_TRUST_PROJECT_HOOKS``, ``MCP_HOOKS_TRUST_STORE``).
    """
    if trust_project is None:  # a library caller's door
        trust_project = trust_all_from_env()
    if trust_store is None:
        trust_store = TrustStore()
    merger = _Merger(project_dir, trust_project=trust_project, trust_store=trust_store,
                     resolve=resolve)
    layers: list[tuple[Layer, Path]] = [("user", user_file or user_config_path())]
    if project_dir is not None:
        layers += [("project", project_dir / PROJECT_FILE), ("local", project_dir / LOCAL_FILE)]
    if managed_file is not None:  # rank -1: first, before the user layer's rank 0
        merger.read(-1, "managed", managed_file)
    for rank, (layer, file) in enumerate([] if managed_only else layers):
        merger.read(rank, layer, file)
    merger.config.entries = sorted(merger.built.values(), key=Entry.sort_key)
    return merger.config


__all__ = [
    "ENTRY_KEYS", "INTENSITY_STEPS", "LOCAL_FILE", "MAX_HOOKS_YAML", "PROJECT_FILE",
    "TRIGGERS", "TRUST_NAME", "WHEN_ROOTS", "ControlConfig", "Entry", "HooksYamlError",
    "Layer", "LayerNote", "TrustCheck", "TrustedDigest", "canonical_trigger",
    "condition_holds", "config_digest", "load_config", "lookup", "needs_trust", "parse_yaml",
    "read_yaml", "trust_config", "trust_status", "user_config_path",
]
