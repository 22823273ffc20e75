"""One WebSocket client of one session: the asyncio layer around its protocol core.

What the client's frames mean and what is answered is decided by `ConnectionCore` (core.py),
which does no I/O; this layer reads, writes, awaits and cancels. It hands the core each message
and carries out what the core says: a reply to queue, a refusal, a close, a request to carry out
on the session (`requests.perform`), whose outcome goes back to the core for its reply. Bytes
are `fanout/frames.py`'s, the socket beneath websockets `gate/sockets.py`'s.

A connection runs three tasks in an anyio task group:

- the *reader* decodes each frame and carries the request out at once, on the event loop, in
  the session's ordered command lane (see `session.py`): a request waits there only while
  another command of the session runs (a long jump that yields, say), and this connection's
  later frames wait behind it; only `SystemApp__wait_for_notification`, which returns when a
  notification arrives, runs as its own task so that later frames are not held up behind it;
- the *writer* (`outbox.py`) walks the session's stream from the connection's cursor and
  interleaves the connection's replies, in causal order; while the socket keeps up the writing
  is done synchronously by `flush`, and the writer task only takes over when it is behind;
- the *closer* waits for a reason to close (slow consumer, too large, rate limit, shutdown,
  session discarded) and closes the socket with the documented code, resetting the TCP
  connection if the peer does not finish the closing handshake within `close_timeout`. A peer
  that never reads cannot complete a close (the close frame sits behind the data it does not
  read), and websockets' own keepalive cannot catch it either (its ping waits on the same
  buffer), hence the reset (`sockets.reset`: a plain abort would leave the kernel holding the
  socket and its unsent bytes until its orphan retries run out). A connection the server closes
  is gone within `close_timeout` of the decision, whatever the peer does.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import anyio
import anyio.abc
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from areasync.protocol.codec import encode_server_frame
from areasync.protocol.errors import CloseCode
from areasync.protocol.frames import (
    CallTool,
    ClientFrame,
    Error,
    Mode,
    NotificationItem,
    Role,
    StreamItem,
    error_frame,
)
from areasync.service.connection import preempt, requests
from areasync.service.connection.door import ServerDoor
from areasync.service.connection.protocol import (
    Action,
    Call,
    Close,
    ConnectionCore,
    Count,
    Lane,
    Phase,
    Refuse,
    Reply,
    TakeTurn,
    limits_of,
)
from areasync.service.fanout.outbox import Outbox
from areasync.service.gate import screened, sockets

if TYPE_CHECKING:
    from areasync.service.gate.admission import Admission
    from areasync.service.sessions.registry import CallsUnderWay, SessionRegistry
    from areasync.service.sessions.session import Session

logger = logging.getLogger("areasync.service")

# A close reason is at most 123 bytes of UTF-8 (RFC 6455: 125-byte control frame payload).
_MAX_REASON = 123


def _reason(text: str) -> str:
    data = text.encode()
    if len(data) <= _MAX_REASON:
        return text
    return data[: _MAX_REASON - 3].decode(errors="ignore") + "..."


class Connection:
    """A client of a session, from its `hello` to its close."""

    def __init__(
        self,
        ws: ServerConnection,
        registry: SessionRegistry,
        session_id: str,
        number: int,
        *,
        admission: Admission | None = None,
        hello: str | bytes | None = None,
    ) -> None:
        self.ws = ws
        # A hello already read, its token checked, by the front that handed the socket over
        # (`handoff.py`): the connection starts from it instead of reading one.
        self._handed_hello = hello
        self.admission = admission
        self.registry = registry
        self.config = registry.config
        self.metrics = registry.metrics
        self.session_id = session_id
        self.id = f"conn-{number}"
        self.holder = f"agent:{self.id}"  # its fast-mode lease, when it is an agent
        # Its rate limit reads the service's wall, as its sessions do (a test's own, moved by
        # hand: tests/walls.py).
        self.core: ConnectionCore[Session] = ConnectionCore(
            limits_of(self.config), session_id, name=self.id, clock=registry.wall.now
        )
        self.door = ServerDoor(
            registry.tokens, session_id, verified=hello is not None, admission=admission, key=ws
        )
        self._hello_scope = anyio.CancelScope()
        self.outbox = Outbox(ws, self.config, self.metrics, overfull=self._overfull)
        self.wants_items = False  # an agent: the hub tells it of each item (see on_item)
        self._close_asked = anyio.Event()  # the core's close, once carried out
        self._task_group: anyio.abc.TaskGroup | None = None
        # While a long control of this connection runs aside: set when it is done. Meanwhile
        # the frames read are held here, each with its stop announcement (see preempt.py).
        self._control_done: anyio.Event | None = None
        self._ahead: collections.deque[tuple[str | bytes, Callable[[], None] | None]] = (
            collections.deque()
        )

    def __repr__(self) -> str:
        role = self.role.value if self.role else "-"
        return f"<Connection {self.id} {role}@{self.session_id} seq={self.position}>"

    @property
    def session(self) -> Session | None:
        """The session, once its hello was accepted."""
        return self.core.session

    @property
    def role(self) -> Role | None:
        return self.core.role

    # The hub's subscriber cursor and the stall sweep's count are the outbox's.
    @property
    def position(self) -> int:
        return self.outbox.position

    @property
    def drained_at(self) -> int:
        return self.outbox.drained_at

    @property
    def bytes_written(self) -> int:
        return self.outbox.bytes_written

    @property
    def buffered_bytes(self) -> int:
        """What this connection holds for its client now: the socket's user-space buffer plus
        the replies not yet written (the bound in docs/topics/backpressure.md)."""
        return self.outbox.buffered_bytes

    def flush(self) -> None:
        """Write everything pending now, if the socket keeps up (the hub calls it)."""
        self.outbox.flush()

    # -- lifecycle ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the connection until it closes."""
        try:
            if not await self._hello():
                return
            async with anyio.create_task_group() as tg:
                self._task_group = tg
                tg.start_soon(self.outbox.run)
                tg.start_soon(self._close_when_asked)
                await self._read_loop()
                if self.core.close_asked is None:
                    tg.cancel_scope.cancel()  # the peer left: nothing more to write
                # else: the closer is finishing the close; it cancels the group when done.
        finally:
            self._detach()
            self.door.release()

    def evict(self) -> None:
        """Stop waiting for this socket's hello (the pre-hello pool is full): close it, 4408."""
        self.core.evict()
        self._hello_scope.cancel()

    def request_close(self, code: int, reason: str, *, flush: bool) -> None:
        """Close the connection soon with `code`; `flush` first sends what is queued."""
        self._apply(self.core.close(code, reason, flush=flush))

    def _detach(self) -> None:
        session = self.session
        if session is None:
            return
        session.detach(self)
        if self.role is Role.AGENT:
            session.sim.end_lease(self.holder)  # a departed agent holds up no one

    # -- fast-mode turns ---------------------------------------------------------------------

    def take_turn(self) -> None:
        """It is this agent's turn: in fast mode, time stands still until it is idle again."""
        session = self.session
        if (
            self.role is Role.AGENT
            and session is not None
            and session.sim.clock.mode is Mode.FAST
            and not session.sim.ended
            and self.core.close_asked is None
        ):
            session.sim.begin_lease(self.holder)

    # -- hub callbacks (synchronous, inside the stream append) -------------------------------

    def on_item(self, seq: int, item: StreamItem) -> None:
        if self.role is Role.AGENT and isinstance(item, NotificationItem):
            self.take_turn()  # the notification is the agent's to act on

    def overflow(self, lag: int) -> None:
        self.metrics.slow_consumer_disconnects += 1
        logger.info("closing slow consumer %r: %d items behind", self, lag)
        self._slow_consumer(
            f"slow consumer: {lag} stream items appended while your socket did not drain "
            f"(limit {self.config.max_lag}); reconnect with since=<last seq received>"
        )

    def write_stalled(self, why: str) -> None:
        """The write-stall sweep (stalls.py) found the socket taking no bytes: close it, 4008."""
        if self.core.close_asked is not None:
            return
        self.metrics.write_timeout_disconnects += 1
        self.metrics.slow_consumer_disconnects += 1
        logger.info("closing stalled consumer %r: %s", self, why)
        self._slow_consumer(
            f"slow consumer: {why} (write_timeout {self.config.write_timeout:g} s); "
            "reconnect with since=<last seq received>"
        )

    def _overfull(self, reason: str) -> None:
        if self._close_asked.is_set():
            return
        self.metrics.slow_consumer_disconnects += 1
        self.request_close(CloseCode.SLOW_CONSUMER, reason, flush=False)

    def _slow_consumer(self, reason: str) -> None:
        if self.role is Role.AGENT and self.session is not None:
            self.session.sim.end_lease(self.holder)
        self.request_close(CloseCode.SLOW_CONSUMER, reason, flush=False)

    # -- hello -------------------------------------------------------------------------------

    async def _hello(self) -> bool:
        """Read the first frame and let the core judge it; on success the connection is
        attached."""
        data: str | bytes | None = self._handed_hello
        if self.admission is not None:
            self.admission.on_evict(self.ws, self.evict)
        if data is None:
            with self._hello_scope:
                try:
                    data = await self._receive_hello()
                except ConnectionClosed:
                    return False
        welcome: Reply | None = None
        for action in self.core.hello(data, self.registry.get(self.session_id), self.door):
            match action:
                case Refuse(frame=frame, code=code, reason=reason):
                    self.metrics.errors[frame.code] += 1
                    await self._refuse(frame, code, reason)
                case Close(code=code, reason=reason, within=within):
                    await self._close_socket(code, reason, within=within)
                case Reply():
                    welcome = action
                case Count(tally=tally):
                    self.metrics.count(tally)
        session = self.session
        if welcome is None or session is None:
            return False
        screened.admit_messages(self.ws)  # its hello was accepted: frames up to max_frame_bytes
        self.wants_items = self.role is Role.AGENT
        start = session.hub.seq if welcome.after is None else welcome.after
        self.outbox.start(session.hub, self.core.encoding, batch=self.core.batch, position=start)
        self.outbox.queue(welcome.frame, after=welcome.after, alone=welcome.alone)
        if self.role is Role.AGENT and session.abandoned is not None:
            # Its call that held the loop of a worker since killed (`restore.py`): said once.
            self.outbox.queue(error_frame(session.abandoned), after=welcome.after)
            session.abandoned = None
        session.attach(self)
        return True

    async def _receive_hello(self) -> str | bytes | None:
        """The first message, or None if none came within `hello_timeout`. A hello whose bytes
        had reached the server by then (`sockets.unhandled`: unread in the kernel, or assembled
        and not yet taken) waited on the server's own work, not on its client: it is given
        one more `hello_timeout` to be read. A client that sent nothing, or part of a frame
        and stalled, has nothing waiting and is closed at the deadline."""
        timeout = self.config.hello_timeout
        with anyio.move_on_after(timeout):
            return await self.ws.recv()
        if not sockets.unhandled(self.ws):
            return None
        with anyio.move_on_after(timeout):
            return await self.ws.recv()
        return None

    async def _refuse(self, frame: Error, code: int, reason: str) -> None:
        """Before the welcome: send the error, then close with `code`."""
        with anyio.move_on_after(self.config.close_timeout):
            try:
                await self.ws.send(encode_server_frame(frame, self.core.encoding))
            except ConnectionClosed:
                return
        await self._close_socket(code, reason)

    async def _close_socket(self, code: int, reason: str, *, within: float | None = None) -> None:
        self.metrics.closes[code] += 1
        limit = self.config.close_timeout
        if within is not None:
            limit = min(limit, within)
        with anyio.move_on_after(limit):
            await self.ws.close(code, _reason(reason))
            return
        # The peer did not complete the closing handshake (it is not reading): reset it, so
        # that its socket and the bytes it left unread go now, not when the kernel gives up.
        self.metrics.close_resets += 1
        logger.info("resetting %r: no closing handshake within %g s (close_timeout)", self, limit)
        sockets.abort(self.ws)

    # -- reading -----------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while True:
                if self._control_done is not None:
                    # A long control of this connection runs aside: read on (announcing any
                    # stop at once), then carry out what was read, in order, once it is done.
                    peer_gone = await self._read_ahead(self._control_done)
                    await self._run_read_ahead()
                    if peer_gone:
                        return
                    continue
                try:
                    data = await self.ws.recv()
                except ConnectionClosed:
                    return
                # Closing, later frames are not answered (the core drops them), but they are
                # still read, or the peer's close frame would queue behind them.
                await self._on_message(data)
        finally:
            for _, withdraw in self._ahead:
                if withdraw is not None:
                    withdraw()
            self._ahead.clear()

    async def _read_ahead(self, done: anyio.Event) -> bool:
        """Read frames until the long control is done (at most `READ_AHEAD` of them, then wait
        for it); a stop among them is announced now. True if the peer has gone."""
        session = self.session
        assert session is not None
        peer_gone = False
        async with anyio.create_task_group() as tg:

            async def stop_reading_when_done() -> None:
                await done.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(stop_reading_when_done)
            while len(self._ahead) < preempt.READ_AHEAD:
                try:
                    data = await self.ws.recv()  # cancelling it loses no message (websockets)
                except ConnectionClosed:
                    peer_gone = True
                    break
                withdraw = None
                if self.core.phase is Phase.OPEN:
                    withdraw = preempt.announce_stop(
                        data,
                        max_bytes=self.config.max_frame_bytes,
                        allowed=self.core.allowed,
                        own=session.sim,
                        by_id=self._simulation_of,
                    )
                self._ahead.append((data, withdraw))
            await done.wait()
        return peer_gone

    def _simulation_of(self, session_id: str) -> preempt.Stoppable | None:
        """The simulation of the registry's session `session_id` (an admin's `stop_session`)."""
        target = self.registry.get(session_id)
        return None if target is None else target.sim

    async def _run_read_ahead(self) -> None:
        """Carry out the frames read while a long control ran, in order; stop early if one of
        them is a long control again (the loop reads ahead behind it)."""
        while self._ahead and self._control_done is None:
            data, withdraw = self._ahead.popleft()
            try:
                await self._on_message(data)
            finally:
                if withdraw is not None:
                    withdraw()

    async def _on_message(self, data: str | bytes) -> None:
        for action in self.core.receive(data):
            if isinstance(action, Call):
                await self._carry_out(action)
            else:
                self._apply((action,))

    def _apply(self, actions: Iterable[Action]) -> None:
        """Carry out the core's replies, closes, turns and counts (never a call: those are
        awaited)."""
        for action in actions:
            match action:
                case Reply(frame=frame, after=after, alone=alone):
                    self.outbox.queue(frame, after=after, alone=alone)
                case Count(tally=tally):
                    self.metrics.count(tally)
                case TakeTurn():
                    self.take_turn()
                case Close():
                    self.outbox.stop_flushing()
                    self._close_asked.set()  # the core holds the code and reason
                case _:
                    raise AssertionError(f"cannot apply {action!r} here")

    # -- requests ----------------------------------------------------------------------------

    async def _carry_out(self, call: Call) -> None:
        """Run a request in its lane (core.py, `Lane`)."""
        match call.lane:
            case Lane.INLINE:
                await self._answer(call.frame)
            case Lane.ASIDE:
                assert self._task_group is not None
                self._task_group.start_soon(self._answer_aside, call.frame)
            case Lane.LONG:
                # The reader carries out nothing else of this connection until it is done.
                assert self._task_group is not None
                done = anyio.Event()
                self._control_done = done
                self._task_group.start_soon(self._run_long_control, call.frame, done)

    async def _run_long_control(self, frame: ClientFrame, done: anyio.Event) -> None:
        try:
            await self._answer(frame)
        finally:
            self._control_done = None
            done.set()

    async def _perform(self, frame: ClientFrame) -> object:
        session = self.session
        role = self.role
        assert session is not None and role is not None
        return await requests.perform(
            frame, session=session, role=role, holder=self.holder, registry=self.registry
        )

    async def _answer(self, frame: ClientFrame) -> None:
        """Carry out a request and queue what the core makes of its outcome (its reply, and
        the agent's turn in its place: core.py). Nothing awaits in between."""
        tool_call = type(frame) is CallTool
        started = time.perf_counter()
        calls = self.registry.calls if tool_call else None
        if calls is not None:
            calls.enter(self.session_id, len(self.session.sim.records) if self.session else 0)
        try:
            value = await self._perform(frame)
        except BaseException as exc:
            self._done(calls, tool_call, started)
            if not isinstance(exc, Exception):
                self._apply(self.core.abandoned(frame))
                raise
            self._apply(self.core.failed(frame, exc))
            return
        self._done(calls, tool_call, started)
        self._apply(self.core.succeeded(frame, value))

    def _done(self, calls: CallsUnderWay | None, tool_call: bool, started: float) -> None:
        """A request was carried out: no longer under way; a tool call's duration observed."""
        if calls is not None:
            calls.leave(self.session_id)
        if tool_call:
            self.metrics.tool_call_seconds.observe(time.perf_counter() - started)

    async def _answer_aside(self, frame: ClientFrame) -> None:
        """`SystemApp__wait_for_notification`: it returns when a notification arrives (the
        agent's turn, taken before its reply is queued: core.py)."""
        try:
            value = await self._perform(frame)
        except Exception as exc:
            self._apply(self.core.failed(frame, exc))
        else:
            self._apply(self.core.succeeded(frame, value))

    # -- closing ---------------------------------------------------------------------------

    async def _close_when_asked(self) -> None:
        await self._close_asked.wait()
        close = self.core.close_asked
        assert close is not None
        await self.outbox.close(flush=close.flush)
        await self._close_socket(close.code, close.reason)
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()
