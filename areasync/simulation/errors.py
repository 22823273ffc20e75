"""The errors a `Simulation` raises: each names the protocol error code it is reported as."""

from __future__ import annotations

from typing import ClassVar

from areasync.protocol.errors import CodedError, ErrorCode


class SimulationError(CodedError):
    """A request the simulation cannot carry out; nothing was changed. Once the simulation
    has ended, every refusal of it is reported as `session_ended`."""

    code = ErrorCode.BAD_STATE
    when_ended: ClassVar[ErrorCode | None] = ErrorCode.SESSION_ENDED


class BadStateError(SimulationError):
    code = ErrorCode.BAD_STATE


class InvalidRequestError(SimulationError):
    code = ErrorCode.INVALID_FIELD


class ControlInterruptedError(SimulationError):
    """A long control (jump, next_event, tick) gave way to a stop before it was done.

    What it did stays done (see `areasync.simulation`); the message says how far it got."""

    code = ErrorCode.INTERRUPTED
    when_ended = None  # it is how the session came to end: said as such


class ReplayDivergedError(SimulationError):
    """A replay did not reproduce a record of the run it replays (a different scenario, seed
    or ARE version, or a source of non-determinism not covered): the replay stops there."""
