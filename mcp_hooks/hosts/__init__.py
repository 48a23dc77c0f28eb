"""Host bridges: one module per agent host, over the same engine.

``mcp-hooks bridge <host>`` (``bridge.py``) is the command a host's native hook config runs;
``mcp-hooks install <host>`` (``install.py``) writes that config. Each host module maps the
host's events, payloads and answers; ``vocab.py`` holds the shared tool vocabulary.
Host modules are imported lazily: a bridge run loads only its own host.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from mcp_hooks.errors import ConfigError

if TYPE_CHECKING:
    from mcp_hooks.hosts.base import Host

HOSTS: dict[str, str] = {
    "claude-code": "mcp_hooks.hosts.claude_code",
    "codex": "mcp_hooks.hosts.codex",
    "gemini-cli": "mcp_hooks.hosts.gemini_cli",
    "cursor": "mcp_hooks.hosts.cursor",
    "copilot-cli": "mcp_hooks.hosts.copilot_cli",
    "kimi-cli": "mcp_hooks.hosts.kimi_cli",
}
ALIASES: dict[str, str] = {
    "claude": "claude-code",
    "gemini": "gemini-cli",
    "copilot": "copilot-cli",
    "kimi": "kimi-cli",
    "codex-cli": "codex",
}


class UnknownHostError(ConfigError, ValueError):
    """A host name that is not bridged (a caller's mistake: exit 64)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"unknown host {name!r}; use one of: {', '.join(HOSTS)}")


def host_name(name: str) -> str:
    """The canonical host name for ``name`` or an alias.

    Raises:
        UnknownHostError: not a bridged host.
    """
    name = name.strip().lower()
    name = ALIASES.get(name, name)
    if name not in HOSTS:
        raise UnknownHostError(name)
    return name


def get_host(name: str) -> Host:
    """The host object of ``name`` (or an alias), importing only its module."""
    module = importlib.import_module(HOSTS[host_name(name)])
    host: Host = module.HOST
    return host


__all__ = ["ALIASES", "HOSTS", "UnknownHostError", "get_host", "host_name"]
