"""Blocking calls made deep inside a session's synchronous code, awaited off the event loop.

Why: Gaia2's judge calls an LLM over the network from the middle of ARE's synchronous code:
from a turn's condition check inside a tick (`turn_condition_wrapper` -> `judge(env)`), and
from `scenario.validate(env)` when the session ends. The session runs that code on the event
loop, holding its command lane (`Simulation`); a judge call of a few seconds there would stop
every session, socket and `/health` meanwhile. The call cannot simply move to a thread on its
own: it sits under ARE's stack frames (the tick, the condition, the judge), which must finish
on the event loop's thread, where the session's stream, wake-ups and sockets live.

How: the session's coroutine (a step of its driver, a control, a stop) runs through `bridged`,
which sends it each value in a greenlet of its own. When ARE's code, deep in such a send,
reaches a blocking call wrapped with `offload(fn)`, the greenlet switches back to `bridged`
with `fn`; `bridged` awaits `fn` in a worker thread (`anyio.to_thread.run_sync`, under the
caller's capacity limiter), so the event loop serves everything else meanwhile, then switches
back into the greenlet with the result (or raises the exception there), and ARE's frames go
on exactly where they were. Nothing else of the session runs in between: the greenlet is
suspended with the lane held, so the session's other commands wait their turn, as ARE's own
environment is paused while its judge runs. SQLAlchemy's asyncio layer bridges synchronous
drivers the same way.

Context: the greenlet runs in the very `contextvars.Context` of the task that awaits
`bridged`, and the worker thread in a copy of it; so the session's sandbox
(`areasync.bridge.sandbox.audit`), entered by the lane, applies to the synchronous code and to the
blocking call alike.

Cancelled while a call is in flight (a server shutting down), `bridged` leaves the worker
thread to finish on its own (its result is dropped) and raises the cancellation in the
synchronous code at once: a shutdown never waits on an endpoint that hangs. So `offload` only
what touches nothing the session owns (the judge's HTTP request).

Outside `bridged`, `offload(fn)` calls `fn` directly when no event loop runs in the thread
(synchronous use), and refuses (`OffloadRefusedError`) when one does: a blocking call must
never run on the event loop's thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from greenlet import getcurrent, greenlet

T = TypeVar("T")


class OffloadRefusedError(RuntimeError):
    """A blocking call was made on the event loop's thread outside `bridged`."""


class _Runner(greenlet):
    """A greenlet that runs one send (or throw) of a bridged coroutine."""


@dataclass(frozen=True)
class _Call:
    """What `offload` hands `bridged`: the blocking function to await in a worker thread."""

    fn: Callable[[], Any]


@dataclass(frozen=True)
class _Yielded:
    """What the bridged coroutine yielded to the event loop (a future to wait on)."""

    value: Any


def offload(fn: Callable[[], T]) -> T:
    """`fn()`, awaited in a worker thread by the enclosing `bridged`, if there is one.

    Outside `bridged`: `fn()` right here when no event loop runs in this thread; else
    `OffloadRefusedError` (it would stall the loop)."""
    current = getcurrent()
    if isinstance(current, _Runner):
        result: T = current.parent.switch(_Call(fn))
        return result
    if _loop_running():
        raise OffloadRefusedError(
            "a blocking call was made on the event loop's thread outside a bridged coroutine; "
            "it was not run"
        )
    return fn()


def inside_bridge() -> bool:
    """Whether the calling code runs inside `bridged` (an `offload` there is awaited)."""
    return isinstance(getcurrent(), _Runner)


async def bridged(
    coro: Coroutine[Any, Any, T], *, limiter: anyio.CapacityLimiter | None = None
) -> T:
    """Await `coro`, awaiting every `offload` call its synchronous code makes in a worker
    thread (under `limiter`: anyio's default thread limiter if None). Inside another `bridged`,
    `coro` is simply awaited: the outer one serves its calls."""
    if isinstance(getcurrent(), _Runner):
        return await coro
    return await _Bridged(coro, limiter)


class _Bridged:
    """The awaitable behind `bridged`: drives `coro` one send at a time, each in a greenlet."""

    __slots__ = ("_coro", "_limiter")

    def __init__(self, coro: Coroutine[Any, Any, Any], limiter: anyio.CapacityLimiter | None):
        self._coro = coro
        self._limiter = limiter

    def __await__(self) -> Generator[Any, Any, Any]:
        value: Any = None
        thrown: BaseException | None = None
        while True:
            here = getcurrent()
            runner = _Runner(_resume, parent=here)
            # The same Context object, not a copy: what the coroutine sets (the lane entering
            # the sandbox) is what the task, and the next send's greenlet, see.
            runner.gr_context = here.gr_context
            try:
                out = runner.switch(self._coro, value, thrown)
                while isinstance(out, _Call):
                    try:
                        result = yield from anyio.to_thread.run_sync(
                            out.fn, limiter=self._limiter, abandon_on_cancel=True
                        ).__await__()
                    except BaseException as exc:
                        runner.parent = getcurrent()  # whoever resumed this generator
                        out = runner.throw(exc)
                    else:
                        runner.parent = getcurrent()
                        out = runner.switch(result)
            except StopIteration as done:
                return done.value
            try:
                value, thrown = (yield out.value), None
            except BaseException as exc:  # cancellation: thrown into the coroutine, as awaited
                value, thrown = None, exc


def _resume(coro: Coroutine[Any, Any, Any], value: Any, thrown: BaseException | None) -> _Yielded:
    if thrown is not None:
        return _Yielded(coro.throw(thrown))
    return _Yielded(coro.send(value))


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
