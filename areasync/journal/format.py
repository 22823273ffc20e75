"""The journal's bytes, sans-I/O: encode a preamble and records; decode a whole journal.

Layout::

    magic (8 bytes)  format version (u16, big-endian)  frame(Header)  frame(record) ...
    frame = length (u32) | crc32(payload) (u32) | crc32(the 8 bytes before) (u32) | payload

Payloads are msgpack (msgspec), one `records.Record` each; integers are big-endian; the CRC is
zlib's CRC-32 (crc32c is not installed, and zlib's runs at GB/s: not the bottleneck).

The frame head checks itself. Without that, a flipped bit in the length of a record in the
middle would make it claim bytes past the end of the file, and it would read as the torn tail
of an interrupted write. With it, the decoder can tell the two apart:

- **Torn tail: dropped.** The file ends inside the last frame (a head cut short, or a sound head
  whose payload runs past the end), or everything from a frame's start to the end of the file
  is zero bytes (a filesystem that extended the file before the data reached the disk). This is
  the write in flight at a crash. A record is acknowledged to a client only after its fsync, and
  the fsync covers the whole write, so that record was never acknowledged: dropping it loses
  nothing a client saw. The decoder reports its size (`Journal.torn_bytes`); the store truncates
  it before appending again.
- **Corruption: refused.** A frame that lies within the file but fails a check (head CRC,
  payload CRC, msgpack decoding, record order) is damage to acknowledged data. The whole
  journal is refused with a `JournalCorruptError` naming the byte offset of that frame; no
  record past a bad one is ever returned.

A journal from another format version, or a file that is not a journal, is refused with a
`JournalVersionError` before any frame is read.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

import msgspec

from areasync.journal.entries import Created, Ended, Header, Input, Record, Recorded
from areasync.journal.errors import JournalCorruptError, JournalVersionError

__all__ = [
    "FORMAT_VERSION",
    "FRAME_HEAD_BYTES",
    "MAGIC",
    "MAX_PAYLOAD_BYTES",
    "PREAMBLE_BYTES",
    "Journal",
    "JournalDecoder",
    "decode_journal",
    "encode_preamble",
    "encode_record",
]

# PNG's trick: a high byte (not text), and CR LF / SUB / LF to catch a text-mode copy.
MAGIC: Final = b"\x89ASJ\r\n\x1a\n"
FORMAT_VERSION: Final = 1
_VERSION = struct.Struct(">H")
PREAMBLE_BYTES: Final = len(MAGIC) + _VERSION.size
_HEAD = struct.Struct(">III")
FRAME_HEAD_BYTES: Final = _HEAD.size
# A scenario's JSON is the largest record (Gaia2 scenarios are a few MB); a length beyond this
# in a head that passed its own CRC can only be a bug, never data.
MAX_PAYLOAD_BYTES: Final = 256 * 1024 * 1024

_encode = msgspec.msgpack.Encoder().encode
_decode_record = msgspec.msgpack.Decoder(Record).decode
_decode_header = msgspec.msgpack.Decoder(Header).decode


def frame(payload: bytes) -> bytes:
    lengths = struct.pack(">II", len(payload), zlib.crc32(payload))
    return lengths + struct.pack(">I", zlib.crc32(lengths)) + payload


def encode_preamble(header: Header) -> bytes:
    """The bytes a journal starts with: magic, format version, the header frame."""
    return MAGIC + _VERSION.pack(FORMAT_VERSION) + frame(_encode(header))


def encode_record(record: Record) -> bytes:
    """One record, framed."""
    return frame(_encode(record))


@dataclass
class Journal:
    """A decoded journal: every acknowledged record, in order, and what was dropped."""

    name: str
    header: Header | None  # None: not even the header was ever acknowledged
    records: list[Record] = field(default_factory=list)
    valid_bytes: int = 0  # the acknowledged prefix; appends continue from here
    torn_bytes: int = 0  # an unacknowledged write cut short by a crash, dropped

    @property
    def created(self) -> Created | None:
        first = self.records[0] if self.records else None
        return first if isinstance(first, Created) else None

    @property
    def inputs(self) -> list[Input | Recorded]:
        return [record for record in self.records if isinstance(record, Input | Recorded)]

    @property
    def ended(self) -> Ended | None:
        last = self.records[-1] if self.records else None
        return last if isinstance(last, Ended) else None


class JournalDecoder:
    """Decodes one journal's bytes. `records()` yields records in order and raises at the first
    bad one; after it finishes, `valid_bytes` and `torn_bytes` say where the acknowledged prefix
    ends. To restore a session use `decode_journal`, which returns all records or none."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.header: Header | None = None
        self.valid_bytes = 0
        self.torn_bytes = 0

    def records(self, data: bytes | memoryview) -> Iterator[Record]:
        view = memoryview(data)
        offset = self._preamble(view)
        if offset is None:
            return
        count = 0
        last: Record | None = None
        while offset < len(view):
            payload = self._frame(view, offset)
            if payload is None:
                self.torn_bytes = len(view) - offset
                return
            record = self._record(payload, offset)
            self._check_order(record, last, count, offset)
            offset += FRAME_HEAD_BYTES + len(payload)
            self.valid_bytes = offset
            count += 1
            last = record
            yield record

    def _preamble(self, view: memoryview) -> int | None:
        """The offset after the header frame, or None if the preamble itself is torn."""
        fixed = bytes(view[:PREAMBLE_BYTES])
        if not MAGIC.startswith(fixed[: len(MAGIC)]):
            raise JournalVersionError(
                self.name, 0, f"not an areasync journal (starts with {fixed[:8]!r})"
            )
        if len(fixed) < PREAMBLE_BYTES:
            self.torn_bytes = len(view)
            return None
        (version,) = _VERSION.unpack_from(fixed, len(MAGIC))
        if version != FORMAT_VERSION:
            raise JournalVersionError(
                self.name,
                len(MAGIC),
                f"format version {version}; this areasync reads version {FORMAT_VERSION} only",
                "restore it with the areasync version that wrote it, or move the file aside "
                "to start the server without that session",
            )
        payload = self._frame(view, PREAMBLE_BYTES)
        if payload is None:
            self.torn_bytes = len(view)
            return None
        try:
            self.header = _decode_header(payload)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise JournalCorruptError(
                self.name, PREAMBLE_BYTES, f"the header does not decode ({exc})"
            ) from None
        end = PREAMBLE_BYTES + FRAME_HEAD_BYTES + len(payload)
        self.valid_bytes = end
        return end

    def _frame(self, view: memoryview, offset: int) -> memoryview | None:
        """The payload of the frame at `offset`, or None if the file ends inside it (a torn
        tail); raises if the frame lies within the file and fails a check."""
        rest = len(view) - offset
        if rest < FRAME_HEAD_BYTES:
            return None
        length, crc, head_crc = _HEAD.unpack_from(view, offset)
        if zlib.crc32(view[offset : offset + 8]) != head_crc:
            if not any(view[offset:]):
                return None  # zeros to the end: space allocated, data never written
            raise JournalCorruptError(self.name, offset, "a frame head fails its CRC")
        if length > MAX_PAYLOAD_BYTES:
            raise JournalCorruptError(
                self.name, offset, f"a frame claims {length} bytes, over {MAX_PAYLOAD_BYTES}"
            )
        if rest < FRAME_HEAD_BYTES + length:
            return None
        payload = view[offset + FRAME_HEAD_BYTES : offset + FRAME_HEAD_BYTES + length]
        if zlib.crc32(payload) != crc:
            raise JournalCorruptError(self.name, offset, "a record fails its CRC")
        return payload

    def _record(self, payload: memoryview, offset: int) -> Record:
        try:
            record: Record = _decode_record(payload)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise JournalCorruptError(
                self.name, offset, f"a record passes its CRC but does not decode ({exc})"
            ) from None
        return record

    def _check_order(self, record: Record, last: Record | None, count: int, offset: int) -> None:
        problem = None
        if count == 0 and not isinstance(record, Created):
            problem = f"the first record is {type(record).__name__}, not Created"
        elif count > 0 and isinstance(record, Created):
            problem = "a second Created record"
        elif isinstance(last, Ended):
            problem = f"a record ({type(record).__name__}) after Ended"
        if problem is not None:
            raise JournalCorruptError(self.name, offset, problem)


def decode_journal(data: bytes | memoryview, name: str) -> Journal:
    """All acknowledged records of a journal, or a `JournalError` and none of them."""
    decoder = JournalDecoder(name)
    records = list(decoder.records(data))
    return Journal(name, decoder.header, records, decoder.valid_bytes, decoder.torn_bytes)
