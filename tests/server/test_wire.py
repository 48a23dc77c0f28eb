"""The JSON-RPC line codec every hand-written stdio end shares (``mcp_hooks.server.wire``):
serve's and the proxy's event-loop stdio, and the proxy's stdio upstreams."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
import pytest

from mcp_hooks.server import wire

pytestmark = pytest.mark.anyio


def deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def test_one_compact_utf8_line() -> None:
    line = wire.encode({"jsonrpc": "2.0", "id": 1, "result": {"text": "héllo"}})
    assert line == '{"jsonrpc":"2.0","id":1,"result":{"text":"héllo"}}\n'.encode()
    assert wire.decode(line) == {"jsonrpc": "2.0", "id": 1, "result": {"text": "héllo"}}


def test_a_lone_surrogate_goes_as_its_escape() -> None:
    line = wire.encode({"id": 1, "text": "a\udcffb"})
    assert b"\\udcff" in line and line.endswith(b"\n")
    assert json.loads(line)["text"] == "a\udcffb"  # it round-trips


def test_too_deep_to_encode() -> None:
    with pytest.raises((RecursionError, ValueError)):
        wire.encode({"id": 1, "result": deep(100_000)})
    answer = json.loads(wire.encode_answer({"jsonrpc": "2.0", "id": 7, "result": deep(100_000)}))
    assert answer["id"] == 7 and answer["error"]["code"] == types.INTERNAL_ERROR
    assert "nested too deep" in answer["error"]["message"]


def test_sdk_models_are_written_by_the_same_rules() -> None:
    message = types.JSONRPCRequest(jsonrpc="2.0", id=3, method="tools/call",
                                   params={"name": "echo", "arguments": {"t": "\udcff"}})
    line = wire.encode_model(message)
    assert line.endswith(b"\n") and b"\\udcff" in line
    assert json.loads(line)["params"]["arguments"]["t"] == "\udcff"


def test_the_id_of_a_line_that_does_not_parse() -> None:
    too_deep = b'{"jsonrpc":"2.0","id":"r-9","params":' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    with pytest.raises(RecursionError):
        wire.decode(too_deep)
    assert wire.message_id(too_deep) == "r-9"
    assert wire.message_id(b'{"params":{"id":5},"id":12,') == 12  # the top level's only
    assert wire.message_id(b'{"params":{"id":5}}') is None
    assert wire.message_id(b'{"id":1.5}') is None
    broken = wire.unreadable(b'{"id": 4, "method": ', ValueError("Expecting value"))
    assert broken["id"] == 4 and broken["error"]["code"] == types.PARSE_ERROR


def test_lone_surrogates_replaced_in_place() -> None:
    value = {"k\udc80": ["a\udcff", {"b": "\ud800c"}], "fine": "é"}
    assert wire.has_lone_surrogate_escape(b'"\\udcff"')
    assert not wire.has_lone_surrogate_escape('"é"'.encode())
    assert wire.without_lone_surrogates(value) == {
        "k\ufffd": ["a\ufffd", {"b": "\ufffdc"}], "fine": "é"}
    assert wire.without_lone_surrogates(deep(10_000))  # no recursion


async def test_lines_are_read_whole_to_the_end() -> None:
    reader = asyncio.StreamReader(limit=64)
    reader.feed_data(b'{"a":1}\n\n{"b":')
    reader.feed_data(b"2}\n" + b"x" * 10)
    reader.feed_eof()
    got = [await wire.read_line(reader, "test") for _ in range(5)]
    assert got == [b'{"a":1}\n', b"\n", b'{"b":2}\n', b"x" * 10, None]


async def test_a_line_over_the_limit_ends_the_stream(caplog: pytest.LogCaptureFixture) -> None:
    reader = asyncio.StreamReader(limit=16)
    reader.feed_data(b"y" * 40 + b"\n")
    assert await wire.read_line(reader, "upstream big") is None
    assert "upstream big" in caplog.text
