"""What a replay consumes: how a session was created (`Creation`) and its records in order.

A session is a pure function of these (`areasync.simulation.replay`): its creation parameters,
seed and creation time included, and its `InputRecord`s - every external input (tool calls,
user messages, leases, every clock control) and every engine step whose timing the wall decided
(a count of fast steps between two inputs, each realtime tick with its time). Both are plain
msgspec Structs of JSON types (`InputRecord`: a tagged union, one Struct per kind), for a
journal to persist as they are.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeAlias

import msgspec

from areasync.bridge.determinism import SessionEntropy
from areasync.protocol.frames import ImportMode, Mode
from areasync.simulation.options import SimulationSettings

__all__ = [
    "ABANDONED",
    "Abandoned",
    "CallTool",
    "Creation",
    "Exit",
    "Fail",
    "InputRecord",
    "Interrupted",
    "Judge",
    "Jump",
    "LeaseBegin",
    "LeaseEnd",
    "LeaseExpired",
    "Logged",
    "Pause",
    "RealtimeTick",
    "Restore",
    "Resume",
    "SendUserMessage",
    "SetMode",
    "SetSpeed",
    "Steps",
    "Stop",
    "Tick",
    "input_record",
]


class Logged(msgspec.Struct, frozen=True, omit_defaults=True, tag_field="source"):
    """What every record of a run holds: the simulated time and the stream's seq when it was
    logged. Each kind is a subclass tagged with its `source` (`InputRecord`, the union)."""

    time: float
    seq: int

    @property
    def source(self) -> str:
        """The kind's tag (`call_tool`, `jump`...), as the journal and a replay name it."""
        tag: str = self.__struct_config__.tag  # type: ignore[assignment]  # every kind has one
        return tag


class Steps(Logged, frozen=True, tag="steps"):
    """`n` fast steps ran since the record before (which ones follows from the state)."""

    n: int


class CallTool(Logged, frozen=True, tag="call_tool"):
    """A tool call; `holder`: the lease a wait for a notification ended inside its call."""

    tool: str
    args: dict[str, Any]
    holder: str | None = None


class SendUserMessage(Logged, frozen=True, tag="send_user_message"):
    content: str


class Pause(Logged, frozen=True, tag="pause"):
    pass


class Resume(Logged, frozen=True, tag="resume"):
    pass


class Jump(Logged, frozen=True, tag="jump"):
    """A jump to `to` or by `by` (`inclusive` or not), or to the next event (`next_event`)."""

    to: float | None = None
    by: float | None = None
    inclusive: bool = True
    next_event: bool = False


class Tick(Logged, frozen=True, tag="tick"):
    n: int


class SetSpeed(Logged, frozen=True, tag="set_speed"):
    speed: float


class SetMode(Logged, frozen=True, tag="set_mode"):
    mode: str


class Stop(Logged, frozen=True, tag="stop"):
    reason: str


class Fail(Logged, frozen=True, tag="fail"):
    reason: str


class Exit(Logged, frozen=True, tag="exit"):
    """The session's `async with` block exited while it still ran."""


class Restore(Logged, frozen=True, tag="restore"):
    """A restored realtime session came back paused."""

    paused: bool = True


class LeaseBegin(Logged, frozen=True, tag="lease_begin"):
    holder: str


class LeaseEnd(Logged, frozen=True, tag="lease_end"):
    holder: str


class LeaseExpired(Logged, frozen=True, tag="lease"):
    """`expired`'s lease outlived its deadline; `policy`: the session's `LeasePolicy`."""

    expired: str
    policy: str


class RealtimeTick(Logged, frozen=True, tag="realtime_tick"):
    """A realtime tick the wall made due: how late it ran, whether it published the clock."""

    lag: float
    publish: bool


class Interrupted(Logged, frozen=True, tag="interrupted"):
    """The control before it was interrupted by a stop, having fired `done` items (ticks)."""

    control: str
    progress: str
    done: int


class Judge(Logged, frozen=True, tag="judge"):
    """The judge's answer to call `call` (`[text, metadata]`), or why it failed (`failure`)."""

    call: str
    answer: Any = None
    failure: str | None = None


class Abandoned(Logged, frozen=True, tag="abandoned"):
    """Follows a call the run never finished (its worker was killed holding it)."""

    reason: str


InputRecord: TypeAlias = (
    Steps
    | CallTool
    | SendUserMessage
    | Pause
    | Resume
    | Jump
    | Tick
    | SetSpeed
    | SetMode
    | Stop
    | Fail
    | Exit
    | Restore
    | LeaseBegin
    | LeaseEnd
    | LeaseExpired
    | RealtimeTick
    | Interrupted
    | Judge
    | Abandoned
)
"""One input of a run, logged so that the run can be replayed exactly
(`areasync.simulation.replay`), one msgspec Struct per kind, tagged with its `source`.
`Simulation.inputs` holds the external ones; `Simulation.records` also holds the
engine steps whose timing the wall decided (`Steps`, `RealtimeTick`) and the leases."""


def input_record(time: float, seq: int, source: str, payload: dict[str, Any]) -> InputRecord:
    """The typed record of an input written as a source and an untyped payload (a journal's
    `Input`, the format's first form); `msgspec.ValidationError` if it is no known kind."""
    record: InputRecord = msgspec.convert(
        {**payload, "source": source, "time": time, "seq": seq}, InputRecord
    )
    return record


ABANDONED = "abandoned"
"""`Abandoned`'s source: a replay logs the call and that record, and runs neither."""


class Creation(msgspec.Struct, frozen=True):
    """How a session was created: `Simulation.load`'s arguments bar the scenario source (which
    the caller keeps) and the wall function, with the seed and creation time it drew."""

    seed: int
    created_at: float
    mode: str
    speed: float
    oracle: bool
    exit_when_no_events: bool | None
    import_mode: str
    max_file_bytes: int
    # Every option, as the session settled it (policies as enums; on disk by value). A
    # creation written before they were typed holds them as a plain object, which decodes to
    # the same settings; one written before a setting existed gets its default.
    options: SimulationSettings

    @classmethod
    def of(
        cls,
        entropy: SessionEntropy,
        *,
        mode: Mode,
        speed: float,
        oracle: bool,
        exit_when_no_events: bool | None,
        import_mode: ImportMode,
        max_file_bytes: int,
        settings: SimulationSettings,
    ) -> Creation:
        return cls(
            seed=entropy.seed,
            created_at=entropy.created_at,
            mode=mode.value,
            speed=float(speed),
            oracle=oracle,
            exit_when_no_events=exit_when_no_events,
            import_mode=import_mode.value,
            max_file_bytes=max_file_bytes,
            options=settings,
        )

    def load_arguments(self) -> dict[str, Any]:
        """`Simulation.load`'s keyword arguments that make this session again."""
        return {
            "mode": self.mode,
            "speed": self.speed,
            "oracle": self.oracle,
            "exit_when_no_events": self.exit_when_no_events,
            "import_mode": self.import_mode,
            "max_file_bytes": self.max_file_bytes,
            "seed": self.seed,
            "created_at": self.created_at,
            **{field.name: getattr(self.options, field.name) for field in fields(self.options)},
        }
