"""WebSocket frames built once, and the bytes of one write: what a session's stream is on the wire.

Encode once, all the way down: a server's WebSocket frames are unmasked, and compression is off
(see `server.py`), so the complete frame - header and payload - is the same bytes for every
subscriber of an encoding. `WireFrame` builds it once; a writer hands the socket a run of ready
frames in one write. Every write is complete WebSocket messages: websockets' own keepalive and
close frames interleave with them whole.

Batching: `Messages` gathers what is due into the bytes of one write, each payload a message of
its own or, for a client that said `hello{batch: true}`, grouped into `batch` messages of up to
`BATCH_BYTES` (a payload marked `alone`, the welcome, always goes as itself). The stream hub's
shared runs and a connection's interleaving of replies with stream items both build their bytes
with it.

Plain bytes, no socket: it imports neither websockets nor anything above the protocol, so the
fan-out and every connection share it from below.
"""

from __future__ import annotations

from typing import Final

from areasync.protocol.codec import EncodedFrame, Encoding, batch_parts, encode_server_bytes
from areasync.protocol.frames import StreamItem

# A write hands the socket at most about this many bytes (more only for one frame that is larger
# on its own).
WRITE_BYTES: Final = 256 * 1024
# A `batch` message holds at most this many bytes of frames (a larger frame goes alone): it
# amortises a message's cost over tens of frames already, and a client whose link breaks
# mid-message loses no more than this much progress.
BATCH_BYTES: Final = 16 * 1024

_JSON: Final = Encoding.JSON
_MSGPACK: Final = Encoding.MSGPACK

# -- frames ------------------------------------------------------------------------------------


def ws_header(size: int, *, text: bool) -> bytes:
    """The header of a server's WebSocket data frame (FIN, unmasked) with a `size`-byte payload."""
    opcode = 0x81 if text else 0x82
    if size < 126:
        return bytes((opcode, size))
    if size < 0x10000:
        return bytes((opcode, 126)) + size.to_bytes(2, "big")
    return bytes((opcode, 127)) + size.to_bytes(8, "big")


def ws_frame(payload: bytes, *, text: bool) -> bytes:
    """`payload` as one complete WebSocket data frame from a server (unmasked, uncompressed)."""
    return ws_header(len(payload), text=text) + payload


def _header_size(frame: bytes) -> int:
    size = frame[1] & 0x7F
    return 2 if size < 126 else 4 if size == 126 else 10


class WireFrame(EncodedFrame):
    """A stream item with its wire forms, each made at most once, on first use.

    `text_frame` / `binary_frame` are whole WebSocket frames (JSON text, msgpack) ready for the
    socket: every subscriber of an encoding is sent these very bytes.
    """

    __slots__ = ("_binary_frame", "_text_frame")

    _text_frame: bytes | None
    _binary_frame: bytes | None

    def __init__(self, frame: StreamItem) -> None:
        super().__init__(frame)
        self._text_frame = None
        self._binary_frame = None

    @property
    def text_frame(self) -> bytes:
        if self._text_frame is None:
            # Stream items hold plain records built by the bridge: always encodable. JSON is
            # encoded straight to UTF-8 bytes (EncodedFrame.json would make a str first).
            self._text_frame = ws_frame(encode_server_bytes(self.frame, _JSON), text=True)
        return self._text_frame

    @property
    def binary_frame(self) -> bytes:
        if self._binary_frame is None:
            # Only the frame is kept (not EncodedFrame's msgpack payload as well): the session
            # keeps every item for its life, and the payload is the frame's tail anyway.
            self._binary_frame = ws_frame(encode_server_bytes(self.frame, _MSGPACK), text=False)
        return self._binary_frame

    def frame_for(self, text: bool) -> bytes:
        """The complete WebSocket frame, text (JSON) or binary (msgpack)."""
        return self.text_frame if text else self.binary_frame

    def payload(self, text: bool) -> memoryview:
        """The encoded item alone (no WebSocket header), without a copy: for a `batch`."""
        frame = self.text_frame if text else self.binary_frame
        return memoryview(frame)[_header_size(frame) :]


# -- batching ----------------------------------------------------------------------------------


class Messages:
    """The bytes of one write: whole WebSocket messages, in the order their payloads are added.

    With `batch`, consecutive payloads are grouped into `batch` messages of up to `BATCH_BYTES`
    (a group of one goes as the frame itself); a payload added `alone` is a message of its own
    either way. `size` is the bytes added so far (what a write budget is checked against) and
    `count` the payloads added.
    """

    __slots__ = ("_group", "_group_size", "_pieces", "batch", "count", "messages", "size", "text")

    def __init__(self, *, text: bool, batch: bool) -> None:
        self.text = text
        self.batch = batch
        self.size = 0
        self.count = 0
        self.messages = 0
        self._pieces: list[bytes | memoryview] = []
        self._group: list[bytes | memoryview] = []
        self._group_size = 0

    def fits(self, size: int, budget: int) -> bool:
        """Whether `size` more bytes stay within `budget` (the first payload always fits)."""
        return not self.count or self.size + size <= budget

    def add_frame(self, frame: bytes) -> None:
        """A complete WebSocket frame (a stream item's, ready made), as its own message."""
        if self._group:
            self._close_group()
        self._pieces.append(frame)
        self.size += len(frame)
        self.count += 1
        self.messages += 1

    def add(self, payload: bytes | memoryview, *, alone: bool = False) -> None:
        """An encoded frame without its WebSocket header: batched unless `alone`."""
        self.size += len(payload)
        self.count += 1
        if self.batch and not alone:
            if self._group and self._group_size + len(payload) > BATCH_BYTES:
                self._close_group()
            self._group.append(payload)
            self._group_size += len(payload)
            return
        if self._group:
            self._close_group()
        self._pieces.append(ws_header(len(payload), text=self.text))
        self._pieces.append(payload)
        self.messages += 1

    def data(self) -> bytes:
        """Everything added, as the bytes to write."""
        self._close_group()
        return b"".join(self._pieces)

    def _close_group(self) -> None:
        """One WebSocket message carrying the gathered payloads: a `batch` frame, or the frame
        itself if there is only one."""
        group = self._group
        if not group:
            return
        text = self.text
        if len(group) == 1:
            self._pieces.append(ws_header(len(group[0]), text=text))
            self._pieces.append(group[0])
        else:
            parts = batch_parts(group, _JSON if text else _MSGPACK)
            size = 0
            for part in parts:
                size += len(part)
            self._pieces.append(ws_header(size, text=text))
            self._pieces.extend(parts)
        self.messages += 1
        self._group = []
        self._group_size = 0
