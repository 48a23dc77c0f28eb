"""Calling the MCP server's tools through an SDK client: ``fire`` (fire_hook_event, its
structured and text results checked to agree), ``tool_error``, ``respond``
(respond_to_signal), and the control layer's checklist hook with the ``ISSUE`` it checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client

from tests.conftest import write_hook


async def fire(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("fire_hook_event", arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert json.loads(text.text) == result.structured_content
    return result.structured_content


async def tool_error(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    return text.text


ISSUE: dict[str, Any] = {"id": "FEAT-0123", "type": "feature", "title": "Users API",
         "status": "in_progress",
         "checklist": [{"text": "endpoint", "done": True}, {"text": "tests", "done": False},
                       {"text": "API docs", "done": False}],
         "files_changed": [f"src/f{n}.py" for n in range(25)]}


def checklist_hook(root: Path) -> None:
    """A HOOK.md hook on pre-issue-submit: a block signal while the checklist is not done,
    else a prompt when more than 20 files changed."""
    script = (
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        "issue = json.load(sys.stdin)['issue']\n"
        "todo = [i['text'] for i in issue['checklist'] if not i['done']]\n"
        "if todo:\n"
        "    print(json.dumps({'intensity': 'block', 'type': 'checklist_incomplete',\n"
        "        'reason': f'checklist incomplete: {len(todo)} item(s) open',\n"
        "        'resolution_path': [f'complete: {t}' for t in todo]}))\n"
        "elif len(issue['files_changed']) > 20:\n"
        "    print(json.dumps({'intensity': 'prompt', 'severity': 'medium',\n"
        "        'message': f\"large change ({len(issue['files_changed'])} files); split it?\",\n"
        "        'suggestions': ['split the change', 'continue']}))\n"
    )
    write_hook(root, "checklist-gate", trigger="pre-issue-submit", script=script)


async def respond(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("respond_to_signal", arguments)
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    return data
