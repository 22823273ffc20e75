"""`Wakeup`: how a simulation's parts wake its driver.

The driver sleeps until its next step is due, or until something changes what is due: a
command ran, a lease began or ended, the run ended. Whatever changed it calls `wake`; the
driver waits on `event` and takes a fresh one once woken.
"""

from __future__ import annotations

import anyio


class Wakeup:
    """The driver's wake-up call (module docstring)."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    def wake(self) -> None:
        self.event.set()

    def consumed(self, event: anyio.Event) -> None:
        """The driver was woken by `event` (or slept past it): the next wait needs a new one."""
        if self.event is event and event.is_set():
            self.event = anyio.Event()

    def revive(self) -> None:
        """A thawed copy's own: an event of its own event loop."""
        self.event = anyio.Event()
