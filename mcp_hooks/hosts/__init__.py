"""Host bridges: one module per agent host, over the same engine.

Each host module (``claude_code``, ``codex``, ``gemini_cli``, ``cursor``, ``copilot_cli``,
``kimi_cli``, ``qwen_code``, ``cline``, ``opencode``) declares everything mcp-hooks knows of
that host: its events, payloads and answers, its hook config (file per scope, format, the
handler written there) and install notes (see ``base.Host``). Over them, knowing no host by name:

- ``bridge``: ``mcp-hooks bridge <host>``, the command a host's hook config runs;
- ``forward``: the same answers from a running server (HTTP endpoint, ``bridge_hook`` tool),
  and the wire constants ``install`` writes and ``doctor`` checks;
- ``install``: ``mcp-hooks install`` / ``uninstall``, over ``configfile`` (editing the config
  formats) and ``forward_script`` (the ``--via server`` script);
- ``doctor``: ``mcp-hooks doctor``, whether the gate is whole;
- the shared tool vocabulary is core: ``mcp_hooks.spec.vocabulary``.

Their parsers and the conversion to typed options live in ``mcp_hooks.cli.hosts``. Host
modules are imported lazily: a bridge run loads only its own host.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from mcp_hooks.errors import ConfigError, did_you_mean

if TYPE_CHECKING:
    from mcp_hooks.hosts.base import Host

HOSTS: dict[str, str] = {
    "claude-code": "mcp_hooks.hosts.claude_code",
    "codex": "mcp_hooks.hosts.codex",
    "gemini-cli": "mcp_hooks.hosts.gemini_cli",
    "cursor": "mcp_hooks.hosts.cursor",
    "copilot-cli": "mcp_hooks.hosts.copilot_cli",
    "kimi-cli": "mcp_hooks.hosts.kimi_cli",
    "qwen-code": "mcp_hooks.hosts.qwen_code",
    "cline": "mcp_hooks.hosts.cline",
    "opencode": "mcp_hooks.hosts.opencode",
}
ALIASES: dict[str, str] = {
    "claude": "claude-code",
    "gemini": "gemini-cli",
    "copilot": "copilot-cli",
    "kimi": "kimi-cli",
    "codex-cli": "codex",
    "qwen": "qwen-code",
    "cline-cli": "cline",
}


class UnknownHostError(ConfigError, ValueError):
    """A host name that is not bridged (a caller's mistake: exit 64)."""

    def __init__(self, name: str) -> None:
        self.name = name
        hint = did_you_mean(name, [*HOSTS, *ALIASES])
        super().__init__(f"unknown host {name!r}{f' ({hint})' if hint else ''}; "
                         f"use one of: {', '.join(HOSTS)}")


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
