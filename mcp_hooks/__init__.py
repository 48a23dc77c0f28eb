"""mcp-hooks: run HOOK.md lifecycle hooks for any AI agent.

The engine is a plain library: a ``Registry`` finds hooks, an ``Engine`` fires an ``Event``
at them and returns one ``Outcome``. The MCP server, the command line, the gating proxy and
the host bridges are thin adapters over it.
"""

from __future__ import annotations

from mcp_hooks.discovery import InvalidHook, Registry, default_user_dir, project_hooks_dir
from mcp_hooks.engine import Engine, Event, HookRun, Outcome
from mcp_hooks.errors import HookFileError, InvalidEventError, MCPHooksError, UnknownEventError
from mcp_hooks.eventlog import EventLog, default_log_path
from mcp_hooks.events import EVENTS, canonical_event
from mcp_hooks.hookfile import HookSpec, load_hook

__version__ = "0.1.0"

__all__ = [
    "EVENTS",
    "Engine",
    "Event",
    "EventLog",
    "HookFileError",
    "HookRun",
    "HookSpec",
    "InvalidEventError",
    "InvalidHook",
    "MCPHooksError",
    "Outcome",
    "Registry",
    "UnknownEventError",
    "__version__",
    "canonical_event",
    "default_log_path",
    "default_user_dir",
    "load_hook",
    "project_hooks_dir",
]
