"""docs/server.md's table of what the server offers is the server's own list: every tool,
resource, resource template and prompt a real client sees (with ``--ask-tools``' three) has
its row, and every row names something the server registers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from mcp_hooks.server import build_server
from mcp_hooks.server.asks import register_ask_tools
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings

pytestmark = pytest.mark.anyio

DOC = Path(__file__).resolve().parents[2] / "docs" / "server.md"
ROW = re.compile(r"^\| (tool|resource|prompt) \| (.+?) \| ", re.M)


def documented() -> set[tuple[str, str]]:
    """(kind, name) of every row of the table; a tool row may name several tools."""
    rows: set[tuple[str, str]] = set()
    for kind, names in ROW.findall(DOC.read_text(encoding="utf-8")):
        if kind == "tool":
            rows |= {(kind, name) for name in re.findall(r"`(\w+)\(", names)}
        else:
            rows |= {(kind, name) for name in re.findall(r"`([^`(]+)`", names)}
    return rows


async def test_the_table_lists_what_the_server_registers(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    settings = Settings.from_env(project_dir=project, user_dir=user_dir,
                                 log=tmp_path / "events.jsonl")
    async with HookService(settings) as service:
        server = build_server(service)
        register_ask_tools(server, service.store)
        async with Client(server) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            resources = {str(r.uri) for r in (await client.list_resources()).resources}
            templates = {t.uri_template for t in
                         (await client.list_resource_templates()).resource_templates}
            prompts = {p.name for p in (await client.list_prompts()).prompts}
    registered = ({("tool", t) for t in tools} | {("resource", r) for r in resources}
                  | {("resource", t) for t in templates} | {("prompt", p) for p in prompts})
    assert "respond_to_signal" in tools
    assert documented() == registered, (
        f"docs/server.md lacks rows for {sorted(registered - documented())}; "
        f"it names what the server does not register: {sorted(documented() - registered)}")
