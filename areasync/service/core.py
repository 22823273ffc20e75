"""A connection's protocol state machine, with no I/O: frames in, things to do out.

The server side of one WebSocket client, in the manner of websockets' `ServerProtocol` or h11's
`Connection`: `ConnectionCore` is handed what the client sent (`hello` for its first message,
`receive` for every later one) and answers with *actions* - a reply to queue, a refusal to send
before closing, a close, or a request to carry out on the session (`Call`). It never reads,
writes, sleeps or awaits: the asyncio layer (`connection.py`) does that, carries out each
`Call` (`requests.perform`) and hands the outcome back (`succeeded` / `failed`), and the core
answers with the reply frame. A test drives it with frames and no socket.

What it decides:

- the hello: the first frame must be a `hello` whose token opens its role of an existing
  session with room for it (hello.py: one table of refusals and their close codes),
  replaying from `since` when that is in the stream;
- the gate: once open, every frame is checked for size, decoding, the rate limit, the role
  (roles.py), the session's state and, for a request that adds to the session, its bounds
  (budget.py) before anything runs;
- the lane a request runs in (inline, aside for `SystemApp__wait_for_notification`, aside with
  read-ahead for a long control: preempt.py);
- the error each failure is answered with (`error_for`).

Errors are data: a bad frame, a forbidden or failed request each get an `error` frame and change
nothing; only a broken contract closes the connection (see `CloseCode`).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from typing import TYPE_CHECKING, Any, TypeAlias

from areasync.protocol import SERVER_CAPABILITIES, Capability
from areasync.protocol.codec import Encoding, decode_client_frame
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
from areasync.service import preempt, roles
from areasync.service.hello import (
    Refusal,
    hello_frame,
    hello_refusal,
    replay_kind,
    replay_start,
)
from areasync.service.limits import TokenBucket, strike_bucket

if TYPE_CHECKING:
    from areasync.service.admission import Admission
    from areasync.service.registry import SessionRegistry
    from areasync.service.session import Session

logger = logging.getLogger("areasync.service")

# A pending socket evicted from a full pre-hello pool (admission.py) gets this long to finish
# the closing handshake before its TCP connection is aborted: it has sent nothing, so there is
# nothing to flush, and the pool it left is for sockets that want in.
EVICTED_CLOSE_TIMEOUT = 1.0


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


Action: TypeAlias = Reply | Refuse | Close | Call


class ConnectionCore:
    """The protocol of one client connection of session `session_id`, from hello to close."""

    def __init__(
        self,
        registry: SessionRegistry,
        session_id: str,
        *,
        name: str = "conn",
        admission: Admission | None = None,
        admission_key: Any = None,
        takes_place: bool = True,
        verified: bool = False,
    ) -> None:
        self.registry = registry
        # The hello's token was checked before it came here (by the front, which hands the
        # socket over: `handoff.py`); the hello carries none.
        self.verified = verified
        # Whether it needs one of its session's places (`max_connections_per_session`): not
        # an adapter's client that is never attached to the session (gaia2-cli's).
        self.takes_place = takes_place
        self.config = registry.config
        self.metrics = registry.metrics
        self.session_id = session_id
        self.name = name
        self.admission = admission
        self._admission_key = admission_key  # what `admission` knows the socket by
        self.admitted = False  # counted as authenticated by `admission`: release it at the end
        self.phase = Phase.AWAITING_HELLO
        self.session: Session | None = None
        self.role: Role | None = None
        self.allowed: frozenset[type[Any]] = frozenset()  # what the role may send (roles.py)
        self.encoding = Encoding.JSON
        self.batch = False  # hello.batch: frames due together go as one `batch` message
        self.close_asked: Close | None = None
        rate = self.config.rate
        self._bucket = None if rate is None else TokenBucket(rate, self.config.burst)
        # Refusals a connection may collect while rate limited (limits.py); none left: 4029.
        self._strikes = None if rate is None else strike_bucket(rate, self.config.rate_strikes)

    def __repr__(self) -> str:
        role = self.role.value if self.role else "-"
        return f"<Connection {self.name} {role}@{self.session_id}>"

    # -- hello -------------------------------------------------------------------------------

    def evict(self) -> None:
        """The pre-hello pool is full: stop waiting for this connection's hello."""
        if self.phase in (Phase.AWAITING_HELLO, Phase.CLOSING):
            self.phase = Phase.EVICTED

    def hello(self, data: str | bytes | None) -> list[Action]:
        """The first message (None: none came in time, or the connection was evicted)."""
        config = self.config
        if data is None:
            evicted = self.phase is Phase.EVICTED
            self.phase = Phase.REFUSED
            if evicted:
                self.metrics.pending_evictions += 1
                reason = (
                    f"evicted: the server's {config.max_pending_hellos} places for connections "
                    "that have not said hello are taken by newer ones; reconnect and send hello "
                    "first"
                )
                return [Close(CloseCode.HELLO_TIMEOUT, reason, within=EVICTED_CLOSE_TIMEOUT)]
            reason = f"no hello within {config.hello_timeout:g} s; send hello first"
            return [Close(CloseCode.HELLO_TIMEOUT, reason)]
        self.metrics.frames_received += 1
        self.encoding = Encoding.JSON if isinstance(data, str) else Encoding.MSGPACK
        try:
            frame = self._decode_hello(data)
            session, start = self._admit(frame)
        except Refusal as refusal:
            self.phase = Phase.REFUSED
            error = error_frame(refusal.error)
            self.metrics.errors[error.code] += 1
            reason = f"{refusal.error.code.value}: {refusal.error.message}"
            return [Refuse(error, refusal.code, reason)]
        return [self._welcome(frame, session, start)]

    def _decode_hello(self, data: str | bytes) -> Hello:
        if len(data) > self.config.max_frame_bytes:
            raise Refusal(self.too_large(len(data)), CloseCode.TOO_LARGE)
        return hello_frame(data)

    def _admit(self, frame: Hello) -> tuple[Session, int]:
        """The session `frame` may join and the seq to replay from, or the refusal."""
        session = self.registry.get(self.session_id)
        allowed = self.verified or self.registry.tokens.allows(
            frame.token, self.session_id, frame.role
        )
        start = 0 if session is None else replay_start(frame, session)
        refusal = hello_refusal(self, frame, session, allowed, start)
        if refusal is not None:
            raise refusal
        assert session is not None
        return session, start

    def take_admission(self) -> bool:
        """Count the connection as authenticated (False: the server is full)."""
        if self.admission is None:
            return True
        if not self.admission.admit(self._admission_key):
            return False
        self.admitted = True
        return True

    def _welcome(self, frame: Hello, session: Session, start: int) -> Reply:
        # A close asked before the hello was read (a shutdown) still holds.
        self.phase = Phase.OPEN if self.close_asked is None else Phase.CLOSING
        self.session = session
        self.role = frame.role
        self.allowed = roles.ALLOWED[frame.role]
        self.batch = frame.batch and Capability.BATCH in SERVER_CAPABILITIES
        welcome = Welcome(
            id=frame.id,
            session_id=session.id,
            role=frame.role,
            epoch=session.epoch,
            seq=session.hub.seq,
            scenario_id=session.scenario_id,
            clock=session.sim.clock_state(),
            replay=replay_kind(frame, session),
            capabilities=list(SERVER_CAPABILITIES),
            restored=session.sim.restored,
            forked_from=session.forked_from,
        )
        return Reply(welcome, after=start, alone=True)

    # -- requests ----------------------------------------------------------------------------

    def receive(self, data: str | bytes) -> list[Action]:
        """A message from a welcomed client: what to do about it."""
        if self.phase is not Phase.OPEN:
            # Closing: later frames are not answered (a flood costs no more replies).
            return []
        self.metrics.frames_received += 1
        config = self.config
        if len(data) > config.max_frame_bytes:
            reason = f"frame above the {config.max_frame_bytes}-byte limit; send smaller frames"
            return [
                self._error(self.too_large(len(data))),
                *self.close(CloseCode.TOO_LARGE, reason),
            ]
        try:
            frame = decode_client_frame(data)
        except ProtocolError as exc:
            return [self._error(exc)]
        if self._bucket is not None and not self._bucket.take():
            return self._rate_limited(frame)
        try:
            return [self._dispatch(frame, len(data))]
        except ProtocolError as exc:
            return [self._error(exc, frame)]

    def _rate_limited(self, frame: ClientFrame) -> list[Action]:
        config = self.config
        assert self._strikes is not None
        if not self._strikes.take():
            # Out of strikes: this and every later frame is dropped unanswered.
            self.metrics.rate_limit_disconnects += 1
            reason = (
                f"kept sending while rate limited (more than {config.rate_strikes} refusals); "
                "back off, then reconnect with since"
            )
            return self.close(CloseCode.RATE_LIMITED, reason)
        error = ProtocolError(
            ErrorCode.RATE_LIMITED,
            f"more than {config.rate:g} requests per second (bursts up to {config.burst}); this "
            f"`{frame_tag(frame)}` was dropped: slow down and send it again",
            id=frame.id,
        )
        return [self._error(error)]

    def _dispatch(self, frame: ClientFrame, size: int) -> Action:
        """The gate, then what to do with a frame (of `size` bytes) that passed it."""
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
        if kind in roles.MUTATING and session.sim.ended:
            raise ProtocolError(
                ErrorCode.SESSION_ENDED,
                f"session {session.id!r} has ended ({session.sim.state}): only list_tools, "
                "get_state and ping still work; create a new session to go on",
            )
        if kind in roles.MUTATING:
            refusal = session.budget.refusal(frame, size)  # its bounds (budget.py)
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
            case CallTool(tool=tool) if tool == WAIT_TOOL:
                # Returns when a notification arrives (or the timeout passes in simulated
                # time): aside, so that this connection's later frames are answered meanwhile.
                return Call(frame, Lane.ASIDE)
            case _ if kind in preempt.LONG_CONTROLS:
                # Aside, so that this connection can read (and announce) a stop meanwhile.
                return Call(frame, Lane.LONG)
            case _:
                return Call(frame)

    def succeeded(self, frame: ClientFrame, value: Any) -> list[Action]:
        """The request `frame` returned `value`: its result."""
        return [Reply(Result(id=frame.id, value=value))]

    def failed(self, frame: ClientFrame, exc: Exception) -> list[Action]:
        """The request `frame` raised `exc`: the error it is answered with."""
        return [self._error(self.error_for(exc, frame), frame)]

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
                return exc.protocol_error(ended=session is not None and session.sim.ended)
        logger.error("internal error answering %s on %r", frame_tag(frame), self, exc_info=exc)
        return ProtocolError(
            ErrorCode.INTERNAL,
            f"`{frame_tag(frame)}` failed inside areasync ({type(exc).__name__}: {exc}); this is "
            "a bug, please report it with the frame that caused it",
        )

    def too_large(self, size: int) -> ProtocolError:
        return ProtocolError(
            ErrorCode.TOO_LARGE,
            f"the frame is {size} bytes, above the server's {self.config.max_frame_bytes}-byte "
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
