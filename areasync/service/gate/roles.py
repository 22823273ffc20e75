"""Who may send what: the role x frame-type matrix, in one table.

Every client frame type is either allowed for a role or answered with `forbidden` (the request
changes nothing and the connection stays open). The table is data so that the service, the
tests and the documentation read the same thing. `hello` is the first frame of every
connection and not part of the matrix: a second one is `bad_state` for everyone.

- agent: acts in the world through ARE tools, and says when it is idle (fast-mode leases);
- user: talks to the agent (ARE's `send_message_to_agent`);
- observer: reads (the stream, the tools, the apps' state);
- controller: an observer that also drives the clock;
- admin: everything, plus creating and stopping sessions.

Every role receives the session's stream: the agent needs its events and notifications, the
user the agent's replies, dashboards everything.
"""

from __future__ import annotations

from typing import Final

import msgspec

from areasync.protocol.frames import (
    CallTool,
    CreateSession,
    ForkSession,
    GetState,
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
    frame_tag,
)

FrameType = type[msgspec.Struct]

CLOCK_CONTROLS: Final[frozenset[FrameType]] = frozenset({Pause, Resume, Jump, Tick, SetSpeed, Stop})
READ: Final[frozenset[FrameType]] = frozenset({Ping, ListTools, GetState})

ALLOWED: Final[dict[Role, frozenset[FrameType]]] = {
    Role.AGENT: frozenset({Ping, ListTools, CallTool, Idle}),
    Role.USER: frozenset({Ping, SendUserMessage}),
    Role.OBSERVER: READ,
    Role.CONTROLLER: READ | CLOCK_CONTROLS,
    Role.ADMIN: READ
    | CLOCK_CONTROLS
    | frozenset({CallTool, Idle, SendUserMessage, CreateSession, StopSession, ForkSession}),
}
"""The frame types each role may send after its `hello`."""

MUTATING: Final[frozenset[FrameType]] = frozenset(
    {CallTool, SendUserMessage, Pause, Resume, Jump, Tick, SetSpeed, Stop}
)
"""Frames that act on the session: refused with `session_ended` once it has ended."""


def allowed(role: Role, frame_type: FrameType) -> bool:
    return frame_type in ALLOWED[role]


def allowed_names(role: Role) -> list[str]:
    """The `type` tags `role` may send, for error messages."""
    return sorted(frame_tag(cls) for cls in ALLOWED[role])
