"""`json_copy`: a request's values are JSON that every encoding and the journal carry unchanged;
anything else is refused saying where, what, and what is allowed."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
import pytest

from areasync.protocol.values import MAX_DEPTH, MAX_INT, MIN_INT, NotJSONError, json_copy


def nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_json_values_are_copied_unchanged_and_survive_the_journals_encoding() -> None:
    value = {
        "text": "héllo ✓",
        "ints": [MIN_INT, MAX_INT, 0],
        "float": 1.5,
        "flags": [True, False, None],
        "deep": nested(MAX_DEPTH - 1),
    }
    copy = json_copy(value)
    assert copy == value and copy is not value and copy["ints"] is not value["ints"]
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(copy)) == value


@pytest.mark.parametrize(
    ("value", "where", "words"),
    [
        ({"a": MAX_INT + 1}, "`$.a`", "outside -2**63 to 2**64-1"),
        ({"a": [MIN_INT - 1]}, "`$.a[0]`", "outside -2**63 to 2**64-1"),
        ({"a": 10**400}, "`$.a`", "an integer of 1329 bits"),
        ({"a": float("nan")}, "`$.a`", "JSON has no number for"),
        ({"a": float("-inf")}, "`$.a`", "JSON has no number for"),
        ({"a": "x\ud800"}, "`$.a`", "lone surrogate"),
        ({"\udfff": 1}, "`$['\\udfff']`", "lone surrogate"),
        ({"a": {1: 2}}, "`$.a`", "has the key 1, not a string"),
        ({"a": b"x"}, "`$.a`", "is a bytes"),
        ({"a": (1, 2)}, "`$.a`", "is a tuple"),
        ({"a": dt.datetime(2024, 1, 1)}, "`$.a`", "is a datetime.datetime"),
        ({"a": nested(MAX_DEPTH)}, "`$.a" + "[0]" * (MAX_DEPTH - 1) + "`", "deeper than 32"),
    ],
)
def test_a_value_json_or_the_journal_cannot_carry_is_refused_saying_where(
    value: Any, where: str, words: str
) -> None:
    with pytest.raises(NotJSONError) as refused:
        json_copy(value)
    message = str(refused.value)
    assert message.startswith(where) and words in message
    assert "integers from -2**63 to 2**64-1" in message  # and what is allowed
