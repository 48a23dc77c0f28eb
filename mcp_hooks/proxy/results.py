"""Tool results in wire form (the JSON of a ``CallToolResult``): what the proxy passes on,
what hooks see, and how a hook's answer reshapes them.

- ``clean_result``: an upstream's result, without its protocol stamps (the proxy adds its own).
- ``tool_output``: the ``tool_output`` hooks see (``{content, structuredContent}``).
- ``error_text``: the text of an ``isError`` result (``after_tool_failure``'s ``error``).
- ``apply_modified_output``: the result after an ``after_tool`` hook's ``modified_output``.
- ``error_result`` / ``deny_text``: the proxy's own ``isError`` answers (a deny, a fault).

Pure functions of plain dicts: nothing here talks to a client, an upstream or the engine.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from pydantic import TypeAdapter

from mcp_hooks.spec.outcome import FAULT_SOURCE, Outcome

_RESULT_KEYS = ("content", "structuredContent", "isError", "_meta")


def error_result(text: str) -> dict[str, Any]:
    """An ``isError`` tool result with one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def deny_text(outcome: Outcome, tool: str, *, ran: bool) -> str:
    """What the client reads when a hook (or a fault of ours) denied a call."""
    what = "its result was withheld" if ran else "the tool was not run"
    who = "mcp-hooks" if outcome.blocked_by == FAULT_SOURCE else f"hook {outcome.blocked_by}"
    return f"Blocked by {who}: {outcome.reason}\n({tool}: {what})"


def strip_stamp(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    """``_meta`` without an upstream's server-info stamp (None when nothing else is left)."""
    if not meta or types.SERVER_INFO_META_KEY not in meta:
        return meta
    return {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY} or None


def clean_result(raw: dict[str, Any]) -> dict[str, Any]:
    """An upstream's tool result as the proxy passes it on: the result fields only, without
    the upstream's protocol stamps in ``_meta`` (the proxy stamps its own)."""
    result = {key: raw[key] for key in _RESULT_KEYS if key in raw}
    result.setdefault("content", [])
    meta = result.get("_meta")
    if isinstance(meta, dict) and types.SERVER_INFO_META_KEY in meta:
        rest = {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY}
        if rest:
            result["_meta"] = rest
        else:
            del result["_meta"]
    return result


def tool_output(result: dict[str, Any]) -> dict[str, Any]:
    """The ``tool_output`` hooks see: the result's content blocks and structured content."""
    return {"content": result.get("content", []),
            "structuredContent": result.get("structuredContent")}


def error_text(result: dict[str, Any]) -> str:
    """The text of an ``isError`` result, for ``after_tool_failure``'s ``error``."""
    texts = [block.get("text") for block in result.get("content", [])
             if isinstance(block, dict) and block.get("type") == "text"]
    if texts:
        return "\n".join(str(t) for t in texts)
    return json.dumps(tool_output(result), ensure_ascii=False, default=str)


_BLOCKS: Any = None


def _content_blocks(value: Any) -> list[dict[str, Any]]:
    """``value`` checked as a list of MCP content blocks, in wire form."""
    global _BLOCKS
    if _BLOCKS is None:
        _BLOCKS = TypeAdapter(list[types.ContentBlock])
    blocks = _BLOCKS.validate_python(value, by_alias=True)
    dumped: list[dict[str, Any]] = _BLOCKS.dump_python(blocks, mode="json", by_alias=True,
                                                       exclude_none=True)
    return dumped


def _text(value: Any) -> dict[str, Any]:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return {"type": "text", "text": text}


def apply_modified_output(result: dict[str, Any], modified: Any) -> dict[str, Any]:
    """The result after an ``after_tool`` hook's ``modified_output``.

    - an object with ``content`` and/or ``structuredContent`` (the shape of ``tool_output``)
      replaces those parts: ``content`` must be MCP content blocks (else it is kept as JSON
      text), and a missing ``content`` becomes the JSON text of the structured content;
    - a string replaces the content with that text and drops the structured content;
    - any other JSON value becomes the text content (as JSON), and the structured content
      when it is an object.

    A tool with an ``outputSchema`` needs ``structuredContent`` that fits it, or the client
    will reject the result.
    """
    out: dict[str, Any] = {key: result[key] for key in ("isError", "_meta") if key in result}
    if isinstance(modified, dict) and ("content" in modified or "structuredContent" in modified):
        structured = modified.get("structuredContent")
        if "content" in modified:
            try:
                out["content"] = _content_blocks(modified["content"])
            except ValueError:
                out["content"] = [_text(modified["content"])]
        else:
            out["content"] = [_text(structured)]
        if isinstance(structured, dict):
            out["structuredContent"] = structured
    elif isinstance(modified, str):
        out["content"] = [_text(modified)]
    else:
        out["content"] = [_text(modified)]
        if isinstance(modified, dict):
            out["structuredContent"] = modified
    return out


def append_context(result: dict[str, Any], contexts: list[str]) -> dict[str, Any]:
    """``result`` with the hooks' ``additional_context`` appended as one text block."""
    if contexts:
        result["content"] = [*result["content"], {"type": "text", "text": "\n\n".join(contexts)}]
    return result
