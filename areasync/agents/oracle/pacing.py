"""How the oracle agent gets a session's clock to an action's time: the decisions, without I/O.

The oracle agent (`areasync.agents.oracle.agent`) makes each action at the simulated time ARE's
oracle run made it. Getting there is a loop of moves - a controller's jump, or the agent's own
wait - whose replies decide the next move. The moves are decided here, from plain numbers, so
that they can be tested without a session; the agent only sends them and reports back what came
of them.

- `JumpPacing` (pace ``jump``): which jump, exclusive or inclusive, brings the clock to an action
  that ARE ran before, or after, the other items of its tick; and where an exclusive jump left the
  clock resting (at a time whose items have not run yet), or where a realtime session is held
  paused around an action.
- `WaitPacing` (pace ``wait``): the whole-second ``wait_for_notification`` timeouts that bring
  the clock to a time (ARE's wait has a one-second resolution: less than a second short, the
  agent acts at once), and which logged events are those waits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from areasync.protocol.records import WAIT_TOOL, EventRecord

__all__ = ["EPSILON", "Jump", "JumpPacing", "WaitPacing"]

# Times are compared at this resolution: ARE's are floats built from integer offsets.
EPSILON: Final = 1e-6
_HALF: Final = EPSILON / 2


@dataclass(frozen=True)
class Jump:
    """A controller's ``jump{to, inclusive}``."""

    to: float
    inclusive: bool


class JumpPacing:
    """Pace ``jump``: the jumps to each action's time, and where the clock rests between them.

    Times are absolute simulated times. ``seen`` is the clock as the agent's stream last told
    it; while the session is held paused, the exact stopped clock may be ahead of it.
    """

    def __init__(self) -> None:
        # Where an exclusive jump left the clock, while the items due there have not run yet.
        self.resting_before: float | None = None
        # While held: the exact, stopped clock (the stream may not have told the agent yet).
        self.paused_at: float | None = None

    def now(self, seen: float) -> float:
        """The session's clock: what the stream said, or the stopped clock while held."""
        return seen if self.paused_at is None else max(seen, self.paused_at)

    def next_jump(self, target: float, *, before_tick: bool, seen: float) -> Jump | None:
        """The jump that brings the clock to ``target``, or None when it is there.

        ``before_tick``: the action goes ahead of the items due at ``target`` (an exclusive
        jump); otherwise after them (inclusive). An action ARE ran after the items of the very
        time an exclusive jump left the clock at needs them run first: an inclusive jump to
        where the clock is.
        """
        now = self.now(seen)
        settle = (
            not before_tick
            and self.resting_before is not None
            and target < self.resting_before + _HALF
        )
        if not settle and now >= target - _HALF:
            return None
        return Jump(to=max(target, now), inclusive=not before_tick)

    def landed(self, jump: Jump, clock: float, target: float) -> bool:
        """Record where ``jump`` left the clock (its reply: ``clock``); True if at ``target``."""
        self.resting_before = None if jump.inclusive else clock
        return clock >= target - _HALF

    def held(self, paused_at: float) -> None:
        """The session is paused (by the agent or someone else), its clock at ``paused_at``."""
        self.paused_at = paused_at

    def unheld(self, *, resumed: bool) -> None:
        """The hold is over; ``resumed``: the agent resumed the clock, so the items owed at an
        exclusive jump's time run at once and the clock no longer rests before them."""
        self.paused_at = None
        if resumed:
            self.resting_before = None


class WaitPacing:
    """Pace ``wait``: the waits that bring the clock to an action's time, and which events of
    the log they are (ARE's oracle run has no counterpart for them).

    A wait may end early (a notification), so the agent asks again after each one.
    """

    def next_wait(self, target: float, now: float) -> int | None:
        """The timeout (whole seconds) of the next wait towards ``target``; None to act now:
        the clock is there, or less than a second short of it."""
        if now >= target - _HALF:
            return None
        timeout = math.floor(target - now + EPSILON)
        return timeout if timeout >= 1 else None

    def wait_events(self, records: Iterable[EventRecord]) -> list[str]:
        """The ids of the agent's waits among ``records``."""
        return [
            record.event_id for record in records if f"{record.app}__{record.function}" == WAIT_TOOL
        ]
