"""The MCP server door: the hooks of a ``HookService`` as MCP tools, resources and a prompt.

Modules (imported lazily, so ``import mcp_hooks.server.sdk_compat`` loads no server)::

    app         build_server(service): the tools, resources, prompt and list-changed notices;
                serve_hooks(service, options): serve them with the host-bridge endpoints
    tools       the four tools (fire_hook_event, respond_to_signal, list_hooks, get_hook):
                their arguments, errors and results; fire_hook_event is the door's one guard
    results     the structured results of list_hooks, get_hook and hooks://index
    prompts     every word the server says to a model (instructions, descriptions, the prompt)
    transport   serve any MCP server over stdio, streamable HTTP or SSE (shared with the proxy)
    bearer      the bearer token every HTTP/SSE request carries, and the requests checked elsewhere
    stdio       the event-loop stdio transport from pipes, with an optional fast path
    wire        the one JSON-RPC line codec of every hand-written stdio end (also the proxy's
                upstream channel)
    sdk_compat  every private MCP SDK name the doors reach, each with what breaks and how to check

The engine side it adapts, projects -> engines, is ``mcp_hooks.service`` (it knows no MCP). The
proxy imports ``transport``, ``stdio``, ``wire`` and ``sdk_compat`` from here; nothing here
imports the proxy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_hooks.server.app import SERVER_NAME, build_server, serve_hooks
    from mcp_hooks.server.tools import MAX_PAYLOAD_BYTES
    from mcp_hooks.server.transport import ServeOptions, serve

__all__ = ["MAX_PAYLOAD_BYTES", "SERVER_NAME", "ServeOptions", "build_server", "serve",
           "serve_hooks"]

_FROM = {
    "MAX_PAYLOAD_BYTES": "mcp_hooks.server.tools",
    "SERVER_NAME": "mcp_hooks.server.app",
    "ServeOptions": "mcp_hooks.server.transport",
    "build_server": "mcp_hooks.server.app",
    "serve": "mcp_hooks.server.transport",
    "serve_hooks": "mcp_hooks.server.app",
}


def __getattr__(name: str) -> Any:
    module = _FROM.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
