"""What a value in a request may be: JSON that every encoding, and a session's journal, carry
unchanged.

Why this exists. A tool call's arguments become a record of the session (`InputRecord`) the
moment the call is taken: its journal writes the record as msgpack, a fork or a restart hands
the arguments to ARE again, and the stream shows them to every subscriber in JSON or msgpack.
What the routes' decoders accept is wider than what all of those carry unchanged:

- an integer of any size (JSON has no limit; msgpack's are 64-bit: -2**63 to 2**64-1, and
  msgspec refuses to encode any other, so a journal could not hold the call);
- NaN and the infinities (Python's `json`, which the gaia2-cli and OpenEnv routes use, reads
  `NaN` and `Infinity`; JSON has neither and writes them as null);
- strings with lone surrogates (`"\\ud800"` through Python's `json`: neither encoding can write
  them as UTF-8);
- msgpack's bytes, timestamps, extension types and non-string keys (a record keeps text for
  them, so a replay would call the tool with other values than the call had);
- nesting without limit (past `MAX_DEPTH` levels a record keeps a value's text, and the
  encoders' own limit is the interpreter's recursion limit, wherever the stack stands).

`json_copy` takes a request's value and returns a copy made of JSON types only, or refuses it
with `NotJSONError` saying where and what is allowed, before anything records it: the copy is
what the record holds, so it is the call's arguments exactly and a journal always can encode
it.
"""

from __future__ import annotations

import math
from typing import Any, Final

__all__ = ["MAX_DEPTH", "MAX_INT", "MIN_INT", "NotJSONError", "check_fields", "json_copy"]

MIN_INT: Final = -(2**63)
MAX_INT: Final = 2**64 - 1
MAX_DEPTH: Final = 32
"""Arrays and objects nested at most this many levels (ARE's tools take flat values)."""

ALLOWED: Final = (
    "a request's values are JSON: strings (UTF-8 text), finite numbers, integers from -2**63 "
    f"to 2**64-1, true, false, null, and arrays and objects with string keys nested at most "
    f"{MAX_DEPTH} levels"
)


class NotJSONError(ValueError):
    """A value a request may not carry; the message says where (`$.a[2]`), what and why."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.where: list[str] = []  # innermost first, filled as the copy unwinds

    def __str__(self) -> str:
        return f"`${''.join(reversed(self.where))}` {self.problem}; {ALLOWED}"


def json_copy(value: Any) -> Any:
    """A copy of `value` made of JSON types only (`dict`, `list`, `str`, `int`, `float`,
    `bool`, None), or `NotJSONError` if it holds anything else (module docstring)."""
    return _copy(value, 0)


def check_fields(frame: Any) -> None:
    """`NotJSONError` (`where`: `$.field...`) if a field of the msgspec Struct `frame` holds
    what `json_copy` refuses. For a frame built in the process from another protocol's data
    (Python's `json` reads NaN and lone surrogates) before it is encoded as JSON, which would
    write NaN as null and cannot write a lone surrogate. Fields of the frame's own types
    (enums, structs) are not looked into."""
    for name in frame.__struct_fields__:
        value = getattr(frame, name)
        if type(value) in _LOOKED_INTO:
            try:
                _copy(value, 0)
            except NotJSONError as exc:
                exc.where.append(f".{name}")
                raise


_LOOKED_INTO: Final = frozenset({str, int, float, dict, list})


def _copy(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is str:
        if not value.isascii():
            _check_text(value)
        return value
    if kind is int:
        if MIN_INT <= value <= MAX_INT:
            return value
        raise NotJSONError(f"is {_shown_int(value)}, outside -2**63 to 2**64-1")
    if kind is bool or value is None:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        raise NotJSONError(f"is {value!r}, which JSON has no number for")
    if kind is dict or kind is list:
        if depth >= MAX_DEPTH:
            raise NotJSONError(f"is nested deeper than {MAX_DEPTH} levels")
        return _copy_dict(value, depth + 1) if kind is dict else _copy_list(value, depth + 1)
    raise NotJSONError(f"is {_kind(value)}, not a JSON value")


def _copy_dict(value: dict[Any, Any], depth: int) -> dict[str, Any]:
    copy: dict[str, Any] = {}
    for key, item in value.items():
        # The common case first, by type identity: an ASCII key and text, a flag or null.
        kind = type(item)
        plain = (kind is str and item.isascii()) or kind in _FLAGS
        if plain and type(key) is str and key.isascii():
            copy[key] = item
            continue
        if type(key) is not str:
            raise NotJSONError(f"has the key {_shown(key)}, not a string")
        try:
            if not key.isascii():
                _check_text(key)
            copy[key] = _copy(item, depth)
        except NotJSONError as exc:
            exc.where.append(f".{key}" if key.isidentifier() else f"[{key!r}]")
            raise
    return copy


def _copy_list(value: list[Any], depth: int) -> list[Any]:
    copy: list[Any] = []
    for index, item in enumerate(value):
        kind = type(item)
        if (kind is str and item.isascii()) or kind in _FLAGS:
            copy.append(item)
            continue
        try:
            copy.append(_copy(item, depth))
        except NotJSONError as exc:
            exc.where.append(f"[{index}]")
            raise
    return copy


_FLAGS: Final = frozenset({bool, type(None)})


def _check_text(text: str) -> None:
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        raise NotJSONError(
            f"holds {text[exc.start]!r} at character {exc.start}, a lone surrogate, which is "
            "not text (UTF-8 cannot encode it)"
        ) from None


def _shown_int(value: int) -> str:
    if value.bit_length() > 128:  # its digits would flood the message (or exceed repr's limit)
        return f"an integer of {value.bit_length()} bits"
    return f"the integer {value}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}...({len(text)} characters)"


def _kind(value: Any) -> str:
    return f"a {type(value).__module__}.{type(value).__qualname__}".replace("a builtins.", "a ")
