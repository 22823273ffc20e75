"""The roles x frame-types matrix: each frame is either allowed for a role or `forbidden`."""

from __future__ import annotations

from typing import Any

import pytest

from areasync.protocol import (
    CLIENT_FRAME_TYPES,
    CallTool,
    CreateSession,
    Error,
    ErrorCode,
    GetState,
    Hello,
    Idle,
    Jump,
    ListTools,
    Pause,
    Ping,
    Resume,
    Role,
    SendUserMessage,
    SetSpeed,
    Stop,
    StopSession,
    Tick,
)
from areasync.protocol.frames import ForkSession
from areasync.service.gate.roles import ALLOWED
from tests.service.support import attach, serving, tokens

# One harmless sample of every frame type but hello; `stop` comes last since it ends the session.
SAMPLES: list[tuple[type[Any], dict[str, Any]]] = [
    (Ping, {}),
    (ListTools, {}),
    (GetState, {}),
    (CallTool, {"tool": "SystemApp__get_current_time"}),
    (Idle, {}),
    (SendUserMessage, {"content": "hello agent"}),
    (Pause, {}),
    (Resume, {}),
    (Jump, {"by": 1.0}),
    (Tick, {"n": 1}),
    (SetSpeed, {"speed": 2.0}),
    (CreateSession, {"scenario": "no_such_scenario"}),
    (StopSession, {"session_id": "no_such_session"}),
    (ForkSession, {"session_id": "no_such_session"}),
    (Stop, {}),
]

EXPECTED: dict[Role, set[str]] = {
    Role.AGENT: {"ping", "list_tools", "call_tool", "idle"},
    Role.USER: {"ping", "send_user_message"},
    Role.OBSERVER: {"ping", "list_tools", "get_state"},
    Role.CONTROLLER: {
        "ping",
        "list_tools",
        "get_state",
        "pause",
        "resume",
        "jump",
        "tick",
        "set_speed",
        "stop",
    },
    Role.ADMIN: set(CLIENT_FRAME_TYPES) - {"hello"},
}


def test_the_samples_cover_every_client_frame_type() -> None:
    covered = {kind.__struct_config__.tag for kind, _ in SAMPLES} | {Hello.__struct_config__.tag}
    assert covered == set(CLIENT_FRAME_TYPES)


def test_the_permission_table_is_the_documented_one() -> None:
    table = {
        role: {kind.__struct_config__.tag for kind in kinds} for role, kinds in ALLOWED.items()
    }
    assert table == EXPECTED


@pytest.mark.parametrize("role", list(Role))
async def test_every_frame_is_allowed_or_forbidden_for_the_role(role: Role) -> None:
    async with serving() as service:
        token = service.tokens.admin if role is Role.ADMIN else tokens(service)[role]
        async with attach(service, role, token=token) as peer:
            for kind, fields in SAMPLES:
                reply = await peer.request(kind, **fields)
                tag = kind.__struct_config__.tag
                forbidden = isinstance(reply, Error) and reply.code == ErrorCode.FORBIDDEN
                assert forbidden == (tag not in EXPECTED[role]), (role, tag, reply)
                if forbidden:
                    assert isinstance(reply, Error) and role.value in reply.message


@pytest.mark.parametrize("role", list(Role))
async def test_an_exclusive_jump_is_allowed_exactly_where_a_jump_is(role: Role) -> None:
    async with serving() as service:
        token = service.tokens.admin if role is Role.ADMIN else tokens(service)[role]
        async with attach(service, role, token=token) as peer:
            reply = await peer.request(Jump, to=1.0, inclusive=False)
    forbidden = isinstance(reply, Error) and reply.code == ErrorCode.FORBIDDEN
    assert forbidden == ("jump" not in EXPECTED[role]), (role, reply)


async def test_a_forbidden_frame_changes_nothing() -> None:
    async with serving() as service, attach(service, Role.OBSERVER) as peer:
        before = service.registry.get("scenario_tutorial").sim.clock_state()  # type: ignore[union-attr]
        error = await peer.fail(Jump, by=10.0)
        after = service.registry.get("scenario_tutorial").sim.clock_state()  # type: ignore[union-attr]
        assert error.code == ErrorCode.FORBIDDEN and before == after
