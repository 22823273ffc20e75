"""Frames: every frame type round-trips through both encodings, matches the published schema,
and behaves as the compatibility rules say (strict client frames, lenient server frames)."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from areasync.protocol import (
    CLIENT_FRAME_TYPES,
    PROTOCOL,
    SERVER_FRAME_TYPES,
    ClientFrame,
    ClockItem,
    ClockState,
    CreateSession,
    EncodedFrame,
    Encoding,
    ErrorCode,
    EventItem,
    EventRecord,
    Jump,
    ProtocolError,
    Result,
    Role,
    ServerFrame,
    Welcome,
    decode_client_frame,
    decode_server_frame,
    encode_client_frame,
    encode_server_frame,
)
from areasync.protocol.schema import generate_schema

ENCODINGS = list(Encoding)
EXAMPLES = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- msgspec-aware strategies ----------------------------------------------------------------
# Built from msgspec's own type info, so Meta constraints (ge, gt, ...) are respected and a new
# field type fails loudly here instead of going untested.

# Any JSON value that both encodings carry exactly (msgpack ints stop at 64 bits; no NaN/inf).
json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


def strategy_for(t: mi.Type) -> st.SearchStrategy[Any]:
    if isinstance(t, mi.Metadata):  # descriptions only; constraints live on the inner type
        return strategy_for(t.type)
    if isinstance(t, mi.AnyType):
        return json_values
    if isinstance(t, mi.NoneType):
        return st.none()
    if isinstance(t, mi.BoolType):
        return st.booleans()
    if isinstance(t, mi.IntType):
        low = t.ge if t.ge is not None else (t.gt + 1 if t.gt is not None else -(2**63))
        high = t.le if t.le is not None else (t.lt - 1 if t.lt is not None else 2**64 - 1)
        return st.integers(min_value=low, max_value=high)
    if isinstance(t, mi.FloatType):
        return st.floats(
            min_value=t.gt if t.gt is not None else t.ge,
            max_value=t.lt if t.lt is not None else t.le,
            exclude_min=t.gt is not None,
            exclude_max=t.lt is not None,
            allow_nan=False,
            allow_infinity=False,
        )
    if isinstance(t, mi.StrType):
        return st.text(max_size=30)
    if isinstance(t, mi.EnumType):
        return st.sampled_from(list(t.cls))
    if isinstance(t, mi.ListType):
        return st.lists(strategy_for(t.item_type), max_size=4)
    if isinstance(t, mi.DictType):
        return st.dictionaries(strategy_for(t.key_type), strategy_for(t.value_type), max_size=4)
    if isinstance(t, mi.UnionType):
        return st.one_of(*(strategy_for(member) for member in t.types))
    if isinstance(t, mi.StructType):
        return builds(t.cls)
    raise NotImplementedError(f"no strategy for {t!r}: teach strategy_for about it")


def builds(cls: type[msgspec.Struct], **overrides: st.SearchStrategy[Any]) -> st.SearchStrategy:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    fields = {
        f.name: overrides[f.name] if f.name in overrides else strategy_for(f.type)
        for f in info.fields
    }
    return st.builds(cls, **fields)


finite = st.floats(allow_nan=False, allow_infinity=False)
text = st.text(max_size=30)

# Frames with cross-field rules (checked in __post_init__) need the rule built in. Fields not
# named here (Jump's `inclusive` with `to` or `by`) are drawn from their msgspec type.
OVERRIDES: dict[type[msgspec.Struct], st.SearchStrategy[Any]] = {
    Jump: st.one_of(
        builds(Jump, to=finite, by=st.none(), next_event=st.just(False)),
        builds(
            Jump,
            to=st.none(),
            by=st.floats(min_value=0, allow_infinity=False),
            next_event=st.just(False),
        ),
        builds(Jump, to=st.none(), by=st.none(), next_event=st.just(True), inclusive=st.just(True)),
    ),
    CreateSession: st.one_of(
        builds(CreateSession, scenario=text, scenario_json=st.none()),
        builds(CreateSession, scenario=st.none(), scenario_json=text),
    ),
}


def frames_of(cls: type[msgspec.Struct]) -> st.SearchStrategy[Any]:
    return OVERRIDES[cls] if cls in OVERRIDES else builds(cls)


CLIENT_CLASSES = sorted(CLIENT_FRAME_TYPES.values(), key=lambda cls: cls.__name__)
SERVER_CLASSES = sorted(SERVER_FRAME_TYPES.values(), key=lambda cls: cls.__name__)

SCHEMA = generate_schema()


def validator(definition: str) -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator(
        {"$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{definition}"}
    )


CLIENT_VALIDATOR = validator("ClientFrame")
SERVER_VALIDATOR = validator("ServerFrame")


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


# -- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.value)
@pytest.mark.parametrize("cls", CLIENT_CLASSES, ids=lambda cls: cls.__name__)
@EXAMPLES
@given(data=st.data())
def test_client_frame_round_trips(
    cls: type[msgspec.Struct], encoding: Encoding, data: st.DataObject
) -> None:
    frame: ClientFrame = data.draw(frames_of(cls))
    wire = encode_client_frame(frame, encoding)
    assert isinstance(wire, str if encoding is Encoding.JSON else bytes)
    assert decode_client_frame(wire) == frame


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.value)
@pytest.mark.parametrize("cls", SERVER_CLASSES, ids=lambda cls: cls.__name__)
@EXAMPLES
@given(data=st.data())
def test_server_frame_round_trips(
    cls: type[msgspec.Struct], encoding: Encoding, data: st.DataObject
) -> None:
    frame: ServerFrame = data.draw(frames_of(cls))
    wire = encode_server_frame(frame, encoding)
    assert isinstance(wire, str if encoding is Encoding.JSON else bytes)
    assert decode_server_frame(wire) == frame


# -- frames agree with the published schema --------------------------------------------------


@pytest.mark.parametrize("cls", CLIENT_CLASSES, ids=lambda cls: cls.__name__)
@EXAMPLES
@given(data=st.data())
def test_client_frames_validate_against_schema(
    cls: type[msgspec.Struct], data: st.DataObject
) -> None:
    frame = data.draw(frames_of(cls))
    CLIENT_VALIDATOR.validate(json.loads(encode_client_frame(frame, Encoding.JSON)))


@pytest.mark.parametrize("cls", SERVER_CLASSES, ids=lambda cls: cls.__name__)
@EXAMPLES
@given(data=st.data())
def test_server_frames_validate_against_schema(
    cls: type[msgspec.Struct], data: st.DataObject
) -> None:
    frame = data.draw(frames_of(cls))
    SERVER_VALIDATOR.validate(json.loads(encode_server_frame(frame, Encoding.JSON)))


@pytest.mark.parametrize("cls", CLIENT_CLASSES + SERVER_CLASSES, ids=lambda cls: cls.__name__)
def test_frame_docstring_is_one_line_and_is_its_schema_description(
    cls: type[msgspec.Struct],
) -> None:
    doc = cls.__doc__
    assert doc and "\n" not in doc.strip()
    assert SCHEMA["$defs"][cls.__name__]["description"] == doc.strip()


@pytest.mark.parametrize("cls", CLIENT_CLASSES + SERVER_CLASSES, ids=lambda cls: cls.__name__)
def test_frame_tag_is_snake_case_of_class_name(cls: type[msgspec.Struct]) -> None:
    tag = cls.__struct_config__.tag
    assert tag == snake_case(cls.__name__.removesuffix("Item"))
    assert cls.__struct_config__.tag_field == "type"


# -- compatibility rules ---------------------------------------------------------------------


@pytest.mark.parametrize("cls", CLIENT_CLASSES, ids=lambda cls: cls.__name__)
def test_client_frames_forbid_unknown_fields_and_require_an_id(cls: type[msgspec.Struct]) -> None:
    assert cls.__struct_config__.forbid_unknown_fields
    assert "id" in SCHEMA["$defs"][cls.__name__]["required"]


@pytest.mark.parametrize("cls", SERVER_CLASSES, ids=lambda cls: cls.__name__)
def test_server_frames_allow_unknown_fields(cls: type[msgspec.Struct]) -> None:
    assert not cls.__struct_config__.forbid_unknown_fields


def test_client_decoder_ignores_unknown_fields_in_server_frames() -> None:
    wire = json.dumps({"type": "pong", "id": 3, "added_in_a_later_version": [1, 2]})
    assert decode_server_frame(wire) == SERVER_FRAME_TYPES["pong"](id=3)


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.value)
def test_client_decoder_returns_none_for_unknown_server_frame_types(encoding: Encoding) -> None:
    frame = {"type": "added_in_a_later_version", "seq": 9}
    wire = json.dumps(frame) if encoding is Encoding.JSON else msgspec.msgpack.encode(frame)
    assert decode_server_frame(wire) is None


def test_welcome_announces_protocol_version() -> None:
    clock = ClockState(state="running", time=0.0, tick=0, mode="fast", speed=1.0)
    welcome = Welcome(
        session_id="s", role=Role.AGENT, epoch="e", seq=0, scenario_id="x", clock=clock
    )
    assert json.loads(encode_server_frame(welcome, Encoding.JSON))["protocol"] == PROTOCOL
    assert PROTOCOL == "areasync/1"


# -- cross-field rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [{}, {"to": 1.0, "by": 1.0}, {"by": 1.0, "next_event": True}, {"to": 5.0, "next_event": True}],
    ids=["none", "to+by", "by+next_event", "to+next_event"],
)
def test_jump_requires_exactly_one_target(fields: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_client_frame(json.dumps({"type": "jump", "id": 4, **fields}))
    assert caught.value.code is ErrorCode.INVALID_FIELD
    assert caught.value.id == 4
    assert "exactly one of `to`" in caught.value.message


def test_jump_refuses_inclusive_false_with_next_event() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_client_frame(
            json.dumps({"type": "jump", "id": 5, "next_event": True, "inclusive": False})
        )
    assert caught.value.code is ErrorCode.INVALID_FIELD
    assert caught.value.id == 5
    assert "- at `$.inclusive`" in caught.value.message
    assert "`to: T, inclusive: false`" in caught.value.message  # what to do instead


@pytest.mark.parametrize("target", [{"to": 5.0}, {"by": 2.0}], ids=["to", "by"])
def test_jump_takes_inclusive_false_with_to_or_by(target: dict[str, float]) -> None:
    frame = decode_client_frame(json.dumps({"type": "jump", "id": 1, **target, "inclusive": False}))
    assert isinstance(frame, Jump) and frame.inclusive is False


def test_the_schema_refuses_inclusive_false_with_next_event_too() -> None:
    frame = {"type": "jump", "id": 5, "next_event": True, "inclusive": False}
    assert not CLIENT_VALIDATOR.is_valid(frame)
    assert CLIENT_VALIDATOR.is_valid({"type": "jump", "id": 5, "to": 5.0, "inclusive": False})


def test_a_jump_without_inclusive_is_inclusive() -> None:
    # Old clients never send the field.
    frame = decode_client_frame(json.dumps({"type": "jump", "id": 1, "to": 5.0}))
    assert isinstance(frame, Jump) and frame.inclusive is True


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.value)
def test_a_default_jump_is_encoded_without_inclusive(encoding: Encoding) -> None:
    # So that it still works with servers older than the field (they refuse unknown fields).
    wire = encode_client_frame(Jump(id=1, to=5.0), encoding)
    decoded = json.loads(wire) if encoding is Encoding.JSON else msgspec.msgpack.decode(wire)
    assert decoded == {"type": "jump", "id": 1, "to": 5.0}


def test_create_session_requires_a_scenario_or_inline_json() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_client_frame(json.dumps({"type": "create_session", "id": 1}))
    assert caught.value.code is ErrorCode.INVALID_FIELD
    assert "`scenario`" in caught.value.message and "`scenario_json`" in caught.value.message


# -- encoding --------------------------------------------------------------------------------


def _event_item() -> EventItem:
    record = EventRecord(
        event_id="e1", event_type="AGENT", time=1.5, app="EmailClientApp", function="send_email"
    )
    return EventItem(seq=1, event=record)


def test_encoded_frame_encodes_once_per_encoding() -> None:
    encoded = EncodedFrame(_event_item())
    assert encoded.get(Encoding.JSON) is encoded.get(Encoding.JSON)
    assert encoded.get(Encoding.MSGPACK) is encoded.get(Encoding.MSGPACK)


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.value)
def test_encoded_frame_matches_encode_server_frame(encoding: Encoding) -> None:
    item = _event_item()
    assert EncodedFrame(item).get(encoding) == encode_server_frame(item, encoding)


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.value)
def test_unencodable_result_raises_internal_protocol_error_with_request_id(
    encoding: Encoding,
) -> None:
    with pytest.raises(ProtocolError) as caught:
        encode_server_frame(Result(id=12, value=object()), encoding)
    assert caught.value.code is ErrorCode.INTERNAL
    assert caught.value.id == 12
    assert "`result`" in caught.value.message


def test_clock_item_nests_clock_state() -> None:
    clock = ClockState(state="paused", time=10.0, tick=3, mode="manual", speed=1.0)
    wire = json.loads(encode_server_frame(ClockItem(seq=2, clock=clock), Encoding.JSON))
    assert wire["clock"]["state"] == "paused" and wire["seq"] == 2
