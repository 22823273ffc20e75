"""The client's I/O: one session over one WebSocket at a time, reconnected across breaks.

This layer only moves bytes and waits; every decision is made by the cores it drives:
:class:`~areasync.client.stream.ResumableStream` (seq, epoch, gaps, resets),
:class:`~areasync.client.requests.RequestTable` (ids, replies, what a break means for a
request), :class:`~areasync.client.handshake.Handshake` (what hello asks for, what a refusal
means) and :mod:`~areasync.client.reconnect` (close codes, HTTP statuses, backoff).

- **One reader task** owns the socket's receiving side and feeds every frame to the cores, so
  any number of tasks can have requests in flight on the one socket while stream items keep
  flowing in between.
- **One supervisor task** opens connections, says hello (resuming after the last item held),
  and after a break reconnects with backoff until the client is closed or gives up.
- Requests and stream iterators only ever wait on events this layer sets when the cores report
  a change.

The connection runs on asyncio (``websockets``' asyncio implementation) and uses anyio task
groups.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from areasync.client.errors import AreasyncError, ConnectionClosedError, fresh, from_frame
from areasync.client.handshake import Handshake, Refusal
from areasync.client.options import ConnectOptions
from areasync.client.reconnect import (
    BACK_OFF_CLOSE_CODES,
    FATAL_CLOSE_CODES,
    LONGEST_BACKOFF,
    RETRYABLE_STATUSES,
    after_close,
    backoff,
    closed_before_welcome,
    status_error,
)
from areasync.client.requests import PendingRequest, RequestTable
from areasync.client.stream import Generation, ResumableStream, StreamGap
from areasync.protocol import (
    Batch,
    ClientFrame,
    ClockItem,
    EndedItem,
    Error,
    EventItem,
    Hello,
    NotificationItem,
    Pong,
    ProtocolError,
    Result,
    StreamItem,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)

__all__ = ["ResumingConnection"]

logger = logging.getLogger("areasync.client")


class _Fatal(Exception):
    """Opening a connection failed in a way a retry would repeat; wraps the error to raise."""

    def __init__(self, error: AreasyncError) -> None:
        super().__init__(str(error))
        self.error = error


class _AskPlainly(Exception):
    """The server refused an optional field of the hello: say hello again without it."""


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


class ResumingConnection:
    """A session's connection that survives breaks: the I/O over the client's cores."""

    def __init__(self, options: ConnectOptions) -> None:
        self.options = options
        self.stream = ResumableStream(options.since)
        self.requests = RequestTable()
        self.handshake = Handshake(options.role, options.token, batch=options.batch)
        self.welcome: Welcome | None = None
        self.closed = False
        self.reconnects = 0
        self._ws_options = {"max_size": 64 * 2**20, **options.ws_options}
        self._wakers: dict[int, anyio.Event] = {}
        self._link: _Link | None = None
        self._link_changed = anyio.Event()
        self._links = 0
        self._stream_changed = anyio.Event()
        self._ended = anyio.Event()
        self._close_error: AreasyncError | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stop_scope: anyio.CancelScope | None = None
        self._open_error: BaseException | None = None
        self._closing = False

    @property
    def opened(self) -> bool:
        """Whether :meth:`open` was called (whatever happened since)."""
        return self._runner is not None

    @property
    def connected(self) -> bool:
        return self._link is not None and not self._link.closed.is_set()

    # -- lifecycle -----------------------------------------------------------------------

    async def open(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the client is already open")
        # The connection runs in an asyncio task of its own, so that opening and closing the
        # client may happen in different tasks (pytest fixtures do that) without crossing
        # anyio cancel scopes; requests and iterators only ever wait on events it sets.
        loop = asyncio.get_running_loop()
        started: asyncio.Future[None] = loop.create_future()
        self._runner = loop.create_task(
            self._run(started), name=f"areasync client {self.options.url}"
        )
        try:
            await started
        except BaseException:
            self.closed = True
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
            if not self.closed:
                self._shut(ConnectionClosedError(f"the client failed: {exc!r}"))
            raise

    async def aclose(self) -> None:
        """Close the connection (code 1000) and stop reconnecting; iterators end quietly."""
        runner = self._runner
        if runner is None or self._closing:
            return
        self._closing = True
        if not self.closed:
            self._shut(None)
        link = self._link
        if link is not None:
            with anyio.move_on_after(2, shield=True):
                await link.ws.close()
        if self._stop_scope is not None:
            self._stop_scope.cancel()
        await asyncio.gather(runner, return_exceptions=True)

    def _shut(self, error: AreasyncError | None) -> None:
        """Mark the client closed: fail what waits, end (or fail) iterators."""
        self.closed = True
        self._close_error = error
        failure = error or ConnectionClosedError("the client was closed")
        self._wake(self.requests.fail_all(lambda: fresh(failure)))
        self._link_changed.set()
        self._ended.set()
        self._stream_has_changed()

    def closed_error(self, message: str) -> AreasyncError:
        """The error for using a closed client: why it closed, if it was not its owner."""
        if self._close_error is not None:
            return fresh(self._close_error)
        return ConnectionClosedError(message)

    # -- supervision ---------------------------------------------------------------------

    async def _supervise(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        failures = 0
        started = False
        while not self.closed:
            try:
                link = await self._connect_once()
            except _Fatal as fatal:
                error = fatal.error
                if started:
                    error = ConnectionClosedError(f"reconnecting failed: {fatal.error}")
                    error.__cause__ = fatal.error
                self._give_up(error, started, task_status)
                return
            except (OSError, TimeoutError, InvalidHandshake, AreasyncError, StreamGap) as exc:
                failures += 1
                limit = self.options.max_reconnect_attempts
                if not self.options.reconnect or (limit is not None and failures > limit):
                    url = self.options.url
                    error = ConnectionClosedError(
                        f"could not connect to {url} after {failures} attempt(s): {exc}"
                    )
                    error.__cause__ = exc
                    self._give_up(error, started, task_status)
                    return
                logger.info("connecting to %s failed (%s); retrying", self.options.url, exc)
                await anyio.sleep(self._backoff(failures))
                continue
            failures = 0
            if started:
                self.reconnects += 1
            else:
                started = True
                task_status.started()
            if not await self._serve_until_broken(link):
                return

    def _give_up(
        self, error: AreasyncError, started: bool, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        if started:
            self._shut(error)
        else:
            self._open_error = error  # raised by open() to the caller of connect()
            task_status.started()

    async def _serve_until_broken(self, link: _Link) -> bool:
        """Serve a connection until it ends; True if the client should reconnect."""
        await self._serve(link)
        if self.closed or not self._should_reconnect(link):
            return False
        logger.info(
            "connection to %s closed (%s %s); resuming after seq %d",
            self.options.url,
            link.close_code,
            link.close_reason,
            self.stream.seq,
        )
        if link.close_code in BACK_OFF_CLOSE_CODES:
            await anyio.sleep(self._backoff(LONGEST_BACKOFF))
        return True

    def _should_reconnect(self, link: _Link) -> bool:
        """After a connection ended: reconnect, or close the client (and say why)."""
        again, error = after_close(
            link.close_code,
            link.close_reason,
            ended=self.stream.ended is not None,
            reconnect=self.options.reconnect,
        )
        if not again:
            self._shut(error)
        return again

    def _backoff(self, failures: int) -> float:
        return backoff(
            failures, initial=self.options.backoff_initial, longest=self.options.backoff_max
        )

    # -- opening a connection ------------------------------------------------------------

    async def _connect_once(self) -> _Link:
        """Open a WebSocket, say hello (resuming if we can), wait for the welcome."""
        with anyio.fail_after(self.options.open_timeout or math.inf):
            while True:
                ws = await self._open_socket()
                try:
                    welcome = await self._hello(ws)
                except _AskPlainly:
                    await _close_quietly(ws)
                    continue  # the handshake now asks without the refused field, at once
                except BaseException:
                    await _close_quietly(ws)
                    raise
                break
        self._links += 1
        link = _Link(ws=ws, welcome=welcome, number=self._links, closed=anyio.Event())
        self.welcome = welcome
        if self.stream.welcome(welcome) is not None:
            self._stream_has_changed()
        self._link = link
        self._link_changed.set()
        self._link_changed = anyio.Event()
        return link

    async def _open_socket(self) -> ClientConnection:
        try:
            return await ws_connect(self.options.url, open_timeout=None, **self._ws_options)
        except InvalidStatus as exc:
            status = exc.response.status_code
            error = status_error(status, self.options.url, exc.response.body)
            if status in RETRYABLE_STATUSES:
                raise error from exc
            raise _Fatal(error) from exc
        except InvalidURI as exc:
            raise _Fatal(AreasyncError(f"invalid URL {self.options.url!r}: {exc}")) from exc

    async def _hello(self, ws: ClientConnection) -> Welcome:
        """Say hello on ``ws``; the welcome, or raise what the refusal means."""
        hello = self.handshake.hello(*self.stream.resume_point())
        await ws.send(encode_client_frame(hello, self.options.encoding))
        while True:
            try:
                data = await ws.recv()
            except ConnectionClosed as exc:
                code, reason = (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (None, "")
                error = closed_before_welcome(code, reason)
                if code in FATAL_CLOSE_CODES:
                    raise _Fatal(error) from exc
                raise error from exc
            frame = _decode(data)
            if isinstance(frame, Welcome):
                self.handshake.welcomed(hello, frame)
                return frame
            if isinstance(frame, Error):
                self._refused(hello, frame)
            # Anything else before the welcome is out of protocol; ignore it, as for unknown types.

    def _refused(self, hello: Hello, frame: Error) -> None:
        """Raise what the server's refusal of ``hello`` means."""
        error = from_frame(frame)
        refusal = self.handshake.refused(hello, frame)
        if refusal is Refusal.ASK_PLAINLY:
            raise _AskPlainly(error.message)
        if refusal is Refusal.RETRY:
            raise error
        if refusal is Refusal.REPLAY_UNAVAILABLE and self.stream.replay_unavailable(error.message):
            # Our position is ahead of the server's stream: it is not the stream we followed.
            # The generation ended; the next hello starts over without `since`.
            self._stream_has_changed()
            raise error
        raise _Fatal(error)

    # -- reading -------------------------------------------------------------------------

    async def _serve(self, link: _Link) -> None:
        """Read the connection until it closes."""
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
                frames = frame.frames if type(frame) is Batch else (frame,)
                held = self._held()
                try:
                    self._take_in(frames)
                finally:
                    # Iterators wake only for new items (a reply or a duplicate is none).
                    if self._held() != held:
                        self._stream_has_changed()
        except ConnectionClosed:
            pass
        except StreamGap as gap:
            logger.warning("%s; reconnecting to resume", gap)
            with anyio.move_on_after(1, shield=True):
                await link.ws.close(1002, "seq gap")
        finally:
            self.handshake.link_ended(delivered=link.received > 0)
            link.close_code, link.close_reason = link.ws.close_code, link.ws.close_reason or ""
            link.closed.set()
            # Requests sent on this connection: their replies can no longer come.
            self._wake(self.requests.link_lost(link.number))

    def _take_in(self, frames: Iterable[Any]) -> None:
        """Feed decoded frames to the cores, in order; wake the requests they settle."""
        for frame in frames:
            if isinstance(frame, EventItem | NotificationItem | ClockItem | EndedItem):
                self.stream.receive(frame)
                if self.stream.ended is not None:
                    self._ended.set()
            elif isinstance(frame, Result | Error | Pong):
                request = self.requests.receive(frame)
                if request is not None:
                    self._wake((request,))
                elif isinstance(frame, Error) and frame.id is None:
                    logger.warning("error from the server: %s: %s", frame.code, frame.message)
            # A second welcome, or a frame type added later: nothing to do.

    def _held(self) -> int:
        """How many stream items this client holds in the current generation."""
        generation = self.stream.generation
        return -1 if generation is None else len(generation.items)

    def _stream_has_changed(self) -> None:
        changed, self._stream_changed = self._stream_changed, anyio.Event()
        changed.set()

    def _wake(self, requests: Iterable[PendingRequest]) -> None:
        for request in requests:
            waker = self._wakers.get(request.id)
            if waker is not None:
                waker.set()

    # -- requests ------------------------------------------------------------------------

    async def request(self, make: Callable[[int], ClientFrame], *, resend: bool = False) -> Any:
        """Send the frame ``make(id)`` builds and wait for its reply: its value, or raise its
        error. ``resend``: send it again after a break (read-only requests only)."""
        if self.closed:
            raise self.closed_error("the client is closed")
        request = self.requests.add(make, resend=resend)
        try:
            data = encode_client_frame(request.frame, self.options.encoding)
        except ProtocolError as exc:
            self.requests.remove(request)
            raise AreasyncError(exc.message, code=exc.code.value) from None
        try:
            while not request.done:
                link = await self._current_link(request)
                if link is None:
                    break
                waker = self._wakers[request.id] = anyio.Event()
                self.requests.sent(request, link.number)
                with contextlib.suppress(ConnectionClosed):
                    await link.ws.send(data)  # if it broke, the reader tells the table
                await waker.wait()
        finally:
            self.requests.remove(request)
            self._wakers.pop(request.id, None)
        return request.outcome()

    async def _current_link(self, request: PendingRequest) -> _Link | None:
        """The open connection to send on, waiting through a reconnect if need be."""
        while not request.done:
            link = self._link
            if link is not None and not link.closed.is_set():
                return link
            if self.closed:
                request.settle(error=self.closed_error("the client is closed"))
                return None
            await self._link_changed.wait()
        return None

    # -- the stream ----------------------------------------------------------------------

    def generation(self) -> Generation:
        """The generation new iterators follow."""
        generation = self.stream.generation
        if generation is None:
            if self.closed:
                raise self.closed_error("the client is closed")
            raise RuntimeError("the client is not connected yet: use `async with connect(...)`")
        return generation

    async def follow(self, generation: Generation, position: int) -> AsyncIterator[StreamItem]:
        """The items of ``generation`` from index ``position`` on, live, until ``ended``."""
        while True:
            while position < len(generation.items):
                item = generation.items[position]
                position += 1
                yield item
                if isinstance(item, EndedItem):
                    return
            if generation.reset is not None:
                raise fresh(generation.reset)
            if self.closed:
                if self._close_error is not None:
                    raise fresh(self._close_error)
                return
            await self._stream_changed.wait()

    async def wait_ended(self) -> EndedItem:
        """Wait for the session's ``ended`` item and return it."""
        await self._ended.wait()
        if self.stream.ended is None:
            raise self.closed_error("the client closed before the session ended")
        return self.stream.ended


# -- helpers --------------------------------------------------------------------------------


def _decode(data: str | bytes) -> Any:
    try:
        return decode_server_frame(data)
    except ProtocolError as exc:
        # A frame we cannot read is the server's bug; skipping it keeps the connection useful.
        logger.warning("undecodable frame from the server skipped: %s", exc)
        return None


async def _close_quietly(ws: ClientConnection) -> None:
    with anyio.move_on_after(1, shield=True):
        await ws.close()
