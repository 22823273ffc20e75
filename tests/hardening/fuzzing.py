"""Fuzzing a live session: garbage interleaved with a fixed control script, over real sockets.

A run (`run_script`) starts a server with one manual-mode session (the test timeline scenario:
events at chosen times on a tiny app), attaches an agent, a user, a controller and an observer,
and plays `SCRIPT`: tool calls, a user message and clock controls, each awaited. Before each
step it injects that step's share of garbage (`Garbage`). The reference is the same script with
no garbage; the fuzz test asserts that the two runs leave the same event log (ARE's log in the
conformance normal form), the same stream shape and the same replies to the script.

Where garbage goes, so that "changes nothing" is the right expectation:

- to an attached connection, any frame that does not decode (checked with the codec the client
  side uses), or one of `WRONG_ORDER` (valid frames that must fail whatever the state: a second
  `hello`, an unknown tool, a jump into the past...). A frame that decodes and could act (a
  mutated `tick` that is still a valid `tick`) is sent on the observer connection instead, where
  it is answered (`forbidden`, or a read-only result) and acts on nothing. After each frame the
  injector sends a `ping` and requires exactly one answer before the pong;
- frames that close a connection (above the size limit, invalid UTF-8 in a text frame) and every
  frame sent before `hello` go to a throwaway connection, which must get an error frame and/or a
  documented close code (`DOCUMENTED_CLOSES`).
"""

from __future__ import annotations

import collections
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import msgspec
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from areasync.conformance.normal_form import LogEntry, normalized_log
from areasync.protocol import (
    CallTool,
    ClockItem,
    CloseCode,
    EndedItem,
    Error,
    ErrorCode,
    EventItem,
    Jump,
    NotificationItem,
    Pause,
    Ping,
    Pong,
    ProtocolError,
    Result,
    Resume,
    Role,
    SendUserMessage,
    ServerFrame,
    SetSpeed,
    Stop,
    Tick,
    decode_client_frame,
    decode_server_frame,
)
from areasync.service import Service
from tests.hardening.faults import watch_faults
from tests.scenarios import timeline
from tests.service.support import Peer, attach, serving

SESSION: Final = "areasync_test_timeline"
FRAME_LIMIT: Final = 64 * 1024  # small, so that "huge" frames cost little
WAIT: Final = 10.0
MARKER: Final = 3_141_592_653_589  # ids of the injector's pings, far from anything generated
BAD_TOKEN: Final = "not-a-token"

DECODE_ERRORS: Final = frozenset(
    {ErrorCode.BAD_FRAME, ErrorCode.UNKNOWN_TYPE, ErrorCode.INVALID_FIELD}
)
# Close codes a hostile frame may earn (areasync's, and the WebSocket layer's own: 1007 invalid
# UTF-8 in a text frame, 1009 a message above twice the frame limit); see protocol/errors.py.
DOCUMENTED_CLOSES: Final = frozenset(
    {
        CloseCode.BAD_HELLO,
        CloseCode.UNAUTHORIZED,
        CloseCode.TOO_LARGE,
        CloseCode.INVALID_DATA,
        CloseCode.MESSAGE_TOO_BIG,
    }
)

ATTACHED: Final = (Role.AGENT, Role.USER, Role.CONTROLLER, Role.OBSERVER)

# Totals over the process, for the summary line (tests/conftest.py): runs, frames sent.
TALLY: collections.Counter[str] = collections.Counter()


# -- the control script ---------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    role: Role
    kind: type[Any]
    fields: dict[str, Any] = field(default_factory=dict)


SCRIPT: Final[list[Step]] = [
    Step(Role.AGENT, CallTool, {"tool": "TimelineApp__mark", "args": {"label": "first"}}),
    Step(Role.CONTROLLER, Jump, {"next_event": True}),
    Step(Role.USER, SendUserMessage, {"content": "hello agent"}),
    Step(Role.CONTROLLER, Tick, {"n": 3}),
    Step(Role.AGENT, CallTool, {"tool": "TimelineApp__count"}),
    Step(Role.CONTROLLER, Pause),
    Step(Role.CONTROLLER, Resume),
    Step(Role.CONTROLLER, Jump, {"by": 2.5}),
    Step(Role.AGENT, CallTool, {"tool": "TimelineApp__explode", "args": {"reason": "scripted"}}),
    Step(Role.CONTROLLER, SetSpeed, {"speed": 2.0}),
    Step(Role.CONTROLLER, Jump, {"next_event": True}),
    Step(Role.AGENT, CallTool, {"tool": "TimelineApp__mark", "args": {"label": "last"}}),
    Step(Role.CONTROLLER, Stop),
]


def scenario() -> Any:
    return timeline(2, 5, 9, 14, duration=30)


# -- garbage --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Garbage:
    """One hostile frame: where it goes and what it is."""

    target: str  # a role value, or "fresh" (before hello) / "fresh-attached" (after hello)
    data: str | bytes
    text: bool  # a text frame (JSON); `data` may then be bytes that are not UTF-8

    def __repr__(self) -> str:
        shown = self.data if len(self.data) <= 80 else self.data[:77] + "..."  # type: ignore[operator]
        return f"Garbage({self.target}, {'text' if self.text else 'binary'}, {shown!r})"


# One valid example of every client frame, as plain data (the seed of mutations).
SAMPLES: Final[list[dict[str, Any]]] = [
    {"type": "hello", "id": 1, "role": "observer", "token": BAD_TOKEN, "since": 0},
    {"type": "list_tools", "id": 2},
    {"type": "call_tool", "id": 3, "tool": "TimelineApp__mark", "args": {"label": "x"}},
    {"type": "get_state", "id": 4, "apps": ["TimelineApp"]},
    {"type": "send_user_message", "id": 5, "content": "hi"},
    {"type": "idle", "id": 6},
    {"type": "pause", "id": 7},
    {"type": "resume", "id": 8},
    {"type": "jump", "id": 9, "by": 1.5},
    {"type": "tick", "id": 10, "n": 2},
    {"type": "set_speed", "id": 11, "speed": 3.0},
    {"type": "stop", "id": 12},
    {"type": "ping", "id": 13},
    {"type": "create_session", "id": 14, "scenario": "scenario_tutorial"},
    {"type": "stop_session", "id": 15, "session_id": SESSION},
]

MARK: Final = "TimelineApp__mark"
# Valid frames that fail in any state of the script, on the roles that may send them.
WRONG_ORDER: Final[list[tuple[Role, dict[str, Any]]]] = [
    (Role.AGENT, {"type": "hello", "id": 21, "role": "agent", "token": BAD_TOKEN}),
    (Role.USER, {"type": "hello", "id": 22, "role": "user", "token": BAD_TOKEN}),
    (Role.CONTROLLER, {"type": "hello", "id": 23, "role": "controller", "token": BAD_TOKEN}),
    (Role.AGENT, {"type": "call_tool", "id": 24, "tool": "NoSuchApp__nothing", "args": {}}),
    (Role.AGENT, {"type": "call_tool", "id": 25, "tool": MARK, "args": {"x": 1}}),
    (Role.AGENT, {"type": "call_tool", "id": 26, "tool": MARK, "args": {"label": 5}}),
    (Role.CONTROLLER, {"type": "jump", "id": 27, "to": -1.0}),
    (Role.CONTROLLER, {"type": "stop_session", "id": 28, "session_id": "no_such_session"}),
    (Role.CONTROLLER, {"type": "create_session", "id": 29, "scenario": "scenario_tutorial"}),
    (Role.USER, {"type": "tick", "id": 30, "n": 1}),
    (Role.AGENT, {"type": "stop", "id": 31}),
]

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_field_names = st.sampled_from(
    [
        "type",
        "id",
        "role",
        "token",
        "since",
        "epoch",
        "tool",
        "args",
        "apps",
        "content",
        "to",
        "by",
        "next_event",
        "n",
        "speed",
        "scenario",
        "scenario_json",
        "mode",
        "session_id",
    ]
) | st.text(max_size=12)


@st.composite
def _mutated(draw: st.DrawFn) -> dict[str, Any] | Any:
    """A valid frame with fields corrupted: wrong types, unknown tags, missing or extra fields."""
    frame = dict(draw(st.sampled_from(SAMPLES)))
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["set", "delete", "retag", "reid", "wrap"]))
        if action == "set":
            frame[draw(_field_names)] = draw(_json_values)
        elif action == "delete" and frame:
            frame.pop(draw(st.sampled_from(sorted(frame))))
        elif action == "retag":
            frame["type"] = draw(st.text(max_size=16) | _json_values)
        elif action == "reid":
            frame["id"] = draw(st.integers(min_value=-(2**63), max_value=2**64 - 1) | _json_values)
        elif action == "wrap":
            return draw(st.sampled_from([[frame], {"frame": frame}, json.dumps(frame)]))
    return frame


def _encode(value: Any, as_text: bool) -> tuple[str | bytes, bool]:
    if as_text:
        return json.dumps(value), True
    try:
        return msgspec.msgpack.encode(value), False
    except (OverflowError, TypeError):  # an int beyond 64 bits: JSON can carry it
        return json.dumps(value), True


@st.composite
def _payload(draw: st.DrawFn) -> tuple[str | bytes, bool, bool]:
    """(data, text frame?, may it close the connection?)"""
    kind = draw(
        st.sampled_from(
            ["bytes", "text", "mutated", "truncated", "deep", "huge", "utf8", "surrogates"]
        )
    )
    if kind == "bytes":
        return draw(st.binary(max_size=256)), False, False
    if kind == "text":
        return draw(st.text(max_size=256)), True, False
    if kind == "mutated":
        data, text = _encode(draw(_mutated()), draw(st.booleans()))
        return data, text, False
    if kind == "truncated":
        data, text = _encode(draw(st.sampled_from(SAMPLES)), draw(st.booleans()))
        return data[: draw(st.integers(0, max(0, len(data) - 1)))], text, False
    if kind == "deep":
        depth = draw(st.integers(10, 20_000))
        if draw(st.booleans()):
            return '{"type": "ping", "id": 1, "x": ' + "[" * depth + "]" * depth + "}", True, False
        return b"\x91" * depth + b"\xc0", False, False  # msgpack: nested one-element arrays
    if kind == "huge":
        size = draw(st.integers(FRAME_LIMIT - 200, 3 * FRAME_LIMIT))
        frame = {"type": "call_tool", "id": 40, "tool": "TimelineApp__mark", "args": {}}
        frame["args"] = {"label": "x" * size}
        data, text = _encode(frame, draw(st.booleans()))
        return data, text, len(data) > FRAME_LIMIT
    if kind == "utf8":
        # A text frame that is not UTF-8: the WebSocket layer refuses it (1007).
        raw = b'{"type": "ping", "id": 1, "x": "' + draw(st.binary(min_size=1, max_size=8))
        return raw + b'\xff"}', True, True
    # JSON escapes of lone surrogates: valid UTF-8 on the wire, unencodable once decoded.
    return '{"type": "hello", "id": 1, "role": "observer", "token": "\\udc80\\ud800"}', True, False


@st.composite
def garbage(draw: st.DrawFn) -> Garbage:
    """One hostile frame and the connection it goes to (see the module docstring)."""
    if draw(st.integers(0, 9)) == 0:
        role, frame = draw(st.sampled_from(WRONG_ORDER))
        return Garbage(role.value, json.dumps(frame), True)
    data, text, closes = draw(_payload())
    if draw(st.integers(0, 5)) == 0:
        return Garbage("fresh", data, text)
    if closes:
        return Garbage("fresh-attached", data, text)
    target = draw(st.sampled_from(ATTACHED))
    if target is not Role.OBSERVER and decodes(data, text):
        target = Role.OBSERVER  # a valid frame might act: only the observer may not
    return Garbage(target.value, data, text)


def garbage_plan(max_per_step: int = 4) -> st.SearchStrategy[list[list[Garbage]]]:
    """Garbage to inject before each step of SCRIPT."""
    return st.lists(
        st.lists(garbage(), max_size=max_per_step), min_size=len(SCRIPT), max_size=len(SCRIPT)
    )


def local_decode(data: str | bytes, text: bool) -> ProtocolError | None:
    """The codec's verdict on `data` (None: it decodes), as the server will see it."""
    if text and isinstance(data, bytes):
        try:
            data = data.decode()
        except UnicodeDecodeError:
            return ProtocolError(ErrorCode.BAD_FRAME, "not UTF-8")
    try:
        decode_client_frame(data)
    except ProtocolError as exc:
        return exc
    return None


def decodes(data: str | bytes, text: bool) -> bool:
    return local_decode(data, text) is None


# -- a run ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What a run left behind, for comparison with the reference run."""

    log: list[LogEntry]
    stream: list[Any]  # item kinds with their deterministic content
    replies: list[Any]  # the script's replies: result values or error codes
    faults: list[str]
    violations: list[str] = field(default_factory=list)  # broken expectations of garbage
    answers: collections.Counter[str] = field(default_factory=collections.Counter)


def _describe_reply(frame: ServerFrame) -> Any:
    if isinstance(frame, Error):
        return ("error", frame.code)
    if isinstance(frame, Result):
        value = frame.value
        # Strings are ids (uuid4, different every run); clock states and counts are not.
        return ("result", "<str>" if isinstance(value, str) else value)
    return (type(frame).__name__,)


def _stream_shape(items: list[Any]) -> list[Any]:
    shape: list[Any] = []
    for item in items:
        if isinstance(item, EventItem):
            record = item.event
            shape.append(("event", record.event_type, record.app, record.function, record.time))
        elif isinstance(item, NotificationItem):
            note = item.notification
            shape.append(("notification", note.message_type, note.timestamp))
        elif isinstance(item, ClockItem):
            clock = item.clock
            shape.append(("clock", clock.state, clock.time, clock.tick, clock.speed))
        elif isinstance(item, EndedItem):
            shape.append(("ended", item.state))
    return shape


async def run_script(plan: list[list[Garbage]] | None = None) -> Outcome:
    """Play SCRIPT on a fresh server, injecting `plan[i]` before step i (see the module doc)."""
    plan = plan or [[] for _ in SCRIPT]
    violations: list[str] = []
    replies: list[Any] = []
    answers: collections.Counter[str] = collections.Counter()
    with watch_faults() as faults, anyio.fail_after(60):
        async with (
            serving(scenario(), max_frame_bytes=FRAME_LIMIT) as service,
            attach(service, Role.AGENT, session=SESSION) as agent,
            attach(service, Role.USER, session=SESSION) as user,
            attach(service, Role.CONTROLLER, session=SESSION) as controller,
            attach(service, Role.OBSERVER, session=SESSION) as observer,
        ):
            peers = {Role.AGENT: agent, Role.USER: user, Role.CONTROLLER: controller}
            peers[Role.OBSERVER] = observer
            for step, injected in zip(SCRIPT, plan, strict=True):
                for item in injected:
                    TALLY["frames"] += 1
                    TALLY["fresh"] += item.target.startswith("fresh")
                    answer, problem = await inject(service, peers, item)
                    answers[f"{item.target}: {answer}"] += 1
                    if problem:
                        violations.append(f"{item!r}: {problem}")
                reply = await peers[step.role].request(step.kind, **step.fields)
                replies.append(_describe_reply(reply))
            await observer.until_ended()
            session = service.registry.get(SESSION)
            assert session is not None
            log = normalized_log(session.sim.env)
            stream = _stream_shape(list(session.sim.log.items))
            if len(session.connections) != len(peers):
                violations.append(f"{len(session.connections)} clients attached, not 4")
    TALLY["runs"] += 1
    return Outcome(log, stream, replies, faults.problems, violations, answers)


async def inject(
    service: Service, peers: dict[Role, Peer], item: Garbage
) -> tuple[str, str | None]:
    """Send one hostile frame and check how it was answered: (the answer, a violation or None)."""
    if item.target == "fresh":
        return await _inject_before_hello(service, item)
    if item.target == "fresh-attached":
        return await _inject_closing(service, item)
    peer = peers[Role(item.target)]
    expected = local_decode(item.data, item.text)
    await peer.ws.send(item.data, text=item.text)
    marker = MARKER + len(peer.frames)
    await peer.send(Ping(id=marker))
    answers: list[ServerFrame] = []
    with anyio.fail_after(WAIT):
        while True:
            frame = await peer.recv()
            if isinstance(frame, Pong) and frame.id == marker:
                break
            if isinstance(frame, Error | Result | Pong):
                answers.append(frame)
    if len(answers) != 1:
        return "answers", f"expected one answer, got {answers!r}"
    answer = answers[0]
    summary = answer.code if isinstance(answer, Error) else type(answer).__name__.lower()
    if expected is not None:
        if not isinstance(answer, Error) or answer.code not in DECODE_ERRORS:
            return summary, f"an undecodable frame got {answer!r}"
        if answer.id != expected.id:
            return summary, f"the error's id {answer.id!r} is not the frame's {expected.id!r}"
    elif isinstance(answer, Error) and answer.code == ErrorCode.INTERNAL:
        return summary, f"internal error: {answer.message}"
    return summary, None


async def _read_until_closed(ws: Any) -> tuple[list[ServerFrame], int | None]:
    frames: list[ServerFrame] = []
    with anyio.fail_after(WAIT):
        try:
            while True:
                data = await ws.recv()
                frame = decode_server_frame(data)
                if frame is not None:
                    frames.append(frame)
        except ConnectionClosed as exc:
            return frames, None if exc.rcvd is None else exc.rcvd.code


async def _inject_before_hello(service: Service, item: Garbage) -> tuple[str, str | None]:
    async with connect(service.ws_url(SESSION), max_size=None) as ws:
        with contextlib.suppress(ConnectionClosed):  # it may close before the whole frame
            await ws.send(item.data, text=item.text)
        frames, code = await _read_until_closed(ws)
    return _refusal(frames, code), _check_refusal(frames, code)


async def _inject_closing(service: Service, item: Garbage) -> tuple[str, str | None]:
    async with attach(service, Role.OBSERVER, session=SESSION, max_size=None) as peer:
        with contextlib.suppress(ConnectionClosed):
            await peer.ws.send(item.data, text=item.text)
        frames, code = await _read_until_closed(peer.ws)
    errors: list[ServerFrame] = [f for f in frames if isinstance(f, Error)]
    return _refusal(errors, code), _check_refusal(errors, code)


def _refusal(frames: list[ServerFrame], code: int | None) -> str:
    codes = [f.code for f in frames if isinstance(f, Error)]
    return f"{'+'.join(codes) or 'no error'}, close {code}"


def _check_refusal(frames: list[ServerFrame], code: int | None) -> str | None:
    if code not in DOCUMENTED_CLOSES:
        return f"closed with {code}, not a documented close code"
    errors = [f for f in frames if isinstance(f, Error)]
    if len(frames) != len(errors) or len(errors) > 1:
        return f"expected at most one error frame, got {frames!r}"
    if code >= 4000 and not errors:
        return f"closed with {code} without an error frame saying why"
    if errors and errors[0].code == ErrorCode.INTERNAL:
        return f"internal error: {errors[0].message}"
    return None
