"""``mcp-hooks serve``: serve the hooks as an MCP server over stdio, streamable HTTP or SSE.

This module is the command line of the MCP server: it declares the ``serve`` options (and the
transport options, which ``proxy`` shares: :func:`add_transport_arguments`), turns the parsed
arguments into :class:`ServerOptions` (:func:`options_from_args`; the transport part alone is
:func:`transport_options`), and :func:`run` serves from those alone, through
``mcp_hooks.server.app.serve_hooks``.

Refused before anything starts, as a ``UsageError`` or ``TransportConfigError`` (exit 64): a
public bind without a token, a ``--root`` that is not a folder, and a server started in ``/``
with no project named (every folder on the machine would be a root, so any folder's
``.agents/hooks`` could be made to run; ``--root /`` is still accepted when asked for). A
taken port is ``AddressInUseError`` (exit 1). Errors are raised to the command boundary
(:func:`mcp_hooks.cli.main`), which prints them on one line.

Over stdio from pipes the server reads and writes on the event loop (the proxy's downstream
transport); ``MCP_HOOKS_SERVE_STDIO=sdk`` switches back to the SDK's ``stdio_server``
(``ServeOptions.fast_stdio``), and ``bench/bench_server.py`` measures both.

Started from a terminal (stdin a TTY) on stdio, it first says on stderr that it waits for an
MCP client and how to connect one (:func:`waiting_for_client`): a person who typed
``mcp-hooks serve`` is not left looking at nothing. Over HTTP/SSE the transport announces the
URLs that reach the server (for ``--host 0.0.0.0``, this machine's addresses too).

Importing this module imports no MCP SDK: the parser is built on every ``serve`` start.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio

from mcp_hooks import options, paths
from mcp_hooks.errors import UsageError
from mcp_hooks.registry.signing import unsigned_warning
from mcp_hooks.server.transport import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    LOG_LEVELS,
    TOKEN_ENV,
    ServeOptions,
    TransportName,
    configure_logging,
)
from mcp_hooks.settings import Settings
from mcp_hooks.state.exposure import open_warnings
from mcp_hooks.state.remote import redact
from mcp_hooks.state.url import replica_name, scheme

EXIT_INTERRUPTED = 130
STDIO_ENV = "MCP_HOOKS_SERVE_STDIO"  # "sdk": the SDK's stdio transport (read by settings)


def add_transport_arguments(
    parser: argparse.ArgumentParser, *, default_port: int = DEFAULT_PORT
) -> None:
    """Declare the transport options on a command's parser (``serve``, ``proxy``)."""
    group = parser.add_argument_group("transport")
    group.add_argument(
        "--transport", choices=("stdio", "http", "sse"), default="stdio",
        help="stdio (default), streamable HTTP at /mcp, or SSE at /sse",
    )
    group.add_argument(
        "--host", default=DEFAULT_HOST,
        help=f"address to bind for http/sse (default {DEFAULT_HOST}; any other address "
        "needs a token)",
    )
    group.add_argument(
        "--port", type=int, default=default_port,
        help=f"port for http/sse (default {default_port}; 0 picks a free one)",
    )
    group.add_argument(
        "--token", metavar="TOKEN",
        help=f"require 'Authorization: Bearer TOKEN' on http/sse (default ${TOKEN_ENV})",
    )
    group.add_argument(
        "--stateless", action="store_true",
        help="stateless streamable HTTP, for replicas behind a load balancer",
    )
    group.add_argument(
        "--allowed-host", action="append", metavar="HOST", default=[],
        help="accept this Host header (repeatable): DNS-rebinding protection when the "
        "server is reached by a real hostname",
    )
    group.add_argument(
        "--log-level", default="WARNING", type=str.upper, choices=LOG_LEVELS,
        help="stderr log level (default WARNING)",
    )


def transport_options(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None,
    settings: Settings | None = None,
) -> ServeOptions:
    """The ``ServeOptions`` a parsed command line (and ``MCP_HOOKS_TOKEN``,
    ``MCP_HOOKS_SERVE_STDIO``, through ``settings``) describe."""
    if settings is None:
        settings = options.settings(args, environ, token=getattr(args, "token", None))
    return ServeOptions(
        transport=cast(TransportName, getattr(args, "transport", "stdio")),
        host=getattr(args, "host", DEFAULT_HOST),
        port=getattr(args, "port", DEFAULT_PORT),
        token=settings.token,
        stateless=bool(getattr(args, "stateless", False)),
        allowed_hosts=tuple(getattr(args, "allowed_host", None) or ()),
        log_level=str(getattr(args, "log_level", "WARNING")).upper(),
        fast_stdio=settings.fast_serve_stdio,
    )


def add_otel_argument(parser: argparse.ArgumentParser) -> None:
    """Declare ``--otel`` (``serve``, ``proxy``: ``tracing.py``)."""
    parser.add_argument("--otel", action="store_true", default=None,
                        help="send a span per event and per hook run over OTLP/HTTP to "
                        "OTEL_EXPORTER_OTLP_ENDPOINT (needs the otel extra: pip install "
                        "'.[otel]' in a checkout; or MCP_HOOKS_OTEL=1)")


def add_metrics_argument(parser: argparse.ArgumentParser) -> None:
    """Declare ``--metrics`` (``serve``, ``proxy``: ``metrics.py``)."""
    parser.add_argument("--metrics", action="store_true",
                        help="serve GET /metrics in the Prometheus format (http/sse; behind "
                        "the token; needs the metrics extra: pip install 'mcp-hooks[metrics]')")


def needs_http(opts: ServeOptions, flags: dict[str, bool]) -> None:
    """Refuse ``--metrics``/``--dashboard`` on stdio, where nothing could reach them."""
    asked = [f"--{name}" for name, on in flags.items() if on]
    if asked and opts.transport == "stdio":
        raise UsageError(f"{' and '.join(asked)} need --transport http or sse (over stdio "
                         "there is no HTTP to serve them on)")


def add_parser(sub: Any) -> None:
    """Declare ``serve`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser(
        "serve", help="run the MCP server (stdio, streamable HTTP or SSE)",
        description="Serve fire_hook_event, list_hooks, get_hook and the hooks:// resources "
        "over MCP. HTTP and SSE bind 127.0.0.1 unless told otherwise; any other address "
        "needs a token (--token or MCP_HOOKS_TOKEN).",
    )
    add_transport_arguments(p)
    p.add_argument("--root", action="append", type=Path, metavar="DIR", default=[],
                   help="a folder whose subfolders clients may name as work_dir "
                   "(repeatable; default the project dir)")
    p.add_argument("--bridge-tool", action="store_true",
                   help="also serve bridge_hook, the tool Claude Code mcp_tool hooks call "
                   "(mcp-hooks install claude-code --via mcp)")
    p.add_argument("--ask-tools", action="store_true",
                   help="also serve pending_asks, approve_ask and refuse_ask, for an "
                   "operator's MCP client (never on a server agents use: they could approve "
                   "their own asks; docs/ask.md)")
    add_otel_argument(p)
    add_metrics_argument(p)
    p.add_argument("--dashboard", action="store_true",
                   help="also serve the dashboard at /dashboard (http/sse; the same token "
                   "rules; docs/dashboard.md)")
    replica = p.add_argument_group("replicas (docs/deploy.md)")
    replica.add_argument("--replica-id", metavar="NAME",
                         help="the name stamped as `replica` on every record this server "
                         "writes (default hostname:pid, or MCP_HOOKS_REPLICA_ID)")
    replica.add_argument("--no-watch", action="store_true",
                         help="list the hooks folders once at start, never again (a folder "
                         "shipped read-only per deploy; or MCP_HOOKS_WATCH=0); a project hook "
                         "is still checked against its trust before each run")
    options.add_common_options(p)


@dataclass(frozen=True)
class ServerOptions:
    """Everything ``serve`` needs, typed: how to serve and which hooks.

    Attributes:
        serve: transport, address, token and HTTP settings.
        settings: the project, user folder, log, ``on_fault``, stop cap, trust and secrets
            (``Settings``; the server's token is among its secrets).
        roots: folders clients may name (subfolders of) as ``work_dir``; empty: the project.
        bridge_tool: also serve ``bridge_hook`` (Claude Code ``mcp_tool`` hooks).
        ask_tools: also serve the operator's ask tools (``server/asks.py``).
        metrics: also serve ``GET /metrics`` (``metrics.py``).
        dashboard: also serve the dashboard at ``/dashboard`` (``mcp_hooks.dashboard``).
    """

    serve: ServeOptions
    settings: Settings
    roots: tuple[Path, ...] = ()
    bridge_tool: bool = False
    ask_tools: bool = False
    metrics: bool = False
    dashboard: bool = False

    @property
    def project_dir(self) -> Path:
        """The default project (a call naming no ``work_dir``)."""
        return options.project_of(self.settings)


def options_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> ServerOptions:
    """The options the command line (and the environment, read by ``Settings.from_env``)
    give. Raises ConfigError for a bad value, naming its flag or variable."""
    settings = options.settings(args, environ, token=getattr(args, "token", None),
                                otel=getattr(args, "otel", None), door="serve",
                                replica_id=getattr(args, "replica_id", None),
                                watch=False if getattr(args, "no_watch", False) else None)
    settings = dataclasses.replace(settings, project_dir=options.project_of(settings),
                                   replica_id=settings.replica_id or replica_name())
    return ServerOptions(
        serve=transport_options(args, settings=settings),
        settings=settings,
        roots=tuple(Path(r).expanduser() for r in (getattr(args, "root", None) or [])),
        bridge_tool=bool(getattr(args, "bridge_tool", False)),
        ask_tools=bool(getattr(args, "ask_tools", False)),
        metrics=bool(getattr(args, "metrics", False)),
        dashboard=bool(getattr(args, "dashboard", False)),
    )


def waiting_for_client(command: str, argv: Sequence[str]) -> str:
    """The line ``serve``/``proxy`` print when started on stdio from a terminal: they wait
    for an MCP client there, and how to connect one (the command line as run, given to
    ``claude mcp add``)."""
    line = shlex.join(["claude", "mcp", "add", "mcp-hooks", "--", "mcp-hooks", *argv])
    return (f"mcp-hooks {command}: waiting for an MCP client on stdio (JSON-RPC on stdin), "
            f"not for typing. Let a client start it, e.g. `{line}`, or serve over HTTP with "
            f"--transport http (see docs/server.md). Ctrl-C stops it.")


def unspread(serve: ServeOptions, state: str) -> str | None:
    """The warning for a shared ``--state`` served over a transport whose sessions live in
    one process (streamable HTTP without ``--stateless``, SSE): a load balancer cannot
    spread them over replicas. None when there is nothing to say."""
    if state == "file:" or serve.transport == "stdio" or (
            serve.transport == "http" and serve.stateless):
        return None
    how = ("--transport sse keeps each client's stream" if serve.transport == "sse" else
           "--transport http without --stateless keeps each MCP session")
    return (f"mcp-hooks serve: warning: --state is a shared store, but {how} on the replica "
            "that opened it, so a load balancer cannot spread the clients over replicas; "
            "serve replicas with --transport http --stateless (docs/deploy.md)")


def store_warnings(settings: Settings) -> list[str]:
    """What ``serve`` says at start about a shared store: one anyone who can reach may write
    (no password; a Redis that needs none), trust records left unsigned (no
    ``MCP_HOOKS_TRUST_KEY``). Each one line naming its fix; none for ``file:``."""
    if scheme(settings.state) == "file":
        return []
    found = open_warnings(settings.state)
    if settings.trust_key is None and not settings.trust_project_hooks:
        found.append(unsigned_warning(f"the state store {redact(settings.state)}"))
    return [f"mcp-hooks serve: warning: {line}" for line in found]


def announce_stdio(command: str, transport: str) -> None:
    """Print :func:`waiting_for_client` when serving stdio with stdin on a terminal."""
    if transport == "stdio" and sys.stdin.isatty():
        argv = sys.argv[1:] if command in sys.argv[1:] else [command]
        print(waiting_for_client(command, argv), file=sys.stderr, flush=True)


def command(args: argparse.Namespace) -> int:
    """``mcp-hooks serve``."""
    opts = options_from_args(args)
    announce_stdio("serve", opts.serve.transport)
    return run(opts)


def extra_routes(opts: ServerOptions, service: Any, metrics: Any) -> list[Any]:
    """``GET /metrics`` (``--metrics``) and the dashboard mounted at ``/dashboard``
    (``--dashboard``), for ``serve_hooks``; its gauges read ``service``'s store."""
    # lazy: 1 ms of cold start for `--help` and usage errors
    from mcp_hooks.metrics import metrics_routes

    # lazy: 1 ms of cold start for `--help` and usage errors
    from mcp_hooks.state.spool import failures, spooled

    routes: list[Any] = metrics_routes(metrics)
    if metrics is not None:
        metrics.read_from("mcp_hooks_store_errors", lambda: failures(service.store))
        metrics.read_from("mcp_hooks_spooled_records", lambda: spooled(service.store))
    if opts.dashboard:
        # lazy: 60 ms (the dashboard's modules), only with --dashboard
        from starlette.routing import Mount

        from mcp_hooks.dashboard.app import (  # lazy: 0 ms more (as above)
            DashboardConfig,
            dashboard_app,
            pending_count,
        )
        from mcp_hooks.dashboard.source import Source  # lazy: 0 ms more (as above)
        from mcp_hooks.server.transport import DASHBOARD_PATH  # lazy: 0 ms more (as above)

        settings = opts.settings
        source = Source(settings.state, settings.log_read or paths.log_path())
        config = DashboardConfig(source, token=opts.serve.token,
                                 roots=tuple(opts.roots) or (opts.project_dir,),
                                 user_dir=settings.user_dir, metrics=metrics,
                                 trust_project_hooks=settings.trust_project_hooks,
                                 trust_store=options.trust_store_of(settings, service.store),
                                 managed_dir=settings.managed_dir)
        routes.append(Mount(DASHBOARD_PATH, app=dashboard_app(config)))
        if metrics is not None:
            metrics.read_from("mcp_hooks_asks_pending", lambda: pending_count(source))
    return routes


def run(opts: ServerOptions) -> int:
    """Serve until the client disconnects (stdio) or the process is stopped (HTTP/SSE).

    Returns:
        0 when the client went away or the server was stopped, 130 on Ctrl-C.

    Raises:
        TransportConfigError: the transport options must not be served.
        UsageError: no project to serve (started in ``/``), or a root that is not a folder.
        AddressInUseError: HTTP/SSE: the host and port are taken.
    """
    opts.serve.check()
    needs_http(opts.serve, {"metrics": opts.metrics, "dashboard": opts.dashboard})

    configure_logging(opts.serve.log_level)
    roots = [Path(os.path.realpath(r)) for r in opts.roots]
    if not roots and Path(os.path.realpath(opts.project_dir)) == Path("/"):
        raise UsageError(
            "no project to serve: the server was started in / and would accept any folder as "
            "work_dir; pass --project-dir DIR (or --root DIR)")
    for root in roots:
        if not root.is_dir():
            raise UsageError(f"--root {root} is not an existing folder")

    # lazy: 1 ms; prometheus-client itself only with --metrics (exit 64 without the extra)
    from mcp_hooks.metrics import metrics_for, together  # lazy: 1 ms, as said above

    # lazy: 2,200 ms (the MCP SDK) of cold start for `--help` and usage errors
    from mcp_hooks.server.app import serve_hooks

    # lazy: 30 ms of cold start for `--help` and usage errors
    from mcp_hooks.service import HookService

    # lazy: 1 ms; OpenTelemetry itself only with --otel (exit 64 without the extra)
    from mcp_hooks.tracing import close_observer, observer_for

    metrics = metrics_for(opts.metrics, "serve")
    observer = observer_for(opts.settings)
    if observer is not None:
        observer.flush_on_sigterm()
    try:
        service = HookService(opts.settings, roots=roots,
                              observer=together(observer, metrics))  # store reached
        routes = extra_routes(opts, service, metrics)
        for warning in [unspread(opts.serve, opts.settings.state),
                        *store_warnings(opts.settings)]:
            if warning is not None:
                print(warning, file=sys.stderr, flush=True)
        anyio.run(lambda: serve_hooks(service, opts.serve, bridge_tool=opts.bridge_tool,
                                      ask_tools=opts.ask_tools, routes=routes))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    finally:
        close_observer(observer)  # the spans still queued are sent (SIGTERM included)
    return 0
