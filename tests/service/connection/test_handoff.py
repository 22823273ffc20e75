"""The hand-off's frame parsing and header (`service/connection/handoff.py`), with no socket."""

from __future__ import annotations

import os
import socket

import pytest

from areasync.protocol.frames import Role
from areasync.service.connection.handoff import (
    HELLO_BYTES,
    BadFrame,
    Handoff,
    client_frame,
    decode,
    encode,
    peer_gone,
)


def _masked(payload: bytes, opcode: int = 0x1, fin: bool = True) -> bytes:
    mask = os.urandom(4)
    size = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if size < 126:
        head += bytes([0x80 | size])
    elif size < 1 << 16:
        head += bytes([0x80 | 126]) + size.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + size.to_bytes(8, "big")
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + body


@pytest.mark.parametrize("size", [0, 5, 125, 126, 300, 70_000 // 2, HELLO_BYTES])
def test_a_masked_frame_is_read_whole_with_what_it_took(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    frame = _masked(payload)
    assert client_frame(frame + b"next") == (0x1, payload, len(frame))


def test_an_incomplete_frame_is_waited_for() -> None:
    frame = _masked(b"hello" * 100)
    assert all(client_frame(frame[:cut]) is None for cut in range(len(frame)))


def test_an_unmasked_frame_is_refused() -> None:
    with pytest.raises(BadFrame, match="masked"):
        client_frame(bytes([0x81, 0x02]) + b"hi")


def test_a_fragmented_hello_is_refused() -> None:
    with pytest.raises(BadFrame, match="unfragmented"):
        client_frame(_masked(b"part", fin=False))


def test_a_frame_longer_than_a_hello_may_be_is_refused_from_its_header() -> None:
    with pytest.raises(BadFrame, match="before the welcome"):
        client_frame(_masked(b"x" * (HELLO_BYTES + 1))[:14])


def test_the_header_round_trips_and_names_no_token_field() -> None:
    handoff = Handoff(
        session_id="s", role=Role.AGENT, hello=b"{}", text=True, rest=b"\x81", path="/sessions/s"
    )
    assert decode(encode(handoff)) == handoff
    assert "token" not in Handoff.__struct_fields__


def test_a_side_channel_whose_worker_ended_is_seen_gone_before_a_hand_off() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        assert not peer_gone(ours)
        theirs.close()  # what a worker's death does to its end
        assert peer_gone(ours)
    finally:
        ours.close()
