"""A hook's ask at the host bridges (issue 30, ``docs/ask.md``).

A host with an ask of its own (``Host.native_ask``: Claude Code and Qwen Code ``PreToolUse``,
Copilot CLI ``preToolUse``) answers ``ask`` with the hook's reason, and the person is asked
by the host; the bridge then passes ``engine.asking.call_host_asks`` as the approver, so the
chain goes on (a later hook can still deny) and the ask is kept pending too: a headless host
reads its ask as a deny with this reason, which names the pending id, so a person can approve
it out of band and the same call passes when made again. In a permission mode where the host
would approve by itself (``Host.no_ask_modes``: Claude Code's ``bypassPermissions``) it is
never asked: the bridge waits out of band, then falls back (a deny naming the ask). Every
other host gets that fallback too.
"""

from __future__ import annotations

from mcp_hooks.hosts.base import Call, Host
from mcp_hooks.spec.asking import AskRequest


def asks_natively(host: Host, call: Call) -> bool:
    """Whether this call's answer may be the host's own ask: a ``native_ask`` event, in a
    permission mode that asks (the payload's ``permission_mode``)."""
    if call.host_event not in host.native_ask:
        return False
    payload = call.fields.get("payload") or {}
    return str(payload.get("permission_mode") or "") not in host.no_ask_modes


def native_ask_reason(request: AskRequest) -> str:
    """The reason a host's own ask shows: the hook's, and how to approve the call out of band
    where the host asks nobody (a headless run reads its ask as a deny with this reason)."""
    return (f"{request.hook}: {request.reason} (mcp-hooks ask {request.id}; where no one is "
            f"asked, a person approves it with `mcp-hooks approve {request.id}`, then the same "
            "call passes when made again)")
