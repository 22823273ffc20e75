"""The channel between the driver and a worker refuses what is not a message."""

from __future__ import annotations

import pickle
import socket
import struct

import pytest

from areasync.workers import channel
from areasync.workers.channel import Call, ChannelError


def test_a_message_crosses_the_socket_as_itself() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(channel.encode(Call(7, "run", ("a", 1))))
        assert channel.read(theirs) == Call(7, "run", ("a", 1))


def test_a_closed_socket_reads_as_the_end() -> None:
    ours, theirs = socket.socketpair()
    with theirs:
        ours.close()
        assert channel.read(theirs) is None


def test_a_frame_longer_than_the_bound_is_refused() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(struct.pack(">I", channel.MAX_FRAME + 1))
        with pytest.raises(ChannelError, match="exceeds MAX_FRAME"):
            channel.read(theirs)


def test_a_frame_that_is_not_a_message_is_refused() -> None:
    body = pickle.dumps({"not": "a message"})
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(struct.pack(">I", len(body)) + body)
        with pytest.raises(ChannelError, match="not a channel message: dict"):
            channel.read(theirs)
