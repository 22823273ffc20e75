"""The first frame: hello with a role and a token gets a welcome, or an error and a close."""

from __future__ import annotations

import anyio
import pytest

from areasync.protocol import (
    CloseCode,
    Encoding,
    Error,
    ErrorCode,
    Hello,
    Ping,
    Replay,
    Role,
    Welcome,
)
from areasync.service import ServiceConfig
from bench.misbehaving import close_code, hello_frame, partial_frame
from tests.heldloop import HeldLoop, first_frame_while_held
from tests.service.support import ADMIN, THROUGH_FRONT, TUTORIAL, attach, raw, serving, tokens

SESSION_ROLES = [Role.AGENT, Role.USER, Role.OBSERVER, Role.CONTROLLER]


@pytest.mark.parametrize("role", SESSION_ROLES)
async def test_each_role_token_gets_a_welcome_for_its_role(role: Role) -> None:
    async with serving() as service, attach(service, role, token=tokens(service)[role]) as peer:
        welcome = peer.welcome
        assert welcome is not None
        assert (welcome.session_id, welcome.role, welcome.scenario_id) == (TUTORIAL, role, TUTORIAL)
        assert welcome.protocol == "areasync/1"
        assert welcome.replay is Replay.NONE
        assert welcome.seq == service.registry.get(TUTORIAL).hub.seq  # type: ignore[union-attr]
        assert welcome.clock.mode == "manual" and welcome.id == 0


async def test_admin_token_gets_a_welcome_as_admin() -> None:
    async with serving() as service, attach(service, Role.ADMIN, token=ADMIN) as peer:
        assert peer.welcome is not None and peer.welcome.role is Role.ADMIN


@pytest.mark.parametrize("role", SESSION_ROLES)
async def test_admin_token_is_accepted_for_every_role(role: Role) -> None:
    async with serving() as service, attach(service, role, token=ADMIN) as peer:
        assert peer.welcome is not None and peer.welcome.role is role


async def test_binary_hello_gets_msgpack_frames() -> None:
    async with (
        serving() as service,
        attach(service, Role.OBSERVER, encoding=Encoding.MSGPACK) as peer,
    ):
        assert isinstance(peer.welcome, Welcome)
        await peer.send(Ping(id=7))
        data = await peer.ws.recv()
        assert isinstance(data, bytes)


async def _refused(
    service: object, hello: Hello, session: str = TUTORIAL
) -> tuple[Error, int | None]:
    async with raw(service, session) as peer:  # type: ignore[arg-type]
        await peer.send(hello)
        error = await peer.recv()
        code, _ = await peer.closed()
    assert isinstance(error, Error)
    return error, code


async def test_wrong_token_is_unauthorized_then_closed() -> None:
    async with serving() as service:
        error, code = await _refused(service, Hello(id=3, role=Role.OBSERVER, token="wrong"))
    assert (error.code, error.id, code) == (ErrorCode.UNAUTHORIZED, 3, CloseCode.UNAUTHORIZED)
    assert "token" in error.message


async def test_a_role_token_does_not_open_another_role() -> None:
    async with serving() as service:
        observer = tokens(service)[Role.OBSERVER]
        error, code = await _refused(service, Hello(id=1, role=Role.CONTROLLER, token=observer))
    assert (error.code, code) == (ErrorCode.UNAUTHORIZED, CloseCode.UNAUTHORIZED)


async def test_another_sessions_token_is_unauthorized() -> None:
    async with serving(TUTORIAL, "scenario_validation_tutorial") as service:
        other = tokens(service, "scenario_validation_tutorial")[Role.OBSERVER]
        error, code = await _refused(service, Hello(id=1, role=Role.OBSERVER, token=other))
    assert (error.code, code) == (ErrorCode.UNAUTHORIZED, CloseCode.UNAUTHORIZED)


async def test_session_tokens_never_grant_admin() -> None:
    async with serving() as service:
        controller = tokens(service)[Role.CONTROLLER]
        error, code = await _refused(service, Hello(id=1, role=Role.ADMIN, token=controller))
    assert (error.code, code) == (ErrorCode.UNAUTHORIZED, CloseCode.UNAUTHORIZED)


async def test_unknown_session_is_session_not_found_for_the_admin_token() -> None:
    async with serving() as service:
        hello = Hello(id=1, role=Role.OBSERVER, token=ADMIN)
        error, code = await _refused(service, hello, session="no_such_session")
    assert (error.code, code) == (ErrorCode.SESSION_NOT_FOUND, CloseCode.SESSION_NOT_FOUND)
    assert "/api/sessions" in error.message


async def test_unknown_session_is_unauthorized_for_any_other_token() -> None:
    # Which sessions exist is told only to a token that opens them all (see test_access.py).
    async with serving() as service:
        hello = Hello(id=1, role=Role.OBSERVER, token=tokens(service)[Role.OBSERVER])
        error, code = await _refused(service, hello, session="no_such_session")
    assert (error.code, code) == (ErrorCode.UNAUTHORIZED, CloseCode.UNAUTHORIZED)


async def test_a_first_frame_other_than_hello_is_refused_with_bad_hello() -> None:
    async with serving() as service, raw(service) as peer:
        await peer.send(Ping(id=4))
        error = await peer.recv()
        code, _ = await peer.closed()
    assert isinstance(error, Error) and error.id == 4 and "hello" in error.message
    assert code == CloseCode.BAD_HELLO


async def test_an_undecodable_first_frame_is_refused_with_bad_hello() -> None:
    async with serving() as service, raw(service) as peer:
        await peer.send_raw("{not json")
        error = await peer.recv()
        code, _ = await peer.closed()
    assert isinstance(error, Error) and error.code == ErrorCode.BAD_FRAME
    assert code == CloseCode.BAD_HELLO


async def test_a_second_hello_is_bad_state_and_keeps_the_connection() -> None:
    async with serving() as service, attach(service, Role.OBSERVER) as peer:
        error = await peer.fail(Hello, role=Role.OBSERVER, token=ADMIN)
        assert error.code == ErrorCode.BAD_STATE
        assert await peer.request(Ping)  # still open


async def test_a_connection_that_never_finishes_its_handshake_is_dropped() -> None:
    async with serving(handshake_timeout=0.05) as service:
        stream = await anyio.connect_tcp("127.0.0.1", service.port or 0)
        async with stream:
            await stream.send(b"GET /sessions/scenario_tutorial HTTP/1.1\r\n")  # and no more
            with anyio.fail_after(5):
                try:
                    leftover = await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    leftover = b""
    assert b"101 Switching Protocols" not in leftover


def test_a_non_positive_timeout_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="handshake_timeout must be > 0"):
        ServiceConfig(handshake_timeout=0)


async def test_no_hello_in_time_closes_with_hello_timeout() -> None:
    async with serving(hello_timeout=0.05) as service, raw(service) as peer:
        code, _ = await peer.closed()
    assert code == CloseCode.HELLO_TIMEOUT


# A hello deadline the wall never reaches in a test: the test moves the loop's clock past it.
HELD_HELLO_TIMEOUT = 30.0


def _in_this_process() -> None:
    if THROUGH_FRONT:
        pytest.skip(
            "holds this process's loop, which a front's supervisor would take for a stuck "
            "worker: tests/front/test_held_hello.py holds a front's"
        )


async def test_a_hello_that_reached_a_held_server_before_its_deadline_is_welcomed() -> None:
    _in_this_process()
    with HeldLoop() as held:
        async with serving(hello_timeout=HELD_HELLO_TIMEOUT) as service:
            hello = hello_frame(tokens(service)[Role.OBSERVER])
            past = HELD_HELLO_TIMEOUT + 1
            assert service.port is not None
            answer = await first_frame_while_held(
                held, service.port, service.admission, TUTORIAL, hello, past=past
            )
    assert b'"welcome"' in answer and close_code(answer) is None


async def test_a_partial_hello_that_reached_a_held_server_is_closed_at_its_deadline() -> None:
    _in_this_process()
    with HeldLoop() as held:
        async with serving(hello_timeout=HELD_HELLO_TIMEOUT) as service:
            past = HELD_HELLO_TIMEOUT + 1
            assert service.port is not None
            answer = await first_frame_while_held(
                held,
                service.port,
                service.admission,
                TUTORIAL,
                partial_frame(),
                past=past,
                stalls=True,
            )
    assert close_code(answer) == CloseCode.HELLO_TIMEOUT
