"""An admin's WebSocket through the front: relayed, its admin controls carried out by the front.

An admin connected to any session (hello role `admin`) may create, stop and fork any session,
as on a server of its own (`service/connection/requests.py`). A session worker cannot do that for
it: it holds only its own sessions, and it must have no way to ask the front, or another worker, to
act with the admin's rights. So the front does not hand an admin's socket over. It hands the
session's worker one end of a socketpair instead (the same `Handoff`: the verified role, the
hello without its token), keeps the client's socket, and relays (`relay`):

* every frame the client sends goes on to the worker as it came, except `create_session`,
  `stop_session` and `fork_session` (`admin_control`), which the front decodes and carries
  out itself over the pool's channel (`AdminControls`: on the least loaded worker, on the
  worker holding the session, on the worker holding the fork's source), answering with the
  result or error frame a server gives;
* what the worker sends goes to the client as it came: it is never read as a request.

A fork is made on the worker holding its source (which has its records and snapshots): within
that worker's share of `max_sessions`, as a server admits it. Controls run in the order they
came on the connection, each before the next frame is read; a frame sent before one to the
worker may still be under way there. Only an admin's connections are relayed (rare and short:
the dashboard's admin requests); every other socket is handed over whole and no frame of it
crosses the front.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import anyio
import msgspec
from websockets.asyncio.client import ClientConnection
from websockets.client import ClientProtocol
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

from areasync.protocol.codec import Encoding, decode_client_frame, encode_server_frame
from areasync.protocol.errors import CloseCode, ErrorCode, ProtocolError
from areasync.protocol.frames import (
    CreateSession,
    ForkSession,
    Result,
    StopSession,
    error_frame,
)
from areasync.protocol.merged import PlacedSession
from areasync.sessionworker.answers import Seat
from areasync.workers.pool import CallFailed, WorkerLost

if TYPE_CHECKING:
    from websockets.asyncio.connection import Connection

    from areasync.front.seats import Seats
    from areasync.workers.pool import Worker

__all__ = ["AdminControl", "AdminControls", "admin_control", "relay", "worker_end"]

logger = logging.getLogger("areasync.front")

AdminControl: TypeAlias = CreateSession | StopSession | ForkSession
_CONTROLS = (CreateSession, StopSession, ForkSession)
# A close the worker's end gave no code for (its process ended): the client retries.
_NO_CODE = frozenset({1005, 1006})


class FrontView(Protocol):
    """What the controls use of the front (`server.Front`)."""

    seats: Seats
    restoring: set[str]

    async def locate(self, session_id: str) -> Worker | None: ...

    async def call(self, worker: Worker, method: str, *args: Any) -> Any: ...

    async def create_session(self, **request: Any) -> PlacedSession: ...

    async def create_on(self, worker: Worker, method: str, *args: Any) -> PlacedSession: ...


def admin_control(data: str | bytes, max_bytes: int) -> AdminControl | None:
    """The admin control `data` holds, which the front carries out; None for any other frame
    (one it cannot decode included: the worker answers it as a server does)."""
    if len(data) > max_bytes:
        return None
    try:
        frame = decode_client_frame(data)
    except ProtocolError:
        return None
    return frame if isinstance(frame, _CONTROLS) else None


class AdminControls:
    """An admin's controls, carried out by the front wherever the session is."""

    def __init__(self, front: FrontView) -> None:
        self.front = front

    async def carry_out(self, frame: AdminControl) -> Any:
        """The result value a server's `perform` gives for `frame`; raises ProtocolError as
        it does."""
        try:
            match frame:
                case CreateSession():
                    fields = msgspec.to_builtins(frame)
                    del fields["id"], fields["type"]
                    return await self.front.create_session(**fields)
                case StopSession(session_id=session_id):
                    return await self._stop(session_id)
                case ForkSession(session_id=session_id, at_seq=at_seq, at_time=at_time):
                    worker = await self._holder(session_id, "fork")
                    return await self.front.create_on(
                        worker, "fork_session", session_id, at_seq, at_time
                    )
        except (WorkerLost, CallFailed) as exc:
            raise ProtocolError(
                ErrorCode.CAPACITY,
                f"the session's worker failed ({exc}); retry: GET /api/sessions shows what "
                "it did meanwhile",
            ) from exc
        raise AssertionError(f"not an admin control: {type(frame).__name__}")

    async def _stop(self, session_id: str) -> dict[str, Any]:
        front = self.front
        worker = await self._holder(session_id, "stop")
        answer: dict[str, Any] = await front.call(worker, "stop_session", session_id)
        refused(answer)
        front.seats.seat(worker.name, [Seat(session_id, False, None)])
        return answer

    async def _holder(self, session_id: str, what: str) -> Worker:
        front = self.front
        if session_id in front.restoring:
            raise ProtocolError(
                ErrorCode.CAPACITY,
                f"session {session_id!r} is being restored on another worker; {what} it again "
                "in a second",
            )
        worker = await front.locate(session_id)
        if worker is None:
            raise ProtocolError(
                ErrorCode.SESSION_NOT_FOUND,
                f"no session {session_id!r} to {what}: GET /api/sessions lists the sessions",
            )
        return worker


def refused(answer: dict[str, Any]) -> None:
    """Raise the ProtocolError a worker's answer carries as plain data, if any."""
    if "error" in answer:
        error = answer["error"]
        raise ProtocolError(ErrorCode(error["code"]), error["message"])


async def worker_end(
    sock: socket.socket, *, max_size: int, close_timeout: float, write_limit: int
) -> ClientConnection:
    """The front's end of the socketpair whose other end went to the worker: a client
    connection already OPEN (the worker's end is a handed-over socket, `handoff.adopt`)."""
    protocol = ClientProtocol(
        parse_uri("ws://worker.invalid/"),
        state=State.OPEN,
        max_size=max_size,
        logger=logger,
    )
    connection = ClientConnection(
        protocol,
        ping_interval=None,
        ping_timeout=None,
        close_timeout=close_timeout,
        write_limit=write_limit,
    )
    connection.response = Response(101, "Switching Protocols", Headers())  # no response comes
    connection.response_rcvd.set_result(None)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.create_connection(lambda: connection, sock=sock)
    return connection


async def relay(
    client: Connection,
    worker: ClientConnection,
    encoding: Encoding,
    controls: AdminControls,
    max_bytes: int,
) -> None:
    """Relay between an admin's `client` and its session's `worker` until either closes (the
    other is then closed with its code), carrying out the admin controls (module docstring)."""

    async def up() -> None:
        async for data in client:
            control = admin_control(data, max_bytes)
            if control is None:
                await worker.send(data)
                continue
            try:
                reply: Any = Result(id=control.id, value=await controls.carry_out(control))
            except ProtocolError as exc:
                reply = error_frame(exc, control.id)
            await client.send(encode_server_frame(reply, encoding))

    async def down() -> None:
        async for data in worker:
            await client.send(data)

    async def until_closed(pump: Any) -> None:
        with contextlib.suppress(ConnectionClosed):
            await pump()
        group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(until_closed, up)
        group.start_soon(until_closed, down)
    code, reason = worker.close_code, worker.close_reason or ""
    if code is None or code in _NO_CODE:  # its process ended, or the client left first
        code, reason = CloseCode.CAPACITY, "the session's worker went; reconnect with since"
    for connection, closing in ((client, (code, reason)), (worker, ())):
        try:  # a no-op for the one already closed
            await connection.close(*closing)
        except Exception:  # gone meanwhile: nothing to say to it
            logger.debug("closing a relayed connection", exc_info=True)
