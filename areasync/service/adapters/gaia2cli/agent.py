"""The session's agent over gaia2-cli's HTTP routes: it takes its turn, waits, and says it is done.

Why: a runtime whose only tool is a shell (gaia2-cli's CLIs, a shim) speaks HTTP, never an
areasync WebSocket, yet in fast mode simulated time moves only while no agent holds its turn
(a lease), and a session made for an agent waits for one to arrive. `HttpAgent` is, for such
an agent, what a WebSocket connection is for a native one (`connection/websocket.py`), by the same
session calls (`Session.attach`, leases), as an OpenEnv episode is (`openenv/episode.py`):

- It arrives with its first request on the agent's token URL: it attaches to the session (the
  waiting-for-agent hold goes, `/health` is `connected` from then on) and holds its turn.
- Each `/call_tool` is carried out by its `InProcessClient` (the gate, `requests.perform`),
  and its turn is taken again at once after the call (no await in between: time cannot move
  first). `SystemApp__wait_for_notification` hands the turn back while it waits, as for a
  native agent: time moves to the next notification or to the wait's timeout (simulated
  seconds: the bound), and the notification gives the turn back (`on_item`).
- `POST /idle` says it is done for now: its turn ends, time moves on until a notification for
  it (which gives it its turn again) or the session's end. With `{"seen": N}` (the last
  notification it read) a notification it has not read yet keeps its turn instead: in fast
  mode time would otherwise run on past news still on its way to it.

An HTTP agent that goes away without `/idle` holds its turn until the server's lease policy
ends it (`lease_timeout`, `lease_policy`), as a WebSocket agent that hangs does. It follows the
stream only to take its turns: it never falls behind (`position` is the stream's end).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from areasync.protocol.frames import ClientFrame, Mode, NotificationItem, Role, StreamItem
from areasync.service.connection.inprocess import InProcessClient

if TYPE_CHECKING:
    from areasync.service.sessions.registry import SessionRegistry
    from areasync.service.sessions.session import Session


class HttpAgent:
    """One session's agent over HTTP (see the module docstring)."""

    wants_items = True  # a notification gives it its turn

    def __init__(self, registry: SessionRegistry, session: Session, name: str) -> None:
        self.session = session
        self.holder = f"agent:{name}"  # its fast-mode lease
        self.client = InProcessClient(registry, name=name, holder=self.holder, takes_place=True)
        self.left = False

    def join(self, token: str) -> None:
        """Say hello as the agent (RequestError if refused), attach, and take its turn."""
        self.client.hello(self.session, Role.AGENT, token)
        self.session.attach(self)  # an agent's attach takes its turn and ends the hold

    async def request(self, frame: ClientFrame) -> Any:
        """`frame` through its client; its turn is taken again as soon as it is carried out."""
        return await self.client.request(frame, then=lambda failed: self.take_turn())

    async def idle(self, frame: ClientFrame) -> Any:
        """Its turn ends until a notification for it comes (`Idle`; not if one came after
        its `seen`)."""
        return await self.client.request(frame)

    # -- the session's client (session.Follower, hub.Subscriber) ---------------------------

    @property
    def role(self) -> Role:
        return Role.AGENT

    @property
    def closed(self) -> bool:
        return self.left or self.client.closed

    @property
    def position(self) -> int:
        return self.session.hub.seq

    @property
    def drained_at(self) -> int:
        return self.session.hub.seq

    def on_item(self, seq: int, item: StreamItem) -> None:
        if isinstance(item, NotificationItem):
            self.take_turn()

    def take_turn(self) -> None:
        sim = self.session.sim
        if not self.closed and sim.clock.mode is Mode.FAST and not sim.ended:
            sim.begin_lease(self.holder)

    def flush(self) -> None:
        return None

    def overflow(self, lag: int) -> None:  # pragma: no cover - it is never behind
        return None

    def request_close(self, code: int, reason: str, *, flush: bool) -> None:
        """The session is going (discarded, its journal failed), or the adapter closes."""
        self.leave()

    def leave(self) -> None:
        if self.left:
            return
        self.left = True
        self.session.detach(self)
        self.session.sim.end_lease(self.holder)
