"""A wall clock a test moves by hand, for sessions whose time flows with the wall.

A realtime session reads its wall (`Simulation.load(wall=...)`, `Service(wall=...)`) and its
driver waits on it (`sleep`). On `JumpingWall` both are the test's: it reads `start` plus the
jumps the test made (`jump`), plus the real wall's run since it was made when it `follows` the
real wall; a driver waiting on it wakes at each jump. "Had the clock still flowed, it would be
N seconds later by now" is then a jump the test makes, never a sleep.
"""

from __future__ import annotations

import time

import anyio

from areasync.engine.clock import Wall


class JumpingWall:
    """A wall at `start` that moves only by `jump`, or also with the real wall (`follows`)."""

    def __init__(self, start: float = 100.0, *, follows: bool = False) -> None:
        self._origin = time.monotonic() if follows else None
        self._jumped = start
        self._moved: list[anyio.Event] = []

    def __call__(self) -> float:
        ran = 0.0 if self._origin is None else time.monotonic() - self._origin
        return self._jumped + ran

    @property
    def now(self) -> float:
        return self()

    def jump(self, seconds: float) -> None:
        """Move the wall `seconds` on at once, and wake every driver waiting on it."""
        self._jumped += seconds
        moved, self._moved = self._moved, []
        for event in moved:
            event.set()

    async def sleep(self, seconds: float) -> None:
        """Return once the wall has moved `seconds` on, by jumps (or by the real wall's run)."""
        until = self() + seconds
        while (left := until - self()) > 0:
            moved = anyio.Event()
            self._moved.append(moved)
            if self._origin is None:
                await moved.wait()
            else:
                with anyio.move_on_after(left):
                    await moved.wait()

    @property
    def wall(self) -> Wall:
        """This wall, as a service takes it."""
        return Wall(now=self, sleep=self.sleep)
