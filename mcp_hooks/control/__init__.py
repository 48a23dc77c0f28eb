"""The control layer: hooks.yaml entries and their oracles, over the same engine.

A layer of the core below ``service``: it knows the event payload, the trust store and the
state folder, nothing of MCP, the command line or any host. The engine asks it, for each
event, ``evaluate(trigger, payload, config=...)`` and merges the signals it returns with
those of the HOOK.md hooks (``signals.py``).

- ``config.py``: hooks.yaml, three layers, validation, ``when``, trust.
- ``context.py``: ``OracleContext``, the event as oracles read it.
- ``oracles/``: the built-in oracles and custom ones (``BUILTIN``, ``build_oracle``).
- ``ladder.py``: progressive intervention (prompt, then control, then block), on disk.
- ``evaluate.py``: one trigger's entries -> signals, failing closed on a broken file.
"""

from __future__ import annotations

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
from mcp_hooks.control.evaluate import evaluate, source_name
from mcp_hooks.control.ladder import Ladder
from mcp_hooks.control.oracles import BUILTIN, Oracle, UnknownOracleError, build_oracle

__all__ = [
    "BUILTIN", "TRIGGERS", "ControlConfig", "Entry", "HooksYamlError", "Issue", "Ladder",
    "Oracle", "OracleContext", "UnknownOracleError", "build_oracle", "canonical_trigger",
    "config_digest", "evaluate", "load_config", "source_name", "trust_config", "trust_status",
    "user_config_path",
]
