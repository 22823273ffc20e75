"""Synchronous code as cooperative tasks on one event loop (greenlets under asyncio).

ARE's benchmark pipeline is synchronous from top to bottom: the agent's loop calls its model
and blocks, the judge calls its model and blocks, `MultiScenarioRunner` gets concurrency from
a thread (or process) per scenario. `areasync bench run` keeps ARE's code unchanged and runs
every scenario run as a greenlet instead: the code runs as written until it would block on
the network, where `wait(awaitable)` hands the awaitable to the event loop and switches away;
the task that spawned the greenlet awaits it and switches back with its result (or throws
its exception in). Many runs then share one thread and one event loop, and their model calls
overlap. This is the pattern SQLAlchemy's asyncio layer uses (`greenlet_spawn`/`await_only`).

* `spawn(fn, *args)` (async) runs `fn` in a new greenlet, awaiting whatever it waits on;
  cancelling the spawning task throws the cancellation into `fn` at its wait.
* `wait(awaitable)` (sync) suspends the calling greenlet until the awaitable is done; it
  may only be called under `spawn` (`cooperating()` says whether it can).
* `GreenletLocal` is `threading.local` per greenlet: greenlets on one thread share its
  `threading.local`s, so ARE's per-thread state (which scenario a log line belongs to,
  whether events are being captured) is swapped for one of these while runs share a thread.

Each greenlet runs in a copy of the spawning task's `contextvars` context, so a context
variable set in one run is never seen by another.
"""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import greenlet

T = TypeVar("T")


class _RunGreenlet(greenlet.greenlet):
    """A greenlet started by `spawn`: its waits go to the task that spawned it."""


async def spawn(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run `fn(*args, **kwargs)` in a greenlet, awaiting every awaitable it `wait`s on."""
    child = _RunGreenlet(fn, greenlet.getcurrent())
    child.gr_context = contextvars.copy_context()
    request = child.switch(*args, **kwargs)
    while not child.dead:
        try:
            value = await request
        except BaseException as error:
            request = child.throw(error)
        else:
            request = child.switch(value)
    return request


def cooperating() -> bool:
    """Whether the caller runs under `spawn` (and so may `wait`)."""
    return isinstance(greenlet.getcurrent(), _RunGreenlet)


def wait(awaitable: Awaitable[T]) -> T:
    """Suspend this greenlet until `awaitable` is done; return its result or raise its error."""
    current = greenlet.getcurrent()
    if not isinstance(current, _RunGreenlet):
        close = getattr(awaitable, "close", None)
        if close is not None:
            close()  # a coroutine never awaited would warn
        raise RuntimeError(
            "areasync.gaia2.cooperative.wait() was called outside spawn(): run the calling "
            "code with `await spawn(fn, ...)` on the event loop"
        )
    return current.parent.switch(awaitable)


class GreenletLocal:
    """Attributes that belong to the greenlet that set them (`threading.local`'s interface)."""

    def __init__(self) -> None:
        values: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
        object.__setattr__(self, "_values", values)

    def _own(self) -> dict[str, Any]:
        values: weakref.WeakKeyDictionary[Any, dict[str, Any]] = object.__getattribute__(
            self, "_values"
        )
        current = greenlet.getcurrent()
        own = values.get(current)
        if own is None:
            own = values[current] = {}
        return own

    def __getattr__(self, name: str) -> Any:
        try:
            return self._own()[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self._own()[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self._own()[name]
        except KeyError:
            raise AttributeError(name) from None
