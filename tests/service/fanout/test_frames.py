"""fanout/frames.py with no socket: the bytes of one write, with and without `batch`.

The bytes `Messages` builds are parsed back here as a client would: WebSocket frames (header,
then payload), each payload a server frame.
"""

from __future__ import annotations

from areasync.protocol import Encoding, Pong, decode_server_frame
from areasync.protocol.codec import encode_server_bytes
from areasync.protocol.frames import Batch
from areasync.service.fanout import frames
from areasync.service.fanout.frames import BATCH_BYTES, Messages


def messages_in(data: bytes) -> list[tuple[int, bytes]]:
    """(opcode, payload) of each unmasked WebSocket frame in `data`."""
    out = []
    at = 0
    while at < len(data):
        opcode, size = data[at] & 0x0F, data[at + 1] & 0x7F
        at += 2
        if size == 126:
            size, at = int.from_bytes(data[at : at + 2], "big"), at + 2
        elif size == 127:
            size, at = int.from_bytes(data[at : at + 8], "big"), at + 8
        out.append((opcode, data[at : at + size]))
        at += size
    return out


def pong(n: int) -> bytes:
    return encode_server_bytes(Pong(id=n), Encoding.JSON)


def test_without_batch_each_payload_is_a_message_of_its_own() -> None:
    messages = Messages(text=True, batch=False)
    messages.add(pong(1))
    messages.add_frame(frames.ws_frame(pong(2), text=True))
    parsed = messages_in(messages.data())
    assert [decode_server_frame(p.decode()) for _, p in parsed] == [Pong(id=1), Pong(id=2)]
    assert {opcode for opcode, _ in parsed} == {1}  # text frames
    assert (messages.count, messages.messages) == (2, 2)


def test_with_batch_payloads_due_together_go_as_one_batch_message() -> None:
    messages = Messages(text=True, batch=True)
    for n in range(3):
        messages.add(pong(n))
    [(_, payload)] = messages_in(messages.data())
    frame = decode_server_frame(payload.decode())
    assert isinstance(frame, Batch) and frame.frames == [Pong(id=0), Pong(id=1), Pong(id=2)]


def test_a_payload_marked_alone_is_never_inside_a_batch() -> None:
    messages = Messages(text=True, batch=True)
    messages.add(pong(0), alone=True)
    messages.add(pong(1))
    messages.add(pong(2))
    first, second = (decode_server_frame(p.decode()) for _, p in messages_in(messages.data()))
    assert first == Pong(id=0) and isinstance(second, Batch) and len(second.frames) == 2


def test_a_batch_holds_at_most_batch_bytes_of_frames() -> None:
    messages = Messages(text=True, batch=True)
    payload = pong(1)
    count = 2 * BATCH_BYTES // len(payload) + 1
    for _ in range(count):
        messages.add(payload)
    parsed = messages_in(messages.data())
    frames = [decode_server_frame(p.decode()) for _, p in parsed]
    assert len(parsed) > 2
    assert sum(len(f.frames) if isinstance(f, Batch) else 1 for f in frames) == count
    assert all(
        sum(len(pong(1)) for _ in f.frames) <= BATCH_BYTES for f in frames if isinstance(f, Batch)
    )


def test_a_group_of_one_goes_as_the_frame_itself() -> None:
    messages = Messages(text=False, batch=True)
    payload = encode_server_bytes(Pong(id=4), Encoding.MSGPACK)
    messages.add(payload)
    assert messages.data() == frames.ws_frame(payload, text=False)


def test_the_first_payload_always_fits_the_budget_and_later_ones_only_within_it() -> None:
    messages = Messages(text=True, batch=False)
    assert messages.fits(10_000, budget=100)
    messages.add(b"x" * 60)
    assert messages.fits(40, budget=100) and not messages.fits(41, budget=100)
