"""Every place on disk mcp-hooks reads or writes by default, resolved in one module.

Each function reads the environment when called (tests and users set ``XDG_*`` per process);
our own ``MCP_HOOKS_*`` variables are read in ``settings`` only::

    user_hooks_dir()    $XDG_CONFIG_HOME/agents/hooks        the user's hook library
    config_dir()        $XDG_CONFIG_HOME/mcp-hooks           installed helper scripts (forward.py)
    state_dir()         $XDG_STATE_HOME/mcp-hooks            what we write as we run:
      log_path()          .../events.jsonl                     the event log
      default_trust_store() .../trust.json                     trusted project hooks and .ahp
      backups_dir()       .../backups/                         host configs before `install`
      ladder_path()       .../ladder.json                      the escalation ladder's counts
      aid_inbox_dir()     .../aid/                             aid signals for the next event
    cache_dir()         $XDG_CACHE_HOME/mcp-hooks            what can be rebuilt at will
    ahp_user_file()     ~/.ahp/hooks.yaml                    the user layer of hooks.yaml ($HOME;
                                                             the seed's place, not an XDG one)

The project's own control files (``.ahp/hooks.yaml``, ``.ahp/hooks.local.yaml``) are
relative to the project and named in ``control/config.py``.

Defaults follow the XDG base directory spec: ``~/.config``, ``~/.local/state``, ``~/.cache``.
An empty ``XDG_*`` value counts as unset.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def _base(var: str, *default: str) -> Path:
    value = os.environ.get(var, "")
    if value:
        return Path(value)
    return Path(os.path.expanduser("~"), *default)


def config_home() -> Path:
    """``$XDG_CONFIG_HOME``, or ``~/.config``."""
    return _base("XDG_CONFIG_HOME", ".config")


def state_home() -> Path:
    """``$XDG_STATE_HOME``, or ``~/.local/state``."""
    return _base("XDG_STATE_HOME", ".local", "state")


def cache_home() -> Path:
    """``$XDG_CACHE_HOME``, or ``~/.cache``."""
    return _base("XDG_CACHE_HOME", ".cache")


def user_hooks_dir() -> Path:
    """The user's hook library, shared with every agent: ``$XDG_CONFIG_HOME/agents/hooks``."""
    return config_home() / "agents" / "hooks"


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/mcp-hooks``: scripts ``install`` writes for hosts to run."""
    return config_home() / "mcp-hooks"


def state_dir() -> Path:
    """``$XDG_STATE_HOME/mcp-hooks``: the log, the trust store, config backups."""
    return state_home() / "mcp-hooks"


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/mcp-hooks``: nothing here is needed to decide an event."""
    return cache_home() / "mcp-hooks"


def log_path() -> Path:
    """The default event log: ``$XDG_STATE_HOME/mcp-hooks/events.jsonl``."""
    return state_dir() / "events.jsonl"


def default_trust_store() -> Path:
    """``$XDG_STATE_HOME/mcp-hooks/trust.json`` (``MCP_HOOKS_TRUST_STORE`` overrides it:
    ``settings.trust_store_path``)."""
    return state_dir() / "trust.json"


def ahp_user_file() -> Path:
    """``~/.ahp/hooks.yaml``: the user layer of the control layer (the seed's place, not an
    XDG one). ``$HOME`` when set, as a shell's ``~`` reads it."""
    return Path(os.environ.get("HOME") or os.path.expanduser("~"), ".ahp", "hooks.yaml")


def aid_inbox_dir() -> Path:
    """Aid signals waiting for the next event of their session (``inbox.py``)."""
    return state_dir() / "aid"


def backups_dir() -> Path:
    """Where ``install`` saves a host config before changing it."""
    return state_dir() / "backups"


def ladder_path() -> Path:
    """The escalation ladder's counts: ``$XDG_STATE_HOME/mcp-hooks/ladder.json``."""
    return state_dir() / "ladder.json"


def read_plain(path: Path, cap: int) -> bytes:
    """A file's bytes, never waited on: opened without blocking (a FIFO put where a file
    belongs has no writer), refused unless a regular file, and not read past ``cap`` bytes.
    Raises OSError as the open or read raised it, or ValueError saying what is wrong (the
    caller names the file and the fix)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file (a FIFO, a device or a folder)")
        chunks, total = [], 0
        while total <= cap and (chunk := os.read(fd, min(1 << 20, cap + 1 - total))):
            chunks.append(chunk)
            total += len(chunk)
        if total > cap:
            raise ValueError(f"larger than {cap >> 20} MiB" if cap >= 1 << 20
                             else f"larger than {cap} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)

