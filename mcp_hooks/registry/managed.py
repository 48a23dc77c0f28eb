"""The managed layer: an administrator's hooks folder, trusted by where it is.

A managed folder (``--managed-dir``, ``MCP_HOOKS_MANAGED_DIR``, default ``/etc/agents/hooks``
where it exists) holds hook folders, an optional ``hooks.yaml`` and an optional
``settings.json``. Its hooks need no trust store: they are trusted because the user running
the agent cannot change them. That is checked, never assumed (``location_problem``):

- the folder itself, each of its parents, each hook folder and every entry below it (links
  followed to their target too), ``hooks.yaml`` and ``settings.json`` must not be writable by
  the running user: not writable by everyone (a world-writable parent with the sticky bit,
  such as ``/tmp``, is allowed: no one else may rename what is in it), not group-writable by a
  group the user is in, and not owned by the user unless the user is root (an owner can
  ``chmod`` it writable at any time).
- A folder that fails is refused whole (``Registry`` lists it as an invalid hook of every
  event, so an event that can block fails closed under ``on_fault``); a hook folder that fails
  is refused alone, the same way.

``settings.json`` (``ManagedSettings``): ``{"managed_only": true}`` runs only the managed
hooks and hooks.yaml entries; the user and project layers are not read. Any other key, or a
file that is not a JSON object, is a problem that refuses the folder (fail closed).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_hooks.paths import read_plain

SETTINGS_FILE = "settings.json"
HOOKS_YAML = "hooks.yaml"
MAX_SETTINGS = 64 * 1024  # bytes of settings.json
_MAX_WALK = 1000  # entries of one hook folder checked; past that, the folder is refused
_KEYS = ("managed_only",)


@dataclass(frozen=True)
class ManagedSettings:
    """What the managed folder's ``settings.json`` says (``problem``: why it is refused)."""

    managed_only: bool = False
    problem: str | None = None


def _writable(st: os.stat_result, sticky_ok: bool) -> str | None:
    """Why the running user can write this entry, or None."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return None  # a link's own mode means nothing; its target is checked
    euid = os.geteuid()
    if sticky_ok and stat.S_ISDIR(mode) and mode & stat.S_ISVTX:
        return None
    if mode & stat.S_IWOTH:
        return "writable by every user"
    if mode & stat.S_IWGRP and st.st_gid in {os.getegid(), *os.getgroups()}:
        return f"writable by group {st.st_gid}, which the running user is in"
    if euid != 0 and st.st_uid == euid:
        return f"owned by the running user (uid {euid}), who can make it writable"
    return None


def location_problem(path: Path, *, parents: bool = False) -> str | None:
    """Why ``path`` (with ``parents``: and every folder above it) cannot be trusted by
    location, naming it and the fix; None when the running user cannot change it."""
    chain = [path, *path.parents] if parents else [path]
    for i, where in enumerate(chain):
        try:
            why = _writable(os.lstat(where), sticky_ok=i > 0)
            if why is None and where.is_symlink():
                why = _writable(os.stat(where), sticky_ok=False)
        except OSError as exc:
            return f"{where}: cannot be checked ({exc.strerror}); managed hooks are refused"
        if why is not None:
            return (f"{where}: {why}, so the managed layer cannot trust it; make it owned by "
                    "root and writable by root only (chown root: ... && chmod go-w ...)")
    return None


def tree_problem(hook_dir: Path) -> str | None:
    """``location_problem`` of a hook folder and everything below it (links not walked)."""
    seen = 0
    for top, dirs, files in os.walk(hook_dir):
        for name in (".", *dirs, *files):
            seen += 1
            if seen > _MAX_WALK:
                return f"{hook_dir}: more than {_MAX_WALK} entries to check; refused"
            problem = location_problem(Path(top) if name == "." else Path(top) / name)
            if problem is not None:
                return problem
    return None


def read_settings(root: Path) -> ManagedSettings:
    """The managed folder's ``settings.json`` (absent: the defaults)."""
    path = root / SETTINGS_FILE
    if not os.path.lexists(path):
        return ManagedSettings()
    problem = location_problem(path)
    if problem is not None:
        return ManagedSettings(problem=problem)
    try:  # never waited on: a FIFO swapped in after the location check is refused
        data = json.loads(read_plain(path, MAX_SETTINGS).decode("utf-8"))
    except (OSError, ValueError) as exc:
        return ManagedSettings(problem=f"{path}: cannot be read: {exc}; write a JSON object "
                               'such as {"managed_only": true}')
    if not isinstance(data, dict):
        return ManagedSettings(problem=f'{path}: not a JSON object; write {{"managed_only": '
                               "true}} or remove the file")
    unknown = sorted(set(data) - set(_KEYS))
    only = data.get("managed_only", False)
    if unknown or not isinstance(only, bool):
        what = f"unknown key(s) {', '.join(unknown)}" if unknown else \
            f"managed_only: {only!r} is not true or false"
        return ManagedSettings(problem=f"{path}: {what}; the keys are: {', '.join(_KEYS)}")
    return ManagedSettings(managed_only=only)


def managed_layer(root: Path | None) -> dict[str, Any]:
    """``load_config``'s managed keywords for a managed folder (None: none): its hooks.yaml
    and whether it runs alone (``settings.json``)."""
    if root is None:
        return {}
    return {"managed_file": root / HOOKS_YAML, "managed_only": read_settings(root).managed_only}
