"""The ask notifier: each new ask posted to a webhook (``MCP_HOOKS_ASK_WEBHOOK``), so a chat
channel or a phone app can show it (issue 30).

The body is one JSON object: ``text`` (a Slack-compatible one-paragraph summary, with the
commands that answer it), ``ask`` (the ``AskRequest``: id, session, tool, arguments, reason,
created, expires) and ``approve`` / ``refuse`` (the commands). It is sent once, when the ask
is made, with ``POST`` and ``Content-Type: application/json``, within ``TIMEOUT`` seconds; a
webhook that fails is said once on stderr and never fails the event (the ask still waits in
the store: ``mcp-hooks pending``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from mcp_hooks.spec.asking import AskRequest, canonical_json
from mcp_hooks.spec.outcome import cap_text

TIMEOUT = 3.0  # seconds a post may take


def ask_body(request: AskRequest) -> dict[str, Any]:
    """What is posted for one ask."""
    arguments = cap_text(canonical_json(request.tool_input), 1500)
    text = (f"mcp-hooks: {request.hook} asks a person to approve {request.tool_name or '?'} "
            f"(session {request.session_id or '-'}): {request.reason}\n"
            f"arguments: {arguments}\n"
            f"approve: `mcp-hooks approve {request.id}` - refuse: "
            f"`mcp-hooks refuse {request.id} --reason ...`")
    return {"text": text, "ask": request.as_dict(),
            "approve": f"mcp-hooks approve {request.id}",
            "refuse": f"mcp-hooks refuse {request.id} --reason ..."}


def post(url: str, request: AskRequest) -> None:
    """Post one ask to ``url``; a failure is said on stderr, never raised."""
    import urllib.request  # 32 ms cold (python -X importtime); only when an ask is posted

    data = json.dumps(ask_body(request), ensure_ascii=False).encode()
    sent = urllib.request.Request(url, data=data, method="POST",
                                  headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(sent, timeout=TIMEOUT) as reply:
            reply.read(1 << 16)
    except (OSError, ValueError) as exc:
        print(f"mcp-hooks: the ask webhook (MCP_HOOKS_ASK_WEBHOOK) did not take ask "
              f"{request.id}: {exc}; the ask still waits (`mcp-hooks pending`)", file=sys.stderr)


def ask_notifier(url: str | None) -> Callable[[AskRequest], None] | None:
    """The notifier of a webhook URL; None for none."""
    if not url:
        return None
    return lambda request: post(url, request)
