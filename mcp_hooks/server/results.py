"""The structured results of ``list_hooks``, ``get_hook`` and ``hooks://index``: pydantic
models (the tools' output schemas are published from them) and the functions that fill them
from a ``Registry``.

A listing shows every hook with its ``trust`` (``trusted``, ``untrusted``, ``changed``; the
untrusted ones with the ``fix`` command), ``replaces`` for a trusted project hook that replaces
a user hook, and invalid hooks with the ``event`` they could have handled. The words of the
schemas live in ``prompts.RESULT_FIELDS``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mcp_hooks import matching
from mcp_hooks.discovery import Registry, UntrustedHook
from mcp_hooks.events import TOOL_EVENTS
from mcp_hooks.hookfile import HookSpec
from mcp_hooks.server.prompts import RESULT_FIELDS as WORDS
from mcp_hooks.service import HookText


class HookInfo(BaseModel):
    """A hook's metadata, as listings show it (no prose, no script)."""

    model_config = ConfigDict(populate_by_name=True)

    name: str
    description: str
    trigger: str = Field(description=WORDS["trigger"])
    event: str = Field(description=WORDS["event"])
    scope: str = Field(description=WORDS["scope"])
    priority: int
    is_async: bool = Field(alias="async")
    timeout: int = Field(description=WORDS["timeout"])
    matcher: dict[str, str] | None = None
    on_error: str = Field(description=WORDS["on_error"])
    trust: str = Field(default="trusted", description=WORDS["trust"])
    fix: str | None = Field(default=None, description=WORDS["fix"])
    replaces: str | None = Field(default=None, description=WORDS["replaces"])

    @classmethod
    def of(cls, hook: HookSpec, registry: Registry | None = None) -> HookInfo:
        data = hook.frontmatter()
        if registry is not None and hook.scope == "project":
            user = registry.replaced.get(hook.name)
            if user is not None and registry.get(hook.name) is hook:
                data["replaces"] = str(user.dir)
        return cls.model_validate(data)

    @classmethod
    def held(cls, untrusted: UntrustedHook) -> HookInfo:
        return cls.model_validate(untrusted.spec.frontmatter() | {
            "trust": untrusted.status, "fix": untrusted.fix})


class InvalidHookInfo(BaseModel):
    """A hook folder that could not be loaded, and why."""

    name: str
    scope: str
    file: str
    field: str | None
    reason: str
    event: str | None = Field(default=None, description=WORDS["invalid_event"])
    in_scope: bool = Field(default=True, description=WORDS["in_scope"])


class HookListing(BaseModel):
    """The hooks of a project (user and project level, with their trust), and the ones that
    failed to load."""

    hooks: list[HookInfo]
    invalid: list[InvalidHookInfo]
    warnings: list[str] = Field(default_factory=list)


class HookDocument(BaseModel):
    """One hook in full: its parsed frontmatter and the whole HOOK.md."""

    name: str
    scope: str
    path: str = Field(description=WORDS["path"])
    frontmatter: HookInfo
    text: str = Field(description=WORDS["text"])
    body: str = Field(default="", description=WORDS["body"])
    trust: str = Field(default="trusted", description=WORDS["document_trust"])
    notes: list[str] = Field(default_factory=list)


def _admits(hook: HookSpec, tool_name: str) -> bool:
    if hook.event not in TOOL_EVENTS:
        return False
    matcher = hook.tool_re
    return matcher is None or matching.fullmatch(matcher, tool_name)


def listing(
    registry: Registry, event: str | None = None, tool_name: str | None = None
) -> HookListing:
    """The hooks of ``registry`` (of one canonical ``event``, admitting ``tool_name``)."""
    hooks = registry.for_event(event) if event is not None else registry.hooks()
    held = [u for u in registry.untrusted if event is None or u.spec.event == event]
    invalid = [bad for bad in registry.invalid if event is None or bad.event in (None, event)]
    if tool_name is not None:
        hooks = [h for h in hooks if _admits(h, tool_name)]
        held = [u for u in held if _admits(u.spec, tool_name)]
    return HookListing(
        hooks=[HookInfo.of(h, registry) for h in hooks] + [HookInfo.held(u) for u in held],
        invalid=[InvalidHookInfo.model_validate(bad.as_dict()) for bad in invalid],
        warnings=list(registry.warnings),
    )


def document(registry: Registry, hook: HookSpec, read: HookText) -> HookDocument:
    """``hook`` in full, as ``read`` now, with its trust and what it replaces."""
    held = {u.name: u for u in registry.untrusted}.get(hook.name)
    notes: list[str] = []
    if held is not None and held.spec is hook:
        info = HookInfo.held(held)
        trust = held.status
        notes.append(f"this project hook is {held.status}, so it does not run; read it, then "
                     f"trust it with: {held.fix}")
    else:
        info = HookInfo.of(hook, registry)
        trust = "trusted"
        if held is not None:
            notes.append(f"a project hook of the same name ({held.spec.dir}) is {held.status} "
                         f"and does not run; this {hook.scope} hook runs instead")
        if info.replaces:
            notes.append(f"this trusted project hook replaces the user hook {info.replaces}")
    return HookDocument(name=hook.name, scope=hook.scope, path=str(hook.hook_file),
                        frontmatter=info, text=read.text, body=read.body, trust=trust,
                        notes=notes)
