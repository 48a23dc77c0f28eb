"""The shape of hooks.yaml: triggers, entries, their validation, ``when``, the records.

What ``config.py`` (the layers, trust, overrides: start there) builds on. Nothing here
imports or runs anything of a layer: ``read_yaml`` reads a bounded regular file and parses
it; ``entries_of`` checks each entry's keys and types and names file, entry and key in a
``HooksYamlError``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp_hooks.control.context import OracleContext
from mcp_hooks.control.files import AhpSnapshot, LayerFileError, read_bounded
from mcp_hooks.control.oracles.base import Oracle
from mcp_hooks.errors import ConfigError, UnknownEventError, did_you_mean
from mcp_hooks.paths import ahp_user_file
from mcp_hooks.spec.events import canonical_event
from mcp_hooks.spec.vocabulary import also_named

Layer = Literal["managed", "user", "project", "local"]
TRUST_NAME = ".ahp"  # the trust store's name for a project's hooks.yaml (no hook is named so)
PROJECT_FILE = Path(".ahp", "hooks.yaml")
LOCAL_FILE = Path(".ahp", "hooks.local.yaml")
ENTRY_KEYS = ("oracle", "config", "when", "priority", "enabled", "async", "id", "escalation",
              "ask", "mode")
WHEN_ROOTS = ("tool", "environment", "issue", "files", "tool_input", "env", "session_id")
TRIGGERS: dict[str, str] = {
    "pre-issue-start": "before_issue_start", "post-issue-start": "after_issue_start",
    "pre-issue-submit": "before_issue_submit", "post-issue-submit": "after_issue_submit",
    "pre-issue-close": "before_issue_close", "post-issue-close": "after_issue_close",
    "pre-tool-use": "before_tool", "post-tool-use": "after_tool",
}
INTENSITY_STEPS = ("prompt", "control", "block")
_COMPARISON = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*(-?\d+(?:\.\d+)?)\s*$")
_MAX_DEPTH = 32
# A hooks.yaml is a page of entries (the seed's full example: 1.5 KiB). Parsing costs about
# 4 s per MiB here (the CSafeLoader, twice: the anchor check, then the load), on every
# one-shot bridge call: the cap keeps a hostile one under a second.
MAX_HOOKS_YAML = 256 * 1024


def user_config_path() -> Path:
    """``~/.ahp/hooks.yaml`` (the seed's place, not an XDG one; ``paths.ahp_user_file``)."""
    return ahp_user_file()


class HooksYamlError(ConfigError):
    """A hooks.yaml problem.

    Attributes:
        file: the hooks.yaml.
        entry: ``trigger[index] (Oracle)``, the trigger alone, or None for the whole file.
        key: the key at fault (``config.max_files``, ``when.tool``), or None.
        reason: what is wrong and how to fix it.
        trigger: the canonical trigger it could have woken, or None (any).
        untrusted: it is in a layer of a never-trusted project: a warning on its triggers,
            never a deny (``ControlConfig.skipped_for``).
    """

    def __init__(self, file: Path, entry: str | None, key: str | None, reason: str,
                 trigger: str | None = None) -> None:
        self.file, self.entry, self.key, self.reason = file, entry, key, reason
        self.trigger = trigger
        self.untrusted = False
        where = ": ".join(str(p) for p in (file, entry, key) if p)
        super().__init__(f"{where}: {reason}")


def canonical_trigger(name: str) -> str:
    """The canonical event name of a hooks.yaml trigger.

    Raises:
        UnknownEventError: neither a seed trigger nor a known event.
    """
    if name in TRIGGERS:
        return TRIGGERS[name]
    if name in TRIGGERS.values():
        return name

    return canonical_event(name)


@dataclass(frozen=True)
class Entry:
    """One effective hooks.yaml entry, after the layers were merged."""

    trigger: str
    written_trigger: str
    oracle_name: str
    oracle: Oracle
    config: Mapping[str, Any]
    when: Mapping[str, Any]
    priority: int
    enabled: bool
    async_: bool
    id: str
    escalation: tuple[str, ...] | None
    file: Path  # the last file that wrote to it
    layer: Layer
    order: tuple[int, int]  # (layer, position) of its first definition
    ask: bool = False  # its prompt signals ask a person (engine/asking.py) where the event blocks
    audit: bool = False  # ``mode: audit``: its verdicts are recorded as "would ...", not enforced

    @property
    def label(self) -> str:
        return f"{self.written_trigger}[{self.order[1]}] ({self.oracle_name})"

    def sort_key(self) -> tuple[bool, bool, int, tuple[int, int]]:
        # the managed layer's entries first, whatever their priority; then priority >= 1,
        # ascending (the seed: 1 runs first); 0 = unordered, after them, in definition order
        # (user layer first, then file order); stable for ties
        return (self.layer != "managed", self.priority == 0, self.priority, self.order)

    def matches(self, context: OracleContext) -> bool:
        """Whether every ``when`` condition holds for this event."""
        if not self.when:
            return True
        view = context.view()
        return all(condition_holds(key, want, view) for key, want in self.when.items())


def lookup(view: Mapping[str, Any], key: str) -> Any:
    value: Any = view
    for part in key.split("."):
        if not isinstance(value, Mapping):
            return None
        try:
            value = value[part]
        except KeyError:
            return None
    return value


def _scalar_holds(want: Any, actual: Any) -> bool:
    if isinstance(want, str):
        compared = _COMPARISON.match(want)
        if compared:
            if isinstance(actual, list):
                actual = len(actual)
            try:
                number = float(actual)
            except (TypeError, ValueError):
                return False
            op, bound = compared.group(1), float(compared.group(2))
            return {"<": number < bound, "<=": number <= bound, ">": number > bound,
                    ">=": number >= bound, "==": number == bound, "!=": number != bound}[op]
    if isinstance(actual, list):
        return want in actual
    if isinstance(want, bool) or isinstance(actual, bool):
        return want is actual
    if isinstance(want, (int, float)) and isinstance(actual, (int, float)):
        return float(want) == float(actual)
    return actual is not None and str(want) == str(actual)


def condition_holds(key: str, want: Any, view: Mapping[str, Any]) -> bool:
    actual = lookup(view, key)
    if key == "tool":  # a host's own name (Bash) also matches the canonical one (Shell)

        names = frozenset(str(w) for w in (want if isinstance(want, list) else [want]))
        return actual is not None and str(actual) in names | also_named(names)
    if isinstance(want, list):
        return any(_scalar_holds(w, actual) for w in want)
    return _scalar_holds(want, actual)


@dataclass(frozen=True)
class LayerNote:
    """An entry not applied as written: ``str()`` names the file, the entry and the fix."""

    file: Path
    entry: str
    trigger: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.entry}: {self.reason}"


@dataclass
class ControlConfig:
    """The merged hooks.yaml layers of one project.

    Attributes:
        entries: every effective entry (disabled ones included), in run order per trigger.
        problems: what could not be read; ``problems_for(trigger)`` fails those closed, but
            a never-trusted project's (``skipped_for``), which are warnings.
        untrusted: project entries that would run commands (or custom code, or write
            files) without the project's trust: held back.
        notes: entries not applied as written (an untrusted layer's change of a trusted
            entry, ignored; an override that overrides nothing): warnings on their trigger.
        overrides: project or local entries that change an entry of the user's layer (the
            trust review shows them: trusting the project lets them apply).
        files: the hooks.yaml files read, lowest layer first.
        sources: the SHA-256 of each file's bytes as read, in ``files``' order (the event
            log's ``hooks_digest`` covers them).
        trust: ``trusted``, ``untrusted`` or ``changed`` for the project layers (or None).
        snapshot: what trust covers of the project's ``.ahp``, when it was looked at.
    """

    entries: list[Entry] = field(default_factory=list)
    problems: list[HooksYamlError] = field(default_factory=list)
    untrusted: list[Entry] = field(default_factory=list)
    notes: list[LayerNote] = field(default_factory=list)
    overrides: list[LayerNote] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    trust: str | None = None
    snapshot: AhpSnapshot | None = None

    def for_trigger(self, trigger: str, context: OracleContext | None = None) -> list[Entry]:
        """The enabled entries of ``trigger`` whose ``when`` holds, in run order."""
        chosen = [e for e in self.entries if e.trigger == trigger and e.enabled
                  and (context is None or e.matches(context))]
        return sorted(chosen, key=Entry.sort_key)

    def problems_for(self, trigger: str) -> list[HooksYamlError]:
        """The problems that fail ``trigger`` closed (a never-trusted project's are not)."""
        return [p for p in self.problems if p.trigger in (None, trigger) and not p.untrusted]

    def skipped_for(self, trigger: str) -> list[HooksYamlError]:
        """A never-trusted project's problems that could concern ``trigger``: warnings."""
        return [p for p in self.problems if p.trigger in (None, trigger) and p.untrusted]

    def untrusted_for(self, trigger: str) -> list[Entry]:
        return [e for e in self.untrusted if e.trigger == trigger]

    def notes_for(self, trigger: str) -> list[LayerNote]:
        return [n for n in self.notes if n.trigger == trigger]

    @property
    def triggers(self) -> set[str]:
        return {e.trigger for e in self.entries}


# -- reading -------------------------------------------------------------------------------

def read_yaml(file: Path, *, inside: Path | None = None) -> Any:
    """A hooks.yaml's data (None for an empty file), refusing anchors and deep nesting.

    Args:
        inside: the folder the file must stay in (a project's ``.ahp``).

    Raises:
        HooksYamlError: not a regular file, over ``MAX_HOOKS_YAML``, unreadable or malformed.
    """
    return parse_yaml(file, _read_file(file, inside))


def _read_file(file: Path, inside: Path | None) -> bytes:
    try:
        return read_bounded(file, MAX_HOOKS_YAML, inside=inside)
    except LayerFileError as exc:
        raise HooksYamlError(file, None, None, exc.reason) from None


def parse_yaml(file: Path, raw: bytes) -> Any:
    """The data of a hooks.yaml's bytes (see ``read_yaml``)."""
    # lazy: 82 ms of cold start (PyYAML) when no hooks.yaml is there to read
    import yaml

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HooksYamlError(file, None, None, "is not UTF-8 text; save it as UTF-8") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        depth = 0
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > _MAX_DEPTH:
                    raise HooksYamlError(file, None, None, "nests too deep; flatten it")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise HooksYamlError(file, None, None, "YAML anchors and aliases (&a, *a) "
                                     "are not allowed; write the value out")
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise HooksYamlError(file, None, None, f"{line}malformed YAML: "
                             f"{getattr(exc, 'problem', None) or exc}") from None


_Problem = tuple[str | None, str]  # (the key at fault, what is wrong)
_KINDS = {"config": (dict, "a mapping"), "when": (dict, "a mapping"),
          "enabled": (bool, "true or false"), "async": (bool, "true or false"),
          "id": (str, "a string"), "ask": (bool, "true or false")}


def _unknown_keys(raw: dict[Any, Any]) -> list[_Problem]:
    found: list[_Problem] = []
    for key in raw:
        if key not in ENTRY_KEYS:
            hint = did_you_mean(str(key), ENTRY_KEYS)
            found.append((str(key), f"unknown key{f' ({hint})' if hint else ''}; an entry "
                          f"takes {', '.join(ENTRY_KEYS)}"))
    return found


def _bad_oracle(raw: dict[Any, Any]) -> list[_Problem]:
    if not isinstance(raw.get("oracle"), str) or not raw["oracle"].strip():
        return [("oracle", "is required: the oracle's name (ChecklistValidator, ...)")]
    return []


def _bad_kinds(raw: dict[Any, Any]) -> list[_Problem]:
    return [(key, f"must be {words}, got {raw[key]!r}")
            for key, (kind, words) in _KINDS.items()
            if key in raw and not isinstance(raw[key], kind)]


def _bad_priority(raw: dict[Any, Any]) -> list[_Problem]:
    priority = raw.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int) or priority < 0:
        return [("priority", f"must be a whole number >= 0, got {priority!r}")]
    return []


def _bad_mode(raw: dict[Any, Any]) -> list[_Problem]:
    if raw.get("mode", "enforce") not in ("enforce", "audit"):
        return [("mode", f"must be enforce or audit, got {raw['mode']!r}")]
    return []


def _bad_when(raw: dict[Any, Any]) -> list[_Problem]:
    when = raw.get("when")
    if not isinstance(when, dict):
        return []  # absent, or not a mapping: _bad_kinds says so
    found: list[_Problem] = []
    for key, want in when.items():
        root = str(key).split(".", 1)[0]
        values = want if isinstance(want, list) else [want]
        if root not in WHEN_ROOTS or (root in ("issue", "files", "tool_input", "env")
                                      and "." not in str(key)):
            found.append((f"when.{key}", "unknown condition; use tool, environment, "
                          "session_id or a dotted path under issue., files., tool_input., env."))
        elif not values or not all(isinstance(v, (str, int, float, bool)) for v in values):
            found.append((f"when.{key}", "must be a value, a list of values or a comparison "
                          "such as \"> 10\""))
    return found


def _bad_escalation(raw: dict[Any, Any]) -> list[_Problem]:
    ladder = raw.get("escalation")
    if ladder is not None and ladder is not True and not (
            isinstance(ladder, list) and ladder and all(s in INTENSITY_STEPS for s in ladder)):
        return [("escalation", "must be true or a list of prompt, control, block")]
    return []


# An entry's checks, in the order its problems are reported (every one of them).
ENTRY_CHECKS: tuple[Callable[[dict[Any, Any]], list[_Problem]], ...] = (
    _unknown_keys, _bad_oracle, _bad_kinds, _bad_priority, _bad_when, _bad_escalation,
    _bad_mode)


def entry_problems(file: Path, label: str, trigger: str, raw: Any) -> list[HooksYamlError]:
    """Every problem of one entry's own keys (its oracle's ``config`` is checked when the
    entry is built), in ``ENTRY_CHECKS`` order; [] for a valid entry."""
    if not isinstance(raw, dict):
        return [HooksYamlError(file, label, None,
                               "an entry must be a mapping with at least 'oracle: Name'", trigger)]
    return [HooksYamlError(file, label, key, reason, trigger)
            for check in ENTRY_CHECKS for key, reason in check(raw)]


def entries_of(file: Path, data: Any, problems: list[HooksYamlError],
               ) -> list[tuple[str, str, int, dict[str, Any]]]:
    """(canonical trigger, written trigger, position, raw entry) of one file's valid entries."""
    if data is None:
        return []
    if not isinstance(data, dict) or set(data) - {"hooks", "version"}:
        problems.append(HooksYamlError(file, None, None, "must be a mapping with one key, "
                                       "'hooks', of triggers to lists of entries"))
        return []
    hooks = data.get("hooks") or {}
    if not isinstance(hooks, dict):
        problems.append(HooksYamlError(file, None, "hooks", "must map triggers to lists"))
        return []
    out = []
    for written, entries in hooks.items():
        try:
            trigger = canonical_trigger(str(written))
        except UnknownEventError as exc:
            problems.append(HooksYamlError(file, str(written), None, str(exc)))
            continue
        if isinstance(entries, dict):
            entries = [entries]  # the seed's 2.3 writes a single entry as a mapping
        if not isinstance(entries, list):
            problems.append(HooksYamlError(file, str(written), None, "must be a list of "
                                           "entries (- oracle: Name)", trigger))
            continue
        out.extend(_trigger_entries(file, (trigger, str(written)), entries, problems))
    return out


def _trigger_entries(file: Path, triggers: tuple[str, str], entries: list[Any],
                     problems: list[HooksYamlError],
                     ) -> list[tuple[str, str, int, dict[str, Any]]]:
    """The valid entries of one trigger's list (one id once)."""
    trigger, written = triggers
    out = []
    seen: set[str] = set()
    for i, raw in enumerate(entries):
        name = raw.get("oracle") if isinstance(raw, dict) else None
        label = f"{written}[{i}]" + (f" ({name})" if name else "")
        found = entry_problems(file, label, trigger, raw)
        if found:
            problems.extend(found)
            continue
        checked: dict[str, Any] = raw
        ident = checked.get("id") or checked["oracle"]
        if ident in seen:
            problems.append(HooksYamlError(
                file, label, "id", f"a second entry for {ident!r} in this trigger; give "
                "each an id", trigger))
            continue
        seen.add(ident)
        out.append((trigger, written, i, checked))
    return out
