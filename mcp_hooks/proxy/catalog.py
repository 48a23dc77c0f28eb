"""What the proxy serves: the union of its upstreams' tools, prompts, resources and templates,
and the route from each name the client sees back to its upstream.

Names: a tool or prompt name two upstreams share gets the ``<server>__`` prefix on both
(``prefix_all`` prefixes every one); a name still taken after that is hidden, with one
warning. Resources keep their URIs: the first upstream to list one wins, and
``STATUS_URI`` (the proxy's own status) always wins. A URI no upstream lists goes to the
upstream whose template matches it, else to the only upstream that serves resources.

``rebuild`` recomputes everything from the upstreams' last listings (on start, on every
list change and restart); between rebuilds the catalog is read-only.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import mcp_types as types
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from mcp_hooks.proxy.upstream import Upstream

logger = logging.getLogger("mcp_hooks.proxy")

STATUS_URI = "hooks://proxy/status"

Route = tuple[Upstream, str]
"""An upstream and the item's own name there."""

_Named = TypeVar("_Named", types.Tool, types.Prompt)


@dataclass
class Catalog:
    """The aggregated listings and their routes.

    Attributes:
        prefix_all: prefix every tool and prompt ``<server>__``, not only colliding ones.
    """

    prefix_all: bool = False
    tools: list[types.Tool] = field(default_factory=list)
    tool_routes: dict[str, Route] = field(default_factory=dict)
    prompts: list[types.Prompt] = field(default_factory=list)
    prompt_routes: dict[str, Route] = field(default_factory=dict)
    resources: list[types.Resource] = field(default_factory=list)
    resource_routes: dict[str, Upstream] = field(default_factory=dict)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    template_routes: list[tuple[UriTemplate | None, str, Upstream]] = field(
        default_factory=list)
    _hidden: set[str] = field(default_factory=set)

    def rebuild(self, upstreams: Sequence[Upstream]) -> None:
        """Recompute what the proxy serves from its upstreams' listings."""
        self.tools, self.tool_routes = self._aggregate(
            "tool", [(u, u.listing.tools) for u in upstreams])
        self.prompts, self.prompt_routes = self._aggregate(
            "prompt", [(u, u.listing.prompts) for u in upstreams])
        resources: list[types.Resource] = []
        routes: dict[str, Upstream] = {}
        templates: list[types.ResourceTemplate] = []
        template_routes: list[tuple[UriTemplate | None, str, Upstream]] = []
        for upstream in upstreams:
            for resource in upstream.listing.resources:
                if resource.uri in routes or resource.uri == STATUS_URI:
                    self._warn_hidden(f"resource {resource.uri} of {upstream.name} is hidden "
                                      "by an earlier one")
                    continue
                routes[resource.uri] = upstream
                resources.append(resource)
            for template in upstream.listing.templates:
                try:
                    parsed: UriTemplate | None = UriTemplate.parse(template.uri_template)
                except InvalidUriTemplate:
                    parsed = None
                template_routes.append((parsed, template.uri_template, upstream))
                templates.append(template)
        self.resources, self.resource_routes = resources, routes
        self.templates, self.template_routes = templates, template_routes

    def _aggregate(
        self, kind: str, items: list[tuple[Upstream, Sequence[_Named]]]
    ) -> tuple[list[_Named], dict[str, Route]]:
        counts = Counter(item.name for _, group in items for item in group)
        out: list[_Named] = []
        routes: dict[str, Route] = {}
        for upstream, group in items:
            for item in group:
                prefixed = self.prefix_all or counts[item.name] > 1
                exposed = upstream.spec.prefix + item.name if prefixed else item.name
                if exposed in routes:
                    self._warn_hidden(f"{kind} {exposed!r} of {upstream.name} is hidden by the "
                                      f"one of {routes[exposed][0].name}")
                    continue
                routes[exposed] = (upstream, item.name)
                out.append(item if exposed == item.name else
                           item.model_copy(update={"name": exposed}))
        return out, routes

    def _warn_hidden(self, what: str) -> None:
        if what not in self._hidden:
            self._hidden.add(what)
            logger.warning("%s", what)

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The upstream's input schema of the tool the client calls ``name``."""
        route = self.tool_routes.get(name)
        if route is None:
            return None
        for tool in route[0].listing.tools:
            if tool.name == route[1]:
                return tool.input_schema
        return None

    def resource_owner(self, uri: str, upstreams: Sequence[Upstream]) -> Upstream | None:
        """The upstream that serves ``uri`` (see the module's docstring), or None."""
        owner = self.resource_routes.get(uri)
        if owner is not None:
            return owner
        for template, _, upstream in self.template_routes:
            if template is not None and template.match(uri) is not None:
                return upstream
        able = [u for u in upstreams
                if u.capabilities is not None and u.capabilities.resources is not None]
        return able[0] if len(able) == 1 else None

    def template_owner(self, uri_template: str) -> Upstream | None:
        """The upstream that lists this resource template (completion requests name it)."""
        return next((u for _, text, u in self.template_routes if text == uri_template), None)
