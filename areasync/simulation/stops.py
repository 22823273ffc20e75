"""`StopAnnouncements`: the stops on their way to a session, which its long controls give way to.

A stop takes its turn in the session's command lane, behind whatever holds it. A long control
(a jump, `next_event`, many ticks) holds the lane across its yields, so a stop would wait for
all of it: instead the stop is announced first, and the control, at its next yield, sees it and
ends there (`ControlInterruptedError`). The service announces a stop frame it has read but not
yet run the same way. This is the count of announcements not yet withdrawn; the session holds
one (`Simulation.stops`) and its controls ask it, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable


class StopAnnouncements:
    """How many stops are on their way: true while any is."""

    __slots__ = ("_count",)

    def __init__(self) -> None:
        self._count = 0

    def __bool__(self) -> bool:
        return self._count > 0

    def announce(self) -> Callable[[], None]:
        """A stop is on its way; returns the function that withdraws this announcement
        (idempotent: call it once the stop has run or will not)."""
        self._count += 1
        withdrawn = False

        def withdraw() -> None:
            nonlocal withdrawn
            if not withdrawn:
                withdrawn = True
                self._count -= 1

        return withdraw
