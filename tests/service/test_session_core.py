"""The connection core with no socket: frames in, replies, calls and closes out.

`ConnectionCore` is driven here as the asyncio layer drives it: the first message goes to
`hello`, later ones to `receive`, and the outcome of each `Call` goes back through `succeeded`
or `failed`. A real registry holds the session (the tutorial scenario, manual mode); nothing
listens on a port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from areasync.bridge.tools import InvalidArgsError, ToolFailedError, UnknownToolError
from areasync.protocol import (
    CloseCode,
    Encoding,
    Error,
    ErrorCode,
    Hello,
    Pong,
    Replay,
    Result,
    Role,
    Welcome,
    encode_client_frame,
)
from areasync.protocol.errors import CodedError
from areasync.protocol.frames import CallTool, ClientFrame, Jump, ListTools, Ping, Tick
from areasync.service.auth import Tokens
from areasync.service.core import (
    EVICTED_CLOSE_TIMEOUT,
    Call,
    Close,
    ConnectionCore,
    Lane,
    Phase,
    Refuse,
    Reply,
)
from areasync.service.metrics import Metrics
from areasync.service.registry import SessionRegistry
from areasync.simulation import WAIT_TOOL, ControlInterruptedError
from tests.service.support import ADMIN, TUTORIAL, config


@asynccontextmanager
async def registry_with_tutorial(**overrides: Any) -> AsyncIterator[SessionRegistry]:
    """A registry running the tutorial scenario (manual mode), no server around it."""
    cfg = config(**overrides)
    registry = SessionRegistry(cfg, Tokens(cfg.admin_token), Metrics())
    async with anyio.create_task_group() as tg:
        registry.bind(tg)
        registry.create(TUTORIAL)
        try:
            yield registry
        finally:
            tg.cancel_scope.cancel()


def token(registry: SessionRegistry, role: Role) -> str:
    session = registry.get(TUTORIAL)
    assert session is not None
    return session.tokens[role]


def wire(frame: ClientFrame) -> str:
    return encode_client_frame(frame, Encoding.JSON)


def welcomed(registry: SessionRegistry, role: Role = Role.AGENT) -> ConnectionCore:
    core = ConnectionCore(registry, TUTORIAL)
    actions = core.hello(wire(Hello(id=0, role=role, token=token(registry, role))))
    assert core.phase is Phase.OPEN and len(actions) == 1
    return core


def only(actions: list[Any]) -> Any:
    assert len(actions) == 1, actions
    return actions[0]


def error_code(action: Any) -> ErrorCode:
    assert isinstance(action, Reply) and isinstance(action.frame, Error), action
    return ErrorCode(action.frame.code)


# -- hello -------------------------------------------------------------------------------------


async def test_a_valid_hello_is_welcomed_alone_after_the_stream_so_far() -> None:
    async with registry_with_tutorial() as registry:
        core = ConnectionCore(registry, TUTORIAL)
        reply = only(core.hello(wire(Hello(id=7, role=Role.OBSERVER, token=ADMIN))))
        session = registry.get(TUTORIAL)
        assert session is not None
        assert isinstance(reply, Reply) and isinstance(reply.frame, Welcome)
        assert reply.alone and reply.after == session.hub.seq
        assert (reply.frame.id, reply.frame.role, reply.frame.replay) == (
            7,
            Role.OBSERVER,
            Replay.NONE,
        )
        assert core.phase is Phase.OPEN and core.session is session


async def test_a_hello_with_since_is_welcomed_to_replay_from_there() -> None:
    async with registry_with_tutorial() as registry:
        core = ConnectionCore(registry, TUTORIAL)
        reply = only(core.hello(wire(Hello(id=0, role=Role.OBSERVER, token=ADMIN, since=0))))
        assert reply.after == 0 and reply.frame.replay is Replay.FULL


async def test_a_binary_hello_makes_a_msgpack_connection() -> None:
    async with registry_with_tutorial() as registry:
        core = ConnectionCore(registry, TUTORIAL)
        hello = encode_client_frame(Hello(id=0, role=Role.OBSERVER, token=ADMIN), Encoding.MSGPACK)
        core.hello(hello)
        assert core.encoding is Encoding.MSGPACK


class _FullServer:
    authenticated = 3

    def admit(self, key: object) -> bool:
        return False


REFUSALS: list[tuple[str, dict[str, Any], ErrorCode, CloseCode]] = [
    ("not a hello", {"first": "ping"}, ErrorCode.BAD_STATE, CloseCode.BAD_HELLO),
    ("not a frame", {"raw": "{]"}, ErrorCode.BAD_FRAME, CloseCode.BAD_HELLO),
    (
        "too large",
        {"raw": "x" * 200, "max_frame_bytes": 100},
        ErrorCode.TOO_LARGE,
        CloseCode.TOO_LARGE,
    ),
    ("bad token", {"token": "nope"}, ErrorCode.UNAUTHORIZED, CloseCode.UNAUTHORIZED),
    (
        "bad token, no session",
        {"token": "nope", "session": "elsewhere"},
        ErrorCode.UNAUTHORIZED,
        CloseCode.UNAUTHORIZED,
    ),
    (
        "admin, no session",
        {"session": "elsewhere"},
        ErrorCode.SESSION_NOT_FOUND,
        CloseCode.SESSION_NOT_FOUND,
    ),
    ("session full", {"max_connections_per_session": 1}, ErrorCode.CAPACITY, CloseCode.CAPACITY),
    ("server full", {"admission": _FullServer()}, ErrorCode.CAPACITY, CloseCode.CAPACITY),
    ("since ahead", {"since": 10_000}, ErrorCode.REPLAY_UNAVAILABLE, CloseCode.BAD_HELLO),
]


@pytest.mark.parametrize(
    ("why", "case", "code", "close"), REFUSALS, ids=[refusal[0] for refusal in REFUSALS]
)
async def test_a_refused_hello_gets_its_error_then_its_close_code(
    why: str, case: dict[str, Any], code: ErrorCode, close: int
) -> None:
    overrides = {
        k: case[k] for k in ("max_frame_bytes", "max_connections_per_session") if k in case
    }
    async with registry_with_tutorial(**overrides) as registry:
        if "max_connections_per_session" in case:
            session = registry.get(TUTORIAL)
            assert session is not None
            session.connections[object()] = None  # type: ignore[index]  # one client already
        core = ConnectionCore(
            registry, case.get("session", TUTORIAL), admission=case.get("admission")
        )
        hello = Hello(
            id=3, role=Role.AGENT, token=case.get("token", ADMIN), since=case.get("since")
        )
        first = {"ping": wire(Ping(id=3))}.get(case.get("first", ""), wire(hello))
        refusal = only(core.hello(case.get("raw", first)))
        assert isinstance(refusal, Refuse)
        assert (refusal.frame.code, refusal.code) == (code, close)
        assert refusal.reason.startswith(f"{code.value}: ")
        assert core.phase is Phase.REFUSED and core.session is None
        assert registry.metrics.errors[code] == 1


async def test_no_session_and_a_bad_token_are_refused_in_the_same_words() -> None:
    async with registry_with_tutorial() as registry:
        messages = []
        for session_id in (TUTORIAL, "elsewhere"):
            core = ConnectionCore(registry, session_id)
            refusal = only(core.hello(wire(Hello(id=0, role=Role.USER, token="nope"))))
            messages.append(refusal.frame.message)
        assert messages[0] == messages[1]


async def test_no_hello_in_time_is_closed_with_4408() -> None:
    async with registry_with_tutorial() as registry:
        core = ConnectionCore(registry, TUTORIAL)
        close = only(core.hello(None))
        assert isinstance(close, Close) and close.code == CloseCode.HELLO_TIMEOUT
        assert close.within is None and "no hello within" in close.reason


async def test_an_evicted_connection_is_closed_with_4408_quickly_and_counted() -> None:
    async with registry_with_tutorial() as registry:
        core = ConnectionCore(registry, TUTORIAL)
        core.evict()
        close = only(core.hello(None))
        assert close.code == CloseCode.HELLO_TIMEOUT and close.reason.startswith("evicted")
        assert close.within == EVICTED_CLOSE_TIMEOUT
        assert registry.metrics.pending_evictions == 1


# -- requests ----------------------------------------------------------------------------------


async def test_a_tool_call_goes_out_as_a_call_and_its_value_comes_back_as_a_result() -> None:
    async with registry_with_tutorial() as registry:
        core = welcomed(registry)
        frame = CallTool(id=5, tool="Calendar__read_today_calendar_events", args={})
        call = only(core.receive(wire(frame)))
        assert isinstance(call, Call) and call.lane is Lane.INLINE and call.frame == frame
        reply = only(core.succeeded(call.frame, {"events": []}))
        assert reply.frame == Result(id=5, value={"events": []})


async def test_a_failed_tool_call_comes_back_as_its_error_with_the_request_id() -> None:
    async with registry_with_tutorial() as registry:
        core = welcomed(registry)
        call = only(core.receive(wire(CallTool(id=6, tool="Nope__nothing", args={}))))
        reply = only(core.failed(call.frame, UnknownToolError("no tool Nope__nothing")))
        assert error_code(reply) is ErrorCode.UNKNOWN_TOOL and reply.frame.id == 6


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (UnknownToolError("x"), ErrorCode.UNKNOWN_TOOL),
        (InvalidArgsError("x"), ErrorCode.INVALID_ARGS),
        (ToolFailedError("x"), ErrorCode.TOOL_FAILED),
        (ControlInterruptedError("x"), ErrorCode.INTERRUPTED),
        (RuntimeError("x"), ErrorCode.INTERNAL),
    ],
)
async def test_each_failure_is_mapped_to_its_error_code(exc: Exception, code: ErrorCode) -> None:
    async with registry_with_tutorial() as registry:
        core = welcomed(registry)
        assert error_code(only(core.failed(ListTools(id=1), exc))) is code


async def test_a_domain_error_the_core_does_not_name_is_answered_with_the_code_it_carries() -> None:
    class Refused(CodedError):
        code = ErrorCode.SESSION_LIMIT_EXCEEDED

    async with registry_with_tutorial() as registry:
        core = welcomed(registry)
        reply = only(core.failed(ListTools(id=1), Refused("x")))
        assert error_code(reply) is ErrorCode.SESSION_LIMIT_EXCEEDED


async def test_a_tool_error_keeps_the_words_the_core_gave_it() -> None:
    async with registry_with_tutorial() as registry:
        core = welcomed(registry)
        frame = CallTool(id=1, tool="x", args={})
        reply = only(core.failed(frame, InvalidArgsError("bad date")))
        assert reply.frame.message == "bad date; nothing was run (list_tools gives the arguments)"


async def test_the_wait_tool_runs_aside_and_a_jump_runs_as_a_long_control() -> None:
    async with registry_with_tutorial() as registry:
        agent = welcomed(registry, Role.AGENT)
        wait = only(agent.receive(wire(CallTool(id=1, tool=WAIT_TOOL, args={}))))
        controller = welcomed(registry, Role.CONTROLLER)
        jump = only(controller.receive(wire(Jump(id=2, by=1.0))))
        tick = only(controller.receive(wire(Tick(id=3))))
        assert (wait.lane, jump.lane, tick.lane) == (Lane.ASIDE, Lane.LONG, Lane.LONG)


async def test_a_ping_is_answered_by_the_core_without_a_call() -> None:
    async with registry_with_tutorial() as registry:
        core = welcomed(registry, Role.OBSERVER)
        assert only(core.receive(wire(Ping(id=9)))) == Reply(Pong(id=9))


async def test_a_role_may_not_send_what_it_is_not_allowed() -> None:
    async with registry_with_tutorial() as registry:
        core = welcomed(registry, Role.OBSERVER)
        reply = only(core.receive(wire(CallTool(id=4, tool="x", args={}))))
        assert error_code(reply) is ErrorCode.FORBIDDEN and reply.frame.id == 4


async def test_a_second_hello_is_a_bad_state() -> None:
    async with registry_with_tutorial() as registry:
        core = welcomed(registry)
        reply = only(core.receive(wire(Hello(id=2, role=Role.AGENT, token=ADMIN))))
        assert error_code(reply) is ErrorCode.BAD_STATE


async def test_an_undecodable_frame_gets_an_error_and_changes_nothing() -> None:
    async with registry_with_tutorial() as registry:
        core = welcomed(registry)
        assert error_code(only(core.receive("{not json"))) is ErrorCode.BAD_FRAME
        assert core.phase is Phase.OPEN


async def test_a_frame_above_the_limit_is_answered_then_closed_with_4009() -> None:
    async with registry_with_tutorial(max_frame_bytes=200) as registry:
        core = welcomed(registry)
        error, close = core.receive("x" * 300)
        assert error_code(error) is ErrorCode.TOO_LARGE
        assert isinstance(close, Close) and close.code == CloseCode.TOO_LARGE and close.flush


async def test_frames_beyond_the_burst_are_refused_then_the_connection_is_closed() -> None:
    async with registry_with_tutorial(rate=0.001, burst=2, rate_strikes=1) as registry:
        core = welcomed(registry, Role.OBSERVER)
        answers = [core.receive(wire(Ping(id=n))) for n in range(5)]
        assert [type(only(a).frame) for a in answers[:2]] == [Pong, Pong]
        assert error_code(only(answers[2])) is ErrorCode.RATE_LIMITED
        close = only(answers[3])
        assert isinstance(close, Close) and close.code == CloseCode.RATE_LIMITED
        assert answers[4] == []  # closing: later frames are not answered
        assert registry.metrics.rate_limit_disconnects == 1


async def test_once_a_close_is_asked_frames_are_no_longer_answered() -> None:
    async with registry_with_tutorial() as registry:
        core = welcomed(registry)
        assert only(core.close(CloseCode.GOING_AWAY, "bye")) == Close(CloseCode.GOING_AWAY, "bye")
        assert core.close(CloseCode.NORMAL, "again") == []  # the first close asked wins
        assert core.receive(wire(Ping(id=1))) == [] and core.phase is Phase.CLOSING


async def test_a_close_asked_before_the_hello_still_holds_once_it_is_welcomed() -> None:
    async with registry_with_tutorial() as registry:
        core = ConnectionCore(registry, TUTORIAL)
        core.close(CloseCode.GOING_AWAY, "shutting down")
        reply = only(core.hello(wire(Hello(id=0, role=Role.OBSERVER, token=ADMIN))))
        assert isinstance(reply.frame, Welcome) and core.phase is Phase.CLOSING
        assert core.receive(wire(Ping(id=1))) == []
