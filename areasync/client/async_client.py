"""The async client: one session over one WebSocket, kept alive across disconnects.

:class:`Client` is the API: requests as methods, the stream as async iterators. Underneath it,
the I/O (:mod:`areasync.client.connection`) drives cores that do no I/O at all, and what the
client guarantees is decided there:

- **Requests are matched to replies by id** (:mod:`areasync.client.requests`): any number of
  tasks can have requests in flight on the one socket, and stream items keep flowing in
  between.
- **The stream is kept, numbered and deduplicated by ``seq``** (:mod:`areasync.client.stream`):
  the client accepts exactly ``last_seq + 1`` next, drops anything it already has (a replay
  overlapping what arrived before the break) and treats a jump as a broken connection (it
  reconnects and asks for the missing part). Iterators read from this history, so whoever
  iterates sees one contiguous sequence whatever happened to the socket.
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
- **Optional features are negotiated** (:mod:`areasync.client.handshake`): the client asks for
  what the server's welcome offers (``welcome.capabilities``), never guessing from an error.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from types import TracebackType
from typing import Any

import msgspec

from areasync.client.connection import ResumingConnection
from areasync.client.errors import AreasyncError
from areasync.client.options import ConnectOptions
from areasync.client.sessions import CreatedSession, StoppedSession
from areasync.protocol import (
    CallTool,
    ClientFrame,
    ClockState,
    CreateSession,
    Encoding,
    EndedItem,
    EventItem,
    EventRecord,
    ForkSession,
    GetState,
    Idle,
    ImportMode,
    Jump,
    ListTools,
    Mode,
    NotificationItem,
    NotificationRecord,
    Pause,
    Ping,
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
)
from areasync.protocol.records import WAIT_TOOL, Validation

__all__ = ["WAIT_TOOL", "Client", "Connect", "connect"]


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
      event and result together. What the client hands you is the same either way. Granted
      by servers that offer it in ``welcome.capabilities``; a server older than the field
      refuses it, and the client then asks again without it, at once.
    - ``ws_options``: extra keyword arguments for ``websockets.asyncio.client.connect``.

    Also usable without ``async with``: ``client = await connect(...)``, then
    ``await client.aclose()``.
    """
    return Connect(
        Client(
            ConnectOptions(
                url=url,
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
    )


class Connect:
    """What :func:`connect` returns: an async context manager, or awaitable, giving a Client."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def __aenter__(self) -> Client:
        return await self._open_and_return()

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
        await self._client.open()
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

    def __init__(self, options: ConnectOptions) -> None:
        self._connection = ResumingConnection(options)
        self._stream = self._connection.stream

    # -- state ---------------------------------------------------------------------------

    @property
    def options(self) -> ConnectOptions:
        """How this client connects (the arguments of :func:`connect`)."""
        return self._connection.options

    @property
    def url(self) -> str:
        return self.options.url

    @property
    def role(self) -> Role:
        return self.options.role

    @property
    def encoding(self) -> Encoding:
        return self.options.encoding

    @property
    def welcome(self) -> Welcome:
        """The server's welcome on the current (or last) connection."""
        welcome = self._connection.welcome
        if welcome is None:
            raise RuntimeError("the client is not connected yet: use `async with connect(...)`")
        return welcome

    @property
    def capabilities(self) -> frozenset[str]:
        """The optional features the server offers (``welcome.capabilities``)."""
        return frozenset(self.welcome.capabilities)

    @property
    def session_id(self) -> str:
        return self.welcome.session_id

    @property
    def scenario_id(self) -> str:
        return self.welcome.scenario_id

    @property
    def epoch(self) -> str | None:
        """The identity of the stream this client follows; sent back when it reconnects."""
        return self._stream.epoch

    @property
    def seq(self) -> int:
        """The seq of the last stream item received (the resume point)."""
        return self._stream.seq

    @property
    def clock(self) -> ClockState:
        """The latest clock state the server announced (welcome, then ``clock`` items)."""
        clock = self._stream.clock
        return self.welcome.clock if clock is None else clock

    @property
    def now(self) -> float:
        """Simulated time as of the latest clock state, event or notification received.

        In fast mode the clock moves without announcing itself; every event and notification
        carries its time, so this is exact whenever the agent has just been handed a turn.
        """
        return self._stream.now

    @property
    def connected(self) -> bool:
        return self._connection.connected

    @property
    def closed(self) -> bool:
        return self._connection.closed

    @property
    def ended(self) -> EndedItem | None:
        """The session's ``ended`` item once it has arrived, else None."""
        return self._stream.ended

    @property
    def reconnects(self) -> int:
        """How many times the client reconnected after a broken connection."""
        return self._connection.reconnects

    @property
    def resets(self) -> int:
        """How many times the server could not resume the stream (see StreamResetError)."""
        return self._stream.resets

    @property
    def history(self) -> list[StreamItem]:
        """Every stream item of the current epoch this client received, in seq order."""
        generation = self._stream.generation
        return [] if generation is None else list(generation.items)

    def items_since(self, seq: int) -> list[StreamItem]:
        """The stream items after ``seq`` this client holds (current epoch), in order."""
        generation = self._stream.generation
        return [] if generation is None else generation.after(seq)

    # -- requests ------------------------------------------------------------------------

    async def list_tools(self) -> list[ToolInfo]:
        """The session's tools (public names ``App__method``) with their arguments."""
        value = await self._connection.request(lambda id: ListTools(id=id), resend=True)
        return msgspec.convert(value, list[ToolInfo])

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> Any:
        """Call an ARE tool by public name; returns its result as JSON data.

        Arguments as a mapping, as keywords, or both (keywords win):
        ``call_tool("EmailClientV2__send_email", recipients=[...], subject="...")``.
        """
        args = {**(arguments or {}), **kwargs}
        return await self._connection.request(lambda id: CallTool(id=id, tool=name, args=args))

    # `timeout` is simulated seconds, ARE's tool argument, not a wall-clock timeout.
    async def wait_for_notification(self, timeout: int) -> list[NotificationRecord]:  # noqa: ASYNC109
        """ARE's ``SystemApp__wait_for_notification``: release the agent's turn until a
        notification arrives or ``timeout`` simulated seconds pass (a timeout is a notification
        too). Returns the notifications that arrived meanwhile, in order.
        """
        generation, start = self._stream.generation, self.seq
        await self._connection.request(
            lambda id: CallTool(id=id, tool=WAIT_TOOL, args={"timeout": timeout})
        )
        if generation is None or generation is not self._stream.generation:
            return []  # the stream was reset meanwhile: nothing is known to be "since then"
        return [
            item.notification
            for item in generation.after(start)
            if isinstance(item, NotificationItem)
        ]

    async def idle(self, seen: int | None = None) -> None:
        """Release the agent's busy lease without a timeout: in fast mode the clock may jump
        to the next due item; the agent gets its turn back with the next notification.

        ``seen``: the seq of the last stream item the agent has read. If a notification went
        out after it, the turn stays with the agent: that notification is on its stream, and
        time waits for the agent to read it. An agent that waits for news passes it; one that
        is done (whatever comes next) leaves it out.
        """
        await self._connection.request(lambda id: Idle(id=id, seen=seen))

    async def get_state(
        self, apps: list[str] | None = None, *, at_seq: int | None = None
    ) -> dict[str, Any]:
        """The apps' state (all, or those named), as ARE's ``get_state`` of each app; with
        `at_seq`, as it was where the stream had reached that seq (the server rebuilds it as
        a fork cut there would start: it costs what a fork costs)."""
        value = await self._connection.request(
            lambda id: GetState(id=id, apps=apps, at_seq=at_seq), resend=True
        )
        if not isinstance(value, dict):
            raise AreasyncError(f"get_state answered {type(value).__name__}, not an object")
        return value

    async def send_user_message(self, content: str) -> Any:
        """Write to the agent as the user (ARE's ``send_message_to_agent``; user role)."""
        return await self._connection.request(lambda id: SendUserMessage(id=id, content=content))

    async def ping(self) -> float:
        """Round trip to the server, in wall seconds."""
        started = time.perf_counter()
        await self._connection.request(lambda id: Ping(id=id), resend=True)
        return time.perf_counter() - started

    # clock controls (controller role)

    async def pause(self) -> ClockState:
        """Pause the session's clock; returns the clock state."""
        return _clock(await self._connection.request(lambda id: Pause(id=id)))

    async def resume(self) -> ClockState:
        """Resume a paused clock from where it stopped (no jump)."""
        return _clock(await self._connection.request(lambda id: Resume(id=id)))

    async def jump(
        self, *, to: float | None = None, by: float | None = None, inclusive: bool = True
    ) -> ClockState:
        """Move simulated time forward to ``to`` (absolute) or ``by`` seconds; due items fire
        on the way, each at its own time.

        ``inclusive=False`` stops just before the target's own items: the clock rests at
        exactly the target with what is due there not yet run (it runs at the target on the
        session's next step), so an agent's next tool call is logged at the target, ahead of
        those items. Needs a server that offers ``jump_inclusive`` (see :attr:`capabilities`;
        older ones refuse the field by name)."""
        if (to is None) == (by is None):
            raise ValueError("jump needs exactly one of `to` (a time) or `by` (seconds)")
        return _clock(
            await self._connection.request(
                lambda id: Jump(id=id, to=to, by=by, inclusive=inclusive)
            )
        )

    async def next_event(self) -> ClockState:
        """Jump to the next due item and run it."""
        return _clock(await self._connection.request(lambda id: Jump(id=id, next_event=True)))

    async def tick(self, n: int = 1) -> ClockState:
        """Run ``n`` ticks of the scenario's time increment."""
        return _clock(await self._connection.request(lambda id: Tick(id=id, n=n)))

    async def set_speed(self, speed: float) -> ClockState:
        """Set the realtime speed (simulated seconds per wall second); never a jump."""
        return _clock(await self._connection.request(lambda id: SetSpeed(id=id, speed=speed)))

    async def stop(self) -> Validation | None:
        """End the session now; returns ARE's validation result. ``ended`` follows on the
        stream."""
        value = await self._connection.request(lambda id: Stop(id=id))
        return None if value is None else msgspec.convert(value, Validation)

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
        per role. ``import_mode`` None: the server's default (another needs a server that
        offers ``import_mode``, see :attr:`capabilities`). Admin role only."""
        if (scenario is None) == (scenario_json is None):
            raise ValueError("create_session needs exactly one of `scenario` or `scenario_json`")
        how = Mode(mode)
        imported = None if import_mode is None else ImportMode(import_mode)
        value = await self._connection.request(
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

    async def fork_session(
        self, session_id: str, *, at_seq: int | None = None, at_time: float | None = None
    ) -> CreatedSession:
        """Create a new session from session ``session_id``'s creation and inputs up to a cut:
        where its stream had reached ``at_seq``, or before anything past simulated time
        ``at_time`` (neither: as it is now). Its stream up to the cut is the source's; it has
        its own id, epoch and tokens (returned as by :meth:`create_session`). Admin role only."""
        value = await self._connection.request(
            lambda id: ForkSession(id=id, session_id=session_id, at_seq=at_seq, at_time=at_time)
        )
        return msgspec.convert(value, CreatedSession)

    async def stop_session(self, session_id: str) -> StoppedSession:
        """Stop a session of this server by id (its subscribers get ``ended``); returns its
        end state, ARE's validation and its trace's path. Admin role only."""
        value = await self._connection.request(lambda id: StopSession(id=id, session_id=session_id))
        return msgspec.convert(value, StoppedSession)

    async def request(self, make: Callable[[int], ClientFrame], *, resend: bool = False) -> Any:
        """Send any client frame built by ``make(id)`` and return its result's value.

        For frames without a method here (a frame type newer than this client). ``resend``: send
        it again after a reconnect if the reply was lost (only for requests that change nothing).
        """
        return await self._connection.request(make, resend=resend)

    # -- the stream ----------------------------------------------------------------------

    def stream(self, since: int | None = None) -> AsyncIterator[StreamItem]:
        """Every stream item after ``since`` (default: all this client has received), then live
        ones, contiguous by ``seq``, until the session's ``ended`` item (included).

        Ends quietly when the client is closed by its owner; raises ConnectionClosedError if it
        gave up reconnecting, and StreamResetError if the server could not resume the stream.
        """
        generation = self._connection.generation()
        return self._connection.follow(generation, generation.position(since))

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
        return await self._connection.wait_ended()

    # -- lifecycle -----------------------------------------------------------------------

    async def open(self) -> None:
        """Connect (what ``async with connect(...)`` does on entry)."""
        await self._connection.open()

    async def aclose(self) -> None:
        """Close the connection (code 1000) and stop reconnecting; iterators end quietly."""
        await self._connection.aclose()

    async def __aenter__(self) -> Client:
        if not self._connection.opened:
            await self._connection.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _clock(value: Any) -> ClockState:
    """Controls answer with the clock state."""
    try:
        return msgspec.convert(value, ClockState)
    except msgspec.ValidationError as exc:
        raise AreasyncError(f"expected a clock state in the reply, got {value!r} ({exc})") from None
