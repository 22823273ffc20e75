"""A session as a connection's protocol core sees it: a record of its state and a few calls.

The core (`protocol.py`) decides a hello and gates every frame from what a session *is* at that
moment, never from the objects that make it (the simulation, its hub, its budget): so that it
imports no ARE and no I/O, and a test drives it with a plain fake. `Session` implements
`CoreSession`; `SessionView` (`sessions/view.py`) is what it reports when a hello comes.
"""

from __future__ import annotations

from typing import Protocol

from areasync.protocol.errors import ProtocolError
from areasync.protocol.frames import ClientFrame
from areasync.protocol.records import ClockState
from areasync.service.sessions.view import SessionView


class CoreSession(Protocol):
    """The calls a connection's core makes of its session."""

    @property
    def id(self) -> str: ...

    @property
    def ended(self) -> bool:
        """It has ended: only the read-only requests still work."""

    @property
    def state(self) -> str:
        """Its state's name, for messages (`running`, `stopped`, ...)."""

    def view(self) -> SessionView:
        """Its state now, as a hello reads it."""

    def clock_state(self) -> ClockState:
        """Its clock, as a welcome reports it (a binding read: see `Simulation.clock_state`)."""

    def refusal(self, frame: ClientFrame, size: int) -> ProtocolError | None:
        """Why `frame` (`size` bytes) would take the session past one of its bounds, or None."""
