"""A connection's protocol state machine, with no I/O: frames in, things to do out.

The server side of one WebSocket client, in the manner of websockets' `ServerProtocol` or h11's
`Connection`: `ConnectionCore` is handed what the client sent (`hello` for its first message,
`receive` for every later one, as bytes or as a frame an adapter decoded) and answers with
*actions* - a reply to queue, a refusal to send before closing, a close, a request to carry out
on the session (`Call`), the agent's turn to take (`TakeTurn`), a count to add (`Count`). It
never reads, writes, sleeps or awaits: the asyncio layer (`websocket.py`, or `inprocess.py` for
the adapters' clients) does that, carries out each `Call` (`requests.perform`) and hands the
outcome back (`succeeded` / `failed`), and the core answers with the reply frame.

Its inputs are plain: its `Limits`, a wall clock for the rate limit, its session as the few
calls of `CoreSession` (`sessionview.py`) and, at the hello, the server's `Door` (the token
check and a place: `hello.py`). It imports neither ARE nor any I/O library, and the errors
of the layers below carry their own code (`protocol.errors.CodedError`): a test drives it
with frames, a fake session and no socket.

What it decides:

- the hello: the first frame must be a `hello` whose token opens its role of an existing
  session with room for it (hello.py: one table of refusals and their close codes),
  replaying from `since` when that is in the stream;
- the gate: once open, every frame is checked for size (bytes only), decoding, the rate
  limit, the role (roles.py), the session's state and, for a request that adds to the
  session, its bounds (budget.py) before anything runs;
- the lane a request runs in (inline, aside for `SystemApp__wait_for_notification`, aside with
  read-ahead for a long control: preempt.py);
- fast-mode turn-taking: a tool call's outcome is its agent's next turn, taken right after
  its result is queued, or before its error (and before a wait's answer): nothing awaits in
  between, so time cannot move first;
- the error each failure is answered with (`error_for`).

Errors are data: a bad frame, a forbidden or failed request each get an `error` frame and change
nothing; only a broken contract closes the connection (see `CloseCode`).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Generic, TypeAlias, TypeVar

from areasync.protocol import SERVER_CAPABILITIES, Capability
from areasync.protocol.codec import Encoding, decode_client_frame, encode_client_frame
from areasync.protocol.errors import CloseCode, CodedError, ErrorCode, ProtocolError
from areasync.protocol.frames import (
    CallTool,
    ClientFrame,
    Error,
    Hello,
    Ping,
    Pong,
    Result,
    Role,
    ServerFrame,
    Welcome,
    error_frame,
    frame_tag,
)
from areasync.protocol.records import WAIT_TOOL
from areasync.service.connection import preempt
from areasync.service.connection.hello import (
    Door,
    Refusal,
    hello_frame,
    hello_refusal,
    replay_kind,
    replay_start,
)
from areasync.service.connection.sessionview import CoreSession
from areasync.service.gate import roles
from areasync.service.gate.limits import TokenBucket, strike_bucket
from areasync.service.metrics import Tally

if TYPE_CHECKING:
    from areasync.service.config import ServiceConfig

logger = logging.getLogger("areasync.service")

# A pending socket evicted from a full pre-hello pool (admission.py) gets this long to finish
# the closing handshake before its TCP connection is aborted: it has sent nothing, so there is
# nothing to flush, and the pool it left is for sockets that want in.
EVICTED_CLOSE_TIMEOUT = 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    """What one connection may send, and how long its hello is waited for (`ServiceConfig`'s
    options of the same names: `limits_of`)."""

    max_frame_bytes: int
    hello_timeout: float
    max_pending_hellos: int
    max_connections_per_session: int
    rate: float | None  # requests per second (None: no limit), bursts up to `burst`
    burst: int
    rate_strikes: int


def limits_of(config: ServiceConfig) -> Limits:
    """The connection limits of a server's configuration."""
    return Limits(
        max_frame_bytes=config.max_frame_bytes,
        hello_timeout=config.hello_timeout,
        max_pending_hellos=config.max_pending_hellos,
        max_connections_per_session=config.max_connections_per_session,
        rate=config.rate,
        burst=config.burst,
        rate_strikes=config.rate_strikes,
    )


class Phase(enum.Enum):
    """Where a connection is in its life, as the protocol sees it."""

    AWAITING_HELLO = "awaiting hello"  # accepted; its first frame must be a hello
    EVICTED = "evicted"  # dropped from the full pre-hello pool before its hello came
    OPEN = "open"  # welcomed: its requests are answered
    CLOSING = "closing"  # a close was asked: frames are still read, never answered
    REFUSED = "refused"  # its hello was refused (or never came): the socket is being closed


class Lane(enum.Enum):
    """Where a request runs (see connection.py)."""

    INLINE = "inline"  # in turn: the connection's next frame waits for it
    ASIDE = "aside"  # a task of its own; later frames are answered meanwhile (a wait)
    LONG = "long"  # a task of its own; later frames are read ahead, run after it (preempt.py)


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    """Queue `frame` for the client, after every stream item up to `after` (default: now);
    `alone`: never inside a `batch` (the welcome: clients read it as the first message)."""

    frame: ServerFrame
    after: int | None = None
    alone: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Refuse:
    """Before the welcome: send `frame` straight away, then close with `code` and `reason`."""

    frame: Error
    code: int
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class Close:
    """Close with `code` and `reason`; `flush` first sends what is queued. `within`: seconds
    the closing handshake may take at most (else the configuration's close_timeout)."""

    code: int
    reason: str
    flush: bool = True
    within: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Call:
    """Carry out `frame` on the session (`requests.perform`) in `lane`, then hand its outcome
    back to the core (`succeeded` / `failed`)."""

    frame: ClientFrame
    lane: Lane = Lane.INLINE


@dataclasses.dataclass(frozen=True, slots=True)
class TakeTurn:
    """It is this agent's turn again: in fast mode, time stands still until it is idle
    (`Session`'s leases). Carried out at once, in its place among the actions."""


@dataclasses.dataclass(frozen=True, slots=True)
class Count:
    """Add one to the server's count of `tally` (`Metrics.count`)."""

    tally: Tally


Action: TypeAlias = Reply | Refuse | Close | Call | TakeTurn | Count

TAKE_TURN: Final = TakeTurn()
_FRAME_RECEIVED: Final = Count(Tally.FRAME_RECEIVED)

S = TypeVar("S", bound=CoreSession)


class ConnectionCore(Generic[S]):
    """The protocol of one client connection of session `session_id`, from hello to close.

    `takes_place`: it needs one of its session's places (`max_connections_per_session`);
    not an adapter's client that is never attached to the session (gaia2-cli's). `clock`: the
    wall clock of its rate limit (`limits.py`)."""

    def __init__(
        self,
        limits: Limits,
        session_id: str,
        *,
        name: str = "conn",
        takes_place: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits
        self.takes_place = takes_place
        self.max_connections_per_session = limits.max_connections_per_session
        self.session_id = session_id
        self.name = name
        self.phase = Phase.AWAITING_HELLO
        self.session: S | None = None
        self.role: Role | None = None
        self.allowed: frozenset[type[Any]] = frozenset()  # what the role may send (roles.py)
        self.encoding = Encoding.JSON
        self.batch = False  # hello.batch: frames due together go as one `batch` message
        self.close_asked: Close | None = None
        rate = limits.rate
        self._bucket = None if rate is None else TokenBucket(rate, limits.burst, clock=clock)
        # Refusals a connection may collect while rate limited (limits.py); none left: 4029.
        self._strikes = (
            None if rate is None else strike_bucket(rate, limits.rate_strikes, clock=clock)
        )

    def __repr__(self) -> str:
        role = self.role.value if self.role else "-"
        return f"<Connection {self.name} {role}@{self.session_id}>"

    # -- hello -------------------------------------------------------------------------------

    def evict(self) -> None:
        """The pre-hello pool is full: stop waiting for this connection's hello."""
        if self.phase in (Phase.AWAITING_HELLO, Phase.CLOSING):
            self.phase = Phase.EVICTED

    def hello(
        self, data: str | bytes | Hello | None, session: S | None, door: Door
    ) -> list[Action]:
        """The first message (None: none came in time, or the connection was evicted; a
        `Hello`: one an adapter made), for `session` (None: there is no session
        `session_id`), through the server's `door`."""
        limits = self.limits
        if data is None:
            evicted = self.phase is Phase.EVICTED
            self.phase = Phase.REFUSED
            if evicted:
                reason = (
                    f"evicted: the server's {limits.max_pending_hellos} places for connections "
                    "that have not said hello are taken by newer ones; reconnect and send hello "
                    "first"
                )
                return [
                    Count(Tally.PENDING_EVICTION),
                    Close(CloseCode.HELLO_TIMEOUT, reason, within=EVICTED_CLOSE_TIMEOUT),
                ]
            reason = f"no hello within {limits.hello_timeout:g} s; send hello first"
            return [Close(CloseCode.HELLO_TIMEOUT, reason)]
        self.encoding = Encoding.MSGPACK if isinstance(data, bytes) else Encoding.JSON
        try:
            frame = data if isinstance(data, Hello) else self._decode_hello(data)
            start = self._admit(frame, session, door)
        except Refusal as refusal:
            self.phase = Phase.REFUSED
            error = error_frame(refusal.error)
            reason = f"{refusal.error.code.value}: {refusal.error.message}"
            return [_FRAME_RECEIVED, Refuse(error, refusal.code, reason)]
        assert session is not None
        return [_FRAME_RECEIVED, self._welcome(frame, session, start)]

    def _decode_hello(self, data: str | bytes) -> Hello:
        if len(data) > self.limits.max_frame_bytes:
            raise Refusal(self.too_large(len(data)), CloseCode.TOO_LARGE)
        return hello_frame(data)

    def _admit(self, frame: Hello, session: S | None, door: Door) -> int:
        """The seq `frame` replays from in `session`, or the refusal."""
        view = None if session is None else session.view()
        start = 0 if view is None else replay_start(frame, view)
        refusal = hello_refusal(self, frame, view, door, start)
        if refusal is not None:
            raise refusal
        return start

    def _welcome(self, frame: Hello, session: S, start: int) -> Reply:
        # A close asked before the hello was read (a shutdown) still holds.
        self.phase = Phase.OPEN if self.close_asked is None else Phase.CLOSING
        self.session = session
        self.role = frame.role
        self.allowed = roles.ALLOWED[frame.role]
        self.batch = frame.batch and Capability.BATCH in SERVER_CAPABILITIES
        view = session.view()
        welcome = Welcome(
            id=frame.id,
            session_id=view.id,
            role=frame.role,
            epoch=view.epoch,
            seq=view.seq,
            scenario_id=view.scenario_id,
            clock=session.clock_state(),
            replay=replay_kind(frame, view),
            capabilities=list(SERVER_CAPABILITIES),
            restored=view.restored,
            forked_from=view.forked_from,
        )
        return Reply(welcome, after=start, alone=True)

    # -- requests ----------------------------------------------------------------------------

    def receive(self, data: str | bytes | ClientFrame) -> list[Action]:
        """A message from a welcomed client: what to do about it. `data` is its bytes, or a
        frame the server built (an adapter's translation of input it decoded and checked
        itself): the gate is the same but for the size of bytes and their decoding."""
        if self.phase is not Phase.OPEN:
            # Closing: later frames are not answered (a flood costs no more replies).
            return []
        size: int | None = None
        if isinstance(data, (str, bytes)):  # a tuple: no union built per frame
            size = len(data)
            limit = self.limits.max_frame_bytes
            if size > limit:
                reason = f"frame above the {limit}-byte limit; send smaller frames"
                return [
                    _FRAME_RECEIVED,
                    self._error(self.too_large(size)),
                    *self.close(CloseCode.TOO_LARGE, reason),
                ]
            try:
                frame = decode_client_frame(data)
            except ProtocolError as exc:
                return [_FRAME_RECEIVED, self._error(exc)]
        else:
            frame = data
        if self._bucket is not None and not self._bucket.take():
            return [_FRAME_RECEIVED, *self._rate_limited(frame)]
        try:
            return [_FRAME_RECEIVED, self._dispatch(frame, size)]
        except ProtocolError as exc:
            return [_FRAME_RECEIVED, self._error(exc, frame)]

    def _rate_limited(self, frame: ClientFrame) -> list[Action]:
        limits = self.limits
        assert self._strikes is not None and limits.rate is not None
        if not self._strikes.take():
            # Out of strikes: this and every later frame is dropped unanswered.
            reason = (
                f"kept sending while rate limited (more than {limits.rate_strikes} refusals); "
                "back off, then reconnect with since"
            )
            return [
                Count(Tally.RATE_LIMIT_DISCONNECT),
                *self.close(CloseCode.RATE_LIMITED, reason),
            ]
        error = ProtocolError(
            ErrorCode.RATE_LIMITED,
            f"more than {limits.rate:g} requests per second (bursts up to {limits.burst}); this "
            f"`{frame_tag(frame)}` was dropped: slow down and send it again",
            id=frame.id,
        )
        return [self._error(error)]

    def _dispatch(self, frame: ClientFrame, size: int | None) -> Action:
        """The gate, then what to do with a frame (of `size` bytes; None: one the server
        built, weighed as its JSON) that passed it."""
        session = self.session
        role = self.role
        assert session is not None and role is not None
        kind = type(frame)
        if kind is not Hello and kind not in self.allowed:
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"role {role.value!r} may not send `{frame_tag(frame)}` (it may send: "
                f"{', '.join(roles.allowed_names(role))}); connect with the token of a role "
                "that may",
            )
        if kind in roles.MUTATING:
            if session.ended:
                raise ProtocolError(
                    ErrorCode.SESSION_ENDED,
                    f"session {session.id!r} has ended ({session.state}): only list_tools, "
                    "get_state and ping still work; create a new session to go on",
                )
            if size is None:
                size = len(encode_client_frame(frame, Encoding.JSON))
            refusal = session.refusal(frame, size)  # its bounds (budget.py)
            if refusal is not None:
                raise refusal
        match frame:
            case Hello():
                raise ProtocolError(
                    ErrorCode.BAD_STATE,
                    "this connection already said hello; send hello only once, as the first "
                    "frame (open a new connection to change role)",
                )
            case Ping(id=id):
                return Reply(Pong(id=id))
            case CallTool() if _waits(frame):
                # Returns when a notification arrives (or the timeout passes in simulated
                # time): aside, so that this connection's later frames are answered meanwhile.
                return Call(frame, Lane.ASIDE)
            case _ if kind in preempt.LONG_CONTROLS:
                # Aside, so that this connection can read (and announce) a stop meanwhile.
                return Call(frame, Lane.LONG)
            case _:
                return Call(frame)

    def succeeded(self, frame: ClientFrame, value: Any) -> list[Action]:
        """The request `frame` returned `value`: its result (and, for a tool call, the
        agent's turn: after its result, or before a wait's answer)."""
        reply = Reply(Result(id=frame.id, value=value))
        if type(frame) is not CallTool:
            return [reply]
        if _waits(frame):
            return [TAKE_TURN, reply]
        return [reply, TAKE_TURN]

    def failed(self, frame: ClientFrame, exc: Exception) -> list[Action]:
        """The request `frame` raised `exc`: the error it is answered with (a tool call's
        agent takes its turn first)."""
        reply = self._error(self.error_for(exc, frame), frame)
        if type(frame) is not CallTool:
            return [reply]
        return [TAKE_TURN, reply]

    def abandoned(self, frame: ClientFrame) -> list[Action]:
        """The request `frame` was cancelled while it ran (the connection is going): a tool
        call's agent still takes its turn (a wait's does not: it was idle)."""
        if type(frame) is CallTool and not _waits(frame):
            return [TAKE_TURN]
        return []

    def _error(self, error: ProtocolError, frame: ClientFrame | None = None) -> Reply:
        if error.id is None and frame is not None:
            error.id = frame.id
        return Reply(error_frame(error))

    def error_for(self, exc: Exception, frame: ClientFrame) -> ProtocolError:
        """Any failure of a request, as the error to answer it with: a domain error carries
        its code (`CodedError`); anything else is a bug of ours (`internal`)."""
        match exc:
            case ProtocolError():
                return exc
            case CodedError():
                session = self.session
                return exc.protocol_error(ended=session is not None and session.ended)
        logger.error("internal error answering %s on %r", frame_tag(frame), self, exc_info=exc)
        return ProtocolError(
            ErrorCode.INTERNAL,
            f"`{frame_tag(frame)}` failed inside areasync ({type(exc).__name__}: {exc}); this is "
            "a bug, please report it with the frame that caused it",
        )

    def too_large(self, size: int) -> ProtocolError:
        return ProtocolError(
            ErrorCode.TOO_LARGE,
            f"the frame is {size} bytes, above the server's {self.limits.max_frame_bytes}-byte "
            "limit; send smaller frames (the connection is closed with 4009)",
        )

    # -- closing -----------------------------------------------------------------------------

    def close(self, code: int, reason: str, *, flush: bool = True) -> list[Action]:
        """Ask for a close (the first asked wins); the connection answers nothing more."""
        if self.close_asked is not None:
            return []
        self.close_asked = Close(code, reason, flush)
        if self.phase is Phase.OPEN or self.phase is Phase.AWAITING_HELLO:
            self.phase = Phase.CLOSING
        return [self.close_asked]


def _waits(frame: CallTool) -> bool:
    """The tool call is `SystemApp__wait_for_notification` (it runs aside: `Lane.ASIDE`)."""
    return frame.tool == WAIT_TOOL
