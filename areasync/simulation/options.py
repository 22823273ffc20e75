"""The tuning of a `Simulation`: its keyword options, their defaults and their checks.

`Simulation(...)` and `Simulation.load(...)` take the same keyword options
(`SimulationOptions`, checked by type); `SimulationSettings` gives each its default and
refuses a value out of range (`InvalidRequestError`) before anything is built.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TypedDict

from areasync.policies import MAX_JUMP_S, MAX_TICKS, LagPolicy, LeasePolicy
from areasync.simulation.errors import InvalidRequestError

# In fast mode the driver runs engine steps back to back; it yields to the event loop at least
# this often (wall seconds) so sockets, dashboards and controls are never starved. Items logged
# in one stretch reach subscribers together at its end, so the service, which has subscribers,
# uses a shorter stretch (ServiceConfig.step_budget); a longer one gives more events per second.
STEP_BUDGET_S = 0.002
# A long control (jump, next_event, tick{n}) fires its items in pieces of this many wall
# seconds. It is one command whose reply waits for its end, so its pieces are longer than fast
# mode's steps (a piece's overhead - a hand-out to every subscriber - would otherwise slow the
# control down: docs/topics/performance.md, "Dashboard", times a 20,000-event jump in pieces
# of 1 ms, of 20 ms and in one); 20 ms is the longest another session or socket then waits.
CONTROL_BUDGET_S = 0.02
# Realtime mode publishes the clock at most this often (wall seconds) while it flows.
CLOCK_PUBLISH_INTERVAL_S = 0.25


class SimulationOptions(TypedDict, total=False):
    """The keyword options of `Simulation(...)` and `Simulation.load(...)` (see the fields of
    `SimulationSettings` for their meaning and defaults)."""

    lag_policy: LagPolicy | str
    max_lag: float
    lease_timeout: float
    lease_policy: LeasePolicy | str
    drain_notifications: bool
    step_budget: float
    control_budget: float
    max_ticks: int
    max_jump: float
    tool_budget: float | None
    max_listing: int | None
    max_files_created: int | None


@dataclass(frozen=True, kw_only=True)
class SimulationSettings:
    """Every option with its default, checked and normalised (policies as enums)."""

    # What a realtime tick that runs late does (`LagPolicy`), and how late is too late.
    lag_policy: LagPolicy = LagPolicy.SLIP
    max_lag: float = 5.0
    # How long (wall seconds) an agent may stay busy in fast mode, and what happens after.
    lease_timeout: float = 300.0
    lease_policy: LeasePolicy = LeasePolicy.RELEASE
    # Take delivered notifications off ARE's queue after each step, as ARE's agents do.
    drain_notifications: bool = True
    # Wall seconds between yields to the event loop: fast mode's steps, a long control's pieces.
    step_budget: float = STEP_BUDGET_S
    control_budget: float = CONTROL_BUDGET_S
    # The most ticks one tick control runs, the most simulated seconds one jump moves.
    max_ticks: int = MAX_TICKS
    max_jump: float = MAX_JUMP_S
    # What one tool call or event of the session's ARE code may cost (`areasync.bridge.budget`):
    # wall seconds, directory entries listed; and how many files and directories its code may
    # create over the run (`areasync.bridge.sandbox.audit`). None: no bound (the library's default;
    # the service sets all three).
    tool_budget: float | None = None
    max_listing: int | None = None
    max_files_created: int | None = None

    @classmethod
    def of(cls, options: SimulationOptions) -> SimulationSettings:
        """The settings that `options` (keyword options, any subset) ask for."""
        return cls(**options)  # type: ignore[arg-type]  # policies are normalised below

    def __post_init__(self) -> None:
        _check_max_ticks(self.max_ticks)
        _check_max_jump(self.max_jump)
        object.__setattr__(self, "max_jump", float(self.max_jump))
        for name in ("step_budget", "control_budget"):
            budget = getattr(self, name)
            if not budget > 0:
                raise InvalidRequestError(
                    f"{name} must be > 0 wall seconds (how long fast mode, or a long control, "
                    f"runs between yields to the event loop), got {budget!r}"
                )
        _check_bounds(self.tool_budget, self.max_listing, self.max_files_created)
        object.__setattr__(self, "lag_policy", LagPolicy(self.lag_policy))
        object.__setattr__(self, "lease_policy", LeasePolicy(self.lease_policy))


def option_names() -> set[str]:
    """The names of the settings (what `SimulationOptions` must list)."""
    return {field.name for field in fields(SimulationSettings)}


def _check_max_ticks(max_ticks: object) -> None:
    if isinstance(max_ticks, bool) or not isinstance(max_ticks, int) or max_ticks < 1:
        raise InvalidRequestError(
            f"max_ticks must be a whole number >= 1 (ticks per tick control), got {max_ticks!r}"
        )


def _check_max_jump(max_jump: object) -> None:
    if not (isinstance(max_jump, int | float) and math.isfinite(max_jump) and max_jump > 0):
        raise InvalidRequestError(
            f"max_jump must be a finite number > 0 (simulated seconds per jump), got {max_jump!r}"
        )


def _check_bounds(tool_budget: object, max_listing: object, max_files_created: object) -> None:
    if tool_budget is not None and not (
        isinstance(tool_budget, int | float) and 0 < tool_budget < math.inf
    ):
        raise InvalidRequestError(
            f"tool_budget must be a number of wall seconds > 0 (how long one tool call or event "
            f"may hold the event loop), or None, got {tool_budget!r}"
        )
    for name, value in (("max_listing", max_listing), ("max_files_created", max_files_created)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise InvalidRequestError(f"{name} must be a whole number >= 1, or None, got {value!r}")


def out_of_time(budget: float) -> Callable[[], bool]:
    """A callable that answers True once `budget` wall seconds from now have passed."""
    deadline = time.perf_counter() + budget
    return lambda: time.perf_counter() > deadline
