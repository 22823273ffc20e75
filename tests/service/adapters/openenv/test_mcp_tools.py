"""ARE's tool descriptions as MCP tools, without I/O: its type strings as JSON Schema, its
arguments as an input schema, the wait tool's bound."""

from __future__ import annotations

import jsonschema
import pytest

from areasync.protocol.records import ToolArg, ToolInfo
from areasync.service.adapters.openenv.tools import (
    WAIT,
    input_schema,
    listing,
    type_schema,
    wait_timeout,
)


@pytest.mark.parametrize(
    ("are_type", "schema"),
    [
        ("str", {"type": "string"}),
        ("int", {"type": "integer"}),
        ("float", {"type": "number"}),
        ("bool", {"type": "boolean"}),
        ("list[str]", {"type": "array", "items": {"type": "string"}}),
        ("dict[str, Any]", {"type": "object"}),
        ("str | None", {"anyOf": [{"type": "string"}, {"type": "null"}]}),
        (
            "list[str] | None",
            {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        ),
        ("Attachment", {}),
        ("str | Attachment", {}),
        (None, {}),
    ],
)
def test_are_s_type_strings_become_json_schema(are_type: str | None, schema: dict) -> None:
    assert type_schema(are_type) == schema


def test_arguments_without_a_default_are_required_and_a_default_is_kept() -> None:
    args = [
        ToolArg(name="to", type="list[str]", description="recipients"),
        ToolArg(name="cc", type="list[str] | None", required=False, default=None),
        ToolArg(name="limit", type="int", required=False, default=10),
    ]
    schema = input_schema(args)
    assert schema["required"] == ["to"]
    assert schema["properties"]["to"]["description"] == "recipients"
    assert schema["properties"]["limit"]["default"] == 10
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"to": ["a@b.c"], "limit": 3}, schema)


def test_the_listing_ends_with_the_wait_tool_bounded_by_its_option() -> None:
    info = ToolInfo(name="App__f", description="does f", returns="a value")
    tools = listing([info], max_wait=5.0)
    assert [t["name"] for t in tools] == ["App__f", WAIT]
    assert tools[0]["description"] == "does f\n\nReturns: a value"
    assert tools[1]["inputSchema"]["properties"]["timeout"]["maximum"] == 5.0


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"timeout": 6}, "mcp_max_wait"),
        ({"timeout": 0}, "above 0"),
        ({"timeout": True}, "above 0"),
        ({"x": 1}, "only"),
    ],
)
def test_a_wait_timeout_out_of_bounds_is_refused_saying_why(arguments: dict, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        wait_timeout(arguments, 5.0)
