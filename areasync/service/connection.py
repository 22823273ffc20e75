"""One WebSocket client of one session: the asyncio layer around its protocol core.

What the client's frames mean and what is answered is decided by `ConnectionCore` (core.py),
which does no I/O; this layer reads, writes, awaits and cancels. It hands the core each message
and carries out what the core says: a reply to queue, a refusal, a close, a request to carry out
on the session (`requests.perform`), whose outcome goes back to the core for its reply. Bytes
and the socket beneath websockets are `wire.py`'s.

A connection runs three tasks in an anyio task group:

- the *reader* decodes each frame and carries the request out at once, on the event loop, in
  the session's ordered command lane (see `session.py`): a request waits there only while
  another command of the session runs (a long jump that yields, say), and this connection's
  later frames wait behind it; only `SystemApp__wait_for_notification`, which returns when a
  notification arrives, runs as its own task so that later frames are not held up behind it;
- the *writer* walks the session's stream from the connection's cursor and interleaves the
  connection's replies, in causal order: a reply is sent after every stream item that existed
  when it was made (the AGENT event of a tool call reaches the agent before its result). While
  the socket keeps up, the writing is done synchronously by `flush` (called by the hub after
  appends and after each reply: no task switch per frame); the writer task only takes over
  when the socket is behind, and waits for it to drain. Whatever is due goes out in one write;
  to a client that said `hello{batch: true}` it goes as one `batch` message (the welcome
  always alone, first), so the client parses one message where it would parse many;
- the *closer* waits for a reason to close (slow consumer, too large, rate limit, shutdown,
  session discarded) and closes the socket with the documented code, aborting the TCP
  connection if the peer does not finish the closing handshake in time. A peer that never
  reads cannot complete a close (the close frame sits behind the data it does not read), and
  websockets' own keepalive cannot catch it either (its ping waits on the same buffer), hence
  the abort.
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

from areasync.loop.clock import ClockMode
from areasync.protocol.codec import encode_server_bytes, encode_server_frame
from areasync.protocol.errors import CloseCode, ProtocolError
from areasync.protocol.frames import (
    CallTool,
    ClientFrame,
    Error,
    NotificationItem,
    Role,
    ServerFrame,
    StreamItem,
)
from areasync.service import preempt, requests, wire
from areasync.service.core import (
    Action,
    Call,
    Close,
    ConnectionCore,
    Lane,
    Phase,
    Refuse,
    Reply,
)
from areasync.service.wire import WRITE_BYTES, Messages

if TYPE_CHECKING:
    from areasync.service.admission import Admission
    from areasync.service.registry import SessionRegistry
    from areasync.service.session import Session

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
    ) -> None:
        self.ws = ws
        self.admission = admission
        self.registry = registry
        self.config = registry.config
        self.metrics = registry.metrics
        self.session_id = session_id
        self.id = f"conn-{number}"
        self.holder = f"agent:{self.id}"  # its fast-mode lease, when it is an agent
        self.core = ConnectionCore(
            registry, session_id, name=self.id, admission=admission, admission_key=ws
        )
        self._hello_scope = anyio.CancelScope()
        # Bytes handed to the socket's transport by the writer, for the write-stall sweep
        # (stalls.py): what the client took is this minus what the transport still buffers.
        self.bytes_written = 0
        self.wants_items = False  # an agent: the hub tells it of each item (see on_item)
        # Stream cursor (see hub.py): the last seq handed to the socket, and the stream's seq
        # when its socket last drained (lag counts only the items appended since).
        self.position = 0
        self.drained_at = 0
        # Replies not yet written: the stream seq each must follow, its encoded payload, and
        # whether it must go as a message of its own (the welcome).
        self._replies: collections.deque[tuple[int, bytes, bool]] = collections.deque()
        self._reply_bytes = 0
        self._wake = anyio.Event()
        self._drained = anyio.Event()
        self._writer_done = False  # the writer task has stopped: the socket takes no more
        self._close_asked = anyio.Event()
        self._writer_scope = anyio.CancelScope()
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

    @property
    def batch(self) -> bool:
        return self.core.batch

    # -- lifecycle ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the connection until it closes."""
        try:
            if not await self._hello():
                return
            async with anyio.create_task_group() as tg:
                self._task_group = tg
                tg.start_soon(self._write_loop)
                tg.start_soon(self._close_when_asked)
                await self._read_loop()
                if self.core.close_asked is None:
                    tg.cancel_scope.cancel()  # the peer left: nothing more to write
                # else: the closer is finishing the close; it cancels the group when done.
        finally:
            self._detach()
            if self.core.admitted and self.admission is not None:
                self.admission.release()

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
            session.sim.release(self.holder)  # a departed agent holds up no one

    # -- fast-mode turns ---------------------------------------------------------------------

    def take_turn(self) -> None:
        """It is this agent's turn: in fast mode, time stands still until it is idle again."""
        session = self.session
        if (
            self.role is Role.AGENT
            and session is not None
            and session.sim.clock.mode is ClockMode.FAST
            and not session.sim.ended
            and self.core.close_asked is None
        ):
            session.sim.acquire(self.holder)

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

    def _slow_consumer(self, reason: str) -> None:
        if self.role is Role.AGENT and self.session is not None:
            self.session.sim.release(self.holder)
        self.request_close(CloseCode.SLOW_CONSUMER, reason, flush=False)

    # -- hello -------------------------------------------------------------------------------

    async def _hello(self) -> bool:
        """Read the first frame and let the core judge it; on success the connection is
        attached."""
        data: str | bytes | None = None
        if self.admission is not None:
            self.admission.on_evict(self.ws, self.evict)
        with self._hello_scope, anyio.move_on_after(self.config.hello_timeout):
            try:
                data = await self.ws.recv()
            except ConnectionClosed:
                return False
        welcome: Reply | None = None
        for action in self.core.hello(data):
            match action:
                case Refuse(frame=frame, code=code, reason=reason):
                    await self._refuse(frame, code, reason)
                case Close(code=code, reason=reason, within=within):
                    await self._close_socket(code, reason, within=within)
                case Reply():
                    welcome = action
        session = self.session
        if welcome is None or session is None:
            return False
        self.wants_items = self.role is Role.AGENT
        self.position = welcome.after or 0
        self.drained_at = session.hub.seq  # replaying the items before it is a backlog, not lag
        self._queue(welcome.frame, after=welcome.after, alone=welcome.alone)
        session.attach(self)
        return True

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
        # The peer did not complete the closing handshake (it is not reading): drop it.
        wire.abort(self.ws)

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
                        session=session,
                        registry=self.registry,
                    )
                self._ahead.append((data, withdraw))
            await done.wait()
        return peer_gone

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
        """Carry out the core's replies and closes (never a call: those are awaited)."""
        for action in actions:
            match action:
                case Reply(frame=frame, after=after, alone=alone):
                    self._queue(frame, after=after, alone=alone)
                case Close():
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
        """Carry out a request and queue its reply. A tool call's outcome is the agent's next
        turn: its result is queued before the turn is taken (nothing awaits in between, so time
        cannot move before it), its error after."""
        if type(frame) is not CallTool:
            try:
                value = await self._perform(frame)
            except Exception as exc:
                self._apply(self.core.failed(frame, exc))
            else:
                self._apply(self.core.succeeded(frame, value))
            return
        started = time.perf_counter()
        try:
            value = await self._perform(frame)
        except BaseException as exc:
            self.metrics.tool_call_seconds.observe(time.perf_counter() - started)
            self.take_turn()
            if not isinstance(exc, Exception):
                raise
            self._apply(self.core.failed(frame, exc))
            return
        elapsed = time.perf_counter() - started
        self._apply(self.core.succeeded(frame, value))
        self.metrics.tool_call_seconds.observe(elapsed)
        self.take_turn()

    async def _answer_aside(self, frame: ClientFrame) -> None:
        """`SystemApp__wait_for_notification`: it returns when a notification arrives (the
        agent's turn, taken before its reply is queued)."""
        try:
            value = await self._perform(frame)
        except Exception as exc:
            self.take_turn()
            self._apply(self.core.failed(frame, exc))
        else:
            self.take_turn()
            self._apply(self.core.succeeded(frame, value))

    # -- writing -----------------------------------------------------------------------------

    def _queue(self, frame: ServerFrame, *, after: int | None = None, alone: bool = False) -> None:
        """Queue a reply; it is written after every stream item up to `after` (default: now).

        `alone`: never inside a `batch` (the welcome: clients read it as the first message).
        """
        session = self.session
        assert session is not None
        encoding = self.core.encoding
        try:
            data = encode_server_bytes(frame, encoding)
        except ProtocolError as exc:  # a value that cannot be encoded: answer with the error
            frame = exc.to_frame(getattr(frame, "id", None))
            data = encode_server_bytes(frame, encoding)
        if type(frame) is Error:
            self.metrics.errors[frame.code] += 1
        self._replies.append((len(session.hub.frames) if after is None else after, data, alone))
        self._reply_bytes += len(data)
        self.flush()
        config = self.config
        if (
            len(self._replies) > config.max_pending_replies
            or self._reply_bytes > config.max_pending_reply_bytes
        ) and not self._close_asked.is_set():
            self.metrics.slow_consumer_disconnects += 1
            self.request_close(
                CloseCode.SLOW_CONSUMER,
                f"slow consumer: {len(self._replies)} replies ({self._reply_bytes} bytes) unread; "
                "read your replies, then reconnect with since",
                flush=False,
            )

    @property
    def buffered_bytes(self) -> int:
        """What this connection holds for its client now: the socket's user-space buffer plus
        the replies not yet written (the bound in RELIABILITY.md, "Slow consumers")."""
        return wire.buffered(self.ws) + self._reply_bytes

    def _pending(self) -> bool:
        session = self.session
        return bool(self._replies) or (session is not None and self.position < session.hub.seq)

    def flush(self) -> None:
        """Write everything pending now, if the socket keeps up; never waits.

        Called by the hub after items were appended, and after each reply is queued. If the
        socket has anything still buffered, the writer task (which waits for it to drain) takes
        over: writing more behind a full buffer would only grow it.
        """
        # Not once the close is under way (`_close_asked`: the core's close, once carried out).
        if self._close_asked.is_set() or self._writer_done or self.session is None:
            return
        ws = self.ws
        if not wire.is_open(ws):
            return
        if wire.buffered(ws) == 0:
            self.drained_at = len(self.session.hub.frames)
            self._write_some()
        if self._pending() or wire.buffered(ws) > 0:
            self._wake.set()

    def _write_some(self) -> None:
        """Write what is due, in order, in one write of at most about WRITE_BYTES.

        The order: a reply goes out once every stream item that existed when it was made has
        gone out (the AGENT event of a tool call precedes its result); stream items otherwise.
        """
        session = self.session
        assert session is not None
        hub = session.hub
        replies = self._replies
        position = self.position
        seq = len(hub.frames)
        text = self.core.text
        batch = self.core.batch
        if not replies:
            # The common case (every observer, always): stream items only, and subscribers at
            # the same position are handed the same bytes.
            if position < seq:
                end, _, data = hub.wire_run(
                    position, seq, text=text, batch=batch, budget=WRITE_BYTES
                )
                self.position = end
                self._write(data, end - position)
            return
        frames = hub.frames
        messages = Messages(text=text, batch=batch)
        while True:
            if replies and replies[0][0] <= position:
                payload = replies[0][1]
                if not messages.fits(len(payload), WRITE_BYTES):
                    break
                alone = replies.popleft()[2]
                self._reply_bytes -= len(payload)
                messages.add(payload, alone=alone)
                continue
            if position >= (min(seq, replies[0][0]) if replies else seq):
                break
            wire_frame = frames[position]
            frame = wire_frame.frame_for(text)
            if not messages.fits(len(frame), WRITE_BYTES):
                break
            position += 1
            if batch:
                messages.add(wire_frame.payload(text))
            else:
                messages.add_frame(frame)
        self.position = position
        if messages.count:
            self._write(messages.data(), messages.count)

    def _write(self, data: bytes, frames: int) -> None:
        wire.write(self.ws, data)
        self.bytes_written += len(data)
        self.metrics.frames_sent += frames

    async def _write_loop(self) -> None:
        """Write whatever `flush` left: when the socket is behind, wait for it, then go on."""
        ws = self.ws
        with self._writer_scope:
            try:
                while True:
                    if not self._pending():
                        self._drained.set()
                        self._drained = anyio.Event()
                        wake = self._wake = anyio.Event()
                        await wake.wait()
                        continue
                    # Wait while the buffer is above its limit (as `ws.send` does), then write:
                    # the buffer never holds more than write_limit + one batch.
                    await wire.drain(ws)
                    if not wire.is_open(ws):
                        return  # closing or closed: the reader and closer take it from here
                    session = self.session
                    assert session is not None
                    self.drained_at = len(session.hub.frames)  # it reads: what is new is no lag
                    self._write_some()
            except (ConnectionClosed, ConnectionError):
                # A peer that resets the TCP connection makes `drain` raise the transport's
                # ConnectionResetError (not websockets' ConnectionClosed): the reader sees the
                # close and ends the connection; the writer just stops.
                pass
            finally:
                self._writer_done = True
                self._drained.set()

    async def _close_when_asked(self) -> None:
        await self._close_asked.wait()
        close = self.core.close_asked
        assert close is not None
        if close.flush:
            with anyio.move_on_after(self.config.shutdown_grace):
                while self._pending() and not self._writer_done:
                    await self._drained.wait()
        # A writer waiting on a full buffer holds no half-written frame (every write is whole
        # frames), so cancelling it loses nothing the client could use.
        self._writer_scope.cancel()
        await self._close_socket(close.code, close.reason)
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()
