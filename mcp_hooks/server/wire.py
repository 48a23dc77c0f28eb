"""One JSON-RPC line codec for every hand-written stdio end: MCP's stdio framing, by hand.

Both hand-written stdio paths use it: the downstream transport (``server.stdio``: the own stdin
and stdout of ``mcp-hooks serve`` and of the proxy) and the proxy's upstream channel
(``proxy.upstream_stdio``: a stdio server the proxy spawns). It lives with the server because
the server uses it; the proxy, a server in front of servers, imports from here (never the
other way round). The SDK's models are bypassed on the hot path (a
``tools/call`` and its answer are parsed once, with ``json``); everything else still goes
through the SDK's JSON-RPC models (``to_model``, ``encode_model``).

The contract, the same at both ends:

- A message is one line: compact JSON, UTF-8, ``\\n``-terminated (``encode``). A lone
  surrogate in a string (valid JSON, not UTF-8) is written as its ``\\udXXX`` escape, as it
  came. A message nested past what the encoder writes raises; ``encode_answer`` instead
  answers the same request with a JSON-RPC error, so an answer is never lost.
- A line is read whole (``read_line``), up to ``LINE_LIMIT`` bytes; past that, or at the end
  of the stream, the reader stops. A last line without ``\\n`` still counts.
- A line that does not parse (not JSON, or nested deeper than Python's parser goes) is never
  fatal: ``message_id`` still finds the top-level ``id`` without recursion, in linear time,
  so the request gets its error answer (``unreadable``).
- ``without_lone_surrogates`` replaces each lone surrogate by U+FFFD, in place and without
  recursion (the proxy gates what a strict upstream can receive).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

import mcp_types as types

logger = logging.getLogger("mcp_hooks.proxy")

LINE_LIMIT = 1 << 26  # bytes in one message before the reader gives up (64 MiB)
_SEPARATORS = (",", ":")


# -- writing -------------------------------------------------------------------------------


def encode(message: Any) -> bytes:
    """One JSON-RPC line for ``message``.

    Raises:
        RecursionError, ValueError: ``message`` nests past what the encoder writes.
    """
    try:
        return json.dumps(message, ensure_ascii=False, separators=_SEPARATORS,
                          default=str).encode() + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: escaped, it round-trips
        return json.dumps(message, separators=_SEPARATORS, default=str).encode() + b"\n"


def encode_answer(message: dict[str, Any]) -> bytes:
    """One line for an answer we send, never raising: an answer that cannot be encoded is
    replaced by an error answer to the same request."""
    try:
        return encode(message)
    except (RecursionError, ValueError):
        rid = message.get("id")
        return encode(error_response(
            rid if isinstance(rid, (str, int)) else None, types.INTERNAL_ERROR,
            "the answer to this request could not be encoded as JSON (nested too deep)"))


def encode_model(message: types.JSONRPCMessage) -> bytes:
    """One line for an SDK JSON-RPC model (the SDK session's own traffic).

    Raises:
        RecursionError, ValueError: the model cannot be written as JSON at all.
    """
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
    except ValueError:  # PydanticSerializationError: a lone surrogate, or too deep
        pass
    return encode(message.model_dump(mode="python", by_alias=True, exclude_unset=True))


def error_response(rid: str | int | None, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error answer."""
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


# -- reading -------------------------------------------------------------------------------


async def read_line(reader: asyncio.StreamReader, source: str) -> bytes | None:
    """The next line from ``reader`` (blank ones included), or None when the stream ended,
    failed, or sent a line over ``LINE_LIMIT`` (logged, naming ``source``)."""
    try:
        return await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        return exc.partial if exc.partial.strip() else None
    except asyncio.LimitOverrunError:
        logger.error("a message from %s is over %d bytes; closing", source, LINE_LIMIT)
        return None
    except OSError:
        return None


def decode(line: bytes) -> Any:
    """The JSON value on ``line``.

    Raises:
        ValueError: the line is not JSON.
        RecursionError: valid JSON nested deeper than Python's parser goes.
    """
    return json.loads(line)


def to_model(raw: Any) -> types.JSONRPCMessage:
    """A parsed message as the SDK's model.

    Raises:
        ValueError: (pydantic's ``ValidationError``) it is not a JSON-RPC message.
        RecursionError: nested past the validator.
    """
    message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_python(
        raw, by_name=False)
    return message


_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]')
_ID_VALUE = re.compile(rb'\s*:\s*(-?[0-9]+(?![.eE0-9])|"[^"\\]*(?:\\.[^"\\]*)*")')


def message_id(line: bytes) -> str | int | None:
    """The ``id`` of the top-level JSON object on a line that could not be parsed (too deep,
    or broken after the id), or None. Linear in the line, and never recursive."""
    depth = 0
    for token in _TOKEN.finditer(line):
        first = line[token.start()]
        if first in b"{[":
            depth += 1
        elif first in b"}]":
            depth -= 1
            if depth <= 0:
                return None
        elif depth == 1 and token.group() == b'"id"':
            value = _ID_VALUE.match(line, token.end())
            if value is None:
                continue
            try:
                rid = json.loads(value.group(1))
            except ValueError:
                return None
            return rid if isinstance(rid, (str, int)) else None
    return None


def unreadable(line: bytes, exc: BaseException) -> dict[str, Any]:
    """The JSON-RPC error answering a line that is not a JSON-RPC message we can read."""
    rid = message_id(line)
    if isinstance(exc, RecursionError):
        return error_response(rid, types.PARSE_ERROR, "Parse error: the message nests deeper "
                              "than mcp-hooks reads; send flatter arguments")
    return error_response(rid, types.PARSE_ERROR, f"Parse error: not valid JSON ({exc})")


_LONE = re.compile("[\ud800-\udfff]")  # after json.loads, a surrogate left is a lone one


def has_lone_surrogate_escape(line: bytes) -> bool:
    """Whether ``line`` may hold a lone surrogate escape (a cheap test before the fix)."""
    return b"\\ud" in line or b"\\uD" in line


def _fix(text: str) -> str:
    return _LONE.sub("\ufffd", text)


def without_lone_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD;
    containers are fixed in place, without recursion."""
    if isinstance(value, str):
        return _fix(value)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if any(isinstance(k, str) and _LONE.search(k) for k in item):
                fixed = {(_fix(k) if isinstance(k, str) else k): v for k, v in item.items()}
                item.clear()
                item.update(fixed)
            _fix_children(item, item.items(), stack)
        elif isinstance(item, list):
            _fix_children(item, enumerate(item), stack)
    return value


def _fix_children(container: Any, pairs: Any, stack: list[Any]) -> None:
    """Fix the string children of ``container`` (its ``(key, child)`` ``pairs``) in place;
    push its child containers on ``stack``."""
    for key, child in pairs:
        if isinstance(child, str):
            if _LONE.search(child):
                container[key] = _fix(child)
        elif isinstance(child, (dict, list)):
            stack.append(child)
