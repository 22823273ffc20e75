"""Whether a hello read by the front may be handed to a worker, and what the worker is sent.

The front reads the first frame of every WebSocket itself (`service/connection/handoff.py`), and
decides here, with no I/O: the frame must be a `hello` (the same refusals and close codes as a
server's own connection, `service/connection/protocol.py`), its token must open its role of a
session some worker holds (the admin token: every role; a session's tokens: as minted or as its
journal's salted hashes, `service/gate/auth.py`). Only a token that opens every session learns that
a session does not exist. What goes on is the hello with its token removed.

Refusals that depend on the session's state (its clients, `since` past its stream's end) are
the worker's, which sees the session: it answers them as a server of its own does.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from areasync.protocol.codec import Encoding, encode_client_frame
from areasync.protocol.errors import CloseCode, ErrorCode, ProtocolError
from areasync.protocol.frames import Role
from areasync.service.connection.handoff import TEXT_OPCODE
from areasync.service.connection.hello import Refusal, hello_frame, unauthorized_message
from areasync.service.gate.auth import Tokens

__all__ = ["Verdict", "judge"]


@dataclass(frozen=True)
class Verdict:
    """A hello that may go on: its role, and its payload without the token."""

    role: Role
    hello: bytes
    text: bool


def judge(
    opcode: int, payload: bytes, session_id: str, tokens: Tokens, held: bool
) -> Verdict | Refusal:
    """The verdict on the hello frame (`opcode`, `payload`) for `session_id`, which some
    worker holds or not (`held`)."""
    text = opcode == TEXT_OPCODE
    data: str | bytes = payload
    if text:
        try:
            data = payload.decode()
        except UnicodeDecodeError:
            error = ProtocolError(ErrorCode.BAD_FRAME, "a text frame must be UTF-8; send JSON")
            return Refusal(error, CloseCode.BAD_HELLO)
    try:
        frame = hello_frame(data)
    except Refusal as refusal:
        return refusal
    allowed = tokens.allows(frame.token, session_id, frame.role)
    if not held and allowed:
        error = ProtocolError(
            ErrorCode.SESSION_NOT_FOUND,
            f"no session {session_id!r} on this server; GET /api/sessions lists them "
            "(connect to ws://HOST:PORT/sessions/<id>)",
            id=frame.id,
        )
        return Refusal(error, CloseCode.SESSION_NOT_FOUND)
    if not held or not allowed:
        error = ProtocolError(ErrorCode.UNAUTHORIZED, unauthorized_message(frame.role), id=frame.id)
        return Refusal(error, CloseCode.UNAUTHORIZED)
    stripped = msgspec.structs.replace(frame, token="")
    encoded = encode_client_frame(stripped, Encoding.JSON if text else Encoding.MSGPACK)
    return Verdict(frame.role, encoded.encode() if isinstance(encoded, str) else encoded, text)
