"""An `ended` item's validation is a typed `Validation` record, and its bytes on the wire are
the ones clients have always read: the same keys, in the same order, nulls included."""

from __future__ import annotations

from areasync.protocol import Encoding, decode_server_frame, encode_server_frame
from areasync.protocol.frames import EndedItem
from areasync.protocol.records import Validation

FAILED = Validation(success=False, exception="RuntimeError: boom", rationale="Exception")
FAILED_JSON = (
    '{"type":"ended","seq":4,"state":"failed","validation":{"success":false,'
    '"exception":"RuntimeError: boom","rationale":"Exception"},"reason":"judge failed"}'
)
FAILED_MSGPACK = bytes.fromhex(
    "85a474797065a5656e646564a373657104a57374617465a66661696c6564aa76616c69646174696f6e83a773"
    "756363657373c2a9657863657074696f6eb252756e74696d654572726f723a20626f6f6da9726174696f6e61"
    "6c65a9457863657074696f6ea6726561736f6eac6a75646765206661696c6564"
)
UNJUDGED_JSON = (
    '{"type":"ended","seq":4,"state":"failed","validation":{"success":null,'
    '"exception":null,"rationale":null},"reason":"judge failed"}'
)


def ended(validation: Validation | None) -> EndedItem:
    return EndedItem(seq=4, state="failed", validation=validation, reason="judge failed")


def test_an_ended_items_json_bytes_are_those_of_the_untyped_validation() -> None:
    assert encode_server_frame(ended(FAILED), Encoding.JSON) == FAILED_JSON


def test_an_ended_items_msgpack_bytes_are_those_of_the_untyped_validation() -> None:
    assert encode_server_frame(ended(FAILED), Encoding.MSGPACK) == FAILED_MSGPACK


def test_an_unjudged_validation_keeps_its_nulls_on_the_wire() -> None:
    assert encode_server_frame(ended(Validation()), Encoding.JSON) == UNJUDGED_JSON


def test_a_decoded_ended_item_carries_a_typed_validation() -> None:
    for data in (FAILED_JSON, FAILED_MSGPACK):
        frame = decode_server_frame(data)
        assert isinstance(frame, EndedItem) and frame.validation == FAILED
