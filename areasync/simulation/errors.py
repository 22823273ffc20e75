"""The errors a `Simulation` raises: each names the protocol error code it is reported as."""

from __future__ import annotations


class SimulationError(Exception):
    """A request the simulation cannot carry out; nothing was changed."""

    code = "bad_state"


class BadStateError(SimulationError):
    code = "bad_state"


class InvalidRequestError(SimulationError):
    code = "invalid_field"


class ControlInterruptedError(SimulationError):
    """A long control (jump, next_event, tick) gave way to a stop before it was done.

    What it did stays done (see `areasync.simulation`); the message says how far it got."""

    code = "interrupted"


class ReplayDivergedError(SimulationError):
    """A replay did not reproduce a record of the run it replays (a different scenario, seed
    or ARE version, or a source of non-determinism not covered): the replay stops there."""
