"""gate/sockets.py against a fake socket: a write and the buffer counts read its transport."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from areasync.service.gate import sockets


def _fake_ws(buffered: int, *, gone: bool = False) -> Any:
    written: list[bytes] = []
    transport = SimpleNamespace(
        get_write_buffer_size=lambda: buffered,
        write=written.append,
        is_closing=lambda: False,
        get_extra_info=lambda name: None,
    )
    return SimpleNamespace(transport=None if gone else transport, written=written)


def test_a_write_goes_to_the_transport_whole() -> None:
    ws = _fake_ws(0)
    sockets.write(ws, b"abc")
    assert ws.written == [b"abc"]


def test_buffered_and_unsent_read_the_transport_and_a_gone_socket_holds_nothing() -> None:
    assert sockets.buffered(_fake_ws(5)) == 5 and sockets.unsent(_fake_ws(5)) == 5
    assert (
        sockets.buffered(_fake_ws(5, gone=True)) == 0
        and sockets.unsent(_fake_ws(5, gone=True)) is None
    )
