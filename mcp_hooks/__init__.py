"""mcp-hooks: run HOOK.md lifecycle hooks for any AI agent.

The engine is a plain library: a ``Registry`` finds hooks, an ``Engine`` fires an ``Event``
at them and returns one ``Outcome``; a ``StopGuard`` (the ``before_stop`` loop guard) may be
passed to the ``Engine``, and ``Settings`` (one record: flags, then ``MCP_HOOKS_*``) reaches
``Engine``, ``HookService`` and ``Hooks``. The MCP server, the command line, the gating
proxy and the host bridges are thin adapters over it.

Names are imported on first use, so ``mcp-hooks fire`` and the host bridges (a new process
per event) load only the modules they need.
"""

from __future__ import annotations

import importlib

# Not typing's TYPE_CHECKING (mypy honours this name): a Python hook imports this package for
# mcp_hooks.hookkit, and typing alone would add about 5 ms to every one-shot hook run.
TYPE_CHECKING = False

__version__ = "0.1.0"

_EXPORTS = {
    "Ask": "mcp_hooks.spec.asking",
    "AskAnswer": "mcp_hooks.spec.asking",
    "AskRequest": "mcp_hooks.spec.asking",
    "EVENTS": "mcp_hooks.spec.events",
    "Engine": "mcp_hooks.engine.engine",
    "Event": "mcp_hooks.spec.outcome",
    "EventLog": "mcp_hooks.state.eventlog",
    "HookFileError": "mcp_hooks.errors",
    "HookRun": "mcp_hooks.spec.outcome",
    "Hooks": "mcp_hooks.api",
    "HookSpec": "mcp_hooks.spec.hookfile",
    "InvalidEventError": "mcp_hooks.errors",
    "InvalidHook": "mcp_hooks.registry.folders",
    "MCPHooksError": "mcp_hooks.errors",
    "Outcome": "mcp_hooks.spec.outcome",
    "Registry": "mcp_hooks.registry.discovery",
    "Settings": "mcp_hooks.settings",
    "StopGuard": "mcp_hooks.engine.stopguard",
    "UnknownEventError": "mcp_hooks.errors",
    "afire": "mcp_hooks.api",
    "canonical_event": "mcp_hooks.spec.events",
    "default_log_path": "mcp_hooks.state.eventlog",
    "default_user_dir": "mcp_hooks.registry.discovery",
    "fire": "mcp_hooks.api",
    "load_hook": "mcp_hooks.spec.hookfile",
    "project_hooks_dir": "mcp_hooks.registry.discovery",
}

__all__ = [  # noqa: RUF022 - plain sorted() order (tests/test_public_api.py), not isort's
    "Ask",
    "AskAnswer",
    "AskRequest",
    "EVENTS",
    "Engine",
    "Event",
    "EventLog",
    "HookFileError",
    "HookRun",
    "HookSpec",
    "Hooks",
    "InvalidEventError",
    "InvalidHook",
    "MCPHooksError",
    "Outcome",
    "Registry",
    "Settings",
    "StopGuard",
    "UnknownEventError",
    "__version__",
    "afire",
    "canonical_event",
    "default_log_path",
    "default_user_dir",
    "fire",
    "load_hook",
    "project_hooks_dir",
]

if TYPE_CHECKING:
    from typing import Any

    from mcp_hooks.api import Hooks, afire, fire
    from mcp_hooks.engine.engine import Engine
    from mcp_hooks.engine.stopguard import StopGuard
    from mcp_hooks.errors import (
        HookFileError,
        InvalidEventError,
        MCPHooksError,
        UnknownEventError,
    )
    from mcp_hooks.registry.discovery import (
        Registry,
        default_user_dir,
        project_hooks_dir,
    )
    from mcp_hooks.registry.folders import InvalidHook
    from mcp_hooks.settings import Settings
    from mcp_hooks.spec.asking import Ask, AskAnswer, AskRequest
    from mcp_hooks.spec.events import EVENTS, canonical_event
    from mcp_hooks.spec.hookfile import HookSpec, load_hook
    from mcp_hooks.spec.outcome import Event, HookRun, Outcome
    from mcp_hooks.state.eventlog import EventLog, default_log_path


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_hooks' has no attribute {name!r}")

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
