"""`records.to_plain`'s fast path (exact JSON types, plain dicts and lists) changes no result.

The reference below is `to_plain` as it was before the fast path: every value, nested or not,
must come out the same (compared by `repr`, which tells 1, 1.0 and True apart and keeps key
order).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from areasync.bridge.convert import to_plain

_PRIMITIVES = (str, int, float, bool, type(None))
_MAX_DEPTH = 64


def reference(value: Any, _depth: int = 0) -> Any:
    if isinstance(value, _PRIMITIVES):
        return value
    if _depth > _MAX_DEPTH:
        return repr(value)
    depth = _depth + 1
    if isinstance(value, Mapping):
        return {str(k): reference(v, depth) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [reference(v, depth) for v in items]
    if isinstance(value, enum.Enum):
        return reference(value.value, depth)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: reference(getattr(value, f.name), depth)
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    if hasattr(value, "model_dump"):
        return reference(value.model_dump(), depth)
    return repr(value)


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Tag(str):
    pass


@dataclasses.dataclass
class Point:
    x: Any
    _hidden: int = 0


class Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.sampled_from([Color.RED, Level.HIGH, Tag("t"), Opaque(), dt.date(2024, 1, 2)]),
    st.datetimes(),
)
keys = st.one_of(st.text(max_size=3), st.integers(), st.booleans(), st.none(), st.just(Tag("k")))
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(keys, inner, max_size=4),
        st.dictionaries(keys, inner, max_size=4).map(OrderedDict),
        st.frozensets(st.integers(), max_size=4),
        inner.map(Point),
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(values)
def test_to_plain_gives_what_it_gave_before(value: Any) -> None:
    assert repr(to_plain(value)) == repr(reference(value))


def nested(depth: int, kind: str) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value} if kind == "dict" else [value]
    return value


def test_depth_bound_is_unchanged() -> None:
    for kind in ("dict", "list"):
        for depth in (63, 64, 65, 66, 70, 200):
            value = nested(depth, kind)
            assert repr(to_plain(value)) == repr(reference(value))
    mixed: Any = "leaf"
    for i in range(100):
        mixed = {"k": mixed} if i % 3 else (mixed,)
    assert repr(to_plain(mixed)) == repr(reference(mixed))


def test_keys_that_collide_as_text_keep_the_last_value() -> None:
    value = {1: "int", "1": "str", 2.5: "float", "2.5": "text", None: "none", "None": "text"}
    assert repr(to_plain(value)) == repr(reference(value))
