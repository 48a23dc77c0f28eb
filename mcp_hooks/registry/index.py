"""The run order of hooks and the per-event index a ``Registry`` selects from.

``run_order`` is the chain's order: managed hooks first whatever their priority, then priority
descending, user before project, name; ``build_index`` groups the hooks of each event with
tool-name lookups for literal matchers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_hooks.spec.hookfile import HookSpec


@dataclass
class EventIndex:
    """Hooks of one canonical event, in run order, with tool-name lookups for literal matchers."""

    hooks: list[HookSpec] = field(default_factory=list)
    by_tool: dict[str, list[HookSpec]] = field(default_factory=dict)
    generic: list[HookSpec] = field(default_factory=list)
    rank: dict[str, int] = field(default_factory=dict)
    patterns: bool = False  # some hook searches the tool input


_SCOPE_RANK = {"managed": 0, "user": 0, "project": 1}


def run_order(hook: HookSpec) -> tuple[int, int, int, str]:
    """Sort key of sync hooks: managed hooks first, whatever their priority; then priority
    descending, then user before project, then name.

    A Python callable (``callables.CallableHook``) brings its own key: after both at equal
    priority, instance ones before class ones, each in registration order.
    """
    if type(hook) is HookSpec:
        return (hook.scope != "managed", -hook.priority, _SCOPE_RANK[hook.scope], hook.name)
    key: tuple[int, int, str] = getattr(hook, "order_key", None) or (
        -hook.priority, _SCOPE_RANK.get(hook.scope, 1), hook.name)
    return (1, *key)


def runs_after(candidate: HookSpec, rewriter: HookSpec) -> bool:
    """Whether ``candidate`` runs on the input ``rewriter`` just rewrote: a hook later in run
    order, or a managed hook again when a lower layer's hook rewrote (no user or project hook
    gets a call past the managed hooks by rewriting it after they allowed it)."""
    if candidate.scope == "managed" and rewriter.scope not in ("managed", None):
        return True
    return run_order(candidate) > run_order(rewriter)


def build_index(hooks: list[HookSpec]) -> dict[str, EventIndex]:
    index: dict[str, EventIndex] = {}
    for rank, hook in enumerate(hooks):
        entry = index.setdefault(hook.event, EventIndex())
        entry.hooks.append(hook)
        entry.rank[hook.name] = rank
        entry.patterns = entry.patterns or hook.matcher_pattern is not None
        if hook.tool_names is not None:
            for name in hook.tool_names:
                entry.by_tool.setdefault(name, []).append(hook)
        else:
            entry.generic.append(hook)
    return index
