"""The pre-hello pool (`service/gate/admission.py`) on its own: who is evicted, who waits, who is
let in.

Sockets are stand-ins with a transport that records what was done to it (and, where the kernel's
receive queue matters, a real loopback socket beneath); the clock is the test's. The same rules
over real sockets: `tests/hardening/test_floods.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.datastructures import Headers

from areasync.service.config import ServiceConfig
from areasync.service.fdlimit import raise_open_files_limit
from areasync.service.gate.admission import SPEAKING_GRACE, Admission
from areasync.service.gate.screened import PostRequest


class _Transport:
    def __init__(self, sock: socket.socket | None = None) -> None:
        self.aborted = False
        self.paused = False
        self.sock = sock  # the kernel's side of it, when a test needs one

    def get_extra_info(self, name: str) -> Any:
        return self.sock if name == "socket" else None

    def abort(self) -> None:
        self.aborted = True

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def is_closing(self) -> bool:
        return self.aborted


class _Socket:
    def __init__(self, name: str, sock: socket.socket | None = None) -> None:
        self.name = name
        self.transport = _Transport(sock)
        self.request: object | None = None  # websockets' `request`, once it is complete
        self.closed_4408 = False

    def evict(self) -> None:
        self.closed_4408 = True


# A client's masked `hello` frame as it arrives (its bytes matter only in that they came).
HELLO_FRAME = b"\x81\x85\x00\x00\x00\x00hello"


def _pool(size: int, now: list[float]) -> Admission:
    return Admission(size, 10, grace=0.5, clock=lambda: now[0])


def _open(
    admission: Admission, name: str, *, handshake: bool = False, sock: socket.socket | None = None
) -> Any:
    ws: Any = _Socket(name, sock)
    admission.arrive(ws)
    if handshake:
        admission.on_evict(ws, ws.evict)
    return ws


async def test_the_oldest_idle_socket_is_evicted_before_one_still_connecting() -> None:
    now = [0.0]
    admission = _pool(2, now)
    connecting = _open(admission, "connecting")
    idle = _open(admission, "idle", handshake=True)
    now[0] = 1.0
    newcomer = _open(admission, "newcomer")
    assert idle.closed_4408 and not connecting.transport.aborted
    assert not newcomer.transport.paused and admission.pending == 2 and admission.evicted == 1


async def test_a_socket_still_connecting_is_dropped_when_no_idle_one_is_left() -> None:
    now = [0.0]
    admission = _pool(1, now)
    silent = _open(admission, "silent")
    now[0] = 1.0
    _open(admission, "newcomer")
    assert silent.transport.aborted


async def test_a_socket_whose_hello_is_arriving_keeps_its_place_past_the_grace() -> None:
    now = [0.0]
    admission = _pool(1, now)
    speaking = _open(admission, "speaking", handshake=True)
    admission.received(speaking, open=True)
    now[0] = 1.0  # past EVICTION_GRACE, within SPEAKING_GRACE
    newcomer = _open(admission, "newcomer")
    assert not speaking.closed_4408 and newcomer.transport.paused and admission.waiting == 1


@contextlib.contextmanager
def _sent(data: bytes) -> Iterator[socket.socket]:
    """The server's end of a loopback TCP connection whose client sent `data`, waiting in the
    kernel's receive queue: what a server behind on its reads has not read yet."""
    with (
        socket.create_server(("127.0.0.1", 0)) as listener,
        socket.create_connection(listener.getsockname()) as client,
    ):
        server, _ = listener.accept()
        with server:
            client.sendall(data)
            readable, _, _ = select.select([server], [], [], 10.0)
            assert readable == [server]
            yield server


async def test_an_idle_socket_whose_hello_waits_unread_in_the_kernel_is_not_evicted() -> None:
    now = [0.0]
    admission = _pool(1, now)
    with _sent(HELLO_FRAME) as sock:
        said_hello = _open(admission, "said hello", handshake=True, sock=sock)
        now[0] = 1.0  # past EVICTION_GRACE: idle, had the server read nothing
        newcomer = _open(admission, "newcomer")
    assert not said_hello.closed_4408 and newcomer.transport.paused and admission.evicted == 0


async def test_a_silent_socket_whose_request_waits_unread_in_the_kernel_is_not_dropped() -> None:
    now = [0.0]
    admission = _pool(1, now)
    with _sent(b"GET / HTTP/1.1\r\n") as sock:
        requested = _open(admission, "requested", sock=sock)
        now[0] = 1.0
        newcomer = _open(admission, "newcomer")
    assert not requested.transport.aborted and newcomer.transport.paused
    assert admission.evicted == 0


def _requested_past_the_grace(request: object) -> tuple[Any, Any, Admission]:
    """A socket whose complete `request` the server has not answered yet (its loop is behind)
    when, past the grace, a newcomer finds the pool full: the socket, the newcomer, the pool."""
    now = [0.0]
    admission = _pool(1, now)
    requested = _open(admission, "requested")
    admission.received(requested, open=False)
    requested.request = request
    now[0] = 1.0
    return requested, _open(admission, "newcomer"), admission


async def test_a_socket_whose_request_is_in_is_not_dropped_while_the_server_answers() -> None:
    requested, newcomer, admission = _requested_past_the_grace(object())
    assert not requested.transport.aborted and newcomer.transport.paused
    assert admission.evicted == 0


async def test_a_body_routes_request_whose_answer_runs_an_action_stays_evictable() -> None:
    posted = PostRequest("/openenv/step", Headers(), "POST", body=b"{}")
    requested, _, _ = _requested_past_the_grace(posted)
    assert requested.transport.aborted


async def test_a_first_frame_that_stops_half_way_loses_its_place_after_its_grace() -> None:
    now = [0.0]
    admission = _pool(1, now)
    speaking = _open(admission, "speaking", handshake=True)
    admission.received(speaking, open=True)
    now[0] = SPEAKING_GRACE
    newcomer = _open(admission, "newcomer")
    assert speaking.closed_4408 and not newcomer.transport.paused


async def test_within_the_grace_a_newcomer_waits_unread_and_comes_in_when_a_place_frees() -> None:
    now = [0.0]
    admission = _pool(1, now)
    first = _open(admission, "first", handshake=True)
    second = _open(admission, "second")
    assert second.transport.paused and not first.closed_4408
    assert admission.admit(first)  # it said hello: its place goes to the one waiting
    assert not second.transport.paused and admission.pending == 1 and admission.waiting == 0


async def test_however_many_sockets_leave_while_others_wait_one_wake_up_is_pending() -> None:
    now = [0.0]
    admission = Admission(1, 10, grace=0.5, max_waiting=100, clock=lambda: now[0])
    pending = _open(admission, "pending")
    parked = [_open(admission, f"parked {n}") for n in range(20)]
    for ws in [pending, *parked[:10]]:  # each leaves; the next parked one takes its place
        admission.leave(ws)
    assert admission.waiting == 9
    loop = asyncio.get_running_loop()
    wake_ups = [
        handle
        for handle in loop._scheduled  # type: ignore[attr-defined]
        if not handle.cancelled() and getattr(handle._callback, "__self__", None) is admission
    ]
    assert len(wake_ups) == 1


async def test_the_queue_is_bounded_and_a_socket_beyond_it_is_dropped() -> None:
    now = [0.0]
    admission = Admission(1, 10, grace=0.5, max_waiting=1, clock=lambda: now[0])
    _open(admission, "first")
    waiting = _open(admission, "waiting")
    dropped = _open(admission, "dropped")
    assert waiting.transport.paused and dropped.transport.aborted and admission.dropped == 1


async def test_authenticated_connections_have_their_own_limit() -> None:
    now = [0.0]
    admission = Admission(4, 1, clock=lambda: now[0])
    first = _open(admission, "first", handshake=True)
    second = _open(admission, "second", handshake=True)
    assert admission.admit(first) and not admission.admit(second)
    admission.release()
    assert admission.admit(second)


@pytest.mark.parametrize("name", ["max_pending_hellos", "rate_strikes"])
def test_a_pool_or_strike_count_below_one_is_refused_with_its_name(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name} must be >= 1"):
        ServiceConfig(**{name: 0})


def test_a_non_positive_write_timeout_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="write_timeout must be > 0"):
        ServiceConfig(write_timeout=0)


def test_the_open_files_limit_is_raised_toward_the_hard_limit() -> None:
    limits = raise_open_files_limit()
    assert limits is not None
    before, after = limits
    assert after >= before
