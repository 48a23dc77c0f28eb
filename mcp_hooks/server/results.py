"""The structured results of ``list_hooks``, ``get_hook``, ``respond_to_signal`` and
``hooks://index``: pydantic
models (the tools' output schemas are published from them) and the functions that fill them
from a ``Registry``; and the rules every published tool schema follows.

Published schemas are portable (``portable_schema``): they pass the MCP Inspector's
``--strict`` schema check (``inspector --cli URL --method tools/list --strict``) without a
finding, and so map onto single-``type`` dialects such as the OpenAPI subset of Gemini's
function declarations. That means: no ``type`` array (a nullable field is ``anyOf: [{type:
T}, {type: "null"}]``), no schema without a validation keyword (a field that takes any JSON
value says so: ``ANY_JSON``), no bare ``true``/``false`` schema, no ``$ref`` outside the
document. Output schemas are also simplified (``simplify_schema``: ``$ref``s inlined, titles
dropped). ``schema_findings`` lists what breaks those rules; the tests hold every tool to it.

A listing shows every hook with its ``trust`` (``trusted``, ``untrusted``, ``changed``; the
untrusted ones with the ``fix`` command), ``replaces`` for a trusted project hook that replaces
a user hook, and invalid hooks with the ``event`` they could have handled. The words of the
schemas live in ``prompts.RESULT_FIELDS``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mcp_hooks.registry.discovery import Registry, UntrustedHook
from mcp_hooks.server.prompts import RESULT_FIELDS as WORDS
from mcp_hooks.service import HookText
from mcp_hooks.spec import matching
from mcp_hooks.spec.events import TOOL_EVENTS
from mcp_hooks.spec.hookfile import HookSpec


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


class SignalResponse(BaseModel):
    """The agent's answer to a signal, as the signal log recorded it (the seed's
    ``SignalResponse`` plus the signal's intensity, source and hook)."""

    signal_id: str
    consumed_at: str
    action: str = Field(description=WORDS["action"])
    intensity: str
    source: str
    hook: str
    consumed: bool = Field(default=True, description=WORDS["consumed"])
    details: dict[str, Any] | None = None


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


def _held_and_invalid(registry: Registry,
                      event: str | None) -> tuple[list[UntrustedHook], list[Any]]:
    """The untrusted and the invalid hooks of ``registry`` (of ``event``, or all)."""
    held = [u for u in registry.untrusted if event is None or u.spec.event == event]
    invalid = [bad for bad in registry.invalid if event is None or bad.event in (None, event)]
    return held, invalid


def listing(
    registry: Registry, event: str | None = None, tool_name: str | None = None
) -> HookListing:
    """The hooks of ``registry`` (of one canonical ``event``, admitting ``tool_name``)."""
    hooks = registry.for_event(event) if event is not None else registry.hooks()
    held, invalid = _held_and_invalid(registry, event)
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


# -- the published schemas ---------------------------------------------------------------------

# Any JSON value, one single-typed branch per JSON type (a schema with no type accepts the
# same, but is what the Inspector's --strict flags as "untyped").
ANY_JSON: tuple[dict[str, Any], ...] = (
    {"type": "object", "additionalProperties": True}, {"type": "array"}, {"type": "string"},
    {"type": "number"}, {"type": "boolean"}, {"type": "null"},
)
# Keywords that constrain a value (JSON Schema 2020-12 assertions, applicators, references);
# a schema with none of them accepts anything. if/then/else constrain only as a pair.
_CONSTRAINING = frozenset({
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "contentMediaType",
    "contentEncoding", "contentSchema", "maxItems", "minItems", "uniqueItems", "maxContains",
    "minContains", "maxProperties", "minProperties", "required", "dependentRequired", "allOf",
    "anyOf", "oneOf", "not", "items", "prefixItems", "contains", "additionalItems",
    "unevaluatedItems", "properties", "patternProperties", "additionalProperties",
    "unevaluatedProperties", "propertyNames", "dependentSchemas", "dependencies", "$ref",
    "$dynamicRef", "$recursiveRef",
})
_ONE = ("items", "contains", "not", "propertyNames", "if", "then", "else", "contentSchema",
        "additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_NAMED = ("properties", "patternProperties", "dependentSchemas", "dependencies", "$defs",
          "definitions")
_BOOLEAN_OK = frozenset({"additionalProperties", "unevaluatedProperties", "additionalItems",
                         "unevaluatedItems"})


def _subschemas(node: dict[str, Any], path: str) -> list[tuple[Any, str, str]]:
    """(subschema, its path, the keyword it sits under) for every subschema of ``node``."""
    found: list[tuple[Any, str, str]] = []
    for key in _NAMED:
        if isinstance(node.get(key), dict):
            found += [(sub, f"{path}.{key}.{name}", key) for name, sub in node[key].items()]
    for key in _MANY:
        if isinstance(node.get(key), list):
            found += [(sub, f"{path}.{key}[{i}]", key) for i, sub in enumerate(node[key])]
    for key in _ONE:
        if key not in node:
            continue
        if key == "items" and isinstance(node[key], list):
            found += [(sub, f"{path}.items[{i}]", key) for i, sub in enumerate(node[key])]
        else:
            found.append((node[key], f"{path}.{key}", key))
    return found


def _constrains(node: dict[str, Any]) -> bool:
    return any(key in _CONSTRAINING for key in node) or (
        "if" in node and ("then" in node or "else" in node))


def schema_findings(schema: dict[str, Any], name: str = "schema") -> list[str]:
    """What in ``schema`` another client may not read as meant, one line each (empty: none).

    The rules of the MCP Inspector's ``--strict`` tool-schema check: a bare boolean where a
    schema is expected, a ``type`` array, a ``$ref`` outside the document, a schema with no
    validation keyword (except under ``not``).
    """
    findings: list[str] = []
    stack: list[tuple[Any, str, str | None]] = [(schema, name, None)]
    while stack:
        node, path, keyword = stack.pop()
        if isinstance(node, bool):
            if keyword not in _BOOLEAN_OK:
                findings.append(f"{path}: bare {str(node).lower()} where a schema is expected")
            continue
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("type"), list):
            findings.append(f"{path}: type is an array {node['type']}; use anyOf branches")
        ref = node.get("$ref")
        if isinstance(ref, str) and ref and not ref.startswith("#"):
            findings.append(f"{path}: $ref {ref!r} points outside the document")
        if keyword != "not" and not _constrains(node):
            findings.append(f"{path}: no validation keyword (untyped); say what it accepts")
        stack += [(sub, where, key) for sub, where, key in reversed(_subschemas(node, path))]
    return findings


def portable_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` rewritten to have no ``schema_findings``, accepting exactly the same values:
    a ``type`` array becomes ``anyOf`` branches of one type each, and a schema that accepts
    anything (no validation keyword: a field typed ``Any``) says so with ``ANY_JSON``.
    Descriptions, defaults and every other keyword are kept."""
    result: dict[str, Any] = _portable(schema, None)
    return result


def _portable(node: Any, keyword: str | None) -> Any:
    """One schema node made portable (``keyword``: the one it sits under), its subschemas
    first."""
    if not isinstance(node, dict):
        return node
    out = _with_portable_subschemas(node)
    types = out.get("type")
    if isinstance(types, list):
        del out["type"]
        branches = [{"type": t} for t in types]
        if "anyOf" in out:  # the value must pass both: the branches join allOf
            out["allOf"] = [*out.get("allOf", []), {"anyOf": branches}]
        else:
            out["anyOf"] = branches
    elif keyword != "not" and not _constrains(out):
        out["anyOf"] = [dict(branch) for branch in ANY_JSON]
    return out


def _with_portable_subschemas(node: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``node`` whose subschemas (by name, in a list, or one) are made portable."""
    out = dict(node)
    for key in _NAMED:
        if isinstance(out.get(key), dict):
            out[key] = {name: _portable(sub, key) for name, sub in out[key].items()}
    for key in _MANY:
        if isinstance(out.get(key), list):
            out[key] = [_portable(sub, key) for sub in out[key]]
    for key in _ONE:
        if key in out:
            sub = out[key]
            out[key] = [_portable(s, key) for s in sub] if isinstance(sub, list) \
                else _portable(sub, key)
    return out


def simplify_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same JSON schema, cheaper to validate and to read, and portable: ``$ref``s inlined,
    titles dropped, then ``portable_schema``."""
    defs: dict[str, Any] = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return walk(defs[ref.rsplit("/", 1)[1]])
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "title"):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: walk(sub) for name, sub in value.items()}
            else:
                out[key] = walk(value)
        return out

    return portable_schema(walk(schema))
