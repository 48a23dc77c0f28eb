"""block-dangerous-commands' entry: the check is in dangerous_commands.py, served per event by
mcp_hooks.hookkit (one-shot, or persistent under MCP_HOOKS_PERSISTENT=1)."""

from __future__ import annotations

from dangerous_commands import UNREADABLE, check

from mcp_hooks.hookkit import deny, hook


def main(event: dict[str, object]) -> dict[str, object] | None:
    why = check(event)
    return deny(why) if why else None


hook(main, unreadable=deny(UNREADABLE))  # fails closed: an event it cannot read is refused
