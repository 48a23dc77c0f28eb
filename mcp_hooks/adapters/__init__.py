"""Adapters that wire mcp-hooks into agent frameworks (one module per framework).

Each adapter is an optional extra (``pip install 'mcp-hooks[<extra>]'``): it imports its
framework, and nothing in the package imports an adapter, so ``import mcp_hooks`` never
loads a framework. Imported without its framework, an adapter raises
:class:`MissingExtraError`, whose message names the extra to install.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mcp_hooks.errors import MissingExtraError

# adapter module -> (its extra, the framework it needs)
EXTRAS: dict[str, tuple[str, str]] = {
    "mcp_hooks.adapters.langchain": ("langchain", "LangChain 1.x"),
    "mcp_hooks.adapters.openai_agents": ("openai-agents", "the OpenAI Agents SDK"),
    "mcp_hooks.adapters.agentscope": ("agentscope", "AgentScope 1.0.x"),
    "mcp_hooks.adapters.agentscope_middleware": ("agentscope2", "AgentScope 2.x"),
}


@contextmanager
def requires_framework(module: str) -> Iterator[None]:
    """Around an adapter's framework imports: a module not found becomes a
    :class:`MissingExtraError` naming the adapter's extra."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if isinstance(exc, MissingExtraError):
            raise
        raise MissingExtraError(module, exc, *EXTRAS.get(module, ("", "its framework"))) from exc


__all__ = ["EXTRAS", "MissingExtraError", "requires_framework"]
