"""What the proxy passes to its upstreams unchanged: resources, resource templates, prompts
and completions, each request routed to the upstream that lists the name (``catalog``).

``Passthrough`` answers the proxy server's handlers for them; its one resource of its own is
``hooks://proxy/status`` (``Proxy.status``). A name no upstream lists yet waits while
upstreams are starting (``startup``); an upstream that fails answers with an MCP error naming
it (``UpstreamError``'s message), and a completion nobody offers is an empty one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from mcp_hooks.proxy.catalog import STATUS_URI, Catalog
from mcp_hooks.proxy.results import strip_stamp
from mcp_hooks.proxy.startup import Startup
from mcp_hooks.proxy.upstream import Upstream, UpstreamError

RESOURCE_NOT_FOUND = -32002


class Passthrough:
    """The proxy server's handlers of resources, templates, prompts and completions.

    Args:
        catalog: names -> upstreams.
        upstreams: every upstream (a resource's owner is found among them).
        startup: the listing window and the waits for upstreams still starting.
        status: what ``hooks://proxy/status`` shows.
    """

    def __init__(self, catalog: Catalog, upstreams: Sequence[Upstream], startup: Startup,
                 status: Callable[[], dict[str, Any]]) -> None:
        self._catalog = catalog
        self._upstreams = upstreams
        self._startup = startup
        self._status = status

    # -- resources ------------------------------------------------------------------------

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        await self._startup.before_listing()
        status = types.Resource(
            uri=STATUS_URI, name="proxy-status", title="mcp-hooks proxy status",
            description="Each upstream server's state, last error, restarts and tools.",
            mime_type="application/json",
        )
        return types.ListResourcesResult(resources=[*self._catalog.resources, status])

    async def list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        await self._startup.before_listing()
        return types.ListResourceTemplatesResult(resource_templates=self._catalog.templates)

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri == STATUS_URI:
            return types.ReadResourceResult(contents=[types.TextResourceContents(
                uri=STATUS_URI, mime_type="application/json",
                text=json.dumps(self._status(), indent=2),
            )])
        upstream = self._catalog.resource_owner(uri, self._upstreams)
        if upstream is None:
            await self._startup.await_known(
                lambda: self._catalog.resource_owner(uri, self._upstreams) is not None)
            upstream = self._catalog.resource_owner(uri, self._upstreams)
        if upstream is None:
            raise MCPError(RESOURCE_NOT_FOUND, f"Unknown resource {uri}: no upstream server "
                           "of this proxy lists it or a template that matches it")
        try:
            result = await upstream.request(f"resources/read {uri}",
                                            lambda client: client.read_resource(uri))
        except UpstreamError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        return result.model_copy(update={"meta": strip_stamp(result.meta)})

    # -- prompts and completion -----------------------------------------------------------

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        await self._startup.before_listing()
        return types.ListPromptsResult(prompts=self._catalog.prompts)

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name not in self._catalog.prompt_routes:
            await self._startup.await_known(lambda: params.name in self._catalog.prompt_routes)
        route = self._catalog.prompt_routes.get(params.name)
        if route is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt {params.name!r}")
        upstream, prompt = route
        arguments = params.arguments
        try:
            result = await upstream.request(
                f"prompts/get {prompt!r}", lambda client: client.get_prompt(prompt, arguments))
        except UpstreamError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        return result.model_copy(update={"meta": strip_stamp(result.meta)})

    async def complete(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref = params.ref
        upstream: Upstream | None = None
        if isinstance(ref, types.PromptReference):
            route = self._catalog.prompt_routes.get(ref.name)
            if route is not None:
                upstream = route[0]
                ref = ref.model_copy(update={"name": route[1]})
        else:
            upstream = self._catalog.template_owner(ref.uri)
        empty = types.CompleteResult(completion=types.Completion(values=[]))
        if upstream is None or upstream.capabilities is None \
                or upstream.capabilities.completions is None:
            return empty
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context else None
        target = ref
        try:
            return await upstream.request(
                "completion/complete", lambda client: client.complete(target, argument, context))
        except UpstreamError:
            return empty
