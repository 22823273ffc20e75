"""Turn wire data into typed frames and frames into wire data, in JSON or msgpack.

A text WebSocket frame is JSON and a binary frame is msgpack; the server answers every client in
the encoding of its ``hello``. This is the hot path of the service (every tool call in, every
stream item out), so the msgspec encoders and decoders are built once, here, and reused.

Decoding never raises anything but :class:`ProtocolError`, whatever arrives: malformed or
truncated data, invalid UTF-8, absurd nesting, numbers out of range, unknown frame types,
missing or mistyped fields. The error's code says which (``bad_frame``, ``unknown_type``,
``invalid_field``), its message keeps msgspec's path (``... - at `$.id```), and its ``id``
echoes the request id whenever the frame got far enough to have a readable one.

Stream items go to many subscribers: :class:`EncodedFrame` encodes one at most once per
encoding and hands every subscriber the very same ``str`` / ``bytes`` object.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias, overload

import msgspec

from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.protocol.frames import (
    CLIENT_FRAME_TYPES,
    SERVER_FRAME_TYPES,
    Batch,
    BatchedFrame,
    ClientFrame,
    RequestId,
    ServerFrame,
    Welcome,
    frame_tag,
)

__all__ = [
    "EncodedFrame",
    "Encoding",
    "batch_parts",
    "decode_client_frame",
    "decode_server_frame",
    "encode_client_frame",
    "encode_server_bytes",
    "encode_server_frame",
    "encoding_of",
]

WireData = str | bytes | bytearray | memoryview
"""What a WebSocket delivers: ``str`` for a text frame, a bytes-like object for a binary one."""


class Encoding(enum.Enum):
    """The wire encoding of a connection, fixed by the WebSocket frame type of its ``hello``."""

    JSON = "json"  # text frames
    MSGPACK = "msgpack"  # binary frames


def encoding_of(data: WireData) -> Encoding:
    """The encoding implied by what the WebSocket delivered: ``str`` is JSON, bytes msgpack."""
    return Encoding.JSON if isinstance(data, str) else Encoding.MSGPACK


# The hot path avoids the Enum machinery: `Encoding.JSON` is a slow class-attribute lookup on
# Python 3.11 and Enum hashing runs Python code, so it compares against module constants and
# calls bound methods held in module globals.
_JSON: Final = Encoding.JSON
_MSGPACK: Final = Encoding.MSGPACK

_json_encode: Final = msgspec.json.Encoder().encode
_msgpack_encode: Final = msgspec.msgpack.Encoder().encode

_Decode: TypeAlias = Callable[[Any], Any]
_client_json_decode: Final[_Decode] = msgspec.json.Decoder(ClientFrame).decode
_client_msgpack_decode: Final[_Decode] = msgspec.msgpack.Decoder(ClientFrame).decode
_server_json_decode: Final[_Decode] = msgspec.json.Decoder(ServerFrame).decode
_server_msgpack_decode: Final[_Decode] = msgspec.msgpack.Decoder(ServerFrame).decode


class _Envelope(msgspec.Struct):
    """Just the envelope of a frame, its other fields skipped: used only after a failure."""

    type: msgspec.Raw = msgspec.Raw()
    id: msgspec.Raw = msgspec.Raw()


_envelope_json_decode: Final[_Decode] = msgspec.json.Decoder(_Envelope).decode
_envelope_msgpack_decode: Final[_Decode] = msgspec.msgpack.Decoder(_Envelope).decode

# Errors a decoder may raise on hostile input besides msgspec's own: RecursionError for deep
# nesting, UnicodeError (a ValueError) for invalid UTF-8 or lone surrogates in a str,
# OverflowError for numbers out of range, TypeError for a non-buffer argument.
_INPUT_ERRORS: Final = (msgspec.DecodeError, RecursionError, ValueError, OverflowError, TypeError)

_HINT: Final = "Frame layouts are in the published schema (`areasync schema`)."


def decode_client_frame(data: WireData, encoding: Encoding | None = None) -> ClientFrame:
    """Decode one client frame; raise :class:`ProtocolError` (and only that) if it is invalid.

    ``encoding`` defaults to what ``data`` implies (:func:`encoding_of`); pass it to decode JSON
    delivered as bytes.
    """
    if encoding is None:  # inlined encoding_of(): this runs for every frame received
        encoding = _JSON if isinstance(data, str) else _MSGPACK
    try:
        if encoding is _JSON:
            frame: ClientFrame = _client_json_decode(data)
        else:
            frame = _client_msgpack_decode(data)
        return frame
    except msgspec.ValidationError as exc:
        error, _ = _explain_invalid(exc, data, encoding, CLIENT_FRAME_TYPES, "client")
        raise error from None
    except _INPUT_ERRORS as exc:
        raise _undecodable(exc, encoding) from None
    except Exception as exc:  # a bug here (or in a __post_init__) must still come out as data
        raise _internal(exc) from None


def decode_server_frame(data: WireData, encoding: Encoding | None = None) -> ServerFrame | None:
    """Decode one server frame on the client side; None for a frame type this client does not
    know (clients ignore those), :class:`ProtocolError` if the frame is invalid.

    Unknown fields are ignored, so a newer server's frames still decode.
    """
    if encoding is None:
        encoding = _JSON if isinstance(data, str) else _MSGPACK
    try:
        if encoding is _JSON:
            frame: ServerFrame = _server_json_decode(data)
        else:
            frame = _server_msgpack_decode(data)
        return frame
    except msgspec.ValidationError as exc:
        error, tag = _explain_invalid(exc, data, encoding, SERVER_FRAME_TYPES, "server")
        if error.code is ErrorCode.UNKNOWN_TYPE and tag is not None:
            return None  # a newer server's frame type: ignore it, as the protocol requires
        if tag == "batch":
            batch = _decode_batch_leniently(data, encoding)
            if batch is not None:
                return batch
        raise error from None
    except _INPUT_ERRORS as exc:
        raise _undecodable(exc, encoding) from None
    except Exception as exc:
        raise _internal(exc) from None


@overload
def encode_server_frame(frame: ServerFrame, encoding: Literal[Encoding.JSON]) -> str: ...
@overload
def encode_server_frame(frame: ServerFrame, encoding: Literal[Encoding.MSGPACK]) -> bytes: ...
@overload
def encode_server_frame(frame: ServerFrame, encoding: Encoding) -> str | bytes: ...
def encode_server_frame(frame: ServerFrame, encoding: Encoding) -> str | bytes:
    """Encode a server frame: JSON text (``str``) or msgpack (``bytes``).

    ``websocket.send()`` picks the WebSocket frame type from the Python type, so the result can
    be sent as is. A value that cannot be encoded (an arbitrary object in ``result.value``, an
    int beyond 64 bits in msgpack) raises :class:`ProtocolError` with code ``internal``, carrying
    the request id, so the caller can send its ``error`` frame instead.
    """
    try:
        if encoding is _JSON:
            # msgspec writes UTF-8; a str makes websockets send a text frame.
            return _json_encode(frame).decode()
        return _msgpack_encode(frame)
    except Exception as exc:
        raise _unencodable(frame, encoding, exc) from exc


def encode_server_bytes(frame: ServerFrame, encoding: Encoding) -> bytes:
    """As :func:`encode_server_frame`, but JSON too as bytes (UTF-8): the payload as it goes on
    the wire, without a detour through ``str``."""
    try:
        if encoding is _JSON:
            return _json_encode(frame)
        return _msgpack_encode(frame)
    except Exception as exc:
        raise _unencodable(frame, encoding, exc) from exc


# A batch is the map {"type": "batch", "frames": [...]}; its frames are already-encoded frames,
# spliced in as they are (each stream item is encoded once, whoever it is sent to).
_JSON_BATCH_HEAD: Final = b'{"type":"batch","frames":['
_JSON_BATCH_TAIL: Final = b"]}"
_MSGPACK_BATCH_HEAD: Final = _msgpack_encode({"type": "batch", "frames": []})[:-1]


def batch_parts(payloads: list[bytes | memoryview], encoding: Encoding) -> list[Any]:
    """The pieces whose concatenation is the ``batch`` frame carrying ``payloads`` (each an
    encoded server frame, in ``encoding``): join them, or hand them to a socket as they are."""
    if encoding is _JSON:
        parts: list[Any] = [_JSON_BATCH_HEAD]
        for index, payload in enumerate(payloads):
            if index:
                parts.append(b",")
            parts.append(payload)
        parts.append(_JSON_BATCH_TAIL)
        return parts
    count = len(payloads)
    if count < 16:
        header = bytes((0x90 | count,))  # fixarray
    elif count < 0x10000:
        header = b"\xdc" + count.to_bytes(2, "big")  # array 16
    else:
        header = b"\xdd" + count.to_bytes(4, "big")  # array 32
    return [_MSGPACK_BATCH_HEAD, header, *payloads]


@overload
def encode_client_frame(frame: ClientFrame, encoding: Literal[Encoding.JSON]) -> str: ...
@overload
def encode_client_frame(frame: ClientFrame, encoding: Literal[Encoding.MSGPACK]) -> bytes: ...
@overload
def encode_client_frame(frame: ClientFrame, encoding: Encoding) -> str | bytes: ...
def encode_client_frame(frame: ClientFrame, encoding: Encoding) -> str | bytes:
    """Encode a client frame (for the Python client): JSON text (``str``) or msgpack (``bytes``)."""
    try:
        if encoding is _JSON:
            return _json_encode(frame).decode()
        return _msgpack_encode(frame)
    except Exception as exc:
        raise _unencodable(frame, encoding, exc) from exc


class EncodedFrame:
    """A server frame with its wire forms, each encoded at most once, on first use.

    Build one per stream item and give every subscriber ``encoded.get(its_encoding)``: all
    subscribers of an encoding share one ``str`` / ``bytes`` object, and the stream can keep the
    EncodedFrame for replay.
    """

    __slots__ = ("_json", "_msgpack", "frame")

    frame: ServerFrame
    _json: str | None
    _msgpack: bytes | None

    def __init__(self, frame: ServerFrame) -> None:
        self.frame = frame
        self._json = None
        self._msgpack = None

    @property
    def json(self) -> str:
        """The frame as JSON text."""
        if self._json is None:
            self._json = encode_server_frame(self.frame, _JSON)
        return self._json

    @property
    def msgpack(self) -> bytes:
        """The frame as msgpack bytes."""
        if self._msgpack is None:
            self._msgpack = encode_server_frame(self.frame, _MSGPACK)
        return self._msgpack

    def get(self, encoding: Encoding) -> str | bytes:
        """The frame in ``encoding``: ``str`` for JSON, ``bytes`` for msgpack."""
        return self.json if encoding is _JSON else self.msgpack

    def __repr__(self) -> str:
        return f"EncodedFrame({self.frame!r})"


# -- explaining failures (cold path) ---------------------------------------------------------


_NOT_BATCHED: Final = (Welcome, Batch)


class _RawBatch(msgspec.Struct, tag_field="type", tag="batch"):
    frames: list[msgspec.Raw]


def _decode_batch_leniently(data: WireData, encoding: Encoding) -> Batch | None:
    """A batch holding a frame type this client does not know (from a newer server): the frames
    it knows, each decoded alone, the unknown ones left out as they would be outside a batch.
    None if the batch is invalid for another reason."""
    try:
        if encoding is _JSON:
            raw: _RawBatch = msgspec.json.decode(data, type=_RawBatch)
        else:
            raw = msgspec.msgpack.decode(data, type=_RawBatch)  # type: ignore[arg-type]
    except Exception:
        return None
    frames: list[BatchedFrame] = []
    for item in raw.frames:
        try:
            frame = decode_server_frame(bytes(item), encoding)
        except ProtocolError:
            return None
        if frame is not None and not isinstance(frame, _NOT_BATCHED):
            frames.append(frame)
    return Batch(frames=frames)


def _envelope(data: WireData, encoding: Encoding) -> _Envelope | None:
    """The frame's ``type`` and ``id``, undecoded; None if the frame is not even an object."""
    decode = _envelope_json_decode if encoding is _JSON else _envelope_msgpack_decode
    try:
        envelope: _Envelope = decode(data)
    except Exception:  # not an object, or unreadable: there is no envelope to speak of
        return None
    return envelope


def _decode_raw(raw: msgspec.Raw, encoding: Encoding, type: Any) -> Any:
    """Decode one envelope field as ``type``; None if absent or not of that type."""
    if not raw:
        return None
    try:
        if encoding is Encoding.JSON:
            return msgspec.json.decode(raw, type=type)
        return msgspec.msgpack.decode(raw, type=type)
    except Exception:
        return None


def _explain_invalid(
    exc: msgspec.ValidationError,
    data: WireData,
    encoding: Encoding,
    known: dict[str, type[msgspec.Struct]],
    side: str,
) -> tuple[ProtocolError, str | None]:
    """Classify a validation failure (not an object, unknown ``type``, or a bad field) and
    return the error with the frame's ``type`` if it is a string."""
    detail = str(exc)
    envelope = _envelope(data, encoding)
    if envelope is None:
        what = "JSON object" if encoding is Encoding.JSON else "msgpack map"
        error = ProtocolError(
            ErrorCode.BAD_FRAME,
            f"a frame must be a {what} with a string `type` field ({detail}). {_HINT}",
        )
        return error, None
    request_id: int | None = _decode_raw(envelope.id, encoding, RequestId)
    if not envelope.type:
        error = ProtocolError(
            ErrorCode.BAD_FRAME,
            f"the frame has no `type` field ({detail}); add one naming the frame, "
            f'e.g. "type": "ping". {_HINT}',
            id=request_id,
        )
        return error, None
    tag: str | None = _decode_raw(envelope.type, encoding, str)
    if tag is None or tag not in known:
        shown = "`type` is not a string" if tag is None else f"unknown frame type {tag!r}"
        error = ProtocolError(
            ErrorCode.UNKNOWN_TYPE,
            f"{shown}; a {side} frame's `type` is one of: {', '.join(sorted(known))}. {_HINT}",
            id=request_id,
        )
        return error, tag
    if detail.startswith("Object contains unknown field"):
        advice = (
            "remove it: the server rejects fields it does not know (check `welcome.protocol` "
            "for the protocol version it speaks)"
        )
    else:
        advice = "fix that field and send the frame again"
    error = ProtocolError(
        ErrorCode.INVALID_FIELD,
        f"invalid `{tag}` frame: {detail}; {advice}. {_HINT}",
        id=request_id,
    )
    return error, tag


def _unencodable(frame: msgspec.Struct, encoding: Encoding, exc: Exception) -> ProtocolError:
    tag = frame_tag(frame)
    return ProtocolError(
        ErrorCode.INTERNAL,
        f"could not encode a `{tag}` frame as {encoding.value} ({type(exc).__name__}: {exc}); "
        "its values must be plain JSON-like data (str, int, float, bool, None, list, dict)",
        id=getattr(frame, "id", None),
    )


def _undecodable(exc: BaseException, encoding: Encoding) -> ProtocolError:
    if encoding is Encoding.JSON:
        what, unit = "JSON text", "one JSON object per text frame"
    else:
        what, unit = "msgpack binary", "one msgpack map per binary frame"
    if isinstance(exc, RecursionError):
        reason = "it nests too deeply (the decoder allows about 1000 levels); send flatter values"
    elif isinstance(exc, UnicodeError):
        reason = f"it is not valid UTF-8 ({exc}); send UTF-8 text"
    else:
        reason = f"{exc}; send {unit}"
    return ProtocolError(ErrorCode.BAD_FRAME, f"could not decode {what} frame: {reason}.")


def _internal(exc: BaseException) -> ProtocolError:
    return ProtocolError(
        ErrorCode.INTERNAL,
        f"decoding the frame failed unexpectedly ({type(exc).__name__}: {exc}); this is an "
        "areasync bug, please report it with the frame that caused it",
    )
