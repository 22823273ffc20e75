"""Limits: frame size, request rate, connections and sessions, each with a clear error.

`tests/service/gate/test_socket_limits.py` covers a too-large frame after hello (too_large, 4009),
one far above the limit (1009), rate limiting and the close after a flood (4029), a session's client
limit (capacity, 4503) and the server's connection limit (HTTP 503). This module completes the set:
the session limit, the inline-scenario size limit, a too-large hello, msgpack frames, and that every
limit gives its capacity back (a closed connection, an ended session, a refilled bucket), so a limit
is a bound and not a leak; and that a first message, read before any credential, is held to
`HELLO_BYTES` (1009 above it, unbuffered), while a socket whose hello was accepted, or an OpenEnv
socket (its token checked at the handshake), gets the full limit.
"""

from __future__ import annotations

import json

import anyio
import msgspec
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from areasync.protocol import (
    CloseCode,
    CreateSession,
    Encoding,
    Error,
    ErrorCode,
    Hello,
    Ping,
    Pong,
    Role,
    StopSession,
)
from areasync.service.gate.limits import TokenBucket
from areasync.service.gate.screened import HELLO_BYTES
from tests.service.support import ADMIN, TUTORIAL, WAIT, attach, raw, serving, tokens
from tests.waiting import eventually


async def test_sessions_beyond_the_limit_get_capacity_and_the_connection_stays() -> None:
    async with serving(max_sessions=2) as service, attach(service, Role.ADMIN) as admin:
        created = await admin.call(CreateSession, scenario=TUTORIAL)
        error = await admin.fail(CreateSession, scenario=TUTORIAL)
        assert isinstance(await admin.request(Ping), Pong)
        assert sorted(service.registry.sessions) == sorted([TUTORIAL, created["session_id"]])
    assert error.code == ErrorCode.CAPACITY and error.retryable
    assert "max_sessions" in error.message and "2" in error.message


async def test_an_ended_session_gives_its_place_back() -> None:
    async with serving(max_sessions=1) as service, attach(service, Role.ADMIN) as admin:
        refused = await admin.fail(CreateSession, scenario=TUTORIAL)
        await admin.call(StopSession, session_id=TUTORIAL)
        created = await admin.call(CreateSession, scenario=TUTORIAL)
    assert refused.code == ErrorCode.CAPACITY and created["session_id"]


async def test_an_inline_scenario_above_its_limit_is_too_large_before_parsing() -> None:
    text = '{"padding": "' + "x" * 3000 + '"}'  # not even a scenario: it must not matter
    async with serving(max_scenario_bytes=2000) as service, attach(service, Role.ADMIN) as admin:
        error = await admin.fail(CreateSession, scenario_json=text)
        assert isinstance(await admin.request(Ping), Pong)
    assert error.code == ErrorCode.TOO_LARGE
    assert "max_scenario_bytes" in error.message and "2000" in error.message


async def test_a_hello_above_the_frame_limit_is_too_large_then_closed() -> None:
    async with serving(max_frame_bytes=1000) as service, raw(service) as peer:
        await peer.send(Hello(id=1, role=Role.OBSERVER, token="t" * 1500))
        error = await peer.recv()
        code, reason = await peer.closed()
    assert isinstance(error, Error) and error.code == ErrorCode.TOO_LARGE
    assert "1000" in error.message and code == CloseCode.TOO_LARGE and reason


async def test_a_msgpack_frame_above_the_limit_is_too_large_then_closed() -> None:
    async with (
        serving(max_frame_bytes=1000) as service,
        attach(service, Role.OBSERVER, encoding=Encoding.MSGPACK) as peer,
    ):
        await peer.send_raw(msgspec.msgpack.encode({"type": "ping", "id": 3, "pad": "p" * 1500}))
        error = await peer.until(lambda f: isinstance(f, Error))
        code, _ = await peer.closed()
    assert isinstance(error, Error) and error.code == ErrorCode.TOO_LARGE
    assert code == CloseCode.TOO_LARGE


async def test_a_frame_just_under_the_limit_is_served() -> None:
    async with serving(max_frame_bytes=1000) as service, attach(service, Role.OBSERVER) as peer:
        frame = '{"type": "ping", "id": 4, "x": ""}'
        await peer.send_raw(frame.replace('""', '"' + "y" * (1000 - len(frame)) + '"'))
        reply = await peer.until(lambda f: isinstance(f, Error | Pong))
    # Unknown field `x`: an ordinary error, not too_large, and the connection stays.
    assert isinstance(reply, Error) and reply.code == ErrorCode.INVALID_FIELD


async def test_a_closed_connection_gives_its_place_back() -> None:
    async with serving(max_connections=1) as service:
        for _ in range(3):
            async with attach(service, Role.OBSERVER):
                pass
            await eventually(lambda: not service.connections)  # the close is done


async def test_a_sessions_client_limit_gives_its_place_back() -> None:
    async with serving(max_connections_per_session=1) as service:
        session = service.registry.get(TUTORIAL)
        assert session is not None
        for _ in range(3):
            async with attach(service, Role.OBSERVER):
                pass
            await eventually(lambda: not session.connections)


async def test_the_server_limit_refuses_the_handshake_with_a_clear_body() -> None:
    async with serving(max_connections=1) as service, attach(service, Role.OBSERVER):
        try:
            async with connect(service.ws_url(TUTORIAL)):
                raise AssertionError("the second connection was accepted")
        except Exception as exc:  # websockets' InvalidStatus carries the response
            response = getattr(exc, "response", None)
    assert response is not None and response.status_code == 503
    assert b"max_connections" in response.body and b"capacity" in response.body


def test_the_rate_bucket_refills_at_its_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(rate=10.0, burst=2, clock=lambda: now[0])
    assert [bucket.take() for _ in range(3)] == [True, True, False]
    now[0] += 0.1  # one request's worth at 10 per second
    assert [bucket.take(), bucket.take()] == [True, False]
    now[0] += 10.0  # a long pause refills to the burst, no further
    assert [bucket.take() for _ in range(3)] == [True, True, False]


async def test_a_rate_limited_request_carries_its_id_and_the_limit() -> None:
    async with serving(rate=0.001, burst=1) as service, attach(service, Role.OBSERVER) as peer:
        await peer.request(Ping)
        error = await peer.fail(Ping)
    assert error.code == ErrorCode.RATE_LIMITED and error.retryable and error.id is not None
    assert "0.001" in error.message and "slow down" in error.message


async def test_an_unknown_session_costs_no_session_place() -> None:
    async with serving(max_sessions=1) as service, raw(service, "nope") as peer:
        await peer.send(Hello(id=1, role=Role.OBSERVER, token=ADMIN))
        error = await peer.recv()
    assert isinstance(error, Error) and error.code == ErrorCode.SESSION_NOT_FOUND
    assert sorted(service.registry.sessions) == [TUTORIAL]


async def test_a_first_message_above_the_hello_limit_is_refused_unread_with_1009() -> None:
    async with serving() as service, raw(service) as peer:
        await peer.send(Hello(id=1, role=Role.OBSERVER, token="t" * (HELLO_BYTES + 1)))
        code, _ = await peer.closed()
        admitted = service.admission.authenticated
    assert code == 1009  # the WebSocket layer's: message too big, never buffered whole
    assert admitted == 0


async def test_after_the_welcome_a_frame_gets_the_full_limit() -> None:
    ping = '{"type": "ping", "id": 5, "x": "' + "y" * (2 * HELLO_BYTES) + '"}'
    async with serving() as service, attach(service, Role.OBSERVER) as peer:
        await peer.send_raw(ping)
        reply = await peer.until(lambda f: isinstance(f, Error | Pong) and f.id == 5)
    # Unknown field `x`: an ordinary error (not 1009), and the connection stays.
    assert isinstance(reply, Error) and reply.code == ErrorCode.INVALID_FIELD


async def test_an_openenv_socket_may_send_a_first_message_above_the_hello_limit() -> None:
    async with serving() as service:
        url = service.openenv_url(tokens(service)[Role.AGENT]).replace("http", "ws") + "/ws"
        message = {"type": "reset", "data": {"pad": "p" * (2 * HELLO_BYTES)}}
        async with connect(url) as ws:
            await ws.send(json.dumps(message))
            with anyio.fail_after(WAIT):
                try:
                    answer = json.loads(await ws.recv())
                except ConnectionClosed as exc:  # pragma: no cover - the failure caught here
                    pytest.fail(f"closed: {exc}")
    assert answer["type"] in ("observation", "error")
