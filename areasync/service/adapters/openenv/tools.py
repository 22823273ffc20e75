"""A session's tools as MCP tools: ARE's names and descriptions, JSON Schemas of ARE's arguments.

No I/O: `listing(infos)` turns the session's `list_tools` answer (`ToolInfo`, what ARE's
`AppTool` says of itself) into MCP's `tools/list` entries, and `result_text` a tool's value
into MCP's text content. The schema follows ARE's own MCP server
(`are.simulation.apps.mcp.server`): an object with one property per argument (its ARE type as
JSON Schema, its description) and the arguments without a default `required`; ARE's type
strings (`str`, `int | None`, `list[str]`, `dict[str, Any]`...) become JSON Schema types, and a
type it does not name stays unconstrained. Besides ARE's tools every session offers one of
areasync's, `WAIT`: the bounded wait for notifications.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from areasync.protocol.records import ToolArg, ToolInfo

WAIT = "areasync__wait_for_notifications"

_SCALARS = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "dict": "object",
    "list": "array",
    "Any": None,
    "None": "null",
}
_GENERIC = re.compile(r"^(list|dict|tuple|set)\[(.*)\]$")


def type_schema(are_type: str | None) -> dict[str, Any]:
    """The JSON Schema of one of ARE's type strings ({} for one it does not name)."""
    if not are_type:
        return {}
    text = are_type.strip()
    parts = _split_union(text)
    if len(parts) > 1:
        options = [type_schema(part) for part in parts]
        if any(not option for option in options):
            return {}
        return {"anyOf": options}
    generic = _GENERIC.match(text)
    if generic is not None:
        outer, inner = generic.groups()
        if outer == "dict":
            return {"type": "object"}
        items = type_schema(_split_top(inner)[0]) if outer == "list" else {}
        return {"type": "array", **({"items": items} if items else {})}
    kind = _SCALARS.get(text)
    return {"type": kind} if kind else {}


def _split_union(text: str) -> list[str]:
    """`a | b[c | d]` into its top-level alternatives."""
    return [part.strip() for part in _split_top(text, "|")]


def _split_top(text: str, separator: str = ",") -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += char == "["
        depth -= char == "]"
        if char == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def input_schema(args: list[ToolArg]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for arg in args:
        prop = type_schema(arg.type)
        if arg.description:
            prop = {**prop, "description": arg.description}
        if not arg.required and arg.default is not None:
            prop = {**prop, "default": arg.default}
        properties[arg.name] = prop
    required = [arg.name for arg in args if arg.required]
    return {"type": "object", "properties": properties, "required": required}


def describe(info: ToolInfo) -> str:
    """ARE's description, with what the tool returns when ARE says."""
    if info.returns:
        return f"{info.description}\n\nReturns: {info.returns}".strip()
    return info.description


def wait_tool(max_wait: float) -> dict[str, Any]:
    return {
        "name": WAIT,
        "description": (
            "Wait for the environment's next notifications (a user message, an event's "
            "outcome) and return them, with the simulated time. In fast mode this lets "
            "simulated time run until one arrives. Returns at once if some are already "
            f"waiting; waits at most `timeout` wall seconds (at most {max_wait:g})."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": max_wait,
                    "default": max_wait,
                    "description": "wall seconds to wait at most",
                }
            },
            "required": [],
        },
    }


def listing(infos: list[ToolInfo], max_wait: float) -> list[dict[str, Any]]:
    """MCP's `tools/list` entries (`name`, `description`, `inputSchema`), areasync's wait last."""
    tools = [
        {"name": info.name, "description": describe(info), "inputSchema": input_schema(info.args)}
        for info in infos
    ]
    return [*tools, wait_tool(max_wait)]


def wait_timeout(arguments: dict[str, Any], max_wait: float) -> float:
    """The wait's `timeout` argument, checked: a ValueError saying what is wrong."""
    value = arguments.get("timeout", max_wait)
    unknown = set(arguments) - {"timeout"}
    if unknown:
        raise ValueError(f"{WAIT} takes only `timeout`, not {', '.join(sorted(unknown))}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{WAIT}'s `timeout` is a number of wall seconds above 0")
    if value > max_wait:
        raise ValueError(
            f"{WAIT}'s `timeout` is at most {max_wait:g} wall seconds (mcp_max_wait); "
            "call it again to wait longer"
        )
    return float(value)


def result_text(value: Any) -> str:
    """A tool's value as MCP text content: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(msgspec.to_builtins(value), ensure_ascii=False)
