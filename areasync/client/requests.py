"""The client's request table, without I/O: ids out, replies in, outcomes settled.

Every request carries a client-chosen ``id`` and the server echoes it in the ``result``,
``error`` or ``pong`` that answers it, so any number of requests may be in flight on one
socket. The table hands out ids, matches each reply to its request, and decides what a broken
connection means for the requests sent on it:

- read-only requests (``list_tools``, ``get_state``, ``ping``) are marked to be sent again on
  the next connection: sending them twice is the same as sending them once;
- the others (tool calls, controls, user messages, ``idle``) fail with the retryable
  :class:`~areasync.client.errors.ConnectionLostError`, because the server may already have
  applied them.

Nothing here sends or waits: the connection layer sends what :meth:`RequestTable.add` returns,
feeds replies to :meth:`RequestTable.receive`, and wakes the callers of the requests each call
returns.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import msgspec

from areasync.client.errors import AreasyncError, ConnectionLostError, from_frame
from areasync.protocol import ClientFrame, Error, Pong, Result

__all__ = ["PendingRequest", "RequestTable"]


def _tag(frame: msgspec.Struct) -> str:
    return str(frame.__struct_config__.tag)


class PendingRequest:
    """One request, from the moment it has an id until its caller takes the outcome."""

    def __init__(self, frame: ClientFrame, *, resend: bool) -> None:
        self.frame = frame
        self.resend = resend
        """Read-only: safe to send again after the connection it went on broke."""
        self.link: int | None = None
        """The number of the connection it was last sent on; None: (again) to be sent."""
        self.done = False
        self.value: Any = None
        self.error: AreasyncError | None = None

    @property
    def id(self) -> int:
        return self.frame.id

    def settle(self, value: Any = None, error: AreasyncError | None = None) -> bool:
        """Record the outcome; False (and nothing changes) if it already had one."""
        if self.done:
            return False
        self.done = True
        self.value = value
        self.error = error
        return True

    def outcome(self) -> Any:
        """The reply's value, or raise its error. Only once settled."""
        assert self.done
        if self.error is not None:
            raise self.error
        return self.value


class RequestTable:
    """The requests of one client in flight, by id, across its connections."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._pending: dict[int, PendingRequest] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, make: Callable[[int], ClientFrame], *, resend: bool = False) -> PendingRequest:
        """A new request: ``make(id)`` builds its frame with the next id."""
        request = PendingRequest(make(next(self._ids)), resend=resend)
        self._pending[request.id] = request
        return request

    def remove(self, request: PendingRequest) -> None:
        """Forget a request (its caller has its outcome, or gave up): a late reply is ignored."""
        self._pending.pop(request.id, None)

    def sent(self, request: PendingRequest, link: int) -> None:
        """The request went out on connection number ``link``."""
        request.link = link

    def receive(self, frame: Result | Error | Pong) -> PendingRequest | None:
        """Settle the request ``frame`` answers; None if it answers none still waiting (an
        error without an id, a late reply to a request given up on)."""
        request = self._pending.get(frame.id) if frame.id is not None else None
        if request is None:
            return None
        if isinstance(frame, Result):
            changed = request.settle(value=frame.value)
        elif isinstance(frame, Error):
            changed = request.settle(error=from_frame(frame))
        else:
            changed = request.settle()
        return request if changed else None

    def link_lost(self, link: int) -> list[PendingRequest]:
        """Connection number ``link`` broke: the requests sent on it that had no reply yet, each
        either failed (it may have been applied) or marked to be sent again (read-only)."""
        lost = [r for r in self._pending.values() if r.link == link and not r.done]
        for request in lost:
            if request.resend:
                request.link = None
            else:
                request.settle(
                    error=ConnectionLostError(
                        f"the connection broke before the reply to `{_tag(request.frame)}` (id "
                        f"{request.id}) arrived; the server may or may not have applied it",
                        request_id=request.id,
                    )
                )
        return lost

    def fail_all(self, make_error: Callable[[], AreasyncError]) -> list[PendingRequest]:
        """Fail every request still waiting (the client closed), each with its own error."""
        failed = [r for r in self._pending.values() if not r.done]
        for request in failed:
            request.settle(error=make_error())
        return failed
