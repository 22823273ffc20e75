"""The client's hello/welcome exchange, without I/O: what to ask for, what the answer means.

Optional features are negotiated, never guessed from an error's text. Every welcome lists the
features its server offers (``welcome.capabilities``), and the client asks only for what the
last welcome offered. Before the first welcome the client cannot know, so it asks for what it
wants (``hello.batch``): a server that offers ``batch`` grants it, a newer one that does not
simply sends single frames, and one older than the field refuses the hello with
``invalid_field``. Every other field of the client's hello is one every server knows, built
valid by the client, so that refusal means "not this optional field": the client records that
the server offers nothing optional and asks again at once with only the plain fields.

``batch`` is also dropped for one connection after a connection that delivered nothing (a link
cut again and again within one batch's worth of bytes): single frames make progress frame by
frame, and batches resume on the connection after.
"""

from __future__ import annotations

import enum
from typing import Final

from areasync.protocol import Capability, Error, ErrorCode, Hello, Role, Welcome

__all__ = ["Handshake", "Refusal"]

# Errors in reply to hello after which a later attempt may succeed (after a back-off).
_RETRYABLE_HELLO_ERRORS: Final = frozenset({ErrorCode.RATE_LIMITED, ErrorCode.CAPACITY})


class Refusal(enum.Enum):
    """What an ``error`` in reply to hello means for the client."""

    ASK_PLAINLY = "ask_plainly"
    """The server does not know an optional field asked for: say hello again at once, plainly."""
    RETRY = "retry"
    """Transient (rate limited, at capacity): back off, then try again."""
    REPLAY_UNAVAILABLE = "replay_unavailable"
    """The server's stream ends before our resume point: it is not the stream we followed."""
    FATAL = "fatal"
    """The same hello would fail the same way (bad token, no such session, ...)."""


class Handshake:
    """What one client says in each hello, and what it learned from the welcomes and refusals.

    ``batch`` is the client's wish for ``batch`` messages; ``offered`` the capabilities of the
    last welcome (None before the first one).
    """

    def __init__(self, role: Role, token: str, *, batch: bool) -> None:
        self.role = role
        self._token = token
        self.batch = batch
        self.offered: frozenset[str] | None = None
        self.batching = False
        """Whether the current (or last) connection was granted batches."""
        self._single_frames_next = False

    def hello(self, since: int | None, epoch: str | None) -> Hello:
        """The hello for the next connection, resuming after ``since`` of ``epoch``."""
        return Hello(
            id=0,
            role=self.role,
            token=self._token,
            since=since,
            epoch=epoch,
            batch=self._asks_for_batches(),
        )

    def welcomed(self, hello: Hello, welcome: Welcome) -> None:
        """The server accepted ``hello`` with ``welcome``: learn what it offers and grants."""
        self.offered = frozenset(welcome.capabilities)
        self.batching = hello.batch and Capability.BATCH in self.offered

    def refused(self, hello: Hello, error: Error) -> Refusal:
        """The server answered ``hello`` with ``error`` (it closes the connection next)."""
        code = error.error_code
        if code in _RETRYABLE_HELLO_ERRORS:
            return Refusal.RETRY
        if code is ErrorCode.INVALID_FIELD and hello.batch:
            # `batch` is the only field of our hello a server may not know (the others are as
            # old as the protocol and built valid here): a server older than it, which offers
            # no optional feature. Asked plainly, a hello refused for another reason is
            # refused again, then for good.
            self.offered = frozenset()
            return Refusal.ASK_PLAINLY
        if code is ErrorCode.REPLAY_UNAVAILABLE:
            return Refusal.REPLAY_UNAVAILABLE
        return Refusal.FATAL

    def link_ended(self, *, delivered: bool) -> None:
        """A welcomed connection ended; ``delivered``: a message got through after the welcome."""
        self._single_frames_next = not delivered

    def _asks_for_batches(self) -> bool:
        if not self.batch or self._single_frames_next:
            return False
        return self.offered is None or Capability.BATCH in self.offered
