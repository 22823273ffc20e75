"""A session's state as a hello is decided from it: a plain record, made by the session.

The session makes it (`Session.view`) and a connection's core reads it (`connection/
sessionview.py`'s `CoreSession`); it lives here, with the sessions, so that a session names
nothing of the connections above it. Plain values only: the sans-I/O core imports it.
"""

from __future__ import annotations

import dataclasses

from areasync.protocol.frames import ForkedFrom


@dataclasses.dataclass(frozen=True, slots=True)
class SessionView:
    """What a hello is decided and welcomed from: the session's stream, clients and origin."""

    id: str
    epoch: str  # its stream's epoch: a `since` is only meaningful against it
    seq: int  # the last seq of its stream
    clients: int  # the clients attached to it (`max_connections_per_session`)
    scenario_id: str
    restored: bool  # rebuilt from its journal
    forked_from: ForkedFrom | None = None
