"""Decoding hostile input: whatever arrives, the decoders raise ProtocolError and nothing else,
with the right code, msgspec's path in the message, and the request id when it is readable."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from areasync.protocol import (
    CLIENT_FRAME_TYPES,
    SERVER_FRAME_TYPES,
    CallTool,
    ClockItem,
    ClockState,
    Encoding,
    ErrorCode,
    Ping,
    ProtocolError,
    decode_client_frame,
    decode_server_frame,
    encode_client_frame,
    encode_server_frame,
)

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_FRAMES = settings(FUZZ, max_examples=100)  # each example is a whole frame: costlier
DEEP = 100_000

# Any field name of any frame, so that fuzzed frames often get past the tag to the fields.
FIELD_NAMES = sorted(
    {name for cls in CLIENT_FRAME_TYPES.values() for name in cls.__struct_fields__}
    | {name for cls in SERVER_FRAME_TYPES.values() for name in cls.__struct_fields__}
)
TAGS = sorted(CLIENT_FRAME_TYPES) + sorted(SERVER_FRAME_TYPES) + ["", "nope"]

# JSON values with no range limits: huge integers, huge and non-finite floats (msgpack only).
wild_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**64 - 2, max_value=2**64 + 2)
    | st.floats()
    | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
frame_like = st.fixed_dictionaries(
    {"type": st.sampled_from(TAGS) | wild_values},
    optional={name: wild_values for name in FIELD_NAMES},
)


def client_outcome(data: Any, encoding: Encoding | None = None) -> ProtocolError | None:
    """Decode; None if the frame was accepted, the ProtocolError otherwise. Anything else
    propagates and fails the test."""
    try:
        decode_client_frame(data, encoding)
    except ProtocolError as exc:
        return exc
    return None


def server_outcome(data: Any) -> ProtocolError | None:
    """Like client_outcome, for the client-side decoder of server frames."""
    try:
        decode_server_frame(data)
    except ProtocolError as exc:
        return exc
    return None


def decode_error(data: Any, encoding: Encoding | None = None) -> ProtocolError:
    error = client_outcome(data, encoding)
    assert error is not None, f"{data!r} was accepted"
    return error


def to_msgpack(value: Any) -> bytes:
    return msgspec.msgpack.encode(value)


# -- anything at all -------------------------------------------------------------------------


@FUZZ
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_protocol_error(data: bytes) -> None:
    client_outcome(data)
    client_outcome(data, Encoding.JSON)


@FUZZ
@given(text=st.text(max_size=200))
def test_arbitrary_text_raises_only_protocol_error(text: str) -> None:
    client_outcome(text)


@FUZZ
@given(value=wild_values)
def test_arbitrary_json_values_raise_only_protocol_error(value: Any) -> None:
    client_outcome(json.dumps(value))  # NaN/inf become JSON's non-standard NaN/Infinity tokens


@FUZZ
@given(value=wild_values.filter(lambda v: not isinstance(v, int) or -(2**63) <= v < 2**64))
def test_arbitrary_msgpack_values_raise_only_protocol_error(value: Any) -> None:
    try:
        wire = to_msgpack(value)
    except OverflowError:  # a nested int msgpack cannot carry
        return
    client_outcome(wire)


@FUZZ_FRAMES
@given(frame=frame_like)
def test_frame_shaped_json_raises_only_protocol_error(frame: dict[str, Any]) -> None:
    client_outcome(json.dumps(frame))


@FUZZ_FRAMES
@given(frame=frame_like)
def test_frame_shaped_msgpack_raises_only_protocol_error(frame: dict[str, Any]) -> None:
    try:
        wire = to_msgpack(frame)
    except OverflowError:
        return
    client_outcome(wire)


@FUZZ
@given(data=st.binary(max_size=200) | st.text(max_size=200))
def test_server_frame_decoder_raises_only_protocol_error(data: bytes | str) -> None:
    server_outcome(data)


@FUZZ_FRAMES
@given(frame=frame_like)
def test_server_frame_decoder_on_frame_shaped_json_raises_only_protocol_error(
    frame: dict[str, Any],
) -> None:
    server_outcome(json.dumps(frame))


# -- undecodable frames ----------------------------------------------------------------------

CALL = CallTool(id=5, tool="EmailClientApp__send_email", args={"to": ["a@b.c"], "n": 1.5})


@pytest.mark.parametrize("encoding", list(Encoding), ids=lambda e: e.value)
def test_every_truncation_of_a_frame_is_bad_frame(encoding: Encoding) -> None:
    wire = encode_client_frame(CALL, encoding)
    for end in range(len(wire)):
        assert decode_error(wire[:end]).code is ErrorCode.BAD_FRAME


def test_trailing_garbage_is_bad_frame() -> None:
    error = decode_error('{"type": "ping", "id": 1} {')
    assert error.code is ErrorCode.BAD_FRAME
    assert "malformed" in error.message


def test_deeply_nested_json_is_bad_frame() -> None:
    args = "[" * DEEP + "]" * DEEP
    error = decode_error(f'{{"type": "call_tool", "id": 1, "tool": "t", "args": {{"a": {args}}}}}')
    assert error.code is ErrorCode.BAD_FRAME
    assert "nests too deeply" in error.message


def test_deeply_nested_msgpack_is_bad_frame() -> None:
    head = to_msgpack({"type": "call_tool", "id": 1, "tool": "t"})
    nested = b"\xa4args" + b"\x81\xa1a" + b"\x91" * DEEP + b"\x90"
    error = decode_error(bytes([head[0] + 1]) + head[1:] + nested)  # fixmap of 3 -> 4 entries
    assert error.code is ErrorCode.BAD_FRAME
    assert "nests too deeply" in error.message


def test_invalid_utf8_in_msgpack_string_is_bad_frame() -> None:
    wire = to_msgpack({"type": "send_user_message", "id": 1, "content": "hello"})
    error = decode_error(wire.replace(b"hello", b"he\xffll"))
    assert error.code is ErrorCode.BAD_FRAME
    assert "UTF-8" in error.message


def test_invalid_utf8_in_json_bytes_is_bad_frame() -> None:
    wire = b'{"type": "send_user_message", "id": 1, "content": "he\xffll"}'
    assert decode_error(wire, Encoding.JSON).code is ErrorCode.BAD_FRAME


def test_lone_surrogate_in_text_is_bad_frame() -> None:
    error = decode_error('{"type": "send_user_message", "id": 1, "content": "\ud800"}')
    assert error.code is ErrorCode.BAD_FRAME


@pytest.mark.parametrize("value", [[1, 2], "ping", 3, None], ids=["array", "str", "int", "null"])
def test_frame_that_is_not_an_object_is_bad_frame(value: Any) -> None:
    error = decode_error(json.dumps(value))
    assert error.code is ErrorCode.BAD_FRAME
    assert "JSON object" in error.message


def test_frame_without_type_is_bad_frame_and_keeps_the_id() -> None:
    error = decode_error(json.dumps({"id": 8, "tool": "x"}))
    assert error.code is ErrorCode.BAD_FRAME
    assert error.id == 8
    assert "no `type`" in error.message


# -- unknown types ---------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", list(Encoding), ids=lambda e: e.value)
def test_unknown_type_is_reported_with_the_id_and_the_valid_types(encoding: Encoding) -> None:
    frame = {"type": "teleport", "id": 9}
    wire = json.dumps(frame) if encoding is Encoding.JSON else to_msgpack(frame)
    error = decode_error(wire)
    assert error.code is ErrorCode.UNKNOWN_TYPE
    assert error.id == 9
    assert "'teleport'" in error.message and "call_tool" in error.message


def test_server_frame_type_sent_by_a_client_is_unknown_type() -> None:
    assert decode_error(json.dumps({"type": "welcome", "id": 1})).code is ErrorCode.UNKNOWN_TYPE


def test_non_string_type_is_unknown_type() -> None:
    assert decode_error(json.dumps({"type": 5, "id": 1})).code is ErrorCode.UNKNOWN_TYPE


# -- invalid fields --------------------------------------------------------------------------


def test_wrong_field_type_reports_msgspec_path() -> None:
    error = decode_error(json.dumps({"type": "tick", "id": "a"}))
    assert error.code is ErrorCode.INVALID_FIELD
    assert "Expected `int`, got `str` - at `$.id`" in error.message
    assert error.id is None  # the id itself is what is wrong


def test_invalid_field_error_echoes_the_request_id() -> None:
    error = decode_error(to_msgpack({"type": "tick", "id": 7, "n": "three"}))
    assert error.code is ErrorCode.INVALID_FIELD
    assert error.id == 7
    assert "- at `$.n`" in error.message


def test_nested_invalid_field_reports_nested_path() -> None:
    error = decode_error(json.dumps({"type": "get_state", "id": 2, "apps": ["a", 3]}))
    assert "Expected `str`, got `int` - at `$.apps[1]`" in error.message


def test_unknown_field_is_rejected_naming_the_field() -> None:
    error = decode_error(json.dumps({"type": "ping", "id": 1, "urgent": True}))
    assert error.code is ErrorCode.INVALID_FIELD
    assert error.id == 1
    assert "unknown field `urgent`" in error.message
    assert "remove it" in error.message


def test_missing_required_field_is_invalid_field() -> None:
    error = decode_error(json.dumps({"type": "call_tool", "id": 1}))
    assert error.code is ErrorCode.INVALID_FIELD
    assert "missing required field `tool`" in error.message


def test_unknown_role_is_invalid_field() -> None:
    error = decode_error(json.dumps({"type": "hello", "id": 1, "role": "root", "token": "t"}))
    assert error.code is ErrorCode.INVALID_FIELD
    assert "- at `$.role`" in error.message


@pytest.mark.parametrize("id", [2**64 + 1, 2**53, -1], ids=["above-2**64", "2**53", "negative"])
def test_out_of_range_request_id_is_invalid_field(id: int) -> None:
    error = decode_error(json.dumps({"type": "ping", "id": id}))
    assert error.code is ErrorCode.INVALID_FIELD
    assert "- at `$.id`" in error.message


def test_huge_float_is_invalid_field() -> None:
    error = decode_error('{"type": "set_speed", "id": 1, "speed": 1e400}')
    assert error.code is ErrorCode.INVALID_FIELD
    assert "out of range" in error.message


@pytest.mark.parametrize("speed", [float("nan"), float("inf"), 0.0, -1.0])
def test_set_speed_rejects_non_positive_and_non_finite_speeds(speed: float) -> None:
    error = decode_error(to_msgpack({"type": "set_speed", "id": 1, "speed": speed}))
    assert error.code is ErrorCode.INVALID_FIELD
    assert "speed" in error.message


@pytest.mark.parametrize(
    "fields",
    [{"by": -1.0}, {"by": float("inf")}, {"to": float("inf")}, {"to": float("nan")}],
    ids=["negative-by", "infinite-by", "infinite-to", "nan-to"],
)
def test_jump_rejects_backward_and_non_finite_targets(fields: dict[str, float]) -> None:
    error = decode_error(to_msgpack({"type": "jump", "id": 1, **fields}))
    assert error.code is ErrorCode.INVALID_FIELD


def test_tick_rejects_zero_ticks() -> None:
    error = decode_error(json.dumps({"type": "tick", "id": 1, "n": 0}))
    assert "Expected `int` >= 1 - at `$.n`" in error.message


# -- accepted inputs -------------------------------------------------------------------------


def test_json_delivered_as_bytes_decodes_with_explicit_encoding() -> None:
    assert decode_client_frame(b'{"type": "ping", "id": 1}', Encoding.JSON) == Ping(id=1)


def test_huge_integer_inside_tool_args_is_kept_exactly_in_json() -> None:
    frame = decode_client_frame(
        json.dumps({"type": "call_tool", "id": 1, "tool": "t", "args": {"n": 2**80}})
    )
    assert isinstance(frame, CallTool) and frame.args == {"n": 2**80}


def test_server_frame_with_wrong_field_is_invalid_field() -> None:
    clock = ClockState(state="running", time=1.0, tick=1, mode="fast", speed=1.0)
    wire = json.loads(encode_server_frame(ClockItem(seq=1, clock=clock), Encoding.JSON))
    wire["seq"] = "one"
    with pytest.raises(ProtocolError) as caught:
        decode_server_frame(json.dumps(wire))
    assert caught.value.code is ErrorCode.INVALID_FIELD
    assert "- at `$.seq`" in caught.value.message
