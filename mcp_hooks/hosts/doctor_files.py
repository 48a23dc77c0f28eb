"""Doctor's look at the hooks and the files: invalid, untrusted and shadowed hooks, the layers;
whether the event log and the trust store can be written; the ``--state`` argument a printed
fix names. Everything here reads the door's ``Settings``, built once by ``run_doctor``.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from mcp_hooks import options
from mcp_hooks.errors import MissingExtraError
from mcp_hooks.hosts.doctor_report import Finding, Report
from mcp_hooks.registry.digest import UNVERIFIABLE_DIGEST, hook_digest
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.settings import Settings, default_trust_store
from mcp_hooks.state.remote import redact
from mcp_hooks.state.store import StateUnavailable

STATE_ENV = "MCP_HOOKS_STATE"  # settings.VARIABLES: --state


def _layers(report: Report, registry: Any) -> None:
    """Each hook's layer (managed, user, project), the managed folder, and the hooks a
    managed hook's name keeps from running (docs/policy.md)."""
    managed = getattr(registry, "managed_dir", None)
    report.hooks["managed_dir"] = str(managed) if managed else None
    report.hooks["layers"] = {h.name: h.scope for h in registry.hooks()}
    for hook in getattr(registry, "shadowed", []) or []:
        report.warn(f"{hook.scope} hook {hook.name!r} does not run: a managed hook has that "
                    "name, and managed hooks cannot be replaced",
                    f"rename {hook.dir} if both should run")


def check_hooks(report: Report, settings: Settings, state_flag: str | None = None) -> None:
    """The hooks the settings load: invalid, untrusted (the fix names ``--state`` when the
    trust is the shared store's: ``state_flag``, the flag as given), shadowed, replaced."""
    try:
        registry = options.registry_of(settings, watch=False)
    except (StateUnavailable, MissingExtraError):  # the trust store is the shared store
        report.notes.append(Finding("the hooks' trust is not checked: it is kept in the state "
                                    "store, which cannot be used (its problem is below)"))
        return
    except Exception as exc:
        report.problem(f"the hook folders cannot be read: {type(exc).__name__}: {exc}",
                       "fix the folder permissions, then mcp-hooks validate")
        return
    try:
        invalid = list(registry.invalid)
        untrusted = list(getattr(registry, "untrusted", []) or [])
        replaced: dict[str, Any] = dict(getattr(registry, "replaced", {}) or {})
        report.hooks = {
            "user_dir": str(registry.user_dir),
            "project_dir": str(registry.project_dir) if registry.project_dir else None,
            "valid": len(registry.hooks()),
            "invalid": [i.as_dict() for i in invalid],
            "untrusted": [_as_dict(u) for u in untrusted],
            "replaced": sorted(replaced),
            "identical": [],
        }
        _layers(report, registry)
        for hook in invalid:
            report.problem(f"invalid hook {hook.name!r}: {hook}",
                           f"fix {hook.file}, then check it with `mcp-hooks validate`")
        _untrusted_problems(report, untrusted, shared_state(settings, state_flag))
        for name in sorted(replaced):
            project_copy = registry.get(name)
            if project_copy is not None and _identical(project_copy.dir, replaced[name].dir):
                report.hooks["identical"].append(name)
                report.notes.append(Finding(f"hook {name!r} is in both the user and the project "
                                            "folder, byte for byte the same: it runs once"))
                continue
            report.warn(f"project hook {name!r} replaces (shadows) the user hook of that name, "
                        "which differs from it: only the project's copy runs",
                        "rename one of them if both should run; make them the same (or remove "
                        "one) if only one should")
    finally:
        close = getattr(registry, "close", None)
        if close is not None:
            close()


def _untrusted_problems(report: Report, untrusted: list[Any], state: str | None) -> None:
    """A problem per untrusted project hook, its fix the `trust` command that reaches the
    trust the replicas read: with ``--state`` (``state``) when the store is shared."""
    for hook in untrusted:
        status = getattr(hook, "status", "untrusted")
        fix = getattr(hook, "fix", None) or "review it, then trust it (mcp-hooks trust)"
        if state is not None:  # trusted in the store the replicas read, not trust.json
            fix = fix.replace("mcp-hooks trust ", f"mcp-hooks trust --state {state} ", 1)
        report.problem(f"project hook {getattr(hook, 'name', hook)!r} is {status} and does "
                       "not run", f"read it, then: {fix}")


def _identical(one: Path, other: Path) -> bool:
    """Whether two hook folders hold the same content (the digest trust uses: relative
    paths, modes and bytes); a folder that cannot be hashed in full is never the same."""
    digest = hook_digest(one)
    return digest != UNVERIFIABLE_DIGEST and digest == hook_digest(other)


def _as_dict(item: Any) -> Any:
    as_dict = getattr(item, "as_dict", None)
    return as_dict() if as_dict is not None else str(item)


def _writable(path: Path) -> bool:
    """Whether ``path`` can be written: the file if it exists, else its nearest folder."""
    if path.exists():
        return os.access(path, os.W_OK)
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)


def _trust_store(settings: Settings) -> tuple[Path, str | None]:
    """The trust store's path, and why it cannot be read (None: it can, or is absent)."""
    path = settings.trust_store or default_trust_store()
    try:
        return path, TrustStore(path).problem
    except Exception as exc:
        return path, f"{path}: {exc}"


def shared_state(settings: Settings, state_flag: str | None = None) -> str | None:
    """The ``--state`` argument that names the shared store as the user gave it, shell-quoted,
    for a command to print: ``"$MCP_HOOKS_STATE"`` when it came from there (no ``--state``
    flag, ``state_flag``, was given), else the URL without its password (``***``: put it
    back); None for ``file:``."""
    state = settings.state
    if state.strip().lower().startswith("file:"):
        return None
    if not state_flag:
        return f'"${STATE_ENV}"'
    return shlex.quote(redact(state))


def check_files(report: Report, settings: Settings, state_flag: str | None = None) -> None:
    """Whether the event log and the trust store (the file, or the shared store's) can be
    written and read."""
    log = options.log_of(settings)
    if log is None:
        report.files["event_log"] = {"path": None, "status": "off"}
    else:
        path = Path(log.path)
        ok = _writable(path)
        report.files["event_log"] = {"path": str(path),
                                     "status": "writable" if ok else "NOT writable"}
        if not ok:
            report.problem(f"the event log {path} cannot be written: hook runs go unrecorded",
                           f"fix the permissions of {path} (or its folder), or point --log / "
                           "MCP_HOOKS_LOG elsewhere")
    if shared_state(settings, state_flag) is not None:  # the shared store keeps trust
        report.files["trust_store"] = {"path": redact(settings.state),
                                       "status": "the state store's trust (below)"}
        return
    store, problem = _trust_store(settings)
    ok = _writable(store)
    report.files["trust_store"] = {"path": str(store),
                                   "status": "writable" if ok else "NOT writable"}
    if not ok:
        report.problem(f"the trust store {store} cannot be written: project hooks cannot be "
                       "trusted", f"fix the permissions of {store} (or its folder)")
    if problem:
        report.files["trust_store"]["status"] = "unreadable"
        report.problem(f"the trust store cannot be read: {problem}",
                       "fix or move the file away, then trust the project hooks again")


__all__ = ["check_files", "check_hooks", "shared_state"]
