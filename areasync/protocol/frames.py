"""Every frame of the areasync/1 wire protocol, as one msgspec Struct each.

Frames form two tagged unions keyed by the ``type`` field: :data:`ClientFrame` (client ->
server) and :data:`ServerFrame` (server -> client). The Structs *are* the protocol: the codecs
decode straight into them, and the JSON Schema is generated from them, so each one carries a
one-line docstring that becomes its description in the schema.

Client frames forbid unknown fields (a typo must not be silently ignored) and each carries a
client-chosen ``id`` that the server echoes in its reply (``result``, ``error``, ``pong`` or
``welcome``). Server frames accept unknown fields so that old clients keep working when a newer
server adds fields (with defaults, see the compatibility rules in :mod:`areasync.protocol`).

Clock controls (controller role): ``pause``, ``resume``, ``jump``, ``tick``, ``set_speed``,
``stop``. A ``jump`` fires every item due on the way at its own time; ``jump{to | by,
inclusive: false}`` stops just before the target's own items, which then run at the target on
the session's next step (see the comment above ``Jump``).

Stream items (``event``, ``notification``, ``clock``, ``ended``) carry the session's ``seq``:
1, 2, 3, ... contiguous per session, the same for every subscriber, and the key for replay
(``hello.since``). ``clock`` nests a :class:`ClockState` (rather than flattening its fields) so
that ``welcome.clock`` and ``clock.clock`` are the same record and grow together.

A client that says ``hello{batch: true}`` to a server that offers ``batch`` receives frames
that are ready at the same moment (a burst of stream items, a tool call's event and its result)
as one ``batch`` message, in order; it handles each as if it had arrived alone. The server never
waits to fill a batch, so batching changes how many messages a client parses, never when a frame
leaves. Clients that do not ask (the default) never receive one.

Optional features are negotiated, never guessed: ``welcome.capabilities`` lists what the server
offers (:data:`SERVER_CAPABILITIES`), and a client reads it rather than an error's text. A feature
is granted when the client asks for it and the server offers it; a welcome without the field
comes from a server that offers none of them.
"""

from __future__ import annotations

import enum
import math
from typing import Annotated, Any, Final, TypeAlias

import msgspec
from msgspec import Meta

from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.protocol.records import (
    ClockState,
    EventRecord,
    NotificationRecord,
    ToolInfo,
    Validation,
)

PROTOCOL: Final = "areasync/1"
"""The protocol version the server announces in ``welcome.protocol``."""


class Role(enum.StrEnum):
    """What a connection may do: agent (tools), user (messages), observer, controller, admin."""

    AGENT = "agent"
    USER = "user"
    OBSERVER = "observer"
    CONTROLLER = "controller"
    ADMIN = "admin"


class Mode(enum.StrEnum):
    """How a session's virtual clock advances: fast (jump when idle), realtime, manual."""

    FAST = "fast"
    REALTIME = "realtime"
    MANUAL = "manual"


class ImportMode(enum.StrEnum):
    """How a JSON scenario is imported: auto, benchmark (Gaia2's runner: a live agent reaches
    every turn) or plain (ARE's plain import)."""

    AUTO = "auto"
    BENCHMARK = "benchmark"
    PLAIN = "plain"


class Capability(enum.StrEnum):
    """An optional feature a server offers, named in ``welcome.capabilities``."""

    BATCH = "batch"
    """The server honours ``hello.batch``: frames ready together go as one ``batch`` message."""
    JUMP_INCLUSIVE = "jump_inclusive"
    """The server understands ``jump.inclusive`` (older ones refuse the field)."""
    IMPORT_MODE = "import_mode"
    """The server understands ``create_session.import_mode`` (older ones refuse the field)."""


SERVER_CAPABILITIES: Final = (Capability.BATCH, Capability.JUMP_INCLUSIVE, Capability.IMPORT_MODE)
"""What this server offers, announced in every ``welcome.capabilities``."""


class Replay(enum.StrEnum):
    """What happened to hello.since: full (replayed), none (not asked), reset (unknown epoch)."""

    FULL = "full"
    NONE = "none"
    RESET = "reset"


# 2**53 - 1 keeps ids exact in JavaScript clients and always encodable as a msgpack int.
RequestId: TypeAlias = Annotated[
    int,
    Meta(
        ge=0,
        le=2**53 - 1,
        description="Client-chosen request id (0 <= id < 2**53), echoed in the reply.",
    ),
]
Seq: TypeAlias = Annotated[
    int,
    Meta(ge=1, description="Position in the session's stream: 1, 2, 3, ... contiguous."),
]


def _require_finite(frame: str, **values: float | None) -> None:
    # msgpack can carry NaN and infinities (JSON cannot); neither means anything as a time or a
    # speed. Range constraints (Meta) already reject NaN, not inf, so check here for both.
    for name, value in values.items():
        if value is not None and not math.isfinite(value):
            raise ValueError(
                f"`{name}` must be a finite number, got {value!r} - at `$.{name}`; "
                f"send a real number in `{frame}`"
            )


# -- client -> server -----------------------------------------------------------------------


# Frames are built with keywords only (positional frames are unreadable and fragile as fields
# are added). msgspec applies kw_only per class, hence its repetition on every frame.
class _ClientFrame(msgspec.Struct, tag_field="type", forbid_unknown_fields=True, kw_only=True):
    id: RequestId


# Fields left at their default are not encoded (omit_defaults): a client that does not ask for
# `batch` sends the same hello as before the field existed, so it works with older servers too.
class Hello(_ClientFrame, tag="hello", kw_only=True, omit_defaults=True):
    """First frame on every connection: authenticate a role, optionally resume after `since`."""

    role: Role
    token: Annotated[str, Meta(description="The session's token for this role.")]
    since: Annotated[
        Annotated[int, Meta(ge=0)] | None,
        Meta(description="Replay every stream item after this seq (0: all), then go live."),
    ] = None
    epoch: Annotated[
        str | None,
        Meta(description="The welcome.epoch `since` belongs to; if it is unknown: replay=reset."),
    ] = None
    batch: Annotated[
        bool,
        Meta(
            description=(
                "Receive frames that are ready together as one `batch` message (fewer messages "
                "to parse: for busy streams). Off by default: each frame is its own message. "
                "Granted only by a server whose welcome.capabilities offers `batch`: the welcome "
                "tells the client which it gets. Servers older than the field refuse it "
                "(invalid_field): ask again without it, and after a welcome ask only if offered."
            )
        ),
    ] = False


class ListTools(_ClientFrame, tag="list_tools", kw_only=True):
    """Ask for the session's tools; the result value is a list of ToolInfo."""


class CallTool(_ClientFrame, tag="call_tool", kw_only=True):
    """Call an ARE tool by its public name (App__method) with keyword arguments (agent role)."""

    tool: Annotated[str, Meta(description="Public tool name, e.g. EmailClientApp__send_email.")]
    args: Annotated[
        dict[str, Any],
        Meta(
            description=(
                "Keyword arguments of the tool: JSON values only (strings, finite numbers, "
                "integers from -2**63 to 2**64-1, booleans, null, arrays and objects with "
                "string keys nested at most 32 levels); anything else is refused with "
                "invalid_args, nothing run or recorded."
            )
        ),
    ] = msgspec.field(default_factory=dict)


# A state at a seq is the state a fork cut there would start with (`fork_session`), made off the
# loop as a fork is, read and thrown away: it costs what a fork costs, and is admitted as one.
class GetState(_ClientFrame, tag="get_state", kw_only=True):
    """Ask for the apps' state (all apps, or only those named in `apps`), now or at a seq."""

    apps: list[str] | None = None
    at_seq: (
        Annotated[
            int,
            Meta(
                ge=0,
                description=(
                    "The state where the session's stream had reached this seq (the first point "
                    "between two inputs or steps where it had, as `fork_session` cuts), rebuilt "
                    "from its inputs: a dashboard's comparison with an earlier point. Absent: "
                    "the state now."
                ),
            ),
        ]
        | None
    ) = None


class SendUserMessage(_ClientFrame, tag="send_user_message", kw_only=True):
    """Send a message to the agent as the user (user role)."""

    content: str


# A notification the server sent may still be on its way when the agent says it is idle: with
# `seen`, the server keeps the turn with the agent if a notification came after what it has read
# (in fast mode time would otherwise run on past news the agent has not read). omit_defaults: an
# idle without `seen` is encoded as before the field existed.
class Idle(_ClientFrame, tag="idle", kw_only=True, omit_defaults=True):
    """Release the agent's busy lease: the agent waits for the next notification (fast mode)."""

    seen: Annotated[
        Annotated[int, Meta(ge=0)] | None,
        Meta(
            description=(
                "The seq of the last stream item the agent has read. A notification after it "
                "keeps the turn with the agent (it is on its way); absent: the lease goes."
            )
        ),
    ] = None


class Pause(_ClientFrame, tag="pause", kw_only=True):
    """Pause the session's clock (controller role)."""


class Resume(_ClientFrame, tag="resume", kw_only=True):
    """Resume a paused clock from where it stopped, without a jump (controller role)."""


# Every item due on the way fires at its own time. With `inclusive: false` (for `to` or `by`)
# the clock stops just before the target's own items: those due strictly before it fire, the
# clock rests at exactly the target, and what is due there (events, a wait's timeout, the
# time-based loop's tick) runs at the target on the session's next step - in a fast session as
# soon as no agent is busy, in a manual one on the next tick or jump. A tool call made in
# between is logged at the target, ahead of those items (ARE's oracle run orders an action
# first in its tick this way). omit_defaults: a jump that leaves `inclusive` at its default is
# encoded as before the field existed, so it works with older servers too (they refuse
# `inclusive` by name, as an unknown field).
class Jump(_ClientFrame, tag="jump", kw_only=True, omit_defaults=True):
    """Move the clock forward: to an absolute time, by a delta, or to the next event; set one."""

    to: Annotated[
        float | None,
        Meta(
            description=(
                "Absolute simulated time (s since the epoch); not before now, nor more than "
                "the server's `max_jump` (604,800 s unless configured) after it: split a longer "
                "jump. A `stop` interrupts a long jump (error `interrupted`)."
            )
        ),
    ] = None
    by: Annotated[
        Annotated[float, Meta(ge=0)] | None,
        Meta(
            description=(
                "Simulated seconds to move forward: at most the server's `max_jump` (604,800 "
                "s unless configured; split a longer jump)."
            )
        ),
    ] = None
    next_event: Annotated[
        bool,
        Meta(
            description=(
                "Jump to the next due event and run it (refused if it is more than `max_jump` "
                "away)."
            )
        ),
    ] = False
    inclusive: Annotated[
        bool,
        Meta(
            description=(
                "With `to` or `by`: true (default) also runs what is due at the target; false "
                "stops just before it: the clock rests at exactly the target, the next tool "
                "call is logged there ahead of the target's items, and those run at the target "
                "on the session's next step. Not with `next_event` (it always runs the event)."
            )
        ),
    ] = True

    def __post_init__(self) -> None:
        chosen = (self.to is not None) + (self.by is not None) + self.next_event
        if chosen != 1:
            raise ValueError(
                "`jump` needs exactly one of `to` (absolute simulated time), `by` (seconds "
                f"forward) or `next_event: true`; got to={self.to!r}, by={self.by!r}, "
                f"next_event={self.next_event!r}"
            )
        if self.next_event and not self.inclusive:
            raise ValueError(
                "`inclusive: false` applies to `to` and `by` only - at `$.inclusive`; "
                "`next_event` always runs the next event: to stop just before an event due "
                "at T, send `to: T, inclusive: false` instead"
            )
        _require_finite("jump", to=self.to, by=self.by)


class Tick(_ClientFrame, tag="tick", kw_only=True):
    """Advance the clock by `n` ticks of the scenario's time increment (controller role)."""

    n: Annotated[
        int,
        Meta(
            ge=1,
            description=(
                "Ticks to run: at most the server's `max_ticks` per control (100,000 unless "
                "configured; more is refused with `invalid_field`: split it). A `stop` "
                "interrupts a long tick (error `interrupted`)."
            ),
        ),
    ] = 1


class SetSpeed(_ClientFrame, tag="set_speed", kw_only=True):
    """Set the realtime speed in simulated seconds per wall second; never jumps the clock."""

    speed: Annotated[float, Meta(gt=0)]

    def __post_init__(self) -> None:
        _require_finite("set_speed", speed=self.speed)


class Stop(_ClientFrame, tag="stop", kw_only=True):
    """End the session now; subscribers receive its `ended` item (controller role)."""


class Ping(_ClientFrame, tag="ping", kw_only=True):
    """Ask for a `pong` with the same id (liveness and round-trip time)."""


# omit_defaults: a client that leaves `import_mode` out sends the same frame as before the
# field existed, so it works with older servers too (they refuse unknown fields).
class CreateSession(_ClientFrame, tag="create_session", kw_only=True, omit_defaults=True):
    """Create a session from a registered scenario id or inline ARE/Gaia2 JSON (admin role)."""

    scenario: str | None = None
    scenario_json: str | None = None
    mode: Mode = Mode.REALTIME
    speed: Annotated[float, Meta(gt=0)] = 1.0
    oracle: bool = False
    import_mode: Annotated[
        ImportMode | None,
        Meta(
            description=(
                "How `scenario_json` is imported: `benchmark` as Gaia2's runner does (each "
                "later turn opens once the agent has ended the previous one), `plain` with "
                "ARE's plain import, `auto` picks benchmark for a multi-turn Gaia2 scenario run "
                "without the oracle (on a server with a judge: every scenario with oracle "
                "events, which Gaia2's judge then scores). Absent: the server's default (auto "
                "unless configured)."
            )
        ),
    ] = None

    def __post_init__(self) -> None:
        if (self.scenario is None) == (self.scenario_json is None):
            raise ValueError(
                "`create_session` needs exactly one of `scenario` (a registered scenario id) "
                "or `scenario_json` (an ARE/Gaia2 scenario as a JSON string)"
            )
        _require_finite("create_session", speed=self.speed)


class StopSession(_ClientFrame, tag="stop_session", kw_only=True):
    """Stop a session by id; its subscribers receive `ended` (admin role)."""

    session_id: str


# A fork's stream up to the cut is the source's, item for item; from there it goes its own way.
# It gets its own id, tokens and epoch.
class ForkSession(_ClientFrame, tag="fork_session", kw_only=True, omit_defaults=True):
    """Create a session from another's inputs up to a cut, as create_session (admin role)."""

    session_id: str
    at_seq: (
        Annotated[
            int,
            Meta(
                ge=0,
                description=(
                    "Cut where the source's stream had reached this seq (the first point between "
                    "two inputs or steps where it had). Absent, with `at_time` absent too: the "
                    "source as it is now."
                ),
            ),
        ]
        | None
    ) = None
    at_time: Annotated[
        float | None,
        Meta(description="Cut before anything past this simulated time (seconds since the epoch)."),
    ] = None

    def __post_init__(self) -> None:
        _require_finite("fork_session", at_time=self.at_time)


ClientFrame: TypeAlias = (
    Hello
    | ListTools
    | CallTool
    | GetState
    | SendUserMessage
    | Idle
    | Pause
    | Resume
    | Jump
    | Tick
    | SetSpeed
    | Stop
    | Ping
    | CreateSession
    | StopSession
    | ForkSession
)
"""Any frame a client may send."""


# -- server -> client -----------------------------------------------------------------------


class _ServerFrame(msgspec.Struct, tag_field="type", kw_only=True):
    pass


class ForkedFrom(msgspec.Struct, kw_only=True):
    """Where a fork came from: its source session and the source's stream seq at the cut."""

    session_id: Annotated[str, Meta(description="The session it was forked from.")]
    seq: Annotated[
        int,
        Meta(ge=0, description="The source's last stream seq the fork shares (its cut)."),
    ]


class Welcome(_ServerFrame, tag="welcome", kw_only=True):
    """Reply to hello: the session, its stream position and clock; replayed items follow."""

    session_id: str
    role: Role
    epoch: Annotated[
        str, Meta(description="Identity of this session's stream; send it back in hello.")
    ]
    seq: Annotated[
        int,
        Meta(ge=0, description="Last seq of the stream at attach; live items follow after it."),
    ]
    scenario_id: str
    clock: ClockState
    protocol: str = PROTOCOL
    replay: Annotated[
        Replay,
        Meta(
            description=(
                "full: items after hello.since up to `seq` follow, then live ones; none: no "
                "since was given, live items only; reset: hello.epoch is not this stream's "
                "(e.g. the server restarted): drop cached stream state; the whole stream "
                "follows from seq 1 (as for since=0), then live items. Never a partial replay."
            )
        ),
    ] = Replay.NONE
    id: Annotated[int | None, Meta(description="The id of the hello.")] = None
    capabilities: Annotated[
        list[str],
        Meta(
            description=(
                "The optional features this server offers: `batch` (hello.batch is honoured: "
                "batches follow when the hello asked), `jump_inclusive` (jump.inclusive), "
                "`import_mode` (create_session.import_mode). Absent or empty: none of them. "
                "Clients ignore names they do not know."
            )
        ),
    ] = msgspec.field(default_factory=list)
    restored: Annotated[
        bool,
        Meta(
            description=(
                "The session was rebuilt by replaying its records: after a server restart "
                "(the same session id, epoch and stream; a realtime session comes back paused, "
                "its downtime being no simulated time: a controller resumes it), or as a fork "
                "(`fork_session`: a new id and epoch, the source's stream up to the cut; "
                "`forked_from` tells a fork from a restart)."
            )
        ),
    ] = False
    forked_from: Annotated[
        ForkedFrom | None,
        Meta(
            description=(
                "Set when the session is a fork (`fork_session`): the session it was forked from "
                "and the seq of the source's stream it shares up to. Null otherwise (a new "
                "session, or one restored after a restart)."
            )
        ),
    ] = None


class Result(_ServerFrame, tag="result", kw_only=True):
    """Successful reply to the request with the same id."""

    id: RequestId
    value: Annotated[
        Any, Meta(description="Any JSON value; list_tools answers with a list of ToolInfo.")
    ] = None


_ERROR_CODE_DOC = (
    "An ErrorCode: " + ", ".join(code.value for code in ErrorCode) + ". "
    "Clients treat a code they do not know like `internal` and decide on `retryable`."
)


class Error(_ServerFrame, tag="error", kw_only=True):
    """Failed request (id) or connection-level problem (no id): code, message, retryable."""

    # A plain string on the wire (not the enum) so that old clients can decode new codes.
    code: Annotated[
        str, Meta(description=_ERROR_CODE_DOC, examples=[code.value for code in ErrorCode])
    ]
    message: str
    retryable: bool = False
    id: Annotated[int | None, Meta(description="The failed request's id, if known.")] = None

    @property
    def error_code(self) -> ErrorCode | None:
        """``code`` as an :class:`ErrorCode`, or None for a code newer than this client."""
        try:
            return ErrorCode(self.code)
        except ValueError:
            return None


class _StreamItem(_ServerFrame, kw_only=True):
    seq: Seq


class EventItem(_StreamItem, tag="event", kw_only=True, gc=False):
    """Stream item: one completed ARE event, as it entered the event log."""

    event: EventRecord


class NotificationItem(_StreamItem, tag="notification", kw_only=True, gc=False):
    """Stream item: one notification put on ARE's queue (for the agent, or an env signal)."""

    notification: NotificationRecord


class ClockItem(_StreamItem, tag="clock", kw_only=True):
    """Stream item: the clock changed state, mode or speed, or jumped."""

    clock: ClockState


class EndedItem(_StreamItem, tag="ended", kw_only=True):
    """Stream item, always the last: the session ended, with its validation result if any."""

    state: Annotated[str, Meta(description="Final clock state: stopped or failed.")]
    validation: Annotated[
        Validation | None,
        Meta(description="The scenario's validation result, if it was validated."),
    ] = None
    reason: Annotated[
        str | None,
        Meta(
            description="Why the session ended before running out (a stop, a lease policy, "
            "a failure); null when it ran to its end."
        ),
    ] = None


class Pong(_ServerFrame, tag="pong", kw_only=True):
    """Reply to ping."""

    id: RequestId


StreamItem: TypeAlias = EventItem | NotificationItem | ClockItem | EndedItem
"""A frame of a session's stream: numbered by ``seq``, kept for replay, fanned out as is."""

BatchedFrame: TypeAlias = (
    Result | Error | EventItem | NotificationItem | ClockItem | EndedItem | Pong
)
"""A frame that may travel inside a ``batch``: every server frame but ``welcome`` and ``batch``."""


class Batch(_ServerFrame, tag="batch", kw_only=True):
    """Frames that were ready together, in order, in one message (only if hello.batch)."""

    frames: Annotated[
        list[BatchedFrame],
        Meta(
            description=(
                "Handle each as if it had arrived alone, in this order. Never a welcome (it "
                "always comes alone, first), never a batch."
            )
        ),
    ]


ServerFrame: TypeAlias = (
    Welcome | Result | Error | EventItem | NotificationItem | ClockItem | EndedItem | Pong | Batch
)
"""Any frame the server may send."""


def error_frame(error: ProtocolError, id: int | None = None) -> Error:
    """The ``error`` frame that answers ``error``; ``id`` fills in the request id if it has none."""
    return Error(
        id=error.id if error.id is not None else id,
        code=error.code.value,
        message=error.message,
        retryable=error.code.retryable,
    )


def frame_tag(frame: msgspec.Struct | type[msgspec.Struct]) -> str:
    """A frame's ``type`` tag (``"hello"``, ``"call_tool"``...), from the frame or its class."""
    return str(frame.__struct_config__.tag)


def _tags(union: Any) -> dict[str, type[msgspec.Struct]]:
    return {frame_tag(cls): cls for cls in union.__args__}


CLIENT_FRAME_TYPES: Final[dict[str, type[msgspec.Struct]]] = _tags(ClientFrame)
"""Client frame classes by their ``type`` tag."""

SERVER_FRAME_TYPES: Final[dict[str, type[msgspec.Struct]]] = _tags(ServerFrame)
"""Server frame classes by their ``type`` tag."""

# Constraints across fields, which msgspec enforces in __post_init__ but cannot express in the
# generated schema; merged into the schema's definitions so that schema-only clients see them.
JSON_SCHEMA_EXTRA: Final[dict[type[msgspec.Struct], dict[str, Any]]] = {
    Jump: {
        "oneOf": [
            {"required": ["to"], "properties": {"to": {"type": "number"}}},
            {"required": ["by"], "properties": {"by": {"type": "number"}}},
            {
                "required": ["next_event"],
                "properties": {"next_event": {"const": True}, "inclusive": {"const": True}},
            },
        ]
    },
    CreateSession: {
        "oneOf": [
            {"required": ["scenario"], "properties": {"scenario": {"type": "string"}}},
            {"required": ["scenario_json"], "properties": {"scenario_json": {"type": "string"}}},
        ]
    },
}

# Records that appear inside `result.value` (typed as any JSON value on the wire), listed so the
# schema documents them for clients: list_tools answers with a list of ToolInfo.
RESULT_RECORDS: Final[tuple[type[msgspec.Struct], ...]] = (ToolInfo,)
