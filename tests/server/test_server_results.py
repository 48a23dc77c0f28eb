"""The published tool schemas (``server.results``): every tool's input and output schema has
no finding of the MCP Inspector's ``--strict`` check, the checker finds each kind of finding,
and the portable rewrite accepts exactly the values the original did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from mcp import Client

from mcp_hooks.server.app import build_server
from mcp_hooks.server.results import (
    ANY_JSON,
    portable_schema,
    schema_findings,
    simplify_schema,
)
from mcp_hooks.service import HookService
from mcp_hooks.settings import Settings

pytestmark = pytest.mark.anyio

SAMPLES: list[Any] = [None, True, 0, 1.5, "x", [], [1, "a"], {}, {"a": 1}, {"a": None}]


async def test_every_tool_schema_passes_the_strict_rules(project: Path, user_dir: Path) -> None:
    async with HookService(Settings.from_env(
            project_dir=project, user_dir=user_dir, no_log=True)) as service, Client(
        build_server(service), mode="legacy"
    ) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == {"fire_hook_event", "respond_to_signal", "list_hooks",
                                       "get_hook"}
    for tool in tools:
        assert schema_findings(tool.input_schema, f"{tool.name}.inputSchema") == []
        assert tool.output_schema is not None
        assert schema_findings(tool.output_schema, f"{tool.name}.outputSchema") == []
    fire = next(t for t in tools if t.name == "fire_hook_event")
    # a field that takes any JSON value says so; a nullable one is anyOf with null
    assert fire.input_schema["properties"]["tool_output"]["anyOf"] == list(ANY_JSON)
    assert fire.input_schema["properties"]["tool_output"]["description"]
    assert {"type": "null"} in fire.output_schema["properties"]["reason"]["anyOf"]  # type: ignore[index]


@pytest.mark.parametrize(("schema", "finding"), [
    ({"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
     "schema.properties.a: type is an array"),
    ({"type": "object", "properties": {"a": {"description": "anything"}}},
     "schema.properties.a: no validation keyword"),
    ({"type": "object", "properties": {"a": True}}, "schema.properties.a: bare true"),
    ({"type": "array", "items": False}, "schema.items: bare false"),
    ({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}},
     "schema.properties.a: $ref 'https://example.com/s.json' points outside"),
    ({"anyOf": [{"type": "string"}, {}]}, "schema.anyOf[1]: no validation keyword"),
])
def test_findings_name_the_path_and_the_rule(schema: dict[str, Any], finding: str) -> None:
    found = schema_findings(schema)
    assert len(found) == 1 and found[0].startswith(finding), found


def test_what_the_rules_allow() -> None:
    assert schema_findings({"type": "object", "additionalProperties": True,
                            "properties": {"n": {"not": {}}, "r": {"$ref": "#/$defs/x"}},
                            "$defs": {"x": {"type": "integer"}}}) == []


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": ["string", "null"], "default": None},
                                      "b": {"description": "anything"}}},
    {"type": "array", "items": {"type": ["integer", "boolean"]}},
    {"type": ["string", "number"], "anyOf": [{"type": "string"}, {"minimum": 3}]},
    {"description": "anything at all"},
])
def test_portable_schema_accepts_exactly_the_same_values(schema: dict[str, Any]) -> None:
    portable = portable_schema(schema)
    assert schema_findings(portable) == []
    for value in [*SAMPLES, {"a": "s", "b": [1]}, {"a": 3}, [1, True], ["x"], 2]:
        before = jsonschema.Draft202012Validator(schema).is_valid(value)
        after = jsonschema.Draft202012Validator(portable).is_valid(value)
        assert before == after, (value, portable)


def test_simplify_schema_inlines_refs_drops_titles_and_is_portable() -> None:
    schema = {"title": "Out", "type": "object", "$defs": {
        "Run": {"title": "Run", "type": "object", "properties": {"x": {"title": "X"}}}},
        "properties": {"runs": {"type": "array", "items": {"$ref": "#/$defs/Run"}},
                       "why": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
    simple = simplify_schema(schema)
    assert "$defs" not in simple and "title" not in str(simple)
    assert simple["properties"]["runs"]["items"]["properties"]["x"] == {
        "anyOf": list(ANY_JSON)}
    assert simple["properties"]["why"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert schema_findings(simple) == []
