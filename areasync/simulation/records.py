"""What a replay consumes: how a session was created (`Creation`) and its records in order.

A session is a pure function of these (`areasync.simulation.replay`): its creation parameters,
seed and creation time included, and its `InputRecord`s - every external input (tool calls,
user messages, leases, every clock control) and every engine step whose timing the wall decided
(a count of fast steps between two inputs, each realtime tick with its time). Both are plain
msgspec Structs of JSON types, for a journal to persist as they are.
"""

from __future__ import annotations

import enum
from dataclasses import fields
from typing import Any

import msgspec

from areasync.bridge.determinism import SessionEntropy
from areasync.protocol.frames import ImportMode, Mode
from areasync.simulation.options import SimulationSettings

__all__ = ["ABANDONED", "Creation", "InputRecord"]


class InputRecord(msgspec.Struct, frozen=True):
    """One input of a run, logged so that the run can be replayed exactly
    (`areasync.simulation.replay`): the simulated time and the stream's seq when it came, what
    it was (`source`) and its JSON-typed arguments. `SimulationCore.inputs` holds the external
    ones; `SimulationCore.records` also holds the engine steps whose timing the wall decided."""

    time: float
    seq: int
    source: str
    payload: dict[str, Any]


ABANDONED = "abandoned"
"""The record that follows a call the run never finished (its worker was killed holding it):
a replay logs the call and this record, and runs neither."""


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
    # `SimulationOptions`, every one, policies by value.
    options: dict[str, Any]

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
        options = {}
        for field in fields(settings):
            value = getattr(settings, field.name)
            options[field.name] = value.value if isinstance(value, enum.Enum) else value
        return cls(
            seed=entropy.seed,
            created_at=entropy.created_at,
            mode=mode.value,
            speed=float(speed),
            oracle=oracle,
            exit_when_no_events=exit_when_no_events,
            import_mode=import_mode.value,
            max_file_bytes=max_file_bytes,
            options=options,
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
            **self.options,
        }
