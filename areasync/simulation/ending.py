"""How a simulation ended, as one value: whether it has, and which of its endings it met.

A run ends in exactly one way, decided by the first thing that ends it; the `ended` stream
item reports ARE's final state and, for every ending but running to its end, a reason.
"""

from __future__ import annotations

import enum


class EndState(enum.Enum):
    """Whether, and how, a simulation has ended."""

    RUNNING = "running"  # not ended yet
    RAN_TO_END = "ran_to_end"  # on its own: its duration passed, no event was left, ARE stopped
    STOPPED = "stopped"  # a stop was requested (`Simulation.stop`)
    LEFT = "left"  # its `async with` block exited while it still ran
    LEASE_EXPIRED = "lease_expired"  # an agent stayed busy past its lease (`LeasePolicy.END`)
    TOO_LATE = "too_late"  # a realtime tick ran later than `max_lag` (`LagPolicy.STRICT`)
    FAILED = "failed"  # `Simulation.fail`: the scenario's own code raised, a judge failed

    @property
    def ended(self) -> bool:
        return self is not EndState.RUNNING

    @property
    def failed(self) -> bool:
        """Whether ARE's environment ends in its FAILED state (otherwise STOPPED or its own)."""
        return self in (EndState.TOO_LATE, EndState.FAILED)
