"""Typed exceptions for everything a request can end with, one class per server error code.

The server's errors are data (an ``error`` frame with ``code``, ``message`` and ``retryable``);
the client turns each into an exception of the class registered for its code, so that callers
can write ``except UnknownToolError`` rather than compare strings, and can still read ``code``
and ``retryable`` when they handle errors generically. A code newer than this client becomes a
plain :class:`AreasyncError` that keeps the server's code and ``retryable`` flag (the protocol's
rule: treat an unknown code like ``internal`` and decide on ``retryable``).

Three errors originate in the client, not in an ``error`` frame: :class:`ConnectionLostError`
(the socket broke while a request was in flight; retryable, but the request may have been
applied), :class:`ConnectionClosedError` (the client is closed or gave up reconnecting) and
:class:`StreamResetError` (the server could not resume the stream; see its docstring).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from areasync.protocol import ErrorCode

if TYPE_CHECKING:
    from areasync.protocol import Error, Welcome

__all__ = [
    "AreasyncError",
    "BadFrameError",
    "BadStateError",
    "CapacityError",
    "ConnectionClosedError",
    "ConnectionLostError",
    "ForbiddenError",
    "InternalError",
    "InterruptedControlError",
    "InvalidArgsError",
    "InvalidFieldError",
    "RateLimitedError",
    "ReplayUnavailableError",
    "SessionEndedError",
    "SessionNotFoundError",
    "StreamResetError",
    "TooLargeError",
    "ToolBudgetExceededError",
    "ToolError",
    "ToolFailedError",
    "UnauthorizedError",
    "UnknownToolError",
    "UnknownTypeError",
    "error_class",
    "fresh",
    "from_frame",
]


class AreasyncError(Exception):
    """A request failed. ``code`` is the server's error code (a str: it may be newer than this
    client), ``retryable`` says whether the same request may succeed if sent again later."""

    code: str = ErrorCode.INTERNAL.value
    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        retryable: bool | None = None,
        request_id: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable
        self.request_id = request_id

    @property
    def error_code(self) -> ErrorCode | None:
        """``code`` as an :class:`ErrorCode`, or None for a code this client does not know."""
        try:
            return ErrorCode(self.code)
        except ValueError:
            return None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, code={self.code!r}, "
            f"retryable={self.retryable!r}, request_id={self.request_id!r})"
        )


class BadFrameError(AreasyncError):
    code = ErrorCode.BAD_FRAME.value


class UnknownTypeError(AreasyncError):
    code = ErrorCode.UNKNOWN_TYPE.value


class InvalidFieldError(AreasyncError):
    code = ErrorCode.INVALID_FIELD.value


class ToolError(AreasyncError):
    """Base of the errors a tool call can end with (unknown tool, bad arguments, it raised)."""


class UnknownToolError(ToolError):
    code = ErrorCode.UNKNOWN_TOOL.value


class InvalidArgsError(ToolError):
    code = ErrorCode.INVALID_ARGS.value


class ToolFailedError(ToolError):
    """The tool ran and raised; ARE logged the failed call (an AGENT event with its exception)."""

    code = ErrorCode.TOOL_FAILED.value


class ToolBudgetExceededError(ToolError):
    """The tool ran past what one call may cost on this server (wall time, or directory entries
    listed) and was stopped; ARE logged the failed call; the session goes on."""

    code = ErrorCode.TOOL_BUDGET_EXCEEDED.value


class ForbiddenError(AreasyncError):
    code = ErrorCode.FORBIDDEN.value


class UnauthorizedError(AreasyncError):
    code = ErrorCode.UNAUTHORIZED.value


class SessionNotFoundError(AreasyncError):
    code = ErrorCode.SESSION_NOT_FOUND.value


class SessionEndedError(AreasyncError):
    code = ErrorCode.SESSION_ENDED.value


class BadStateError(AreasyncError):
    code = ErrorCode.BAD_STATE.value


class TooLargeError(AreasyncError):
    code = ErrorCode.TOO_LARGE.value


class RateLimitedError(AreasyncError):
    code = ErrorCode.RATE_LIMITED.value
    retryable = True


class CapacityError(AreasyncError):
    code = ErrorCode.CAPACITY.value
    retryable = True


class InternalError(AreasyncError):
    code = ErrorCode.INTERNAL.value


class ReplayUnavailableError(AreasyncError):
    code = ErrorCode.REPLAY_UNAVAILABLE.value


class InterruptedControlError(AreasyncError):
    """A ``jump``, ``next_event`` or ``tick`` gave way to a ``stop`` before it was done: what it
    fired stays fired (and on the stream), the clock rests where it got to; the session is
    ending (the message says how far the control got)."""

    code = ErrorCode.INTERRUPTED.value


class SessionLimitExceededError(AreasyncError):
    """The request would take its session past one of its bounds over its life (input bytes,
    journal bytes, bytes held in memory); the message names the bound and the server option
    that raises it. Nothing ran; the session goes on."""

    code = ErrorCode.SESSION_LIMIT_EXCEEDED.value


# -- raised by the client itself ------------------------------------------------------------


class ConnectionLostError(AreasyncError):
    """The connection broke while the request was in flight; its reply will never come.

    Retryable, with a caveat: the server may or may not have applied the request. Read-only
    requests are resent by the client itself; for the others (tool calls, controls), check the
    state before sending again.
    """

    code = "connection_lost"
    retryable = True


class ConnectionClosedError(AreasyncError):
    """The client is closed: by the caller, because the session ended, or because reconnecting
    failed (``__cause__`` says why). Not retryable on this client; connect again."""

    code = "connection_closed"


class StreamResetError(AreasyncError):
    """The server could not resume this client's stream (``welcome.replay == "reset"``).

    The session's stream identity (epoch) changed, e.g. the server restarted, so the items the
    client had and the ones that follow are not one sequence: nothing was replayed. Iterators
    raise this at the point of the reset instead of silently mixing the two; ``welcome`` is the
    welcome that announced the reset (None if the server refused to replay with
    ``replay_unavailable`` and the client started over). Call ``stream()`` (``events()``,
    ``notifications()``) again to follow the new stream, and rebuild any cached state with
    ``get_state()``.
    """

    code = "stream_reset"

    def __init__(self, message: str, *, welcome: Welcome | None) -> None:
        super().__init__(message)
        self.welcome = welcome


_CLASSES: Final[dict[str, type[AreasyncError]]] = {
    cls.code: cls
    for cls in (
        BadFrameError,
        UnknownTypeError,
        InvalidFieldError,
        UnknownToolError,
        InvalidArgsError,
        ToolFailedError,
        ToolBudgetExceededError,
        ForbiddenError,
        UnauthorizedError,
        SessionNotFoundError,
        SessionEndedError,
        BadStateError,
        TooLargeError,
        RateLimitedError,
        CapacityError,
        InternalError,
        ReplayUnavailableError,
        InterruptedControlError,
        SessionLimitExceededError,
    )
}
assert set(_CLASSES) == {code.value for code in ErrorCode}, "every ErrorCode needs a class"


def error_class(code: str) -> type[AreasyncError]:
    """The exception class for a server error code; :class:`AreasyncError` for unknown codes."""
    return _CLASSES.get(code, AreasyncError)


def from_frame(frame: Error) -> AreasyncError:
    """The exception for an ``error`` frame, keeping the server's code, retryable flag and id."""
    return error_class(frame.code)(
        frame.message, code=frame.code, retryable=frame.retryable, request_id=frame.id
    )


def fresh(error: AreasyncError) -> AreasyncError:
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
