"""Plain-data records for what the simulation produces: completed events, notifications,
tools, clock state and a session's validation.

They exist so that nothing ARE-specific crosses the bridge: `areasync.bridge` turns ARE objects
into these Structs the moment ARE produces them, and every layer above (the in-process stream,
the WebSocket frames, the dashboard) passes them on unchanged. Fields hold JSON types only.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

import msgspec
from msgspec import Meta

WAIT_TOOL: Final = "SystemApp__wait_for_notification"
"""ARE's wait tool (its SystemApp's `wait_for_notification`), under its public name: the one
tool that moves an agent's time forward."""

GENERATED_ID: Final = re.compile(
    r"(?<![0-9a-f])"
    r"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})"
    r"(?![0-9a-f])"
)
"""The ids ARE generates, wherever they appear in a record's values: a uuid4 with dashes, or
32 hex digits (`uuid4().hex`, ARE's seeded `uuid_hex`). Two runs of one scenario draw different
ones, so whoever compares runs (the conformance normal form, the oracle agent) masks or maps
them."""


# `gc=False` on the records and stream items a session keeps one of per event: JSON values
# hold no cycles, so the collector need not walk them (every full collection would walk a
# session's whole stream), and each is 16 bytes smaller.


class EventRecord(msgspec.Struct, kw_only=True, omit_defaults=False, gc=False):
    """One completed ARE event, as it entered the event log."""

    event_id: str
    event_type: str  # AGENT | ENV | USER | CONDITION | VALIDATION | STOP
    time: float  # absolute simulated time, seconds since the epoch (ARE's event_time)
    app: str | None = None
    function: str | None = None
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    return_value: Any = None
    exception: str | None = None


class NotificationRecord(msgspec.Struct, kw_only=True, gc=False):
    """One message put on ARE's notification queue (for the agent, or an environment signal)."""

    message_type: str  # USER_MESSAGE | ENVIRONMENT_NOTIFICATION | ENVIRONMENT_STOP
    message: str
    timestamp: float  # simulated time, seconds since the epoch


class ClockState(msgspec.Struct, kw_only=True):
    """A snapshot of a session's virtual clock."""

    state: str  # setup | running | paused | stopped | failed
    time: float  # simulated seconds since the epoch
    tick: int
    mode: str  # fast | realtime | manual
    speed: float
    start_time: float = 0.0
    duration: float | None = None
    lag: float = 0.0  # realtime only: wall seconds the last tick ran behind its schedule


class ToolArg(msgspec.Struct, kw_only=True):
    """One argument of an ARE tool, as the agent must supply it."""

    name: str
    type: str | None = None
    description: str | None = None
    required: bool = True
    default: Any = None


class ToolInfo(msgspec.Struct, kw_only=True):
    """An ARE tool under its public name (`App__method`)."""

    name: str
    description: str = ""
    args: list[ToolArg] = msgspec.field(default_factory=list)
    returns: str | None = None


class Validation(msgspec.Struct, kw_only=True, gc=False):
    """ARE's verdict on a session that ended: the scenario's own `validate`, or its judge's.

    All three fields are always on the wire (null included), in this order."""

    success: Annotated[
        bool | None,
        Meta(description="Whether the run passed; null when nothing judged it (no judge)."),
    ] = None
    exception: Annotated[
        str | None,
        Meta(
            description='What the validation raised, as "Type: message" (the scenario\'s '
            "`validate`, or a judge that failed); null when it raised nothing."
        ),
    ] = None
    rationale: Annotated[
        str | None,
        Meta(description="Why the judge decided as it did, when it says; null otherwise."),
    ] = None
