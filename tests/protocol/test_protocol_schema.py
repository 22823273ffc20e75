"""The published schema: current, printable, and enough on its own to speak the protocol.

The "raw client" tests build client frames and read server frames knowing only schema.json and
the stdlib `json` module, as a client in another language would; areasync is used only to play
the server's part (decode what the raw client sent, encode what it receives).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

SCHEMA_FILE = Path(__file__).parents[2] / "areasync" / "protocol" / "schema.json"
RAW_SCHEMA: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
DEFS: dict[str, Any] = RAW_SCHEMA["$defs"]


# -- a schema-only client (json + schema.json, nothing else) ---------------------------------


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = DEFS[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def frame_types(union: str) -> dict[str, str]:
    """``type`` tag -> definition name, from the union's discriminator."""
    mapping = DEFS[union]["discriminator"]["mapping"]
    return {tag: ref.rsplit("/", 1)[-1] for tag, ref in mapping.items()}


def instance(schema: dict[str, Any], *, full: bool) -> Any:
    """A valid value for ``schema``: required properties only, or every property (``full``)."""
    schema = resolve(schema)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if resolve(o).get("type") != "null"]
        return instance(options[0], full=full)
    kind = schema.get("type")
    if kind == "object":
        properties = dict(schema.get("properties", {}))
        names = list(schema.get("required", []))
        # A "exactly one of" rule: satisfy its first branch, leave the others' fields out.
        branches = schema.get("oneOf", [])
        excluded = {name for branch in branches[1:] for name in branch.get("required", [])}
        if branches:
            names += branches[0]["required"]
            properties.update(branches[0].get("properties", {}))
        if full:
            names += [name for name in properties if name not in names and name not in excluded]
        return {name: instance(properties[name], full=full) for name in names}
    if kind == "integer":
        return max(schema.get("minimum", 1), schema.get("exclusiveMinimum", 0) + 1)
    if kind == "number":
        return schema.get("minimum", schema.get("exclusiveMinimum", 0) + 0.5)
    if kind == "string":
        return "x"
    if kind == "boolean":
        return True
    if kind == "array":
        items = schema.get("items")
        return [instance(items, full=full)] if full and items else []
    if kind == "null":
        return None
    return {}  # any JSON value


CLIENT_TYPES = frame_types("ClientFrame")
SERVER_TYPES = frame_types("ServerFrame")


def validate(value: Any, definition: str) -> None:
    schema = {"$defs": DEFS, "$ref": f"#/$defs/{definition}"}
    jsonschema.Draft202012Validator(schema).validate(value)


@pytest.mark.parametrize("full", [False, True], ids=["required-fields", "all-fields"])
@pytest.mark.parametrize("tag", sorted(CLIENT_TYPES))
def test_raw_client_builds_every_client_frame_from_the_schema(tag: str, full: bool) -> None:
    frame = instance(DEFS[CLIENT_TYPES[tag]], full=full)
    assert frame["type"] == tag
    validate(frame, "ClientFrame")
    text = json.dumps(frame)

    from areasync.protocol import decode_client_frame  # the server's side

    decoded = decode_client_frame(text)
    assert decoded.__struct_config__.tag == tag
    assert decoded.id == frame["id"]


def server_examples() -> list[Any]:
    """One realistic frame of every server type, as the server encodes them (server's side)."""
    from areasync.protocol import (
        Batch,
        ClockItem,
        ClockState,
        EndedItem,
        ErrorCode,
        EventItem,
        EventRecord,
        NotificationItem,
        NotificationRecord,
        Pong,
        ProtocolError,
        Result,
        Role,
        ToolArg,
        ToolInfo,
        Validation,
        Welcome,
    )
    from areasync.protocol.frames import error_frame

    clock = ClockState(
        state="running", time=1_700_000_000.0, tick=3, mode="fast", speed=1.0, duration=1800.0
    )
    tool = ToolInfo(
        name="EmailClientApp__send_email",
        description="Send an email.",
        args=[ToolArg(name="to", type="list[str]"), ToolArg(name="cc", required=False)],
        returns="str",
    )
    event = EventRecord(
        event_id="Event-AGENT-1",
        event_type="AGENT",
        time=1_700_000_003.0,
        app="EmailClientApp",
        function="send_email",
        args={"to": ["ana@example.com"], "subject": "Hi"},
        return_value="email-7",
    )
    note = NotificationRecord(
        message_type="USER_MESSAGE", message="Book a table", timestamp=1_700_000_001.0
    )
    error = ProtocolError(ErrorCode.UNKNOWN_TOOL, "no tool `X`; call list_tools", id=4)
    return [
        Welcome(
            session_id="s1", role=Role.AGENT, epoch="e1", seq=0, scenario_id="tutorial", clock=clock
        ),
        Result(id=2, value=[tool]),
        error_frame(error),
        EventItem(seq=1, event=event),
        NotificationItem(seq=2, notification=note),
        ClockItem(seq=3, clock=clock),
        EndedItem(seq=4, state="stopped", validation=Validation(success=True)),
        Pong(id=5),
        Batch(frames=[EventItem(seq=5, event=event), Result(id=6, value="email-8")]),
    ]


def test_raw_client_parses_every_server_frame_with_the_schema() -> None:
    from areasync.protocol import Encoding, encode_server_frame  # the server's side

    seen = set()
    for frame in server_examples():
        text = encode_server_frame(frame, Encoding.JSON)
        parsed = json.loads(text)
        tag = parsed["type"]
        assert tag in SERVER_TYPES, f"{tag!r} is not in the schema"
        validate(parsed, SERVER_TYPES[tag])
        seen.add(tag)
    assert seen == set(SERVER_TYPES), "server_examples() must cover every server frame"


def test_raw_client_finds_every_error_code_in_the_schema() -> None:
    from areasync.protocol import ErrorCode

    documented = DEFS["Error"]["properties"]["code"]["examples"]
    assert documented == [code.value for code in ErrorCode]


# -- the checked-in schema -------------------------------------------------------------------


def test_checked_in_schema_is_current() -> None:
    from areasync.protocol.schema import SCHEMA_PATH, render_schema

    assert SCHEMA_FILE.resolve() == SCHEMA_PATH
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_schema(), (
        "schema.json is stale: run `python -m areasync.protocol.schema > "
        "areasync/protocol/schema.json` and commit it"
    )


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(RAW_SCHEMA)


def test_schema_lists_exactly_the_frame_types_of_the_code() -> None:
    from areasync.protocol import CLIENT_FRAME_TYPES, SERVER_FRAME_TYPES

    assert set(CLIENT_TYPES) == set(CLIENT_FRAME_TYPES)
    assert set(SERVER_TYPES) == set(SERVER_FRAME_TYPES)


def test_render_schema_is_stable_text() -> None:
    from areasync.protocol.schema import render_schema

    text = render_schema()
    assert text == render_schema()
    assert text.endswith("}\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_python_m_schema_prints_the_schema() -> None:
    result = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "areasync.protocol.schema"],
        capture_output=True,
        text=True,
        check=True,
        cwd=SCHEMA_FILE.parents[2],
    )
    assert result.stdout == SCHEMA_FILE.read_text(encoding="utf-8")
