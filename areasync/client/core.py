"""The async client: one session over one WebSocket, kept alive across disconnects.

Why it is shaped this way:

- **One reader task** owns the socket's receiving side. Requests carry a client-chosen ``id``; the
  reader hands each ``result`` / ``error`` / ``pong`` to the request waiting for that id, so any
  number of tasks can have requests in flight on the one socket, and stream items keep flowing
  in between.
- **The stream is kept, numbered and deduplicated by ``seq``.** The server numbers its stream
  items 1, 2, 3, ...; the client accepts exactly ``last_seq + 1`` next, drops anything it already
  has (a replay overlapping what arrived before the break) and treats a jump as a broken
  connection (it reconnects and asks for the missing part). Iterators read from this history, so
  whoever iterates sees one contiguous sequence whatever happened to the socket.
- **Reconnect resumes, never restarts.** After a break the client says
  ``hello{since: last_seq, epoch}`` and the server replays what was missed. If the server cannot
  (``welcome.replay == "reset"``: a new epoch, e.g. it restarted), iterators raise
  :class:`~areasync.client.errors.StreamResetError` at that point rather than silently splicing
  two different streams together.
- **Requests in flight when the socket breaks**: read-only ones (``list_tools``, ``get_state``,
  ``ping``) are sent again on the next connection, transparently; the others (tool calls,
  controls, user messages, ``idle``) fail with the retryable
  :class:`~areasync.client.errors.ConnectionLostError`, because the server may already have
  applied them and sending them twice is not the same as sending them once. Requests made while
  the client is reconnecting wait for the new connection.

The client runs on asyncio (``websockets``' asyncio implementation) and uses anyio task groups.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

import anyio
import anyio.abc
import msgspec
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from areasync.client.errors import (
    AreasyncError,
    ConnectionClosedError,
    ConnectionLostError,
    StreamResetError,
    from_frame,
)
from areasync.client.sessions import CreatedSession, StoppedSession
from areasync.protocol import (
    Batch,
    CallTool,
    ClientFrame,
    ClockItem,
    ClockState,
    CloseCode,
    CreateSession,
    Encoding,
    EndedItem,
    Error,
    ErrorCode,
    EventItem,
    EventRecord,
    GetState,
    Hello,
    Idle,
    ImportMode,
    Jump,
    ListTools,
    Mode,
    NotificationItem,
    NotificationRecord,
    Pause,
    Ping,
    Pong,
    ProtocolError,
    Replay,
    Result,
    Resume,
    Role,
    SendUserMessage,
    SetSpeed,
    Stop,
    StopSession,
    StreamItem,
    Tick,
    ToolInfo,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)

__all__ = ["WAIT_TOOL", "Client", "Connect", "connect"]

logger = logging.getLogger("areasync.client")

WAIT_TOOL: Final = "SystemApp__wait_for_notification"
"""ARE's tool for "nothing to do until something happens"; releases the agent's lease."""

# Close codes after which reconnecting cannot help: the same hello would fail the same way.
_FATAL_CLOSE_CODES: Final = frozenset(
    {CloseCode.BAD_HELLO, CloseCode.UNAUTHORIZED, CloseCode.SESSION_NOT_FOUND, CloseCode.TOO_LARGE}
)
# Close codes after which the client waits (its longest backoff, with jitter) before it
# reconnects: the server asked it to back off (4029), is full (4503), or evicted it from a
# pre-hello pool full of other sockets (4408); reconnecting at once would only add to that.
_BACK_OFF_CLOSE_CODES: Final = frozenset(
    {CloseCode.RATE_LIMITED, CloseCode.CAPACITY, CloseCode.HELLO_TIMEOUT}
)
_BACK_OFF_FAILURES: Final = 64  # as many failures as it takes to reach backoff_max
# Errors in reply to hello after which reconnecting cannot help either.
_RETRYABLE_HELLO_ERRORS: Final = frozenset({ErrorCode.RATE_LIMITED, ErrorCode.CAPACITY})
# HTTP statuses of a refused handshake that are worth retrying (the others are final).
_RETRYABLE_STATUSES: Final = frozenset({408, 425, 429, 500, 502, 503, 504})

# -- client-side bookkeeping ----------------------------------------------------------------


class _Fatal(Exception):
    """Opening a connection failed in a way a retry would repeat; wraps the error to raise."""

    def __init__(self, error: AreasyncError) -> None:
        super().__init__(str(error))
        self.error = error


class _BatchRefused(Exception):
    """The server rejected `hello.batch` (one older than the field): ask again without it."""


class _Gap(Exception):
    """The server skipped seqs: the connection is not trustworthy, resume from the last one."""


@dataclass(eq=False)
class _Link:
    """One WebSocket connection; replaced on every reconnect."""

    ws: ClientConnection
    welcome: Welcome
    number: int
    closed: anyio.Event
    close_code: int | None = None
    close_reason: str = ""
    received: int = 0  # messages read after the welcome


@dataclass(eq=False)
class _Pending:
    """A request waiting for its reply."""

    frame: ClientFrame
    resend: bool  # read-only: safe to send again after a disconnect
    wake: anyio.Event
    link: _Link | None = None  # the connection it was last sent on
    done: bool = False
    value: Any = None
    error: AreasyncError | None = None

    def settle(self, value: Any = None, error: AreasyncError | None = None) -> None:
        if self.done:
            return
        self.done = True
        self.value = value
        self.error = error
        self.wake.set()


class _Generation:
    """The stream items of one epoch, in seq order, as this client received them.

    ``items[i]`` has seq ``base + i + 1``. A reset (new epoch) ends the generation: iterators
    over it raise :class:`StreamResetError`, and new ones follow the next generation.
    """

    def __init__(self, base: int, epoch: str) -> None:
        self.base = base
        self.epoch = epoch
        self.items: list[StreamItem] = []
        self.reset: StreamResetError | None = None
        self._changed = anyio.Event()

    @property
    def last_seq(self) -> int:
        return self.base + len(self.items)

    def append(self, item: StreamItem) -> None:
        self.items.append(item)
        self.notify()

    def notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def wait(self) -> None:
        await self._changed.wait()


# -- connect --------------------------------------------------------------------------------


def connect(
    url: str,
    *,
    role: Role | str = Role.AGENT,
    token: str,
    encoding: Encoding | str = Encoding.JSON,
    reconnect: bool = True,
    since: int | None = None,
    max_reconnect_attempts: int | None = 20,
    backoff_initial: float = 0.05,
    backoff_max: float = 2.0,
    open_timeout: float | None = 10.0,
    batch: bool = True,
    ws_options: Mapping[str, Any] | None = None,
) -> Connect:
    """Connect to a session: ``async with connect(url, role=..., token=...) as client``.

    - ``url``: ``ws://HOST:PORT/sessions/{session_id}``.
    - ``role``: agent, user, observer, controller or admin; ``token`` the session's token for it
      (the server's admin token is accepted for every role).
    - ``encoding``: ``"json"`` (text frames) or ``"msgpack"`` (binary frames, smaller and faster).
    - ``reconnect``: on a broken connection, reconnect with backoff (``backoff_initial`` doubling
      up to ``backoff_max`` seconds, with jitter) and resume the stream; give up after
      ``max_reconnect_attempts`` consecutive failures (None: never). The first connection is
      retried the same way when the failure is transient (connection refused, capacity), so a
      client may start before its server.
    - ``since``: replay the stream from this seq (0: from the start); by default the client
      follows the stream from the moment it attaches.
    - ``open_timeout``: wall seconds for the WebSocket handshake plus hello/welcome.
    - ``batch``: ask the server to send frames that are ready together as one ``batch`` message
      (``hello.batch``): one message to parse per burst of stream items, and a tool call's
      event and result together. What the client hands you is the same either way. A server
      older than the field refuses it; the client then asks again without it, at once.
    - ``ws_options``: extra keyword arguments for ``websockets.asyncio.client.connect``.

    Also usable without ``async with``: ``client = await connect(...)``, then
    ``await client.aclose()``.
    """
    return Connect(
        Client(
            url,
            role=Role(role),
            token=token,
            encoding=Encoding(encoding),
            reconnect=reconnect,
            since=since,
            max_reconnect_attempts=max_reconnect_attempts,
            backoff_initial=backoff_initial,
            backoff_max=backoff_max,
            open_timeout=open_timeout,
            batch=batch,
            ws_options=dict(ws_options or {}),
        )
    )


class Connect:
    """What :func:`connect` returns: an async context manager, or awaitable, giving a Client."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def __aenter__(self) -> Client:
        await self._client._open()
        return self._client

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._client.aclose()

    def __await__(self) -> Any:
        return self._open_and_return().__await__()

    async def _open_and_return(self) -> Client:
        await self._client._open()
        return self._client


# -- the client -----------------------------------------------------------------------------


class Client:
    """A connection to one session. Create it with :func:`connect`; see the module docstring.

    Requests (each raises an :class:`~areasync.client.errors.AreasyncError` subclass on failure):
    :meth:`list_tools`, :meth:`call_tool`, :meth:`wait_for_notification`, :meth:`idle`,
    :meth:`get_state`, :meth:`send_user_message`, :meth:`ping`, and the clock controls
    :meth:`pause`, :meth:`resume`, :meth:`jump`, :meth:`next_event`, :meth:`tick`,
    :meth:`set_speed`, :meth:`stop`. The stream: :meth:`stream`, :meth:`events`,
    :meth:`notifications`, :meth:`wait_ended`.
    """

    def __init__(
        self,
        url: str,
        *,
        role: Role,
        token: str,
        encoding: Encoding,
        reconnect: bool,
        since: int | None,
        max_reconnect_attempts: int | None,
        backoff_initial: float,
        backoff_max: float,
        open_timeout: float | None,
        ws_options: dict[str, Any],
        batch: bool = True,
    ) -> None:
        if since is not None and since < 0:
            raise ValueError(f"since must be a seq >= 0 (0: the whole stream), got {since}")
        self.url = url
        self.role = role
        self.encoding = encoding
        self.reconnect = reconnect
        self.max_reconnect_attempts = max_reconnect_attempts
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.open_timeout = open_timeout
        self.batch = batch
        # After a connection that broke before any message got through (a link cut again and
        # again within one batch's worth of bytes), the next one asks for single frames, which
        # make progress frame by frame; batches resume on the one after.
        self._batch_next = batch
        self._token = token
        self._since = since
        self._ws_options = {"max_size": 64 * 2**20, **ws_options}
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._link: _Link | None = None
        self._link_changed = anyio.Event()
        self._links = 0
        self._epoch: str | None = None
        self._gen: _Generation | None = None
        self._ended: EndedItem | None = None
        self._ended_event = anyio.Event()
        self._clock: ClockState | None = None
        self._now = 0.0
        self._welcome: Welcome | None = None
        self._closed = False
        self._close_error: AreasyncError | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stop_scope: anyio.CancelScope | None = None
        self._open_error: BaseException | None = None
        self._closing = False
        self.reconnects = 0
        """How many times the client reconnected after a broken connection."""
        self.resets = 0
        """How many times the server could not resume the stream (see StreamResetError)."""

    # -- state ---------------------------------------------------------------------------

    @property
    def welcome(self) -> Welcome:
        """The server's welcome on the current (or last) connection."""
        if self._welcome is None:
            raise RuntimeError("the client is not connected yet: use `async with connect(...)`")
        return self._welcome

    @property
    def session_id(self) -> str:
        return self.welcome.session_id

    @property
    def scenario_id(self) -> str:
        return self.welcome.scenario_id

    @property
    def epoch(self) -> str | None:
        """The identity of the stream this client follows; sent back when it reconnects."""
        return self._epoch

    @property
    def seq(self) -> int:
        """The seq of the last stream item received (the resume point)."""
        return 0 if self._gen is None else self._gen.last_seq

    @property
    def clock(self) -> ClockState:
        """The latest clock state the server announced (welcome, then ``clock`` items)."""
        if self._clock is None:
            return self.welcome.clock
        return self._clock

    @property
    def now(self) -> float:
        """Simulated time as of the latest clock state, event or notification received.

        In fast mode the clock moves without announcing itself; every event and notification
        carries its time, so this is exact whenever the agent has just been handed a turn.
        """
        return self._now

    @property
    def connected(self) -> bool:
        return self._link is not None and not self._link.closed.is_set()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def ended(self) -> EndedItem | None:
        """The session's ``ended`` item once it has arrived, else None."""
        return self._ended

    @property
    def history(self) -> list[StreamItem]:
        """Every stream item of the current epoch this client received, in seq order."""
        return [] if self._gen is None else list(self._gen.items)

    def items_since(self, seq: int) -> list[StreamItem]:
        """The stream items after ``seq`` this client holds (current epoch), in order."""
        generation = self._gen
        if generation is None:
            return []
        return generation.items[max(0, seq - generation.base) :]

    # -- requests ------------------------------------------------------------------------

    async def list_tools(self) -> list[ToolInfo]:
        """The session's tools (public names ``App__method``) with their arguments."""
        value = await self._request(lambda id: ListTools(id=id), resend=True)
        return msgspec.convert(value, list[ToolInfo])

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> Any:
        """Call an ARE tool by public name; returns its result as JSON data.

        Arguments as a mapping, as keywords, or both (keywords win):
        ``call_tool("EmailClientV2__send_email", recipients=[...], subject="...")``.
        """
        args = {**(arguments or {}), **kwargs}
        return await self._request(lambda id: CallTool(id=id, tool=name, args=args))

    # `timeout` is simulated seconds, ARE's tool argument, not a wall-clock timeout.
    async def wait_for_notification(self, timeout: int) -> list[NotificationRecord]:  # noqa: ASYNC109
        """ARE's ``SystemApp__wait_for_notification``: release the agent's turn until a
        notification arrives or ``timeout`` simulated seconds pass (a timeout is a notification
        too). Returns the notifications that arrived meanwhile, in order.
        """
        start = self.seq
        generation = self._gen
        await self._request(lambda id: CallTool(id=id, tool=WAIT_TOOL, args={"timeout": timeout}))
        if generation is not self._gen or generation is None:
            return []  # the stream was reset meanwhile: nothing is known to be "since then"
        offset = start - generation.base
        return [
            item.notification
            for item in generation.items[offset:]
            if isinstance(item, NotificationItem)
        ]

    async def idle(self) -> None:
        """Release the agent's busy lease without a timeout: in fast mode the clock may jump
        to the next due item; the agent gets its turn back with the next notification."""
        await self._request(lambda id: Idle(id=id))

    async def get_state(self, apps: list[str] | None = None) -> dict[str, Any]:
        """The apps' state (all, or those named), as ARE's ``get_state`` of each app."""
        value = await self._request(lambda id: GetState(id=id, apps=apps), resend=True)
        if not isinstance(value, dict):
            raise AreasyncError(f"get_state answered {type(value).__name__}, not an object")
        return value

    async def send_user_message(self, content: str) -> Any:
        """Write to the agent as the user (ARE's ``send_message_to_agent``; user role)."""
        return await self._request(lambda id: SendUserMessage(id=id, content=content))

    async def ping(self) -> float:
        """Round trip to the server, in wall seconds."""
        started = time.perf_counter()
        await self._request(lambda id: Ping(id=id), resend=True)
        return time.perf_counter() - started

    # clock controls (controller role)

    async def pause(self) -> ClockState:
        """Pause the session's clock; returns the clock state."""
        return _clock(await self._request(lambda id: Pause(id=id)))

    async def resume(self) -> ClockState:
        """Resume a paused clock from where it stopped (no jump)."""
        return _clock(await self._request(lambda id: Resume(id=id)))

    async def jump(
        self, *, to: float | None = None, by: float | None = None, inclusive: bool = True
    ) -> ClockState:
        """Move simulated time forward to ``to`` (absolute) or ``by`` seconds; due items fire
        on the way, each at its own time.

        ``inclusive=False`` stops just before the target's own items: the clock rests at
        exactly the target with what is due there not yet run (it runs at the target on the
        session's next step), so an agent's next tool call is logged at the target, ahead of
        those items. Needs a server that knows the field (older ones refuse it by name)."""
        if (to is None) == (by is None):
            raise ValueError("jump needs exactly one of `to` (a time) or `by` (seconds)")
        return _clock(
            await self._request(lambda id: Jump(id=id, to=to, by=by, inclusive=inclusive))
        )

    async def next_event(self) -> ClockState:
        """Jump to the next due item and run it."""
        return _clock(await self._request(lambda id: Jump(id=id, next_event=True)))

    async def tick(self, n: int = 1) -> ClockState:
        """Run ``n`` ticks of the scenario's time increment."""
        return _clock(await self._request(lambda id: Tick(id=id, n=n)))

    async def set_speed(self, speed: float) -> ClockState:
        """Set the realtime speed (simulated seconds per wall second); never a jump."""
        return _clock(await self._request(lambda id: SetSpeed(id=id, speed=speed)))

    async def stop(self) -> dict[str, Any] | None:
        """End the session now; returns ARE's validation result. ``ended`` follows on the
        stream."""
        value = await self._request(lambda id: Stop(id=id))
        return value if isinstance(value, dict) else None

    # sessions (admin role: the server's admin token)

    async def create_session(
        self,
        scenario: str | None = None,
        *,
        scenario_json: str | None = None,
        mode: Mode | str = Mode.REALTIME,
        speed: float = 1.0,
        oracle: bool = False,
        import_mode: ImportMode | str | None = None,
    ) -> CreatedSession:
        """Create a session on this server from a registered scenario id (``scenario``) or an
        ARE/Gaia2 scenario as JSON text (``scenario_json``); returns its id, URL and a token
        per role. ``import_mode`` None: the server's default. Admin role only."""
        if (scenario is None) == (scenario_json is None):
            raise ValueError("create_session needs exactly one of `scenario` or `scenario_json`")
        how = Mode(mode)
        imported = None if import_mode is None else ImportMode(import_mode)
        value = await self._request(
            lambda id: CreateSession(
                id=id,
                scenario=scenario,
                scenario_json=scenario_json,
                mode=how,
                speed=speed,
                oracle=oracle,
                import_mode=imported,
            )
        )
        return msgspec.convert(value, CreatedSession)

    async def stop_session(self, session_id: str) -> StoppedSession:
        """Stop a session of this server by id (its subscribers get ``ended``); returns its
        end state, ARE's validation and its trace's path. Admin role only."""
        value = await self._request(lambda id: StopSession(id=id, session_id=session_id))
        return msgspec.convert(value, StoppedSession)

    async def request(self, make: Callable[[int], ClientFrame], *, resend: bool = False) -> Any:
        """Send any client frame built by ``make(id)`` and return its result's value.

        For frames without a method here (a frame type newer than this client). ``resend``: send
        it again after a reconnect if the reply was lost (only for requests that change nothing).
        """
        return await self._request(make, resend=resend)

    # -- the stream ----------------------------------------------------------------------

    def stream(self, since: int | None = None) -> AsyncIterator[StreamItem]:
        """Every stream item after ``since`` (default: all this client has received), then live
        ones, contiguous by ``seq``, until the session's ``ended`` item (included).

        Ends quietly when the client is closed by its owner; raises ConnectionClosedError if it
        gave up reconnecting, and StreamResetError if the server could not resume the stream.
        """
        generation = self._require_generation()
        if since is None:
            start = 0
        else:
            if since < generation.base or since > generation.last_seq:
                raise ValueError(
                    f"since={since} is outside what this client holds (seqs after "
                    f"{generation.base} up to {generation.last_seq}); connect with since=0 to "
                    "receive the whole stream"
                )
            start = since - generation.base
        return self._follow(generation, start)

    async def events(self, since: int | None = None) -> AsyncIterator[EventRecord]:
        """The completed ARE events of :meth:`stream`."""
        async for item in self.stream(since):
            if isinstance(item, EventItem):
                yield item.event

    async def notifications(self, since: int | None = None) -> AsyncIterator[NotificationRecord]:
        """The notifications of :meth:`stream` (user messages, environment notifications)."""
        async for item in self.stream(since):
            if isinstance(item, NotificationItem):
                yield item.notification

    async def wait_ended(self) -> EndedItem:
        """Wait for the session's ``ended`` item and return it."""
        await self._ended_event.wait()
        if self._ended is None:
            raise self._closed_error("the client closed before the session ended")
        return self._ended

    async def _follow(self, generation: _Generation, position: int) -> AsyncIterator[StreamItem]:
        while True:
            while position < len(generation.items):
                item = generation.items[position]
                position += 1
                yield item
                if isinstance(item, EndedItem):
                    return
            if generation.reset is not None:
                raise _fresh(generation.reset)
            if self._closed:
                if self._close_error is not None:
                    raise _fresh(self._close_error)
                return
            await generation.wait()

    # -- lifecycle -----------------------------------------------------------------------

    async def _open(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the client is already open")
        # The connection runs in an asyncio task of its own, so that opening and closing the
        # client may happen in different tasks (pytest fixtures do that) without crossing
        # anyio cancel scopes; requests and iterators only ever wait on events it sets.
        loop = asyncio.get_running_loop()
        started: asyncio.Future[None] = loop.create_future()
        self._runner = loop.create_task(self._run(started), name=f"areasync client {self.url}")
        try:
            await started
        except BaseException:
            self._closed = True
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
            raise

    async def _run(self, started: asyncio.Future[None]) -> None:
        try:
            async with anyio.create_task_group() as task_group:
                self._stop_scope = task_group.cancel_scope
                await task_group.start(self._supervise)
                if self._open_error is not None:
                    started.set_exception(self._open_error)
                    return
                started.set_result(None)
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
                return
            if not self._closed:
                self._shut(ConnectionClosedError(f"the client failed: {exc!r}"))
            raise

    async def aclose(self) -> None:
        """Close the connection (code 1000) and stop reconnecting; iterators end quietly."""
        runner = self._runner
        if runner is None or self._closing:
            return
        self._closing = True
        if not self._closed:
            self._shut(None)
        link = self._link
        if link is not None:
            with anyio.move_on_after(2, shield=True):
                await link.ws.close()
        if self._stop_scope is not None:
            self._stop_scope.cancel()
        await asyncio.gather(runner, return_exceptions=True)

    async def __aenter__(self) -> Client:
        if self._runner is None:
            await self._open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _shut(self, error: AreasyncError | None) -> None:
        """Mark the client closed: fail what waits, end (or fail) iterators."""
        self._closed = True
        self._close_error = error
        failure = error or ConnectionClosedError("the client was closed")
        for pending in list(self._pending.values()):
            pending.settle(error=_fresh(failure))
        self._link_changed.set()
        self._ended_event.set()
        if self._gen is not None:
            self._gen.notify()

    def _closed_error(self, message: str) -> AreasyncError:
        if self._close_error is not None:
            return _fresh(self._close_error)
        return ConnectionClosedError(message)

    # -- connection supervision ----------------------------------------------------------

    async def _supervise(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        failures = 0
        started = False
        while not self._closed:
            try:
                link = await self._connect_once()
            except _Fatal as fatal:
                if not started:
                    # Reported by _open to the caller of connect(), unwrapped.
                    self._open_error = fatal.error
                    task_status.started()
                    return
                self._shut(_closed_because(fatal.error))
                return
            except (OSError, TimeoutError, InvalidHandshake, AreasyncError, _Gap) as exc:
                failures += 1
                limit = self.max_reconnect_attempts
                if not self.reconnect or (limit is not None and failures > limit):
                    error = ConnectionClosedError(
                        f"could not connect to {self.url} after {failures} attempt(s): {exc}"
                    )
                    error.__cause__ = exc
                    if not started:
                        self._open_error = error
                        task_status.started()
                        return
                    self._shut(error)
                    return
                logger.info("connecting to %s failed (%s); retrying", self.url, exc)
                await anyio.sleep(self._backoff(failures))
                continue
            failures = 0
            if started:
                self.reconnects += 1
            else:
                started = True
                task_status.started()
            await self._serve(link)
            if self._closed:
                return
            if not self._should_reconnect(link):
                return
            logger.info(
                "connection to %s closed (%s %s); resuming after seq %d",
                self.url,
                link.close_code,
                link.close_reason,
                self.seq,
            )
            if link.close_code in _BACK_OFF_CLOSE_CODES:
                await anyio.sleep(self._backoff(_BACK_OFF_FAILURES))

    def _should_reconnect(self, link: _Link) -> bool:
        """After a connection ended: reconnect, or close the client (and say why)."""
        code = link.close_code
        if self._ended is not None:
            self._shut(None)  # the stream is complete: nothing more to receive
            return False
        if code in _FATAL_CLOSE_CODES:
            assert code is not None
            self._shut(
                ConnectionClosedError(
                    f"the server closed the connection with {code} "
                    f"({CloseCode(code).name}: {link.close_reason}); reconnecting cannot help"
                )
            )
            return False
        if not self.reconnect:
            self._shut(
                ConnectionClosedError(
                    f"the connection closed ({code} {link.close_reason}) and reconnect=False"
                )
            )
            return False
        return True

    def _backoff(self, failures: int) -> float:
        delay = min(self.backoff_max, self.backoff_initial * 2 ** (failures - 1))
        return delay * random.uniform(0.5, 1.0)  # jitter: clients cut off together spread out

    async def _connect_once(self) -> _Link:
        """Open a WebSocket, say hello (resuming if we can), wait for the welcome."""
        with anyio.fail_after(self.open_timeout if self.open_timeout else math.inf):
            try:
                ws = await ws_connect(self.url, open_timeout=None, **self._ws_options)
            except InvalidStatus as exc:
                status = exc.response.status_code
                error = _status_error(status, self.url, _said(exc.response.body))
                if status in _RETRYABLE_STATUSES:
                    raise error from exc
                raise _Fatal(error) from exc
            except InvalidURI as exc:
                raise _Fatal(AreasyncError(f"invalid URL {self.url!r}: {exc}")) from exc
            try:
                welcome = await self._hello(ws)
            except _BatchRefused:
                # A server older than hello.batch: single frames from now on, straight away.
                self.batch = self._batch_next = False
                with anyio.move_on_after(1, shield=True):
                    await ws.close()
                return await self._connect_once()
            except BaseException:
                with anyio.move_on_after(1, shield=True):
                    await ws.close()
                raise
        self._links += 1
        link = _Link(ws=ws, welcome=welcome, number=self._links, closed=anyio.Event())
        self._adopt(welcome)
        self._link = link
        self._link_changed.set()
        self._link_changed = anyio.Event()
        return link

    async def _hello(self, ws: ClientConnection) -> Welcome:
        if self._gen is None:
            since, epoch = self._since, None
        else:
            since, epoch = self._gen.last_seq, self._epoch
        hello = Hello(
            id=0,
            role=self.role,
            token=self._token,
            since=since,
            epoch=epoch,
            batch=self._batch_next,
        )
        await ws.send(encode_client_frame(hello, self.encoding))
        while True:
            try:
                data = await ws.recv()
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd is not None else None
                reason = exc.rcvd.reason if exc.rcvd is not None else ""
                error = AreasyncError(
                    f"the server closed the connection before its welcome ({code} {reason})",
                    code="connection_lost",
                    retryable=True,
                )
                if code in _FATAL_CLOSE_CODES:
                    raise _Fatal(error) from exc
                raise error from exc
            frame = _decode(data)
            if isinstance(frame, Welcome):
                return frame
            if isinstance(frame, Error):
                error = from_frame(frame)
                if error.error_code in _RETRYABLE_HELLO_ERRORS:
                    raise error
                if (
                    hello.batch
                    and error.error_code is ErrorCode.INVALID_FIELD
                    and "batch" in error.message
                ):
                    raise _BatchRefused(error.message)
                if error.error_code is ErrorCode.REPLAY_UNAVAILABLE and self._gen is not None:
                    # Our position is ahead of the server's stream: it is not the stream we
                    # followed. End this generation and start over without `since`.
                    self._reset(
                        f"the server cannot replay after seq {self._gen.last_seq}: {error.message}",
                        welcome=None,
                    )
                    raise error
                raise _Fatal(error)
            # Anything else before the welcome is out of protocol; ignore it, as for unknown types.

    def _adopt(self, welcome: Welcome) -> None:
        """Take in a welcome: start, continue or reset the stream generation."""
        self._welcome = welcome
        self._clock = welcome.clock
        self._now = max(self._now, welcome.clock.time)  # simulated time never goes back
        generation = self._gen
        if generation is not None and (
            welcome.replay is not Replay.FULL or welcome.epoch != generation.epoch
        ):
            # The server could not resume (or did not say it did): never splice two streams.
            self._reset(
                f"the server could not resume the stream after seq {generation.last_seq} "
                f"(replay={welcome.replay.value}, epoch {generation.epoch!r} -> "
                f"{welcome.epoch!r})",
                welcome=welcome,
            )
            self._now = welcome.clock.time  # a new stream: its own clock
            # After a reset the server sends the new stream from seq 1 (protocol: as for
            # since=0), so the new generation starts empty and receives all of it.
            self._gen = _Generation(0, welcome.epoch)
        elif generation is None:
            self._now = welcome.clock.time
            # Follow from `since` when the server replays it, else from the welcome on.
            since = self._since
            base = since if since is not None and welcome.replay is Replay.FULL else welcome.seq
            self._gen = _Generation(base, welcome.epoch)
        self._since = None  # only ever asked for on the first connection
        self._epoch = welcome.epoch

    def _reset(self, reason: str, *, welcome: Welcome | None) -> None:
        """End the current generation: its iterators raise StreamResetError."""
        generation = self._gen
        assert generation is not None
        self.resets += 1
        generation.reset = StreamResetError(
            f"{reason}. Call stream() again to follow the new stream, and get_state() to "
            "rebuild what you derived from the old one.",
            welcome=welcome,
        )
        generation.notify()
        self._gen = None
        self._epoch = None

    async def _serve(self, link: _Link) -> None:
        """Read the connection until it closes; resend what a previous connection lost."""
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(self._read, link)
            await link.closed.wait()
            task_group.cancel_scope.cancel()
        if self._link is link:
            self._link = None

    async def _read(self, link: _Link) -> None:
        try:
            async for data in link.ws:
                link.received += 1
                frame = _decode(data)
                if type(frame) is Batch:
                    for each in frame.frames:
                        self._dispatch(each)
                elif frame is not None:
                    self._dispatch(frame)
        except ConnectionClosed:
            pass
        except _Gap as gap:
            logger.warning("%s; reconnecting to resume", gap)
            with anyio.move_on_after(1, shield=True):
                await link.ws.close(1002, "seq gap")
        finally:
            self._batch_next = self.batch and link.received > 0
            link.close_code, link.close_reason = link.ws.close_code, link.ws.close_reason or ""
            link.closed.set()
            # Wake requests sent on this connection: their replies can no longer come.
            for pending in list(self._pending.values()):
                if pending.link is link and not pending.done:
                    pending.wake.set()

    def _dispatch(self, frame: Any) -> None:
        if isinstance(frame, EventItem | NotificationItem | ClockItem | EndedItem):
            self._on_item(frame)
        elif isinstance(frame, Result):
            pending = self._pending.get(frame.id)
            if pending is not None:
                pending.settle(value=frame.value)
        elif isinstance(frame, Error):
            pending = self._pending.get(frame.id) if frame.id is not None else None
            if pending is not None:
                pending.settle(error=from_frame(frame))
            else:
                logger.warning("error from the server: %s: %s", frame.code, frame.message)
        elif isinstance(frame, Pong):
            pending = self._pending.get(frame.id)
            if pending is not None:
                pending.settle()
        # A second welcome, or a frame type added later: nothing to do.

    def _on_item(self, item: StreamItem) -> None:
        generation = self._gen
        assert generation is not None
        last = generation.last_seq
        if item.seq <= last:
            return  # already have it: a replay overlapping what arrived before the break
        if item.seq != last + 1:
            raise _Gap(f"stream gap: expected seq {last + 1}, got {item.seq}")
        if isinstance(item, ClockItem):
            self._clock = item.clock
            self._now = max(self._now, item.clock.time)
        elif isinstance(item, EventItem):
            self._now = max(self._now, item.event.time)
        elif isinstance(item, NotificationItem):
            self._now = max(self._now, item.notification.timestamp)
        elif isinstance(item, EndedItem):
            self._ended = item
            self._ended_event.set()
        generation.append(item)

    def _require_generation(self) -> _Generation:
        if self._gen is None:
            if self._closed:
                raise self._closed_error("the client is closed")
            raise RuntimeError("the client is not connected yet: use `async with connect(...)`")
        return self._gen

    # -- request plumbing ----------------------------------------------------------------

    async def _request(self, make: Callable[[int], ClientFrame], *, resend: bool = False) -> Any:
        if self._closed:
            raise self._closed_error("the client is closed")
        request_id = next(self._ids)
        frame = make(request_id)
        try:
            data = encode_client_frame(frame, self.encoding)
        except ProtocolError as exc:
            raise AreasyncError(exc.message, code=exc.code.value) from None
        pending = _Pending(frame=frame, resend=resend, wake=anyio.Event())
        self._pending[request_id] = pending
        try:
            while True:
                link = await self._current_link(pending)
                if link is None:
                    break  # settled (closed) while waiting for a connection
                try:
                    pending.link = link
                    await link.ws.send(data)
                except ConnectionClosed:
                    pass  # handled as a lost reply below
                await pending.wake.wait()
                if pending.done:
                    break
                pending.wake = anyio.Event()
                if not pending.resend:
                    raise ConnectionLostError(
                        f"the connection broke before the reply to `{_tag(frame)}` (id "
                        f"{request_id}) arrived; the server may or may not have applied it",
                        request_id=request_id,
                    )
        finally:
            self._pending.pop(request_id, None)
        if pending.error is not None:
            raise pending.error
        return pending.value

    async def _current_link(self, pending: _Pending) -> _Link | None:
        """The open connection to send on, waiting through a reconnect if need be."""
        while not pending.done:
            link = self._link
            if link is not None and not link.closed.is_set():
                return link
            if self._closed:
                pending.settle(error=self._closed_error("the client is closed"))
                return None
            await self._link_changed.wait()
        return None


# -- helpers --------------------------------------------------------------------------------


def _decode(data: str | bytes) -> Any:
    try:
        return decode_server_frame(data)
    except ProtocolError as exc:
        # A frame we cannot read is the server's bug; skipping it keeps the connection useful.
        logger.warning("undecodable frame from the server skipped: %s", exc)
        return None


def _tag(frame: msgspec.Struct) -> str:
    return str(frame.__struct_config__.tag)


def _clock(value: Any) -> ClockState:
    """Controls answer with the clock state."""
    try:
        return msgspec.convert(value, ClockState)
    except msgspec.ValidationError as exc:
        raise AreasyncError(f"expected a clock state in the reply, got {value!r} ({exc})") from None


def _said(body: bytes | bytearray) -> str:
    """The message of an areasync HTTP error body (`{"error": {"message": ...}}`), or ""."""
    try:
        message = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return ""
    return f": {message}" if isinstance(message, str) else ""


def _status_error(status: int, url: str, said: str = "") -> AreasyncError:
    if status == 404:
        from areasync.client.errors import SessionNotFoundError

        return SessionNotFoundError(f"no session at {url} (HTTP 404)")
    if status in (401, 403):
        from areasync.client.errors import UnauthorizedError

        return UnauthorizedError(
            f"the server refused the connection to {url} (HTTP {status}){said}"
        )
    if status in (429, 503):
        from areasync.client.errors import CapacityError

        return CapacityError(f"the server is busy (HTTP {status}); retrying")
    return AreasyncError(
        f"the server refused the WebSocket handshake for {url} with HTTP {status}{said}",
        retryable=status in _RETRYABLE_STATUSES,
    )


def _fresh(error: AreasyncError) -> AreasyncError:
    """A new exception like ``error``: one instance raised in many tasks would pile up their
    tracebacks on each other."""
    copy: AreasyncError
    if isinstance(error, StreamResetError):
        copy = StreamResetError(error.message, welcome=error.welcome)
    else:
        copy = type(error)(
            error.message, code=error.code, retryable=error.retryable, request_id=error.request_id
        )
    copy.__cause__ = error.__cause__
    return copy


def _closed_because(error: AreasyncError) -> ConnectionClosedError:
    closed = ConnectionClosedError(f"reconnecting failed: {error}")
    closed.__cause__ = error
    return closed
