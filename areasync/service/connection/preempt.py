"""Which frames a connection runs aside (long controls), and which announce a stop early.

A long control (`jump`, `tick`) holds its session's lane for as long as it runs, yielding every
`control_budget`. The connection that sent it runs it aside, as a task of its own, and reads on
meanwhile without carrying anything out (its later frames wait, in order, until the control is
done; see `Connection._read_loop`). It reads on for one reason: a `stop` (or an admin's
`stop_session`) among those frames must interrupt the control now, not after it. Such a frame
is *announced* to the session it stops (`Simulation.announce_stop`) the moment it is read; it
is carried out, in its turn, once the frames before it have been.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from areasync.protocol.codec import decode_client_frame
from areasync.protocol.errors import ProtocolError
from areasync.protocol.frames import Jump, Stop, StopSession, Tick

LONG_CONTROLS: frozenset[type[Any]] = frozenset({Jump, Tick})
"""Frames that may hold the session's lane for many `control_budget`s: run aside."""

READ_AHEAD = 4
"""Frames a connection reads (and holds, undecoded) while its long control runs; past them it
stops reading until the control is done, as it does behind any request (websockets buffers at
most `_MAX_QUEUE` more: `server.py`)."""


class Stoppable(Protocol):
    """What announcing a stop needs of the session it stops (a `Simulation` is one)."""

    @property
    def ended(self) -> bool: ...

    def announce_stop(self) -> Callable[[], None]: ...


def announce_stop(
    data: str | bytes,
    *,
    max_bytes: int,
    allowed: frozenset[type[Any]],
    own: Stoppable,
    by_id: Callable[[str], Stoppable | None],
) -> Callable[[], None] | None:
    """If `data` is a stop this connection may send, announce it to the session it stops (a
    `stop`: its own, `own`; an admin's `stop_session`: the one `by_id` finds, None for no such
    session) and return the withdrawal (call it once the frame has been carried out or
    dropped)."""
    if len(data) > max_bytes:
        return None  # refused as too large when its turn comes
    try:
        frame = decode_client_frame(data)
    except ProtocolError:
        return None  # answered as a bad frame when its turn comes
    kind = type(frame)
    if kind not in allowed:
        return None
    if kind is Stop:
        target: Stoppable | None = own
    elif kind is StopSession:
        assert isinstance(frame, StopSession)
        target = by_id(frame.session_id)
    else:
        return None
    if target is None or target.ended:
        return None
    return target.announce_stop()
