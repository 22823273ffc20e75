"""One WebSocket client of one session: hello, requests in, stream and replies out.

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

Errors are data: a bad frame, a forbidden or failed request each get an `error` frame and change
nothing; the connection stays open. Only a broken contract closes it (see `CloseCode`).
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from areasync.bridge.scenarios import ScenarioError, registered_ids
from areasync.bridge.tools import InvalidArgsError, ToolFailedError, UnknownToolError
from areasync.loop.clock import ClockMode
from areasync.protocol import SERVER_CAPABILITIES, Capability
from areasync.protocol.codec import (
    Encoding,
    decode_client_frame,
    encode_server_bytes,
    encode_server_frame,
)
from areasync.protocol.errors import CloseCode, ErrorCode, ProtocolError
from areasync.protocol.frames import (
    CallTool,
    ClientFrame,
    CreateSession,
    Error,
    GetState,
    Hello,
    Idle,
    Jump,
    ListTools,
    NotificationItem,
    Pause,
    Ping,
    Pong,
    Replay,
    Result,
    Resume,
    Role,
    SendUserMessage,
    ServerFrame,
    SetSpeed,
    Stop,
    StopSession,
    StreamItem,
    Tick,
    Welcome,
)
from areasync.service import preempt, roles
from areasync.service.hub import BATCH_BYTES, WRITE_BYTES, close_group, ws_header
from areasync.service.limits import TokenBucket, strike_bucket
from areasync.service.session import Session, SessionRegistry
from areasync.simulation import WAIT_TOOL, ControlInterruptedError, Simulation, SimulationError

if TYPE_CHECKING:
    from areasync.service.admission import Admission

logger = logging.getLogger("areasync.service")

# A pending socket evicted from a full pre-hello pool (admission.py) gets this long to finish
# the closing handshake before its TCP connection is aborted: it has sent nothing, so there is
# nothing to flush, and the pool it left is for sockets that want in.
_EVICTED_CLOSE_TIMEOUT = 1.0

_Handler = Callable[[Any], Awaitable[Any]]

# A close reason is at most 123 bytes of UTF-8 (RFC 6455: 125-byte control frame payload).
_MAX_REASON = 123


def _reason(text: str) -> str:
    data = text.encode()
    if len(data) <= _MAX_REASON:
        return text
    return data[: _MAX_REASON - 3].decode(errors="ignore") + "..."


def _tag(frame: ClientFrame | type[ClientFrame]) -> str:
    return str(frame.__struct_config__.tag)


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
        self._admitted = False  # counted as authenticated by `admission`
        self._evicted = False  # evicted from the pre-hello pool to admit a newer socket
        self._hello_scope = anyio.CancelScope()
        # Bytes handed to the socket's transport by the writer, for the write-stall sweep
        # (stalls.py): what the client took is this minus what the transport still buffers.
        self.bytes_written = 0
        self.registry = registry
        self.config = registry.config
        self.metrics = registry.metrics
        self.session_id = session_id
        self.id = f"conn-{number}"
        self.holder = f"agent:{self.id}"  # its fast-mode lease, when it is an agent
        self.session: Session | None = None
        self.role: Role | None = None
        self._allowed: frozenset[type[Any]] = frozenset()  # what the role may send (roles.py)
        self.encoding = Encoding.JSON
        self._text = True  # JSON: text frames
        self.batch = False  # hello.batch: frames due together go as one `batch` message
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
        self._writer_done = False
        self._close_asked = anyio.Event()
        self._close: tuple[int, str, bool] | None = None
        self._writer_scope = anyio.CancelScope()
        self._task_group: anyio.abc.TaskGroup | None = None
        self._bucket = (
            TokenBucket(self.config.rate, self.config.burst)
            if self.config.rate is not None
            else None
        )
        # Refusals a connection may collect while rate limited (limits.py); none left: 4029.
        self._strikes = (
            strike_bucket(self.config.rate, self.config.rate_strikes)
            if self.config.rate is not None
            else None
        )
        # While a long control of this connection runs aside: set when it is done. Meanwhile
        # the frames read are held here, each with its stop announcement (see preempt.py).
        self._control_done: anyio.Event | None = None
        self._ahead: collections.deque[tuple[str | bytes, Callable[[], None] | None]] = (
            collections.deque()
        )
        self._handlers: dict[type[Any], _Handler] = {
            Ping: self._ping,
            ListTools: self._list_tools,
            GetState: self._get_state,
            CallTool: self._call_tool,
            Idle: self._idle,
            SendUserMessage: self._send_user_message,
            Pause: self._pause,
            Resume: self._resume,
            Jump: self._jump,
            Tick: self._tick,
            SetSpeed: self._set_speed,
            Stop: self._stop,
            CreateSession: self._create_session,
            StopSession: self._stop_session,
        }

    def __repr__(self) -> str:
        role = self.role.value if self.role else "-"
        return f"<Connection {self.id} {role}@{self.session_id} seq={self.position}>"

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
                if self._close is None:
                    tg.cancel_scope.cancel()  # the peer left: nothing more to write
                # else: the closer is finishing the close; it cancels the group when done.
        finally:
            self._detach()
            if self._admitted and self.admission is not None:
                self.admission.release()

    def evict(self) -> None:
        """Stop waiting for this socket's hello (the pre-hello pool is full): close it, 4408."""
        self._evicted = True
        self._hello_scope.cancel()

    def request_close(self, code: int, reason: str, *, flush: bool) -> None:
        """Close the connection soon with `code`; `flush` first sends what is queued."""
        if self._close is not None:
            return
        self._close = (code, reason, flush)
        self._close_asked.set()

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
            and session.sim.clock.mode is ClockMode.FAST
            and not session.sim.ended
            and self._close is None
        ):
            session.sim.begin_lease(self.holder)

    # -- hub callbacks (synchronous, inside the stream append) -------------------------------

    def on_item(self, seq: int, item: StreamItem) -> None:
        if self.role is Role.AGENT and isinstance(item, NotificationItem):
            self.take_turn()  # the notification is the agent's to act on

    def overflow(self, lag: int) -> None:
        self.metrics.slow_consumer_disconnects += 1
        logger.info("closing slow consumer %r: %d items behind", self, lag)
        if self.role is Role.AGENT and self.session is not None:
            self.session.sim.end_lease(self.holder)
        self.request_close(
            CloseCode.SLOW_CONSUMER,
            f"slow consumer: {lag} stream items appended while your socket did not drain "
            f"(limit {self.config.max_lag}); "
            "reconnect with since=<last seq received>",
            flush=False,
        )

    def write_stalled(self, why: str) -> None:
        """The write-stall sweep (stalls.py) found the socket taking no bytes: close it, 4008."""
        if self._close is not None:
            return
        self.metrics.write_timeout_disconnects += 1
        self.metrics.slow_consumer_disconnects += 1
        logger.info("closing stalled consumer %r: %s", self, why)
        if self.role is Role.AGENT and self.session is not None:
            self.session.sim.end_lease(self.holder)
        self.request_close(
            CloseCode.SLOW_CONSUMER,
            f"slow consumer: {why} (write_timeout {self.config.write_timeout:g} s); "
            "reconnect with since=<last seq received>",
            flush=False,
        )

    # -- hello -------------------------------------------------------------------------------

    async def _hello(self) -> bool:
        """Read and check the first frame; on success the connection is attached."""
        data: str | bytes | None = None
        if self.admission is not None:
            self.admission.on_evict(self.ws, self.evict)
        with self._hello_scope, anyio.move_on_after(self.config.hello_timeout):
            try:
                data = await self.ws.recv()
            except ConnectionClosed:
                return False
        if data is None and self._evicted:
            self.metrics.pending_evictions += 1
            await self._close_socket(
                CloseCode.HELLO_TIMEOUT,
                f"evicted: the server's {self.config.max_pending_hellos} places for connections "
                "that have not said hello are taken by newer ones; reconnect and send hello first",
                within=_EVICTED_CLOSE_TIMEOUT,
            )
            return False
        if data is None:
            await self._close_socket(
                CloseCode.HELLO_TIMEOUT,
                f"no hello within {self.config.hello_timeout:g} s; send hello first",
            )
            return False
        self.metrics.frames_received += 1
        self.encoding = Encoding.JSON if isinstance(data, str) else Encoding.MSGPACK
        self._text = self.encoding is Encoding.JSON
        if len(data) > self.config.max_frame_bytes:
            await self._refuse(self._too_large(len(data)), CloseCode.TOO_LARGE)
            return False
        try:
            frame = decode_client_frame(data)
        except ProtocolError as exc:
            await self._refuse(exc, CloseCode.BAD_HELLO)
            return False
        if not isinstance(frame, Hello):
            error = ProtocolError(
                ErrorCode.BAD_STATE,
                f"the first frame must be `hello` (role, token), got `{_tag(frame)}`; "
                "say hello, then send requests",
                id=frame.id,
            )
            await self._refuse(error, CloseCode.BAD_HELLO)
            return False
        session = self.registry.get(self.session_id)
        # One check whether or not the session exists (compared against a stand-in token if it
        # does not: same work), and one answer for "no such session" and "bad token", so that
        # session ids cannot be enumerated. Only a token that opens every session (the admin's)
        # learns that the session does not exist.
        allowed = self.registry.tokens.allows(frame.token, self.session_id, frame.role)
        if session is None and allowed:
            error = ProtocolError(
                ErrorCode.SESSION_NOT_FOUND,
                f"no session {self.session_id!r} on this server; GET /api/sessions lists them "
                "(connect to ws://HOST:PORT/sessions/<id>)",
                id=frame.id,
            )
            await self._refuse(error, CloseCode.SESSION_NOT_FOUND)
            return False
        if session is None or not allowed:
            await self._refuse(unauthorized_hello(frame), CloseCode.UNAUTHORIZED)
            return False
        if len(session.connections) >= self.config.max_connections_per_session:
            error = ProtocolError(
                ErrorCode.CAPACITY,
                f"session {session.id!r} already has {len(session.connections)} clients, its "
                "limit (max_connections_per_session); retry later",
                id=frame.id,
            )
            await self._refuse(error, CloseCode.CAPACITY)
            return False
        if self.admission is not None:
            if not self.admission.admit(self.ws):
                error = ProtocolError(
                    ErrorCode.CAPACITY,
                    f"the server has {self.admission.authenticated} clients, its limit "
                    "(max_connections); retry later",
                    id=frame.id,
                )
                await self._refuse(error, CloseCode.CAPACITY)
                return False
            self._admitted = True
        seq = session.hub.seq
        if frame.since is None:
            replay, start = Replay.NONE, seq
        elif frame.epoch is not None and frame.epoch != session.epoch:
            # Not this stream's seq numbers: never splice two streams. Send all of this one.
            replay, start = Replay.RESET, 0
        elif frame.since > seq:
            error = ProtocolError(
                ErrorCode.REPLAY_UNAVAILABLE,
                f"since={frame.since} is ahead of session {session.id!r}'s stream, which ends "
                f"at seq {seq}; reconnect without since (or with since <= {seq})",
                id=frame.id,
            )
            await self._refuse(error, CloseCode.BAD_HELLO)
            return False
        else:
            replay, start = Replay.FULL, frame.since
        self.session = session
        self.role = frame.role
        self._allowed = roles.ALLOWED[frame.role]
        self.batch = frame.batch and Capability.BATCH in SERVER_CAPABILITIES
        self.wants_items = frame.role is Role.AGENT
        self.position = start
        self.drained_at = seq  # replaying the items before it is a backlog, not lag
        welcome = Welcome(
            id=frame.id,
            session_id=session.id,
            role=frame.role,
            epoch=session.epoch,
            seq=seq,
            scenario_id=session.scenario_id,
            clock=session.sim.clock_state(),
            replay=replay,
            capabilities=list(SERVER_CAPABILITIES),
        )
        self._queue(welcome, after=start, alone=True)
        session.attach(self)
        return True

    async def _refuse(self, error: ProtocolError, code: CloseCode) -> None:
        """Before the welcome: send the error, then close with `code`."""
        frame = error.to_frame()
        self.metrics.errors[frame.code] += 1
        with anyio.move_on_after(self.config.close_timeout):
            try:
                await self.ws.send(encode_server_frame(frame, self.encoding))
            except ConnectionClosed:
                return
        await self._close_socket(code, f"{error.code.value}: {error.message}")

    async def _close_socket(self, code: int, reason: str, *, within: float | None = None) -> None:
        self.metrics.closes[code] += 1
        limit = self.config.close_timeout
        if within is not None:
            limit = min(limit, within)
        with anyio.move_on_after(limit):
            await self.ws.close(code, _reason(reason))
            return
        # The peer did not complete the closing handshake (it is not reading): drop it.
        self.ws.transport.abort()

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
                if self._close is not None:
                    # Closing: later frames are not answered, but keep reading them, or the
                    # peer's close frame would queue behind them and the close would time out.
                    continue
                await self._on_frame(data)
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
                if self._close is None:
                    withdraw = preempt.announce_stop(
                        data,
                        max_bytes=self.config.max_frame_bytes,
                        allowed=self._allowed,
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
                if self._close is None:
                    await self._on_frame(data)
            finally:
                if withdraw is not None:
                    withdraw()

    async def _on_frame(self, data: str | bytes) -> None:
        self.metrics.frames_received += 1
        if len(data) > self.config.max_frame_bytes:
            self._error(self._too_large(len(data)))
            self.request_close(
                CloseCode.TOO_LARGE,
                f"frame above the {self.config.max_frame_bytes}-byte limit; send smaller frames",
                flush=True,
            )
            return
        try:
            frame = decode_client_frame(data)
        except ProtocolError as exc:
            self._error(exc)
            return
        if self._bucket is not None and not self._bucket.take():
            assert self._strikes is not None
            if not self._strikes.take():
                # Out of strikes: this and every later frame is dropped unanswered (the reader
                # skips frames once a close is asked), so a flood costs no more replies.
                self.metrics.rate_limit_disconnects += 1
                self.request_close(
                    CloseCode.RATE_LIMITED,
                    f"kept sending while rate limited (more than {self.config.rate_strikes} "
                    "refusals); back off, then reconnect with since",
                    flush=True,
                )
                return
            self._error(
                ProtocolError(
                    ErrorCode.RATE_LIMITED,
                    f"more than {self.config.rate:g} requests per second (bursts up to "
                    f"{self.config.burst}); this `{_tag(frame)}` was dropped: slow down and "
                    "send it again",
                    id=frame.id,
                )
            )
            return
        try:
            await self._dispatch(frame)
        except Exception as exc:
            self._error(self._translate(exc, frame))

    async def _dispatch(self, frame: ClientFrame) -> None:
        session = self.session
        role = self.role
        assert session is not None and role is not None
        kind = type(frame)
        if kind is Hello:
            raise ProtocolError(
                ErrorCode.BAD_STATE,
                "this connection already said hello; send hello only once, as the first frame "
                "(open a new connection to change role)",
            )
        if kind not in self._allowed:
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"role {role.value!r} may not send `{_tag(frame)}` (it may send: "
                f"{', '.join(roles.allowed_names(role))}); connect with the token of a role "
                "that may",
            )
        if kind in roles.MUTATING and session.sim.ended:
            raise ProtocolError(
                ErrorCode.SESSION_ENDED,
                f"session {session.id!r} has ended ({session.sim.state}): only list_tools, "
                "get_state and ping still work; create a new session to go on",
            )
        if kind in preempt.LONG_CONTROLS:
            # Aside, so that this connection can read (and announce) a stop meanwhile; the
            # reader carries out nothing else of this connection until it is done.
            assert self._task_group is not None
            done = anyio.Event()
            self._control_done = done
            self._task_group.start_soon(self._run_long_control, frame, done)
            return
        value = await self._handlers[kind](frame)
        if value is not _NO_REPLY:
            self._queue(Result(id=frame.id, value=value))

    async def _run_long_control(self, frame: ClientFrame, done: anyio.Event) -> None:
        try:
            value = await self._handlers[type(frame)](frame)
        except Exception as exc:
            self._error(self._translate(exc, frame))
        else:
            self._queue(Result(id=frame.id, value=value))
        finally:
            self._control_done = None
            done.set()

    def _translate(self, exc: Exception, frame: ClientFrame) -> ProtocolError:
        """Any failure of a request, as the error to answer it with."""
        if isinstance(exc, ProtocolError):
            error = exc
        elif isinstance(exc, UnknownToolError):
            error = ProtocolError(ErrorCode.UNKNOWN_TOOL, str(exc))
        elif isinstance(exc, InvalidArgsError):
            error = ProtocolError(
                ErrorCode.INVALID_ARGS, f"{exc}; nothing was run (list_tools gives the arguments)"
            )
        elif isinstance(exc, ToolFailedError):
            error = ProtocolError(
                ErrorCode.TOOL_FAILED,
                f"{exc}; ARE logged the call with its exception (an AGENT event on the stream)",
            )
        elif isinstance(exc, ControlInterruptedError):
            error = ProtocolError(ErrorCode.INTERRUPTED, str(exc))
        elif isinstance(exc, SimulationError):
            session = self.session
            if session is not None and session.sim.ended:
                code = ErrorCode.SESSION_ENDED
            else:
                try:
                    code = ErrorCode(exc.code)
                except ValueError:
                    code = ErrorCode.BAD_STATE
            error = ProtocolError(code, str(exc))
        elif isinstance(exc, ScenarioError):
            error = ProtocolError(ErrorCode.INVALID_FIELD, str(exc))
        else:
            logger.exception("internal error answering %s on %r", _tag(frame), self)
            error = ProtocolError(
                ErrorCode.INTERNAL,
                f"`{_tag(frame)}` failed inside areasync ({type(exc).__name__}: {exc}); this is "
                "a bug, please report it with the frame that caused it",
            )
        if error.id is None:
            error.id = frame.id
        return error

    def _too_large(self, size: int) -> ProtocolError:
        return ProtocolError(
            ErrorCode.TOO_LARGE,
            f"the frame is {size} bytes, above the server's {self.config.max_frame_bytes}-byte "
            "limit; send smaller frames (the connection is closed with 4009)",
        )

    # -- requests ----------------------------------------------------------------------------

    @property
    def _sim(self) -> Simulation:
        assert self.session is not None
        return self.session.sim

    async def _ping(self, frame: Ping) -> object:
        self._queue(Pong(id=frame.id))
        return _NO_REPLY

    async def _list_tools(self, frame: ListTools) -> Any:
        return self._sim.list_tools()

    async def _get_state(self, frame: GetState) -> Any:
        return self._sim.get_state(frame.apps)

    async def _call_tool(self, frame: CallTool) -> Any:
        if frame.tool == WAIT_TOOL:
            # Returns when a notification arrives (or the timeout passes in simulated time):
            # run it aside so this connection's later frames are still answered meanwhile.
            assert self._task_group is not None
            self._task_group.start_soon(self._wait_for_notification, frame)
            return _NO_REPLY
        sim = self._sim
        started = time.perf_counter()
        try:
            value = await sim.call_tool(frame.tool, frame.args)
        except BaseException:
            self.metrics.tool_call_seconds.observe(time.perf_counter() - started)
            self.take_turn()  # its error is the agent's next turn
            raise
        elapsed = time.perf_counter() - started
        # The event, then the result: written now, the bookkeeping after (nothing awaits in
        # between, so time cannot move before the agent's turn is taken).
        self._queue(Result(id=frame.id, value=value))
        self.metrics.tool_call_seconds.observe(elapsed)
        self.take_turn()  # its result is the agent's next turn
        return _NO_REPLY

    async def _wait_for_notification(self, frame: CallTool) -> None:
        holder = self.holder if self.role is Role.AGENT else None
        try:
            value = await self._sim.call_tool(frame.tool, frame.args, holder=holder)
        except Exception as exc:
            self.take_turn()
            self._error(self._translate(exc, frame))
        else:
            self.take_turn()
            self._queue(Result(id=frame.id, value=value))

    async def _idle(self, frame: Idle) -> Any:
        if self.role is Role.AGENT:
            self._sim.end_lease(self.holder)
        return None

    async def _send_user_message(self, frame: SendUserMessage) -> Any:
        return await self._sim.send_user_message(frame.content)

    async def _pause(self, frame: Pause) -> Any:
        return await self._sim.pause()

    async def _resume(self, frame: Resume) -> Any:
        session = self.session
        assert session is not None
        if session.waiting_for_agent and session.sim.state == "running":
            # Not paused, only held for an agent: `resume` is how a controller starts it.
            session.start_without_hold()
            return session.sim.clock_state()
        state = await session.sim.resume()
        session.start_without_hold()
        return state

    async def _jump(self, frame: Jump) -> Any:
        if frame.next_event:
            return await self._sim.next_event()
        # The frame itself refuses `inclusive: false` with `next_event`.
        if frame.to is not None:
            return await self._sim.jump(to=frame.to, inclusive=frame.inclusive)
        return await self._sim.jump(by=frame.by, inclusive=frame.inclusive)

    async def _tick(self, frame: Tick) -> Any:
        return await self._sim.tick(frame.n)

    async def _set_speed(self, frame: SetSpeed) -> Any:
        sim = self._sim
        async with sim.lane:  # in turn: after a long jump that is under way, say
            return sim.set_speed(frame.speed)

    async def _stop(self, frame: Stop) -> Any:
        return await self._sim.stop(f"stopped by a {self.role.value if self.role else 'client'}")

    async def _create_session(self, frame: CreateSession) -> Any:
        source: str
        if frame.scenario is not None:
            if frame.scenario not in registered_ids():
                raise ProtocolError(
                    ErrorCode.INVALID_FIELD,
                    f"unknown scenario id {frame.scenario!r}: registered ids are "
                    f"{', '.join(registered_ids())}; to run your own scenario, send its ARE "
                    "JSON in `scenario_json`",
                )
            source = frame.scenario
        else:
            assert frame.scenario_json is not None
            if not frame.scenario_json.lstrip().startswith("{"):
                raise ProtocolError(
                    ErrorCode.INVALID_FIELD,
                    "`scenario_json` must be an ARE/Gaia2 scenario as a JSON object (the text "
                    "ARE's JsonScenarioExporter writes)",
                )
            source = frame.scenario_json
        session = await self.registry.create_async(
            source,
            mode=frame.mode,
            speed=frame.speed,
            oracle=frame.oracle,
            import_mode=frame.import_mode,
        )
        return {
            "session_id": session.id,
            "scenario_id": session.scenario_id,
            "import_mode": session.import_mode,
            "judge": session.judge,
            "url": self.registry.ws_url(session.id),
            "epoch": session.epoch,
            "mode": session.sim.clock.mode.value,
            "tokens": {role.value: token for role, token in session.tokens.items()},
        }

    async def _stop_session(self, frame: StopSession) -> Any:
        session = await self.registry.stop(frame.session_id)
        return {
            "session_id": session.id,
            "state": session.sim.state,
            "validation": session.sim.validation,
            "trace": None if session.trace_path is None else str(session.trace_path),
        }

    # -- writing -----------------------------------------------------------------------------

    def _queue(self, frame: ServerFrame, *, after: int | None = None, alone: bool = False) -> None:
        """Queue a reply; it is written after every stream item up to `after` (default: now).

        `alone`: never inside a `batch` (the welcome: clients read it as the first message).
        """
        session = self.session
        assert session is not None
        try:
            data = encode_server_bytes(frame, self.encoding)
        except ProtocolError as exc:  # a value that cannot be encoded: answer with the error
            frame = exc.to_frame(getattr(frame, "id", None))
            data = encode_server_bytes(frame, self.encoding)
        if type(frame) is Error:
            self.metrics.errors[frame.code] += 1
        self._replies.append((len(session.hub.frames) if after is None else after, data, alone))
        self._reply_bytes += len(data)
        self.flush()
        config = self.config
        if (
            len(self._replies) > config.max_pending_replies
            or self._reply_bytes > config.max_pending_reply_bytes
        ) and self._close is None:
            self.metrics.slow_consumer_disconnects += 1
            self.request_close(
                CloseCode.SLOW_CONSUMER,
                f"slow consumer: {len(self._replies)} replies ({self._reply_bytes} bytes) unread; "
                "read your replies, then reconnect with since",
                flush=False,
            )

    def _error(self, error: ProtocolError) -> None:
        if self.session is None:
            return
        self._queue(error.to_frame())

    @property
    def buffered_bytes(self) -> int:
        """What this connection holds for its client now: the socket's user-space buffer plus
        the replies not yet written (the bound in RELIABILITY.md, "Slow consumers")."""
        transport = self.ws.transport
        return (0 if transport is None else transport.get_write_buffer_size()) + self._reply_bytes

    def _pending(self) -> bool:
        session = self.session
        return bool(self._replies) or (session is not None and self.position < session.hub.seq)

    def flush(self) -> None:
        """Write everything pending now, if the socket keeps up; never waits.

        Called by the hub after items were appended, and after each reply is queued. If the
        socket has anything still buffered, the writer task (which waits for it to drain) takes
        over: writing more behind a full buffer would only grow it.
        """
        if self._close is not None or self._writer_done or self.session is None:
            return
        ws = self.ws
        if ws.protocol.state is not State.OPEN:
            return
        transport = ws.transport
        if transport.get_write_buffer_size() == 0:
            self.drained_at = len(self.session.hub.frames)
            self._write_some()
        if self._pending() or transport.get_write_buffer_size() > 0:
            self._wake.set()

    def _write_some(self) -> None:
        """Write what is due, in order, in one write of at most about WRITE_BYTES.

        The order: a reply goes out once every stream item that existed when it was made has
        gone out (the AGENT event of a tool call precedes its result); stream items otherwise.
        Everything is complete WebSocket messages (hub.py): websockets' own keepalive and close
        frames interleave with them whole.
        """
        session = self.session
        assert session is not None
        hub = session.hub
        replies = self._replies
        position = self.position
        seq = len(hub.frames)
        if not replies:
            # The common case (every observer, always): stream items only, and subscribers at
            # the same position are handed the same bytes.
            if position < seq:
                end, _, data = hub.wire_run(
                    position, seq, text=self._text, batch=self.batch, budget=WRITE_BYTES
                )
                self.position = end
                self.ws.transport.write(data)
                self.bytes_written += len(data)
                self.metrics.frames_sent += end - position
            return
        frames = hub.frames
        text = self._text
        batch = self.batch
        out: list[bytes | memoryview] = []  # pieces of whole messages, in order
        group: list[bytes | memoryview] = []  # payloads of the batch being gathered
        group_size = 0
        size = 0
        sent = 0
        while True:
            if replies and replies[0][0] <= position:
                payload: bytes | memoryview = replies[0][1]
                if sent and size + len(payload) > WRITE_BYTES:
                    break
                alone = replies.popleft()[2]
                self._reply_bytes -= len(payload)
            else:
                stop = min(seq, replies[0][0]) if replies else seq
                if position >= stop:
                    break
                wire = frames[position]
                payload = wire.text_frame if text else wire.binary_frame
                if sent and size + len(payload) > WRITE_BYTES:
                    break
                position += 1
                alone = False
                if not batch:
                    size += len(payload)
                    sent += 1
                    out.append(payload)  # a whole frame already
                    continue
                payload = wire.payload(text)
            size += len(payload)
            sent += 1
            if batch and not alone:
                if group and group_size + len(payload) > BATCH_BYTES:
                    close_group(out, group, text=text)
                    group = []
                    group_size = 0
                group.append(payload)
                group_size += len(payload)
                continue
            if group:
                close_group(out, group, text=text)
                group = []
                group_size = 0
            out.append(ws_header(len(payload), text=text))
            out.append(payload)
        if group:
            close_group(out, group, text=text)
        self.position = position
        if out:
            data = b"".join(out)
            self.ws.transport.write(data)
            self.bytes_written += len(data)
            self.metrics.frames_sent += sent

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
                    await ws.drain()
                    if ws.protocol.state is not State.OPEN:
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
        assert self._close is not None
        code, reason, flush = self._close
        if flush:
            with anyio.move_on_after(self.config.shutdown_grace):
                while self._pending() and not self._writer_done:
                    await self._drained.wait()
        # A writer waiting on a full buffer holds no half-written frame (every write is whole
        # frames), so cancelling it loses nothing the client could use.
        self._writer_scope.cancel()
        await self._close_socket(code, reason)
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()


class _NoReply:
    """Marks a handler that queued its own reply (or will, later)."""


_NO_REPLY: Any = _NoReply()


def unauthorized_hello(frame: Hello) -> ProtocolError:
    """The refusal of a hello whose token does not open its role here, or whose session does
    not exist: the same words either way (only the request's id and role differ)."""
    return ProtocolError(
        ErrorCode.UNAUTHORIZED,
        f"this token does not open role {frame.role.value!r} of the session at this URL (or "
        "there is no such session); use the token printed for that role, or the admin token",
        id=frame.id,
    )
