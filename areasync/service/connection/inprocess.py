"""A session's client inside the server process: a WebSocket connection's path, minus the socket.

The adapters for other protocols (OpenEnv's episodes in `openenv/episode.py`, gaia2-cli's HTTP
routes in `gaia2cli/http.py`) act on sessions for clients that never open an areasync
WebSocket. Each request of theirs goes through an `InProcessClient`, so that it meets exactly
what a WebSocket frame meets, decided by the same code, and the adapters cannot drift from the
WebSocket (or from each other):

- the hello (`ConnectionCore.hello`): the token opens the role here, the session has room;
- the gate (`ConnectionCore.receive`, handed the frame itself: no bytes to weigh or decode):
  the rate limit with its strikes, the role's permission (`roles.py`), the session's state
  and bounds, the lane;
- the request itself (`requests.perform`), its outcome as the reply the core makes of it
  (`ConnectionCore.failed`: the code, the message) and the agent's turn where the core puts
  it (`TakeTurn`: no await in between, so fast-mode time cannot move first);
- what the connection layer adds (`websocket.py`, `fanout/outbox.py`): an error counted per code, a
  tool call's duration observed, and the answer held until the records logged before it are
  durable (`StreamHub.durable`), as a WebSocket reply is held by the outbox.

What the client is to the session beyond its requests (a stream subscriber, an agent holding
its turn) is its owner's: an OpenEnv episode attaches itself to the session, the gaia2-cli
adapter does not (its `MessageFeed` follows the stream).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from areasync.protocol.errors import CloseCode, ErrorCode
from areasync.protocol.frames import CallTool, ClientFrame, Error, Hello, Result, Role, frame_tag
from areasync.protocol.values import NotJSONError, check_fields
from areasync.service.connection import requests
from areasync.service.connection.door import ServerDoor
from areasync.service.connection.protocol import (
    Action,
    Call,
    Close,
    ConnectionCore,
    Count,
    Refuse,
    Reply,
    TakeTurn,
    limits_of,
)

if TYPE_CHECKING:
    from areasync.service.sessions.registry import SessionRegistry
    from areasync.service.sessions.session import Session

NOT_DURABLE = (
    "the session's journal did not confirm the request in time (its disk failed or stalls): "
    "a restarted server may not know it; check the server's log"
)


class RequestError(Exception):
    """A request answered with an `error` frame: its `code` and `message`, what a WebSocket
    client would have received. `closed`: the core closed the connection (a WebSocket client
    would be disconnected: `InProcessClient.close_code` says with what); the client takes no
    more requests."""

    def __init__(self, code: ErrorCode, message: str, *, closed: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.closed = closed


class NotDurableError(Exception):
    """The session's journal did not confirm the request's records in time (or failed)."""

    def __init__(self) -> None:
        super().__init__(NOT_DURABLE)
        self.message = NOT_DURABLE


async def until_durable(session: Session | None) -> None:
    """Return once every record `session` logged so far is durable; else NotDurableError."""
    if session is not None and not await session.hub.durable():
        raise NotDurableError()


def error_of(registry: SessionRegistry, exc: Exception, frame: ClientFrame) -> RequestError:
    """`exc`, raised carrying out `frame` outside any session's client (an OpenEnv episode's
    `create_session`), as the error a WebSocket client would get for it."""
    core: ConnectionCore[Session] = ConnectionCore(limits_of(registry.config), "")
    error = core.error_for(exc, frame)
    return RequestError(error.code, error.message)


class InProcessClient:
    """One client of one session, in process: `hello` once, then `request` per frame.

    `holder` names its fast-mode lease; `as_agent`: its requests are performed as the
    session's agent's whatever its role (the admin's OpenEnv episode is the agent: the wait
    tool hands its lease back); `takes_place`: it is attached to the session as a client (an
    OpenEnv episode), so its hello needs a place (`max_connections_per_session`)."""

    def __init__(
        self,
        registry: SessionRegistry,
        *,
        name: str,
        holder: str,
        as_agent: bool = False,
        takes_place: bool = True,
    ) -> None:
        self.registry = registry
        self.metrics = registry.metrics
        self.name = name
        self.holder = holder
        self.as_agent = as_agent
        self.takes_place = takes_place
        self.core: ConnectionCore[Session] | None = None
        self.closed = False  # the core closed it: it answers no more requests
        self.closed_at: float | None = None  # when (time.monotonic())
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return repr(self.core) if self.core is not None else f"<InProcessClient {self.name}>"

    @property
    def session(self) -> Session | None:
        return None if self.core is None else self.core.session

    @property
    def role(self) -> Role | None:
        return None if self.core is None else self.core.role

    @property
    def close_code(self) -> int | None:
        """The code a WebSocket client would have been closed with (None: not closed)."""
        close = None if self.core is None else self.core.close_asked
        return None if close is None else close.code

    @property
    def allowed(self) -> frozenset[type[Any]]:
        """The frame types its role may send (`roles.py`)."""
        return frozenset() if self.core is None else self.core.allowed

    def hello(self, session: Session, role: Role, token: str | None) -> None:
        """Join `session` as `role` with `token` (None: checked already, by the front that
        handed the connection over): a RequestError if the hello is refused."""
        registry = self.registry
        core: ConnectionCore[Session] = ConnectionCore(
            limits_of(registry.config), session.id, name=self.name, takes_place=self.takes_place
        )
        door = ServerDoor(registry.tokens, session.id, verified=token is None)
        hello = Hello(id=0, role=role, token=token or "")
        for action in core.hello(hello, session, door):
            match action:
                case Refuse(frame=error):
                    self.metrics.errors[error.code] += 1
                    raise RequestError(ErrorCode(error.code), error.message, closed=True)
                case Count(tally=tally):
                    self.metrics.count(tally)
        self.core = core

    async def request(
        self,
        frame: ClientFrame,
        *,
        then: Callable[[bool], None] | None = None,
        hold: bool = True,
    ) -> Any:
        """`frame` through the gate and `requests.perform`: its result's value, once durable;
        else RequestError (or NotDurableError). `then(failed)` is called where the core says
        it is the agent's turn (after a tool call: `TakeTurn`), before anything is awaited;
        the adapter takes its turn there.
        `hold=False`: the value as soon as the request is carried out; the caller makes its
        answer then and holds it (`until_durable`) until the records are durable, so that
        what happens meanwhile (a fast clock run on) is not in it."""
        core = self.core
        if core is None:
            raise RequestError(ErrorCode.BAD_STATE, "no session joined: say hello first")
        frame = msgspec.structs.replace(frame, id=next(self._ids))
        self._check_values(frame)
        actions = core.receive(frame)
        for action in actions:
            match action:
                case Count(tally=tally):
                    self.metrics.count(tally)
                case Call(frame=call):
                    return await self._carry_out(core, call, then, hold)
                case Reply(frame=Error()):
                    pass
                case Reply():  # answered by the core itself (a ping's pong): nothing ran
                    return None
        raise self._refusal(core, actions)

    def _check_values(self, frame: ClientFrame) -> None:
        """Refuse what encoding `frame` as JSON would change (NaN, the infinities: null) or
        cannot write (a lone surrogate), and what no journal holds (`protocol.values`), as
        the WebSocket's decoding refuses it: before the gate, nothing done."""
        try:
            check_fields(frame)
        except NotJSONError as exc:
            code = (
                ErrorCode.INVALID_ARGS if isinstance(frame, CallTool) else ErrorCode.INVALID_FIELD
            )
            self.metrics.errors[code] += 1
            raise RequestError(code, f"`{frame_tag(frame)}` cannot be taken: {exc}") from None

    def _refusal(self, core: ConnectionCore[Session], actions: list[Action]) -> RequestError:
        """What the gate answered instead of a call: its error, and whether it closed."""
        error = next(
            (a.frame for a in actions if isinstance(a, Reply) and isinstance(a.frame, Error)),
            None,
        )
        close = next((a for a in actions if isinstance(a, Close)), core.close_asked)
        if close is not None and not self.closed:
            self.closed, self.closed_at = True, time.monotonic()
        if error is not None:
            self.metrics.errors[error.code] += 1
            return RequestError(ErrorCode(error.code), error.message, closed=close is not None)
        assert close is not None  # the core answers every frame it does not close on
        code = (
            ErrorCode.RATE_LIMITED if close.code == CloseCode.RATE_LIMITED else ErrorCode.BAD_STATE
        )
        return RequestError(code, close.reason, closed=True)

    async def _carry_out(
        self,
        core: ConnectionCore[Session],
        frame: ClientFrame,
        then: Callable[[bool], None] | None,
        hold: bool,
    ) -> Any:
        session, role = core.session, core.role
        assert session is not None and role is not None
        tool_call = type(frame) is CallTool
        started = time.perf_counter()
        try:
            value = await requests.perform(
                frame,
                session=session,
                role=Role.AGENT if self.as_agent else role,
                holder=self.holder,
                registry=self.registry,
            )
        except Exception as exc:
            answer = core.failed(frame, exc)
            failed = True
        else:
            answer = core.succeeded(frame, value)
            failed = False
        finally:
            if tool_call:
                self.metrics.tool_call_seconds.observe(time.perf_counter() - started)
        reply: Reply | None = None
        for action in answer:
            match action:
                case TakeTurn():
                    if then is not None:
                        then(failed)
                case Reply():
                    reply = action
        if hold:
            await until_durable(session)  # the outbox holds a WebSocket reply until then
        assert reply is not None
        if isinstance(reply.frame, Result):
            return reply.frame.value
        assert isinstance(reply.frame, Error)
        self.metrics.errors[reply.frame.code] += 1
        raise RequestError(ErrorCode(reply.frame.code), reply.frame.message)
