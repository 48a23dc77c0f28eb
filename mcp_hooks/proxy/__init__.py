"""The gating proxy: every ``tools/call`` to every upstream MCP server passes through the hooks.

::

    host ──MCP──► mcp-hooks proxy ──MCP──► upstream servers (stdio, streamable HTTP, SSE)
                        │
                        └─ Engine: session_start, before_tool, after_tool,
                                   after_tool_failure, session_end

Modules, each owning one concern (imported lazily: ``import mcp_hooks.proxy.config`` loads no
server)::

    app             Proxy: the MCP server (handlers, status) over the parts below;
                    run_proxy / serve_proxy serve it
    catalog         aggregation of the upstreams' tools, prompts, resources; routes back
    gate            before_tool -> upstream call -> after_tool / after_tool_failure
    results         tool results in wire form: cleaned, shown to hooks, rewritten, refused
    sessions        downstream sessions and their session_start / session_end
    fast            the stdio fast path's own answers to plain tools/call requests
    passthrough     resources, templates, prompts and completions, to their upstream
    relay           an upstream's elicitation, sampling and progress, passed to the call's client
    startup         serving at once: the listing window, requests that wait for a start
    upstream        one upstream's state machine: start, list, call, watch, restart
    listing         what an upstream lists (every page), and how a change of it is heard
    upstream_stdio  the stdio transport to an upstream, with the raw tools/call channel
    config          the mcpServers config file and --upstream values

Faults of the gate itself are ``engine.fault_outcome`` under ``--on-fault``: with ``block``
(the default) the call is refused with an ``isError`` result saying what broke, and the
upstream is not called. Hooks never see the proxy's token nor the upstreams' configured
credentials in their environment (``config.upstream_secrets``). An upstream that fails to
start or dies is logged (stderr and the event log) and shown by ``hooks://proxy/status``; its
tools answer with a clear error, the others keep working, and it is started again on its
next call, with backoff. The proxy answers ``initialize`` at once, without waiting for any
upstream; slow ones join with a list-changed notification (``startup``).

Speed: over stdio, ``tools/call`` requests are answered on a fast path that skips the SDK's
per-message validation on both sides (``fast``, ``upstream_stdio``, and the event-loop
``server.stdio`` transport and ``server.wire`` codec it shares with ``serve``); the hooks,
results and errors are the same on either path. ``MCP_HOOKS_PROXY_STDIO=sdk`` switches both
sides back to the SDK's stdio transports; ``bench/bench_proxy.py`` measures both. Over
streamable HTTP, 2026-07-28 ``tools/call`` POSTs take the same way in (``http_fast``) and go
out raw on kept-alive connections (``upstream_http``, ``http_wire``);
``MCP_HOOKS_PROXY_HTTP=sdk`` switches back, and ``bench/bench_peer.py`` measures both.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_hooks.proxy.app import Proxy, ProxySettings, run_proxy, serve_proxy
    from mcp_hooks.proxy.config import ProxyConfigError, UpstreamSpec, collect_upstreams
    from mcp_hooks.proxy.upstream import Upstream, UpstreamError

__all__ = [
    "Proxy",
    "ProxyConfigError",
    "ProxySettings",
    "Upstream",
    "UpstreamError",
    "UpstreamSpec",
    "collect_upstreams",
    "run_proxy",
    "serve_proxy",
]

_FROM = {
    "Proxy": "mcp_hooks.proxy.app",
    "ProxyConfigError": "mcp_hooks.proxy.config",
    "ProxySettings": "mcp_hooks.proxy.app",
    "Upstream": "mcp_hooks.proxy.upstream",
    "UpstreamError": "mcp_hooks.proxy.upstream",
    "UpstreamSpec": "mcp_hooks.proxy.config",
    "collect_upstreams": "mcp_hooks.proxy.config",
    "run_proxy": "mcp_hooks.proxy.app",
    "serve_proxy": "mcp_hooks.proxy.app",
}


def __getattr__(name: str) -> Any:
    module = _FROM.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
