"""The control layer: hooks.yaml entries and their oracles, over the same engine.

A layer of the core below ``service``: it knows the event payload, the trust store and the
state folder, nothing of MCP, the command line or any host. The engine asks it, for each
event, ``evaluate(trigger, payload, config=...)`` and merges the signals it returns with
those of the HOOK.md hooks (``signals.py``).

- ``config.py``: hooks.yaml, three layers, validation, ``when``, trust.
- ``context.py``: ``OracleContext``, the event as oracles read it.
- ``oracles/``: the built-in oracles and custom ones (``BUILTIN``, ``build_oracle``).
- ``ladder.py``: progressive intervention (prompt, then control, then block), on disk.
- ``evaluation.py``: one trigger's entries -> signals, failing closed on a broken file.

Names are imported on first use: an engine whose project has no hooks.yaml never loads
the oracles.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_hooks.control.config import (
        TRIGGERS,
        ControlConfig,
        Entry,
        HooksYamlError,
        canonical_trigger,
        config_digest,
        load_config,
        trust_config,
        trust_status,
        user_config_path,
    )
    from mcp_hooks.control.context import Issue, OracleContext
    from mcp_hooks.control.evaluation import evaluate, source_name
    from mcp_hooks.control.ladder import Ladder
    from mcp_hooks.control.oracles import BUILTIN, Oracle, UnknownOracleError, build_oracle

_EXPORTS = {
    "BUILTIN": "mcp_hooks.control.oracles",
    "TRIGGERS": "mcp_hooks.control.config",
    "ControlConfig": "mcp_hooks.control.config",
    "Entry": "mcp_hooks.control.config",
    "HooksYamlError": "mcp_hooks.control.config",
    "Issue": "mcp_hooks.control.context",
    "Ladder": "mcp_hooks.control.ladder",
    "Oracle": "mcp_hooks.control.oracles",
    "OracleContext": "mcp_hooks.control.context",
    "UnknownOracleError": "mcp_hooks.control.oracles",
    "build_oracle": "mcp_hooks.control.oracles",
    "canonical_trigger": "mcp_hooks.control.config",
    "config_digest": "mcp_hooks.control.config",
    "evaluate": "mcp_hooks.control.evaluation",
    "load_config": "mcp_hooks.control.config",
    "source_name": "mcp_hooks.control.evaluation",
    "trust_config": "mcp_hooks.control.config",
    "trust_status": "mcp_hooks.control.config",
    "user_config_path": "mcp_hooks.control.config",
}

__all__ = [
    "BUILTIN", "TRIGGERS", "ControlConfig", "Entry", "HooksYamlError", "Issue",
    "Ladder", "Oracle", "OracleContext", "UnknownOracleError", "build_oracle",
    "canonical_trigger", "config_digest", "evaluate", "load_config", "source_name",
    "trust_config", "trust_status", "user_config_path",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_hooks.control' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
