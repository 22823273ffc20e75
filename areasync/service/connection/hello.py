"""Whether a `hello` may join its session, and from where its stream starts.

A hello is refused for the first reason that applies, in the order of `hello_refusal`'s table:
no such session (only for a token that opens every session), a token that does not open the
role here, a session with no room, a server with no room, a `since` beyond the stream's end.
Each refusal is an `error` frame, then a close with the code that says what to do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from areasync.protocol.codec import decode_client_frame
from areasync.protocol.errors import CloseCode, ErrorCode, ProtocolError
from areasync.protocol.frames import Hello, Replay, Role, frame_tag

if TYPE_CHECKING:
    from areasync.service.sessions.view import SessionView

_Check = tuple[Callable[[], bool], ErrorCode, CloseCode, Callable[[], str]]


class Joining(Protocol):
    """The connection a hello came on (a `ConnectionCore`), as the checks see it."""

    session_id: str
    max_connections_per_session: int
    takes_place: bool  # needs one of the session's places (max_connections_per_session)


class Door(Protocol):
    """What a hello needs of the server besides its session (`door.py` has the server's)."""

    def allows(self, token: str, role: Role) -> bool:
        """Whether `token` opens `role` of the connection's session."""

    def admit(self) -> bool:
        """Count the connection as authenticated (False: the server is full)."""

    def admitted(self) -> int:
        """The connections the server counts as authenticated (for the refusal's message)."""


class Refusal(Exception):
    """A hello refused with `error`, the socket then closed with `code`."""

    def __init__(self, error: ProtocolError, code: int) -> None:
        super().__init__(error.message)
        self.error = error
        self.code = code


def hello_frame(data: str | bytes) -> Hello:
    """The `hello` a connection's first message holds, or the Refusal that says what it is
    instead (a frame that does not decode, or another frame than a hello)."""
    try:
        frame = decode_client_frame(data)
    except ProtocolError as exc:
        raise Refusal(exc, CloseCode.BAD_HELLO) from None
    if not isinstance(frame, Hello):
        error = ProtocolError(
            ErrorCode.BAD_STATE,
            f"the first frame must be `hello` (role, token), got `{frame_tag(frame)}`; "
            "say hello, then send requests",
            id=frame.id,
        )
        raise Refusal(error, CloseCode.BAD_HELLO)
    return frame


def replay_kind(frame: Hello, session: SessionView) -> Replay:
    """What a hello's `since` asks of `session`'s stream: nothing, all of it, or the rest."""
    if frame.since is None:
        return Replay.NONE
    if frame.epoch is not None and frame.epoch != session.epoch:
        return Replay.RESET  # not this stream's seq numbers: never splice two streams
    return Replay.FULL


def replay_start(frame: Hello, session: SessionView) -> int:
    """The seq after which a welcomed client's stream starts."""
    match replay_kind(frame, session):
        case Replay.NONE:
            return session.seq
        case Replay.RESET:
            return 0
        case _:
            assert frame.since is not None
            return frame.since


def hello_refusal(
    core: Joining, frame: Hello, session: SessionView | None, door: Door, start: int
) -> Refusal | None:
    """Why a hello for `session` (None: there is no such session), whose token `allowed` it
    or not, cannot join, with its close code; None if nothing stands in its way. The checks
    run in order and stop at the first refusal (the door counts the connection as
    authenticated once it passes that check, `Door.admit`).

    One answer for "no such session" and "bad token", so that session ids cannot be
    enumerated: only a token that opens every session (the admin's) learns that the session
    does not exist.
    """
    for refused, error_code, close_code, message in _checks(core, frame, session, door, start):
        if refused():
            return Refusal(ProtocolError(error_code, message(), id=frame.id), close_code)
    return None


def _checks(
    core: Joining, frame: Hello, session: SessionView | None, door: Door, start: int
) -> tuple[_Check, ...]:
    """The refusals of `hello_refusal`, in order: each a check (run only if those before it
    passed), its error code, its close code and its message."""
    sid = core.session_id
    clients = 0 if session is None else session.clients
    seq = 0 if session is None else session.seq
    allowed = door.allows(frame.token, frame.role)
    return (
        (
            lambda: session is None and allowed,
            ErrorCode.SESSION_NOT_FOUND,
            CloseCode.SESSION_NOT_FOUND,
            lambda: (
                f"no session {sid!r} on this server; GET /api/sessions lists them "
                "(connect to ws://HOST:PORT/sessions/<id>)"
            ),
        ),
        (
            lambda: session is None or not allowed,
            ErrorCode.UNAUTHORIZED,
            CloseCode.UNAUTHORIZED,
            lambda: unauthorized_message(frame.role),
        ),
        (
            lambda: core.takes_place and clients >= core.max_connections_per_session,
            ErrorCode.CAPACITY,
            CloseCode.CAPACITY,
            lambda: (
                f"session {sid!r} already has {clients} clients, its limit "
                "(max_connections_per_session); retry later"
            ),
        ),
        (
            lambda: not door.admit(),
            ErrorCode.CAPACITY,
            CloseCode.CAPACITY,
            lambda: (
                f"the server has {door.admitted()} clients, its limit (max_connections); "
                "retry later"
            ),
        ),
        (
            lambda: start > seq,
            ErrorCode.REPLAY_UNAVAILABLE,
            CloseCode.BAD_HELLO,
            lambda: (
                f"since={frame.since} is ahead of session {sid!r}'s stream, which ends "
                f"at seq {seq}; reconnect without since (or with since <= {seq})"
            ),
        ),
    )


def unauthorized_message(role: Role) -> str:
    """The refusal of a hello whose token does not open its role here, or whose session does
    not exist: the same words either way."""
    return (
        f"this token does not open role {role.value!r} of the session at this URL (or "
        "there is no such session); use the token printed for that role, or the admin token"
    )
