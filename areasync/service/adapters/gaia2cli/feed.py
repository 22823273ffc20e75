"""A session's gaia2-cli messages, kept as its stream grows, and the SSE clients following them.

`MessageFeed` is one more subscriber of the session's stream hub (`hub.py`), as a WebSocket
connection is: the hub calls its `flush` after every synchronous stretch of appends, once the
items may be shown (with a journal, once the records they follow from are durable), so the feed
turns each new item into gaia2-cli's terms right there (`translate.message_of`), with no
polling and no delay of its own. It never waits for anyone: a message is handed to every SSE
client as bytes appended to that client's own bounded buffer (`SseClient`); a client whose
buffer passes `max_bytes` (its socket stopped draining) is ended, with a last frame saying
where to resume, and the writer of that client alone (in `http.py`) notices.

The feed also counts the agent's actions (`/status`'s `num_events`) and keeps the stream's
`ended` item: the session is over for gaia2-cli once that item has gone out, with its verdict,
never before (`translate.daemon_status`). Its `events.jsonl` (`artifacts.py`) is made when it
is asked for, from the items the feed has read: a stream item costs the feed a few type checks,
never a JSON encoding.

One feed per session, made when the session is (`http.py` watches the registry), or on the
first adapter request for it: it reads the stream from its start, so the message numbering
(1, 2, 3...) and the lines are the same whenever it is made.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from areasync.bridge.operations import writes
from areasync.protocol.frames import EndedItem, Role
from areasync.service.adapters.gaia2cli import artifacts
from areasync.service.adapters.gaia2cli.translate import (
    SessionView,
    message_of,
    notification_of,
    sse_end,
    sse_frame,
    text_of,
)

if TYPE_CHECKING:
    from areasync.service.sessions.session import Session


class SseClient:
    """What one `/events` client has not been written yet, bounded by `max_bytes`."""

    def __init__(self, max_bytes: int, last_seq: int) -> None:
        self.max_bytes = max_bytes
        self.last_seq = last_seq  # the last message handed to this client
        self.pending: list[bytes] = []
        self.size = 0
        self.ended: bytes | None = None  # the last frame, once the server ends the stream
        self.wake = asyncio.Event()

    def push(self, seq: int, frame: bytes) -> None:
        if self.ended is not None:
            return
        if self.size + len(frame) > self.max_bytes:
            self.end(
                f"slow consumer: more than {self.max_bytes} bytes of messages waited unread; "
                f"resume with /events?after={self.last_seq} or /messages?after={self.last_seq}"
            )
            return
        self.pending.append(frame)
        self.size += len(frame)
        self.last_seq = seq
        self.wake.set()

    def end(self, reason: str) -> None:
        if self.ended is None:
            self.ended = sse_end(reason, self.last_seq)
            self.wake.set()

    def take(self) -> bytes:
        data = b"".join(self.pending)
        self.pending.clear()
        self.size = 0
        return data


class MessageFeed:
    """The gaia2-cli view of one session's stream. See the module docstring."""

    wants_items = False  # it reads what is new at each flush, as the hub shows it

    def __init__(self, session: Session) -> None:
        self.session = session
        self.hub = session.hub
        self.messages: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []  # what the agent was told
        self.notified_at: list[int] = []  # the stream seq of each of them (`/idle`'s `seen`)
        self.num_events = 0  # events.jsonl's lines that are not the environment's
        self.ended: EndedItem | None = None  # once the stream's end has gone out
        self._at_end: list[Callable[[], None]] = []
        self.clients: dict[SseClient, None] = {}
        self.position = 0
        self._advance()
        self.hub.subscribe(self)

    # -- the hub's subscriber protocol ---------------------------------------------------------

    @property
    def drained_at(self) -> int:
        return self.position  # it takes every item at once: it is never behind

    def on_item(self, seq: int, item: object) -> None:  # pragma: no cover - wants_items False
        pass

    def overflow(self, lag: int) -> None:  # pragma: no cover - it never lags
        self.hub.subscribe(self)

    def flush(self) -> None:
        self._advance()

    # -- the stream in gaia2-cli's terms -------------------------------------------------------

    def _advance(self) -> None:
        stop = self.hub.seq
        items = self.session.sim.log.items
        for seq in range(self.position + 1, stop + 1):
            item = items[seq - 1]
            self.num_events += artifacts.is_agents_line(item)
            note = notification_of(len(self.notifications) + 1, item)
            if note is not None:
                self.notifications.append(note)
                self.notified_at.append(seq)
            message = message_of(seq, item)
            if message is not None:
                number = len(self.messages) + 1
                entry = {"seq": number, **message}
                self.messages.append(entry)
                frame = sse_frame(entry)
                for client in tuple(self.clients):
                    client.push(number, frame)
            elif type(item) is EndedItem:
                self.ended = item
                for client in tuple(self.clients):
                    client.end("the session has ended; GET /status has its outcome")
        self.position = max(self.position, stop)
        if self.ended is not None:
            at_end, self._at_end = self._at_end, []
            for then in at_end:
                then()

    def events_jsonl(self) -> bytes:
        """`events.jsonl` of the items read so far (upstream's format, `artifacts.py`)."""
        written = functools.partial(writes, self.session.sim.env.apps)
        items = self.session.sim.log.items[: self.position]
        lines = (artifacts.event_line(item, written) for item in items)
        return b"".join(artifacts.encode_line(line) for line in lines if line is not None)

    def when_ended(self, then: Callable[[], None]) -> None:
        """Call `then` once the session's end has gone out on its stream (now if it has)."""
        self._at_end.append(then)
        self._advance()

    def attach(self, max_bytes: int, after: int) -> SseClient:
        """A new SSE client, handed every message after `after` first."""
        client = SseClient(max_bytes, after)
        for entry in self.messages[after:]:
            client.push(entry["seq"], sse_frame(entry))
        if self.ended is not None:
            client.end("the session has ended; GET /status has its outcome")
        self.clients[client] = None
        return client

    def detach(self, client: SseClient) -> None:
        self.clients.pop(client, None)

    def view(self) -> SessionView:
        session = self.session
        sim = session.sim
        counts = session.connection_counts()
        nb_turns = getattr(sim.scenario, "nb_turns", None)
        ended = self.ended
        agents = counts[Role.AGENT.value] + counts[Role.ADMIN.value] + session.agents_seen
        return SessionView(
            session_id=session.id,
            state=sim.state if ended is None else ended.state,
            ended=ended is not None,
            validation=None if ended is None else ended.validation,
            end_reason=None if ended is None else ended.reason,
            nb_turns=nb_turns if isinstance(nb_turns, int) and nb_turns > 0 else 1,
            turn=len(self.messages),
            num_events=self.num_events,
            last_response=text_of(self.messages[-1]) if self.messages else None,
            connected=session.oracle or agents > 0 or ended is not None,
            messages=len(self.messages),
            sse_clients=len(self.clients),
        )
