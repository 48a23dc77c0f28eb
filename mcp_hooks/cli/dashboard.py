"""``mcp-hooks dashboard``: serve the dashboard (``mcp_hooks.dashboard``) over HTTP.

``mcp-hooks dashboard [--state URL] [--host 127.0.0.1] [--port 8750] [--token T] [--root DIR]
[--metrics]`` reads the store ``--state`` (``MCP_HOOKS_STATE``; ``file:``: the event log
``--log`` names) and lists the hooks of each ``--root`` (default the project). The token
rules are ``serve``'s: loopback without a token; any other address only with one (``--token``
or ``MCP_HOOKS_TOKEN``), refused before anything starts (``TransportConfigError``, exit 64).
On a loopback bind only loopback ``Host`` names (and each ``--allowed-host``) are answered
(DNS rebinding). A taken port is ``AddressInUseError`` (exit 1).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio

from mcp_hooks import options
from mcp_hooks.server.transport import TOKEN_ENV, ServeOptions, bind, is_loopback

DEFAULT_PORT = 8750
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


def add_parser(sub: Any) -> None:
    """Declare ``dashboard`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser(
        "dashboard", help="serve the dashboard: activity, hooks, sessions, pending, fleet",
        description="Serve a web dashboard of the event and signal logs of the configured "
        "store (--state), and the hooks of the project. Binds 127.0.0.1 unless told "
        "otherwise; any other address needs a token (docs/dashboard.md).")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; any other address needs a token)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--token", metavar="TOKEN",
                   help=f"require this token (sign-in form, or 'Authorization: Bearer "
                   f"TOKEN'; default ${TOKEN_ENV})")
    p.add_argument("--root", action="append", type=Path, metavar="DIR", default=[],
                   help="a project whose hooks the Hooks page lists (repeatable; default the "
                   "project)")
    p.add_argument("--allowed-host", action="append", metavar="HOST", default=[],
                   help="also answer requests naming this Host (repeatable)")
    p.add_argument("--metrics", action="store_true",
                   help="also serve GET /metrics (Prometheus; needs the metrics extra)")
    options.add_common_options(p)


def command(args: argparse.Namespace) -> int:
    """``mcp-hooks dashboard``: serve until interrupted (130 on Ctrl-C)."""
    settings = options.settings(args, token=getattr(args, "token", None))
    serve = ServeOptions(transport="http", host=args.host, port=args.port,
                         token=settings.token)
    serve.check()  # a public bind without a token, a bad port: refused now
    # lazy: 400 ms (starlette, the dashboard) of cold start for `--help` and usage errors
    from mcp_hooks.dashboard.app import DashboardConfig, dashboard_app, pending_count
    from mcp_hooks.dashboard.source import Source  # lazy: 0 ms more (with the line above)
    from mcp_hooks.metrics import metrics_for  # lazy: 1 ms; prometheus only with --metrics

    metrics = metrics_for(bool(args.metrics), "dashboard")
    source = Source(settings.state, options.log_path(args))
    if metrics is not None:
        metrics.read_from("mcp_hooks_asks_pending", lambda: pending_count(source))
    roots = tuple(args.root) or (options.project_of(settings),)
    hosts = tuple(args.allowed_host) + (LOOPBACK_NAMES if is_loopback(args.host) else ())
    config = DashboardConfig(source, token=settings.token, roots=roots,
                             user_dir=settings.user_dir, metrics=metrics,
                             trust_project_hooks=settings.trust_project_hooks,
                             trust_store=options.registry_trust(settings),
                             managed_dir=settings.managed_dir,
                             allowed_hosts=hosts if is_loopback(args.host) else ())
    sock = bind(serve)
    assert sock is not None
    try:
        anyio.run(_serve, dashboard_app(config), serve, sock)
    except KeyboardInterrupt:
        return 130
    finally:
        sock.close()
        source.close()
    return 0


async def _serve(app: Any, serve: ServeOptions, sock: Any) -> None:
    """Serve ``app`` on ``sock``; say where once it listens."""
    # lazy: 240 ms (uvicorn), only when the dashboard starts
    import uvicorn

    config = uvicorn.Config(app, log_config=None, log_level="warning", lifespan="off",
                            timeout_graceful_shutdown=2)
    web = uvicorn.Server(config)
    port = sock.getsockname()[1]
    host = f"[{serve.host}]" if ":" in serve.host else serve.host
    auth = "token required" if serve.token else "no token"
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: web.serve(sockets=[sock]))
        while not web.started:
            await anyio.sleep(0.01)
        print(f"mcp-hooks dashboard: serving at http://{host}:{port}/activity ({auth})",
              file=sys.stderr, flush=True)


__all__ = ["DEFAULT_PORT", "add_parser", "command"]
