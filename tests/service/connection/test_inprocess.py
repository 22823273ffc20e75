"""`InProcessClient`: a session's client inside the server, answered as a WebSocket client is.

A real service; the client is driven directly, as the OpenEnv and gaia2-cli adapters drive it.
"""

from __future__ import annotations

import pytest

from areasync.protocol.errors import ErrorCode
from areasync.protocol.frames import CallTool, Role, SendUserMessage
from areasync.service import Service
from areasync.service.connection.inprocess import InProcessClient, RequestError
from tests.service.support import TUTORIAL, serving, tokens

TO_USER = "AgentUserInterface__send_message_to_user"


def joined(service: Service, role: Role) -> InProcessClient:
    session = service.registry.get(TUTORIAL)
    assert session is not None
    client = InProcessClient(service.registry, name="test", holder="test")
    client.hello(session, role, tokens(service)[role])
    return client


def stream_seq(service: Service) -> int:
    session = service.registry.get(TUTORIAL)
    assert session is not None
    return session.sim.log.seq


async def test_a_hello_with_a_token_that_does_not_open_the_role_is_refused_unauthorized() -> None:
    async with serving() as service:
        session = service.registry.get(TUTORIAL)
        assert session is not None
        client = InProcessClient(service.registry, name="test", holder="test")
        with pytest.raises(RequestError) as refused:
            client.hello(session, Role.AGENT, tokens(service)[Role.USER])
    assert refused.value.code == ErrorCode.UNAUTHORIZED and client.session is None


async def test_a_frame_the_role_may_not_send_is_refused_forbidden_and_changes_nothing() -> None:
    async with serving() as service:
        client = joined(service, Role.USER)
        before = stream_seq(service)
        with pytest.raises(RequestError) as refused:
            await client.request(CallTool(id=0, tool=TO_USER, args={"content": "no"}))
        assert stream_seq(service) == before
    assert refused.value.code == ErrorCode.FORBIDDEN and "may not send" in refused.value.message


async def test_a_request_that_passes_the_gate_is_carried_out_on_the_session() -> None:
    async with serving() as service:
        client = joined(service, Role.USER)
        before = stream_seq(service)
        await client.request(SendUserMessage(id=0, content="hello"))
        assert stream_seq(service) > before


async def test_then_is_told_whether_the_request_failed() -> None:
    async with serving() as service:
        client = joined(service, Role.AGENT)
        told: list[bool] = []
        await client.request(CallTool(id=0, tool=TO_USER, args={"content": "ok"}), then=told.append)
        with pytest.raises(RequestError) as refused:
            await client.request(CallTool(id=0, tool=TO_USER, args={"nope": 1}), then=told.append)
    assert told == [False, True] and refused.value.code == ErrorCode.INVALID_ARGS
