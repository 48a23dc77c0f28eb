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
        hint = close_host(name)
        super().__init__(f"unknown host {name!r}{f' ({hint})' if hint else ''}; "
                         f"use one of: {', '.join(HOSTS)}")


def _plain(name: str) -> str:
    return name.lower().translate({ord(c): None for c in "-_. "})


def _slips(one: str, other: str) -> int:
    """Typing slips between two words: letters missing, extra or changed, two neighbours
    swapped (optimal string alignment distance)."""
    previous: list[int] = []
    row = list(range(len(other) + 1))
    for i, a in enumerate(one, 1):
        before, previous, row = previous, row, [i] + [0] * len(other)
        for j, b in enumerate(other, 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == other[j - 2] and one[i - 2] == b:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[-1]


def close_host(name: str) -> str:
    """``did you mean 'x'?`` for the host one typing slip from ``name`` (two for names over
    six letters; ``-``, ``_`` and case ignored), else ``""``: a merely similar word is no
    host (``vscode`` is not ``codex``)."""
    plain = _plain(name)
    found = sorted((_slips(plain, _plain(c)), ALIASES.get(c, c)) for c in (*HOSTS, *ALIASES))
    slips, host = found[0]
    return f"did you mean {host!r}?" if slips <= (1 if len(plain) <= 6 else 2) else ""


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


__all__ = ["ALIASES", "HOSTS", "UnknownHostError", "close_host", "get_host", "host_name"]
