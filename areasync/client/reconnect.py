"""When the client reconnects, and how long it waits first, without I/O.

A connection can end in three ways the client must tell apart: the server refused the WebSocket
handshake (an HTTP status), refused the hello (an ``error`` frame, see
:mod:`areasync.client.handshake`), or closed a working connection (a close code). Each either
leaves a retry worth making (with backoff) or says that the same attempt would fail the same
way. Those rules, and the backoff itself, live here so that the connection layer only acts.
"""

from __future__ import annotations

import json
import random
from typing import Final

from areasync.client.errors import (
    AreasyncError,
    CapacityError,
    ConnectionClosedError,
    SessionNotFoundError,
    UnauthorizedError,
)
from areasync.protocol import CloseCode

__all__ = [
    "BACK_OFF_CLOSE_CODES",
    "FATAL_CLOSE_CODES",
    "RETRYABLE_STATUSES",
    "after_close",
    "backoff",
    "closed_before_welcome",
    "status_error",
]

FATAL_CLOSE_CODES: Final = frozenset(
    {CloseCode.BAD_HELLO, CloseCode.UNAUTHORIZED, CloseCode.SESSION_NOT_FOUND, CloseCode.TOO_LARGE}
)
"""Close codes after which reconnecting cannot help: the same hello would fail the same way."""

BACK_OFF_CLOSE_CODES: Final = frozenset(
    {CloseCode.RATE_LIMITED, CloseCode.CAPACITY, CloseCode.HELLO_TIMEOUT}
)
"""Close codes after which the client waits (its longest backoff) before it reconnects: the
server asked it to back off (4029), is full (4503), or evicted it from a pre-hello pool full of
other sockets (4408); reconnecting at once would only add to that."""

LONGEST_BACKOFF: Final = 64
"""A failure count that reaches ``backoff_max`` for any sensible settings."""

RETRYABLE_STATUSES: Final = frozenset({408, 425, 429, 500, 502, 503, 504})
"""HTTP statuses of a refused handshake that are worth retrying (the others are final)."""


def backoff(failures: int, *, initial: float, longest: float) -> float:
    """Seconds to wait after ``failures`` consecutive failures: doubling from ``initial`` up to
    ``longest``, with jitter so that clients cut off together spread out."""
    delay = min(longest, initial * 2 ** (failures - 1))
    return delay * random.uniform(0.5, 1.0)


def after_close(
    code: int | None, reason: str, *, ended: bool, reconnect: bool
) -> tuple[bool, ConnectionClosedError | None]:
    """What to do once a welcomed connection closed with ``code``: ``(True, None)`` reconnect;
    ``(False, error)`` close the client with ``error`` (None: quietly, the stream is complete).
    ``ended``: the session's ``ended`` item arrived; ``reconnect``: the client's option."""
    if ended:
        return False, None  # nothing more to receive
    if code in FATAL_CLOSE_CODES:
        name = CloseCode(code).name
        return False, ConnectionClosedError(
            f"the server closed the connection with {code} ({name}: {reason}); reconnecting "
            "cannot help"
        )
    if not reconnect:
        return False, ConnectionClosedError(
            f"the connection closed ({code} {reason}) and reconnect=False"
        )
    return True, None


def closed_before_welcome(code: int | None, reason: str) -> AreasyncError:
    """The error for a connection the server closed (``code``, ``reason``) before its welcome;
    final if ``code`` is in :data:`FATAL_CLOSE_CODES`, else worth a retry."""
    return AreasyncError(
        f"the server closed the connection before its welcome ({code} {reason})",
        code="connection_lost",
        retryable=True,
    )


def status_error(status: int, url: str, body: bytes | bytearray = b"") -> AreasyncError:
    """The error for a WebSocket handshake the server refused with HTTP ``status``."""
    said = _said(body)
    if status == 404:
        return SessionNotFoundError(f"no session at {url} (HTTP 404)")
    if status in (401, 403):
        return UnauthorizedError(
            f"the server refused the connection to {url} (HTTP {status}){said}"
        )
    if status in (429, 503):
        return CapacityError(f"the server is busy (HTTP {status}); retrying")
    return AreasyncError(
        f"the server refused the WebSocket handshake for {url} with HTTP {status}{said}",
        retryable=status in RETRYABLE_STATUSES,
    )


def _said(body: bytes | bytearray) -> str:
    """The message of an areasync HTTP error body (`{"error": {"message": ...}}`), or ""."""
    try:
        message = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return ""
    return f": {message}" if isinstance(message, str) else ""
