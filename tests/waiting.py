"""Waiting in tests without racing a clock: `eventually` for a condition, `settled` for quiet.

A test never sleeps to prove something. Where what it waits for has no event to await (an entry
leaving a registry, a file another process writes, a count read over HTTP), it waits with
`eventually`: the condition polled on a short interval, the whole wait bounded by
`anyio.fail_after`. The bound is a give-up for a hang (tests/bounds.py), never a speed claim.

To show that something did *not* happen, a test waits on a barrier, never on the wall: the
service's own order (a reply that comes after what it should follow), a held step, or
`settled()`, which returns once every other task of the event loop waits on something (a
timer, a socket, a thread, an event): whatever an in-process service does without more input
has then been done.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")

# Wall seconds a condition may take to hold before the test fails: a hang's bound.
WITHIN_S = 30.0
# Wall seconds between two looks at a condition that has no event of its own.
POLL_S = 0.01


def _failed(condition: Callable[..., object], what: str | None, within: float) -> AssertionError:
    name = what or getattr(condition, "__qualname__", repr(condition))
    return AssertionError(f"{name} did not hold within {within} s")


async def eventually(
    condition: Callable[[], T | Awaitable[T]],
    *,
    within: float = WITHIN_S,
    poll: float = POLL_S,
    what: str | None = None,
) -> T:
    """Wait until `condition()` (awaited when it returns an awaitable) is truthy; return it.

    Fails with an AssertionError naming `what` once `within` wall seconds have passed.
    """
    try:
        with anyio.fail_after(within):
            while True:
                value = condition()
                if inspect.isawaitable(value):
                    value = await value
                if value:
                    return value
                await anyio.sleep(poll)
    except TimeoutError:
        raise _failed(condition, what, within) from None


def eventually_blocking(
    condition: Callable[[], T],
    *,
    within: float = WITHIN_S,
    poll: float = POLL_S,
    what: str | None = None,
) -> T:
    """`eventually` for a test (or a thread) with no event loop."""
    deadline = time.monotonic() + within
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise _failed(condition, what, within)
        time.sleep(poll)
    return value


async def settled(*, within: float = WITHIN_S) -> None:
    """Return once every other task of this event loop is waiting on something.

    A barrier for a negative check against an in-process service: a reply it would send
    without waiting for something the test holds has been sent, and received by the test's
    clients in this loop, by then. A task awaiting a worker thread counts as waiting: what
    the thread does, and a client in another thread or process, are not covered.
    """
    with anyio.fail_after(within):
        await anyio.wait_all_tasks_blocked()
