"""``mcp-hooks proxy``: serve the tools of upstream MCP servers, every call gated by the hooks.

This module is the proxy's command line: it declares the ``proxy`` options (the transport
options are ``serve``'s: ``cli.serve.add_transport_arguments``), turns the parsed arguments
into :class:`ProxyOptions` (:func:`options_from_args`), and :func:`run` serves from those
alone, through ``mcp_hooks.proxy.app.serve_proxy``.

Refused before anything starts, as a ``ProxyConfigError`` or ``TransportConfigError``
(exit 64): a config file or ``--upstream`` that cannot be used, no upstream at all, a
``--timeout`` or ``--startup-timeout`` that is not a positive number, a public bind without
a token. A taken port is ``AddressInUseError`` (exit 1). Errors are raised to the command
boundary (:func:`mcp_hooks.cli.main`), which prints them on one line.

``MCP_HOOKS_PROXY_STDIO=sdk`` serves and reaches stdio with the SDK's own transports instead
of the hand-written ones (``ProxySettings.fast_stdio``); ``bench/bench_proxy.py`` compares.
``MCP_HOOKS_PROXY_HTTP=sdk`` does the same for streamable HTTP (``ProxySettings.fast_http``:
``proxy/http_fast.py``, ``proxy/upstream_http.py``); ``bench/bench_peer.py`` compares.

Started from a terminal (stdin a TTY) on stdio, it first says on stderr that it waits for an
MCP client and how to connect one (``cli.serve.announce_stdio``); over HTTP/SSE the
transport announces the URLs that reach it.

Importing this module imports no MCP SDK: the parser is built on every ``proxy`` start.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hooks import options
from mcp_hooks.cli.serve import (
    add_metrics_argument,
    add_otel_argument,
    add_transport_arguments,
    announce_stdio,
    needs_http,
    transport_options,
)
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.server.transport import ServeOptions
from mcp_hooks.settings import Settings

if TYPE_CHECKING:
    from mcp_hooks.proxy.app import ProxySettings
    from mcp_hooks.proxy.config import UpstreamSpec

STDIO_ENV = "MCP_HOOKS_PROXY_STDIO"  # "sdk": the SDK's stdio transports (read by settings)
DEFAULT_PORT = 8766
DEFAULT_TIMEOUT = 60.0  # as proxy.upstream's; repeated so that --help imports no SDK
DEFAULT_STARTUP_TIMEOUT = 30.0


def add_parser(sub: Any) -> None:
    """Declare ``proxy`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser(
        "proxy", help="gate every tool of upstream MCP servers through the hooks",
        description="Serve the tools, resources and prompts of upstream MCP servers; every "
        "tools/call passes through the before_tool / after_tool hooks first.",
    )
    up = p.add_argument_group("upstream servers")
    up.add_argument("--config", type=Path, metavar="FILE",
                    help="an mcpServers JSON file (Claude Desktop, .mcp.json, Cursor, VS Code)")
    up.add_argument("--upstream", action="append", metavar="NAME=COMMAND", default=[],
                    help="one more upstream without a file: NAME='command args' (stdio) or "
                    "NAME=https://host/mcp (streamable HTTP); repeatable")
    up.add_argument("--prefix", action="store_true",
                    help="prefix every tool and prompt <server>__ (default: only on collisions)")
    up.add_argument("--timeout", type=float, metavar="SECONDS", default=DEFAULT_TIMEOUT,
                    help=f"how long one upstream call may take (default {DEFAULT_TIMEOUT:g})")
    up.add_argument("--startup-timeout", type=float, metavar="SECONDS",
                    default=DEFAULT_STARTUP_TIMEOUT,
                    help="how long an upstream may take to start "
                    f"(default {DEFAULT_STARTUP_TIMEOUT:g})")
    add_transport_arguments(p, default_port=DEFAULT_PORT)
    add_otel_argument(p)
    add_metrics_argument(p)
    options.add_common_options(p)


@dataclass(frozen=True)
class ProxyOptions:
    """Everything ``proxy`` needs, typed: the upstreams, how to treat and serve them, and
    which hooks.

    Attributes:
        upstreams: the upstream servers (config file, then ``--upstream``).
        settings: prefixes, timeouts, the stdio switch.
        serve: transport, address, token and HTTP settings.
        hooks: the project, user folder, log, ``on_fault``, stop cap and trust
            (``Settings``).
        metrics: also serve ``GET /metrics`` (``--metrics``).
    """

    upstreams: tuple[UpstreamSpec, ...]
    settings: ProxySettings
    serve: ServeOptions
    hooks: Settings
    metrics: bool = False

    @property
    def project_dir(self) -> Path:
        """The project whose hooks gate the calls."""
        return options.project_of(self.hooks)


def options_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> ProxyOptions:
    """The options the command line (and the environment, read by ``Settings.from_env``)
    give.

    Raises:
        ProxyConfigError: the upstreams or timeouts cannot be used.
        ConfigError: a bad setting (its flag or variable named).
    """
    # lazy: 2,200 ms (the MCP SDK) of cold start for `--help` and usage errors
    from mcp_hooks.proxy.app import ProxySettings

    # lazy: 300 ms of cold start for `--help` and usage errors
    from mcp_hooks.proxy.config import ProxyConfigError, collect_upstreams

    hooks = options.settings(args, environ, token=getattr(args, "token", None),
                             otel=getattr(args, "otel", None), door="proxy")
    specs = collect_upstreams(args.config, args.upstream or [])
    for option in ("timeout", "startup_timeout"):
        value = getattr(args, option, None)
        if value is not None and not value > 0:
            raise ProxyConfigError(f"--{option.replace('_', '-')} must be a positive number "
                                   f"of seconds, not {value:g}")
    settings = ProxySettings(
        prefix_all=bool(args.prefix),
        timeout=float(getattr(args, "timeout", None) or DEFAULT_TIMEOUT),
        startup_timeout=float(getattr(args, "startup_timeout", None) or DEFAULT_STARTUP_TIMEOUT),
        fast_stdio=hooks.fast_proxy_stdio,
        fast_http=hooks.fast_proxy_http,
    )
    metrics = bool(getattr(args, "metrics", False))
    return ProxyOptions(
        upstreams=tuple(specs),
        settings=settings,
        serve=transport_options(args, settings=hooks),
        hooks=hooks,
        metrics=metrics,
    )


def command(args: argparse.Namespace) -> int:
    """``mcp-hooks proxy``."""
    opts = options_from_args(args)
    announce_stdio("proxy", opts.serve.transport)
    return run(opts)


def run(opts: ProxyOptions) -> int:
    """Serve the upstreams, gated, until the client goes (stdio) or the process is stopped.

    Returns:
        0 when the client went away or the proxy was stopped.

    Raises:
        TransportConfigError: the transport options must not be served.
        AddressInUseError: HTTP/SSE: the host and port are taken.
    """
    # lazy: 2,200 ms (the MCP SDK) of cold start for `--help` and usage errors
    from mcp_hooks.proxy.app import serve_proxy

    opts.serve.check()
    needs_http(opts.serve, {"metrics": opts.metrics})
    # lazy: 1 ms; prometheus-client itself only with --metrics (exit 64 without the extra)
    from mcp_hooks.metrics import metrics_for, metrics_routes, together

    metrics = metrics_for(opts.metrics, "proxy")
    settings = dataclasses.replace(opts.settings, routes=tuple(metrics_routes(metrics)))
    registry = Registry(opts.hooks.user_dir, opts.project_dir,
                        trust_project_hooks=opts.hooks.trust_project_hooks,
                        trust_store=options.registry_trust(opts.hooks),  # --state's too
                        managed_dir=opts.hooks.managed_dir)
    # lazy: 1 ms; OpenTelemetry itself only with --otel (exit 64 without the extra)
    from mcp_hooks.tracing import close_observer, observer_for

    observer = observer_for(opts.hooks)
    try:
        serve_proxy(opts.upstreams, settings=settings, serve_options=opts.serve,
                    registry=registry, hooks=opts.hooks, observer=together(observer, metrics))
    finally:
        close_observer(observer)  # the spans still queued are sent
    return 0
