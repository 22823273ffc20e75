"""The connection core with no socket and no simulation: frames in, actions out.

`ConnectionCore` is driven here as its I/O layers drive it: the first message goes to `hello`,
later ones to `receive` (as bytes, or as the frame an adapter built), and the outcome of each
`Call` goes back through `succeeded` or `failed`. Its session is a `FakeSession`, its server a
`FakeDoor`, its wall a `ManualWall`: the narrow interfaces the core is written against
(`sessionview.CoreSession`, `hello.Door`), so these tests need no ARE and run in milliseconds.
The real session behind the same calls is the end-to-end tests' (test_hello.py, test_tools.py,
test_bad_frames.py, tests/hardening/).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from areasync.protocol import (
    CloseCode,
    Encoding,
    Error,
    ErrorCode,
    Hello,
    Pong,
    ProtocolError,
    Replay,
    Result,
    Role,
    Welcome,
    encode_client_frame,
)
from areasync.protocol.errors import CodedError
from areasync.protocol.frames import (
    CallTool,
    ClientFrame,
    Jump,
    ListTools,
    Ping,
    SendUserMessage,
    Tick,
)
from areasync.protocol.records import WAIT_TOOL, ClockState
from areasync.service.connection.protocol import (
    EVICTED_CLOSE_TIMEOUT,
    TAKE_TURN,
    Action,
    Call,
    Close,
    ConnectionCore,
    Count,
    Lane,
    Limits,
    Phase,
    Refuse,
    Reply,
)
from areasync.service.metrics import Tally
from areasync.service.sessions.view import SessionView

SESSION = "tutorial"
TOKEN = "the-token"

LIMITS = Limits(
    max_frame_bytes=1_000,
    hello_timeout=5.0,
    max_pending_hellos=8,
    max_connections_per_session=4,
    rate=None,
    burst=10,
    rate_strikes=3,
)


@dataclasses.dataclass
class FakeSession:
    """A session as the core sees it (`CoreSession`): its state is whatever the test sets."""

    id: str = SESSION
    epoch: str = "e1"
    seq: int = 12
    clients: int = 0
    ended: bool = False
    state: str = "running"
    over_bounds: ProtocolError | None = None
    weighed: list[int] = dataclasses.field(default_factory=list)  # sizes `refusal` was asked

    def view(self) -> SessionView:
        return SessionView(
            id=self.id,
            epoch=self.epoch,
            seq=self.seq,
            clients=self.clients,
            scenario_id="scenario_tutorial",
            restored=False,
        )

    def clock_state(self) -> ClockState:
        return ClockState(state=self.state, time=0.0, tick=0, mode="manual", speed=1.0)

    def refusal(self, frame: ClientFrame, size: int) -> ProtocolError | None:
        self.weighed.append(size)
        return self.over_bounds


@dataclasses.dataclass
class FakeDoor:
    """The server's side of a hello (`Door`): one token opens every role; `room` places."""

    room: int = 100
    taken: int = 0

    def allows(self, token: str, role: Role) -> bool:
        return token == TOKEN

    def admit(self) -> bool:
        if self.taken >= self.room:
            return False
        self.taken += 1
        return True

    def admitted(self) -> int:
        return self.taken


class ManualWall:
    """A wall clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def core_of(
    limits: Limits = LIMITS, *, wall: ManualWall | None = None, session_id: str = SESSION
) -> ConnectionCore[FakeSession]:
    return ConnectionCore(limits, session_id, clock=wall or ManualWall())


def wire(frame: ClientFrame) -> str:
    return encode_client_frame(frame, Encoding.JSON)


def welcomed(
    role: Role = Role.AGENT, session: FakeSession | None = None, **limits: Any
) -> ConnectionCore[FakeSession]:
    core = core_of(dataclasses.replace(LIMITS, **limits))
    actions = core.hello(
        wire(Hello(id=0, role=role, token=TOKEN)), session or FakeSession(), FakeDoor()
    )
    assert core.phase is Phase.OPEN and len(answered(actions)) == 1
    return core


def answered(actions: list[Action]) -> list[Action]:
    """The actions but the counts."""
    return [action for action in actions if not isinstance(action, Count)]


def only(actions: list[Action]) -> Any:
    rest = answered(actions)
    assert len(rest) == 1, actions
    return rest[0]


def counts(actions: list[Action]) -> list[Tally]:
    return [action.tally for action in actions if isinstance(action, Count)]


def error_code(action: Any) -> ErrorCode:
    assert isinstance(action, Reply) and isinstance(action.frame, Error), action
    return ErrorCode(action.frame.code)


# -- hello -------------------------------------------------------------------------------------


def test_a_valid_hello_is_welcomed_alone_after_the_stream_so_far() -> None:
    core = core_of()
    session = FakeSession(seq=12)
    actions = core.hello(wire(Hello(id=7, role=Role.OBSERVER, token=TOKEN)), session, FakeDoor())
    reply = only(actions)
    assert isinstance(reply, Reply) and isinstance(reply.frame, Welcome)
    assert reply.alone and reply.after == 12 and reply.frame.seq == 12
    assert (reply.frame.id, reply.frame.role, reply.frame.replay) == (7, Role.OBSERVER, Replay.NONE)
    assert core.phase is Phase.OPEN and core.session is session
    assert counts(actions) == [Tally.FRAME_RECEIVED]


def test_a_hello_with_since_is_welcomed_to_replay_from_there() -> None:
    core = core_of()
    hello = Hello(id=0, role=Role.OBSERVER, token=TOKEN, since=0)
    reply = only(core.hello(wire(hello), FakeSession(), FakeDoor()))
    assert reply.after == 0 and reply.frame.replay is Replay.FULL


def test_a_hello_from_another_epoch_is_welcomed_with_a_reset_from_the_start() -> None:
    core = core_of()
    hello = Hello(id=0, role=Role.OBSERVER, token=TOKEN, since=5, epoch="old")
    reply = only(core.hello(wire(hello), FakeSession(epoch="new"), FakeDoor()))
    assert reply.after == 0 and reply.frame.replay is Replay.RESET


def test_a_binary_hello_makes_a_msgpack_connection() -> None:
    core = core_of()
    hello = encode_client_frame(Hello(id=0, role=Role.OBSERVER, token=TOKEN), Encoding.MSGPACK)
    core.hello(hello, FakeSession(), FakeDoor())
    assert core.encoding is Encoding.MSGPACK


def test_a_hello_an_adapter_made_is_welcomed_as_its_bytes_would_be() -> None:
    core = core_of()
    reply = only(core.hello(Hello(id=0, role=Role.USER, token=TOKEN), FakeSession(), FakeDoor()))
    assert isinstance(reply.frame, Welcome) and core.role is Role.USER


REFUSALS: list[tuple[str, dict[str, Any], ErrorCode, CloseCode]] = [
    ("not a hello", {"first": "ping"}, ErrorCode.BAD_STATE, CloseCode.BAD_HELLO),
    ("not a frame", {"raw": "{]"}, ErrorCode.BAD_FRAME, CloseCode.BAD_HELLO),
    ("too large", {"raw": "x" * 2_000}, ErrorCode.TOO_LARGE, CloseCode.TOO_LARGE),
    ("bad token", {"token": "nope"}, ErrorCode.UNAUTHORIZED, CloseCode.UNAUTHORIZED),
    (
        "bad token, no session",
        {"token": "nope", "no session": True},
        ErrorCode.UNAUTHORIZED,
        CloseCode.UNAUTHORIZED,
    ),
    (
        "a token that opens it, no session",
        {"no session": True},
        ErrorCode.SESSION_NOT_FOUND,
        CloseCode.SESSION_NOT_FOUND,
    ),
    ("session full", {"clients": 4}, ErrorCode.CAPACITY, CloseCode.CAPACITY),
    ("server full", {"room": 0}, ErrorCode.CAPACITY, CloseCode.CAPACITY),
    ("since ahead", {"since": 10_000}, ErrorCode.REPLAY_UNAVAILABLE, CloseCode.BAD_HELLO),
]


@pytest.mark.parametrize(
    ("why", "case", "code", "close"), REFUSALS, ids=[refusal[0] for refusal in REFUSALS]
)
def test_a_refused_hello_gets_its_error_then_its_close_code(
    why: str, case: dict[str, Any], code: ErrorCode, close: int
) -> None:
    core = core_of()
    session = None if case.get("no session") else FakeSession(clients=case.get("clients", 0))
    hello = Hello(id=3, role=Role.AGENT, token=case.get("token", TOKEN), since=case.get("since"))
    first = wire(Ping(id=3)) if case.get("first") == "ping" else wire(hello)
    refusal = only(core.hello(case.get("raw", first), session, FakeDoor(room=case.get("room", 9))))
    assert isinstance(refusal, Refuse)
    assert (refusal.frame.code, refusal.code) == (code, close)
    assert refusal.reason.startswith(f"{code.value}: ")
    assert core.phase is Phase.REFUSED and core.session is None


def test_no_session_and_a_bad_token_are_refused_in_the_same_words() -> None:
    hello = wire(Hello(id=0, role=Role.USER, token="nope"))
    messages = [
        only(core_of().hello(hello, session, FakeDoor())).frame.message
        for session in (FakeSession(), None)
    ]
    assert messages[0] == messages[1]


def test_a_full_server_is_named_with_its_count_of_clients() -> None:
    door = FakeDoor(room=2, taken=2)
    refusal = only(
        core_of().hello(wire(Hello(id=0, role=Role.USER, token=TOKEN)), FakeSession(), door)
    )
    assert "the server has 2 clients, its limit (max_connections)" in refusal.frame.message


def test_a_hello_refused_after_the_server_counted_it_leaves_the_count_to_the_door() -> None:
    door = FakeDoor()
    hello = Hello(id=0, role=Role.USER, token=TOKEN, since=10_000)
    only(core_of().hello(wire(hello), FakeSession(seq=1), door))
    assert door.taken == 1  # the I/O layer releases it when the connection ends (door.py)


def test_no_hello_in_time_is_closed_with_4408() -> None:
    close = only(core_of().hello(None, FakeSession(), FakeDoor()))
    assert isinstance(close, Close) and close.code == CloseCode.HELLO_TIMEOUT
    assert close.within is None and "no hello within 5 s" in close.reason


def test_an_evicted_connection_is_closed_with_4408_quickly_and_counted() -> None:
    core = core_of()
    core.evict()
    actions = core.hello(None, FakeSession(), FakeDoor())
    close = only(actions)
    assert close.code == CloseCode.HELLO_TIMEOUT and close.reason.startswith("evicted")
    assert close.within == EVICTED_CLOSE_TIMEOUT
    assert counts(actions) == [Tally.PENDING_EVICTION]


# -- requests ----------------------------------------------------------------------------------


def test_a_tool_call_goes_out_as_a_call_and_its_result_comes_back_before_the_turn() -> None:
    core = welcomed()
    frame = CallTool(id=5, tool="Calendar__read_today_calendar_events", args={})
    actions = core.receive(wire(frame))
    call = only(actions)
    assert isinstance(call, Call) and call.lane is Lane.INLINE and call.frame == frame
    assert counts(actions) == [Tally.FRAME_RECEIVED]
    assert core.succeeded(call.frame, {"events": []}) == [
        Reply(Result(id=5, value={"events": []})),
        TAKE_TURN,
    ]


def test_a_failed_tool_call_takes_the_turn_before_its_error_with_the_request_id() -> None:
    core = welcomed()
    call = only(core.receive(wire(CallTool(id=6, tool="Nope__nothing", args={}))))
    turn, reply = core.failed(call.frame, RuntimeError("boom"))
    assert turn is TAKE_TURN
    assert error_code(reply) is ErrorCode.INTERNAL and reply.frame.id == 6


def test_a_wait_takes_the_turn_before_its_answer() -> None:
    frame = CallTool(id=1, tool=WAIT_TOOL, args={})
    core = welcomed()
    assert core.succeeded(frame, None) == [TAKE_TURN, Reply(Result(id=1, value=None))]
    assert core.failed(frame, RuntimeError("x"))[0] is TAKE_TURN


def test_a_request_that_is_no_tool_call_takes_no_turn() -> None:
    core = welcomed(Role.CONTROLLER)
    assert core.succeeded(Tick(id=2), None) == [Reply(Result(id=2, value=None))]
    assert TAKE_TURN not in core.failed(Tick(id=2), RuntimeError("x"))


def test_a_tool_call_cancelled_while_it_ran_still_takes_the_turn_and_a_wait_does_not() -> None:
    core = welcomed()
    assert core.abandoned(CallTool(id=1, tool="Calendar__x", args={})) == [TAKE_TURN]
    assert core.abandoned(CallTool(id=2, tool=WAIT_TOOL, args={})) == []
    assert core.abandoned(ListTools(id=3)) == []


class _OverItsBound(CodedError):
    code = ErrorCode.SESSION_LIMIT_EXCEEDED
    hint = "; raise --max-session-input-bytes"
    when_ended = ErrorCode.SESSION_ENDED


def test_a_domain_error_is_answered_with_the_code_and_the_words_it_carries() -> None:
    reply = only(welcomed().failed(ListTools(id=1), _OverItsBound("too much")))
    assert error_code(reply) is ErrorCode.SESSION_LIMIT_EXCEEDED
    assert reply.frame.message == "too much; raise --max-session-input-bytes"


def test_a_domain_error_of_an_ended_session_is_answered_with_its_ended_code() -> None:
    session = FakeSession()
    core = welcomed(session=session)
    session.ended = True
    assert error_code(only(core.failed(ListTools(id=1), _OverItsBound("x")))) is (
        ErrorCode.SESSION_ENDED
    )


def test_a_protocol_error_is_answered_as_it_is() -> None:
    error = ProtocolError(ErrorCode.BAD_STATE, "not now")
    reply = only(welcomed().failed(ListTools(id=4), error))
    assert (error_code(reply), reply.frame.message, reply.frame.id) == (
        ErrorCode.BAD_STATE,
        "not now",
        4,
    )


def test_any_other_failure_is_an_internal_error_naming_the_frame() -> None:
    reply = only(welcomed().failed(ListTools(id=1), KeyError("k")))
    assert error_code(reply) is ErrorCode.INTERNAL and "`list_tools` failed" in reply.frame.message


def test_the_wait_tool_runs_aside_and_a_jump_runs_as_a_long_control() -> None:
    wait = only(welcomed(Role.AGENT).receive(wire(CallTool(id=1, tool=WAIT_TOOL, args={}))))
    controller = welcomed(Role.CONTROLLER)
    jump = only(controller.receive(wire(Jump(id=2, by=1.0))))
    tick = only(controller.receive(wire(Tick(id=3))))
    assert (wait.lane, jump.lane, tick.lane) == (Lane.ASIDE, Lane.LONG, Lane.LONG)


def test_a_ping_is_answered_by_the_core_without_a_call() -> None:
    assert only(welcomed(Role.OBSERVER).receive(wire(Ping(id=9)))) == Reply(Pong(id=9))


def test_a_role_may_not_send_what_it_is_not_allowed() -> None:
    reply = only(welcomed(Role.OBSERVER).receive(wire(CallTool(id=4, tool="x", args={}))))
    assert error_code(reply) is ErrorCode.FORBIDDEN and reply.frame.id == 4


def test_a_second_hello_is_a_bad_state() -> None:
    reply = only(welcomed().receive(wire(Hello(id=2, role=Role.AGENT, token=TOKEN))))
    assert error_code(reply) is ErrorCode.BAD_STATE


def test_a_request_that_acts_on_an_ended_session_is_refused_naming_its_state() -> None:
    session = FakeSession()
    core = welcomed(session=session)
    session.ended, session.state = True, "stopped"
    reply = only(core.receive(wire(CallTool(id=3, tool="x", args={}))))
    assert error_code(reply) is ErrorCode.SESSION_ENDED and "(stopped)" in reply.frame.message
    assert only(core.receive(wire(ListTools(id=4)))) == Call(ListTools(id=4))


def test_a_request_past_its_sessions_bounds_is_refused_with_the_sessions_words() -> None:
    session = FakeSession(over_bounds=ProtocolError(ErrorCode.SESSION_LIMIT_EXCEEDED, "full"))
    reply = only(welcomed(session=session).receive(wire(CallTool(id=3, tool="x", args={}))))
    assert error_code(reply) is ErrorCode.SESSION_LIMIT_EXCEEDED and reply.frame.id == 3


def test_a_request_is_weighed_against_the_bounds_by_its_bytes() -> None:
    session = FakeSession()
    data = wire(CallTool(id=3, tool="Calendar__x", args={"a": "b"}))
    welcomed(session=session).receive(data)
    assert session.weighed == [len(data)]


def test_an_undecodable_frame_gets_an_error_and_changes_nothing() -> None:
    core = welcomed()
    assert error_code(only(core.receive("{not json"))) is ErrorCode.BAD_FRAME
    assert core.phase is Phase.OPEN


def test_a_frame_above_the_limit_is_answered_then_closed_with_4009() -> None:
    core = welcomed(max_frame_bytes=200)
    error, close = answered(core.receive("x" * 300))
    assert error_code(error) is ErrorCode.TOO_LARGE
    assert isinstance(close, Close) and close.code == CloseCode.TOO_LARGE and close.flush


def test_frames_beyond_the_burst_are_refused_then_the_connection_is_closed() -> None:
    wall = ManualWall()
    core = core_of(dataclasses.replace(LIMITS, rate=1.0, burst=2, rate_strikes=1), wall=wall)
    core.hello(wire(Hello(id=0, role=Role.OBSERVER, token=TOKEN)), FakeSession(), FakeDoor())
    answers = [core.receive(wire(Ping(id=n))) for n in range(5)]
    assert [type(only(a).frame) for a in answers[:2]] == [Pong, Pong]
    assert error_code(only(answers[2])) is ErrorCode.RATE_LIMITED
    close = only(answers[3])
    assert isinstance(close, Close) and close.code == CloseCode.RATE_LIMITED
    assert Tally.RATE_LIMIT_DISCONNECT in counts(answers[3])
    assert answers[4] == []  # closing: later frames are not answered, nor counted


def test_the_rate_limit_refills_with_the_wall_it_is_given() -> None:
    wall = ManualWall()
    core = core_of(dataclasses.replace(LIMITS, rate=1.0, burst=1, rate_strikes=5), wall=wall)
    core.hello(wire(Hello(id=0, role=Role.OBSERVER, token=TOKEN)), FakeSession(), FakeDoor())
    assert isinstance(only(core.receive(wire(Ping(id=1)))).frame, Pong)
    assert error_code(only(core.receive(wire(Ping(id=2))))) is ErrorCode.RATE_LIMITED
    wall.now += 1.0
    assert isinstance(only(core.receive(wire(Ping(id=3)))).frame, Pong)


# -- frames an adapter built -------------------------------------------------------------------


def test_a_frame_an_adapter_built_goes_through_the_gate_as_its_bytes_would() -> None:
    frame = CallTool(id=5, tool="Calendar__x", args={})
    from_bytes, from_frame = welcomed().receive(wire(frame)), welcomed().receive(frame)
    assert from_bytes == from_frame == [Count(Tally.FRAME_RECEIVED), Call(frame)]


def test_a_frame_an_adapter_built_is_refused_for_its_role_as_bytes_are() -> None:
    reply = only(welcomed(Role.OBSERVER).receive(SendUserMessage(id=3, content="hi")))
    assert error_code(reply) is ErrorCode.FORBIDDEN and reply.frame.id == 3


def test_a_frame_an_adapter_built_is_weighed_against_the_bounds_as_its_json() -> None:
    session = FakeSession()
    frame = CallTool(id=3, tool="Calendar__x", args={"a": "b"})
    welcomed(session=session).receive(frame)
    assert session.weighed == [len(wire(frame))]


def test_a_frame_an_adapter_built_is_rate_limited_as_bytes_are() -> None:
    core = core_of(dataclasses.replace(LIMITS, rate=1.0, burst=1, rate_strikes=5))
    core.hello(Hello(id=0, role=Role.OBSERVER, token=TOKEN), FakeSession(), FakeDoor())
    core.receive(Ping(id=1))
    assert error_code(only(core.receive(Ping(id=2)))) is ErrorCode.RATE_LIMITED


# -- closing -----------------------------------------------------------------------------------


def test_once_a_close_is_asked_frames_are_no_longer_answered() -> None:
    core = welcomed()
    assert only(core.close(CloseCode.GOING_AWAY, "bye")) == Close(CloseCode.GOING_AWAY, "bye")
    assert core.close(CloseCode.NORMAL, "again") == []  # the first close asked wins
    assert core.receive(wire(Ping(id=1))) == [] and core.phase is Phase.CLOSING


def test_a_close_asked_before_the_hello_still_holds_once_it_is_welcomed() -> None:
    core = core_of()
    core.close(CloseCode.GOING_AWAY, "shutting down")
    hello = wire(Hello(id=0, role=Role.OBSERVER, token=TOKEN))
    reply = only(core.hello(hello, FakeSession(), FakeDoor()))
    assert isinstance(reply.frame, Welcome) and core.phase is Phase.CLOSING
    assert core.receive(wire(Ping(id=1))) == []
