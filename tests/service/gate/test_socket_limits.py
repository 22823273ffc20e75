"""Limits: frame size, request rate, connections; each with a clear error and close code."""

from __future__ import annotations

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from areasync.protocol import CallTool, CloseCode, Error, ErrorCode, Hello, Ping, Role
from tests.service.support import ADMIN, attach, front_lacks, raw, serving


async def test_a_frame_above_the_size_limit_is_too_large_then_closed() -> None:
    async with serving(max_frame_bytes=1000) as service, attach(service, Role.AGENT) as agent:
        await agent.send(CallTool(id=5, tool="SystemApp__get_current_time", args={"x": "a" * 1500}))
        error = await agent.until(lambda f: isinstance(f, Error))
        code, _ = await agent.closed()
    assert (
        isinstance(error, Error) and error.code == ErrorCode.TOO_LARGE and "1000" in error.message
    )
    assert code == CloseCode.TOO_LARGE


async def test_a_frame_far_above_the_limit_is_refused_by_the_websocket_layer() -> None:
    async with serving(max_frame_bytes=1000) as service, attach(service, Role.AGENT) as agent:
        await agent.send(CallTool(id=5, tool="SystemApp__get_current_time", args={"x": "a" * 5000}))
        code, _ = await agent.closed()
    assert code == 1009  # RFC 6455 "message too big"


async def test_requests_beyond_the_rate_are_rate_limited_and_the_connection_stays() -> None:
    async with serving(rate=0.001, burst=3) as service, attach(service, Role.OBSERVER) as peer:
        replies = [await peer.request(Ping) for _ in range(4)]
    assert [type(r).__name__ for r in replies] == ["Pong", "Pong", "Pong", "Error"]
    error = replies[-1]
    assert isinstance(error, Error) and error.code == ErrorCode.RATE_LIMITED and error.retryable


async def test_a_client_that_keeps_sending_while_limited_is_closed_once_out_of_strikes() -> None:
    limits = {"rate": 0.001, "burst": 2, "rate_strikes": 2}
    async with serving(**limits) as service, attach(service, Role.OBSERVER) as peer:
        for n in range(6):
            await peer.send(Ping(id=n))
        code, _ = await peer.closed()
    assert code == CloseCode.RATE_LIMITED
    # Two pass (the burst), two are refused (the strikes), the fifth closes: it and the sixth
    # go unanswered.
    assert [f.code for f in peer.frames if isinstance(f, Error)] == ["rate_limited"] * 2
    assert [f.id for f in peer.frames if isinstance(f, Error)] == [2, 3]


async def test_clients_beyond_a_sessions_limit_get_capacity() -> None:
    async with (
        serving(max_connections_per_session=1) as service,
        attach(service, Role.OBSERVER),
        raw(service) as second,
    ):
        await second.send(Hello(id=1, role=Role.OBSERVER, token=ADMIN))
        error = await second.recv()
        code, _ = await second.closed()
    assert isinstance(error, Error) and error.code == ErrorCode.CAPACITY and error.retryable
    assert code == CloseCode.CAPACITY


@front_lacks("max_connections 1 cannot be split over two workers (refused at start)")
async def test_connections_beyond_the_server_limit_are_refused_at_the_handshake() -> None:
    async with serving(max_connections=1) as service, attach(service, Role.OBSERVER):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(service.ws_url("scenario_tutorial")):
                pass
    assert refused.value.response.status_code == 503
