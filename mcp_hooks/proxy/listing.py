"""What one upstream serves, and how the proxy learns that it changed.

``Listing`` is an upstream's tools, resources, resource templates and prompts as it last
listed them; ``fetch_listing`` lists them again (every page), kind by kind. Changes arrive two
ways: a handshake-era server sends a list-changed notification (``notified_kinds``), a
2026-07-28 one on the ``subscriptions/listen`` stream it offers (``listen_for_changes``);
either way ``Upstream.refresh`` lists that kind again and tells the proxy what differs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types
from mcp import Client
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

logger = logging.getLogger("mcp_hooks.proxy")

_PAGE_CAP = 100

Kind = Literal["tools", "resources", "prompts"]
ALL_KINDS: frozenset[Kind] = frozenset(("tools", "resources", "prompts"))


@dataclass
class Listing:
    """What one upstream serves, as it last listed it."""

    tools: list[types.Tool] = field(default_factory=list)
    resources: list[types.Resource] = field(default_factory=list)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    prompts: list[types.Prompt] = field(default_factory=list)

    def differs(self, other: Listing) -> set[Kind]:
        changed: set[Kind] = set()
        if self.tools != other.tools:
            changed.add("tools")
        if self.resources != other.resources or self.templates != other.templates:
            changed.add("resources")
        if self.prompts != other.prompts:
            changed.add("prompts")
        return changed


async def _all_pages(fetch: Callable[[str | None], Awaitable[Any]], attr: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        page = await fetch(cursor)
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


async def fetch_listing(
    client: Client, kinds: frozenset[Kind] | set[Kind], previous: Listing
) -> Listing:
    """What ``client``'s server lists now of ``kinds`` (every page, up to ``_PAGE_CAP``), the
    other kinds kept from ``previous``; a kind the server does not serve is empty."""
    caps = client.server_capabilities
    listing = Listing(tools=previous.tools, resources=previous.resources,
                      templates=previous.templates, prompts=previous.prompts)
    if "tools" in kinds:
        listing.tools = (await _all_pages(
            lambda c: client.list_tools(cursor=c, cache_mode="refresh"), "tools")
            if caps.tools is not None else [])
    if "resources" in kinds:
        if caps.resources is not None:
            listing.resources = await _all_pages(
                lambda c: client.list_resources(cursor=c, cache_mode="refresh"), "resources")
            listing.templates = await _all_pages(
                lambda c: client.list_resource_templates(cursor=c, cache_mode="refresh"),
                "resource_templates")
        else:
            listing.resources, listing.templates = [], []
    if "prompts" in kinds:
        listing.prompts = (await _all_pages(
            lambda c: client.list_prompts(cursor=c, cache_mode="refresh"), "prompts")
            if caps.prompts is not None else [])
    return listing


def notified_kinds(message: Any) -> set[Kind] | None:
    """The list a handshake-era change notification names (None: not one)."""
    if isinstance(message, types.ToolListChangedNotification):
        return {"tools"}
    if isinstance(message, types.ResourceListChangedNotification):
        return {"resources"}
    if isinstance(message, types.PromptListChangedNotification):
        return {"prompts"}
    return None


async def listen_for_changes(
    client: Client, name: str, refresh: Callable[[set[Kind]], Awaitable[None]]
) -> None:
    """Follow a 2026-07-28 server's list-changed stream (what it says it sends), calling
    ``refresh`` with each changed list, until the stream ends; a lost stream is logged."""
    caps = client.server_capabilities
    tools = bool(caps.tools and caps.tools.list_changed)
    resources = bool(caps.resources and caps.resources.list_changed)
    prompts = bool(caps.prompts and caps.prompts.list_changed)
    if not (tools or resources or prompts):
        return
    try:
        async with client.listen(tools_list_changed=tools, resources_list_changed=resources,
                                 prompts_list_changed=prompts) as subscription:
            async for event in subscription:
                if isinstance(event, ToolsListChanged):
                    await refresh({"tools"})
                elif isinstance(event, ResourcesListChanged):
                    await refresh({"resources"})
                elif isinstance(event, PromptsListChanged):
                    await refresh({"prompts"})
    except Exception as exc:  # a lost stream must not take the connection down
        logger.info("upstream %s: list-changed stream ended: %s", name, exc)
