"""Error codes, the protocol's exception and the WebSocket close codes areasync uses.

Errors are data: a request that fails gets an ``error`` frame and the connection stays open;
only a broken connection contract (bad credentials, a slow consumer, an oversized frame) closes
the socket, with one of the close codes below. Both sets are part of the wire contract, so they
live here, in one place, and never change meaning once published.

Error codes (``error.code``). ``retryable`` means: the same request may succeed if sent again
later, unchanged. Everything else needs a different request (or different credentials).

======================  =========  ===========================================================
code                    retryable  meaning
======================  =========  ===========================================================
bad_frame               no         the frame is not a JSON object / msgpack map with a ``type``
                                   (malformed, truncated, invalid UTF-8, nested too deeply)
unknown_type            no         ``type`` names no client frame of this protocol version
invalid_field           no         a field is missing, has the wrong type or value, or is unknown
unknown_tool            no         ``call_tool.tool`` names no tool of this session
invalid_args            no         the tool exists but rejected ``args`` (missing, extra, mistyped)
tool_failed             no         the tool ran and raised; ARE logged the failed call
tool_budget_exceeded    no         the tool ran past what one call may cost (``tool_budget`` wall
                                   seconds, or ``max_listing`` directory entries listed) and was
                                   stopped; ARE logged the failed call; the session goes on. Ask
                                   for less (a simpler pattern, a smaller directory)
forbidden               no         this connection's role may not send this frame
unauthorized            no         the token is missing or wrong for the requested role
session_not_found       no         no session has this id
session_ended           no         the session has ended; only read-only requests still work
bad_state               no         not valid now (e.g. ``resume`` while running, request before
                                   ``hello``, a jump backwards in time)
too_large               no         the frame or a value in it exceeds the server's size limit
rate_limited            yes        too many requests; slow down and resend
capacity                yes        the server is at its session, connection or memory limit; retry
                                   later
internal                no         a bug in areasync; the message says what failed
replay_unavailable      no         the stream after ``hello.since`` cannot be replayed (``since``
                                   is ahead of the stream); reconnect without ``since``
interrupted             no         a ``jump``/``tick`` gave way to a ``stop`` before it was done:
                                   what it fired stays fired, the clock rests where it got to
                                   (the message says how far); the session is ending
session_limit_exceeded  no         the request would take its session past one of its bounds over
                                   its life (input bytes, journal bytes, bytes held in memory); the
                                   message names the bound, its value and the server option that
                                   raises it; nothing ran, and the session goes on (``stop`` is
                                   always accepted)
======================  =========  ===========================================================

WebSocket close codes (``CloseCode``). 1000-1015 are the standard codes of RFC 6455; the
4000-4999 range is ours and mirrors the HTTP status of the same meaning (4001 ~ 401, ...).
"Reconnect" says what a client should do after the close.

====  =================  ==============================================================
code  name               meaning; reconnect
====  =================  ==============================================================
1000  NORMAL             the session ended (after its ``ended`` item) or the client left;
                         no need to reconnect
1001  GOING_AWAY         the server is shutting down or restarting; reconnect later with
                         ``since`` (with a state dir, the session resumes after the restart)
1007  INVALID_DATA       (WebSocket layer) a text frame that is not UTF-8; send UTF-8 text
                         or msgpack in binary frames, then reconnect
1009  MESSAGE_TOO_BIG    (WebSocket layer) a frame above twice ``max_frame_bytes`` was
                         refused unread; send smaller frames
1011  INTERNAL_ERROR     a bug in areasync; reconnect with ``since`` (a client that does not
                         answer keepalive pings gets 4008)
4000  BAD_HELLO          the first frame was not a valid ``hello``; fix it and reconnect
4001  UNAUTHORIZED       token missing or wrong for the role; reconnect with a valid token
4004  SESSION_NOT_FOUND  no session at this URL; do not reconnect to it
4008  SLOW_CONSUMER      the client read too slowly: its socket stopped draining while
                         ``max_lag`` items came, or took no bytes for ``write_timeout``
                         (data waiting, or a keepalive ping unanswered), or it left
                         too many replies unread; reconnect with ``since`` = last seq
                         received (lossless)
4009  TOO_LARGE          the client sent a frame above the size limit; send smaller frames
4029  RATE_LIMITED       the client kept sending after ``rate_limited`` errors until it
                         had none of its ``rate_strikes`` left (later frames were not
                         answered); back off, then reconnect with ``since``
4408  HELLO_TIMEOUT      no ``hello`` arrived in time after the handshake, or the socket
                         was evicted, idle, from the full pool of sockets that have not
                         said hello (``max_pending_hellos``); reconnect after a short
                         backoff and send ``hello`` first
4503  CAPACITY           the server is at its connection limit; retry later with backoff
====  =================  ==============================================================
"""

from __future__ import annotations

import enum
from typing import ClassVar


class ErrorCode(enum.StrEnum):
    """Why a request failed; the ``code`` of an ``error`` frame (see the module table)."""

    BAD_FRAME = "bad_frame"
    UNKNOWN_TYPE = "unknown_type"
    INVALID_FIELD = "invalid_field"
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGS = "invalid_args"
    TOOL_FAILED = "tool_failed"
    TOOL_BUDGET_EXCEEDED = "tool_budget_exceeded"
    FORBIDDEN = "forbidden"
    UNAUTHORIZED = "unauthorized"
    SESSION_NOT_FOUND = "session_not_found"
    SESSION_ENDED = "session_ended"
    BAD_STATE = "bad_state"
    TOO_LARGE = "too_large"
    RATE_LIMITED = "rate_limited"
    CAPACITY = "capacity"
    INTERNAL = "internal"
    REPLAY_UNAVAILABLE = "replay_unavailable"
    INTERRUPTED = "interrupted"
    SESSION_LIMIT_EXCEEDED = "session_limit_exceeded"

    @property
    def retryable(self) -> bool:
        """True if the same request may succeed when sent again later, unchanged."""
        return self in _RETRYABLE


# Kept as a set beside the enum (not in the values) so that the wire value stays a plain string.
_RETRYABLE: frozenset[ErrorCode] = frozenset({ErrorCode.RATE_LIMITED, ErrorCode.CAPACITY})


class CloseCode(enum.IntEnum):
    """WebSocket close codes areasync sends (see the module table for when and what to do)."""

    NORMAL = 1000
    GOING_AWAY = 1001
    INVALID_DATA = 1007
    MESSAGE_TOO_BIG = 1009
    INTERNAL_ERROR = 1011
    BAD_HELLO = 4000
    UNAUTHORIZED = 4001
    SESSION_NOT_FOUND = 4004
    SLOW_CONSUMER = 4008
    TOO_LARGE = 4009
    RATE_LIMITED = 4029
    HELLO_TIMEOUT = 4408
    CAPACITY = 4503


class ProtocolError(Exception):
    """A request the server cannot honour, as data: ``code``, a message for humans, the request id.

    Raise it anywhere on the request path; the connection handler turns it into an ``error``
    frame with :meth:`to_frame` and carries on. The message must say what was wrong and what to
    do about it.
    """

    code: ErrorCode
    message: str
    id: int | None

    def __init__(self, code: ErrorCode, message: str, *, id: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id

    @property
    def retryable(self) -> bool:
        return self.code.retryable

    def __str__(self) -> str:
        return f"{self.code.value}: {self.message}"

    def __repr__(self) -> str:
        return f"ProtocolError({self.code.value!r}, {self.message!r}, id={self.id!r})"


class CodedError(Exception):
    """An error raised below the service that knows the `error` frame it is answered with.

    The layers that raise these (bridge/, simulation/) declare, on each class, the `code` it is
    reported as and the `hint` appended to its message (what happened to the call, what to do
    next), so that the service maps any of them to its frame without importing the layer that
    raised it. `when_ended`: the code it is reported as instead once its session has ended
    (None: its own code whatever the session's state).
    """

    code: ClassVar[ErrorCode] = ErrorCode.INTERNAL
    hint: ClassVar[str] = ""
    when_ended: ClassVar[ErrorCode | None] = None

    def protocol_error(self, *, ended: bool = False) -> ProtocolError:
        """The error this is answered with; `ended`: its session has ended."""
        code = self.when_ended if ended and self.when_ended is not None else self.code
        return ProtocolError(code, f"{self}{self.hint}")
