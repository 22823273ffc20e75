"""ARE's `stream_pool`, with every item run as a cooperative task on the running event loop.

`MultiScenarioRunner.run_with_events` hands each scenario run to
`are.simulation.utils.streaming_utils.stream_pool(iterator, process_func, max_workers,
timeout_seconds, executor_type, **kwargs)`: a context manager yielding `(item, result,
error)` as runs finish, with up to `max_workers` runs at once on threads (or processes), and
`TimeoutError("Operation timed out after N seconds")` for a run past its timeout.
`stream_pool` here keeps that contract and runs each item as a greenlet
(`cooperative.spawn`) in a task of the `anyio` task group the caller registered with
`running_in(task_group)`: up to `max_workers` at once whatever `executor_type` says, all on
one thread, their model calls overlapping on the loop. A run's timeout cancels it at its next
wait (a run that never waits cannot be interrupted, as ARE's threads cannot); leaving the
block early (a break, an error) cancels the runs still going and waits until they unwound.

An `Interruption` (Ctrl-C, see `runner.run`) stops a sweep gracefully instead: no new run
starts, the runs still going are cancelled at their next wait, and the iterator simply ends
after the outcomes of the runs that finished - so ARE's runner writes what finished.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup

from areasync.gaia2.cooperative import spawn, wait

T = TypeVar("T")
R = TypeVar("R")

Outcome = tuple[T, R | None, BaseException | None]

_task_group: ContextVar[TaskGroup] = ContextVar("areasync_gaia2_task_group")
_interruption: ContextVar[Interruption] = ContextVar("areasync_gaia2_interruption")


class _Unfinished(Exception):
    """The outcome of a run cancelled before it finished (never handed to the caller)."""


class Interruption:
    """A request to stop a sweep gracefully: pools stop starting runs and cancel theirs."""

    def __init__(self) -> None:
        self.requested = False
        self._listeners: list[Callable[[], None]] = []

    def request(self) -> None:
        if self.requested:
            return
        self.requested = True
        for listener in list(self._listeners):
            listener()

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener` on request; returns the function that stops listening."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)


async def run_cooperatively(fn: Callable[[], R], interruption: Interruption | None = None) -> R:
    """Run `fn` (synchronous code that may use `stream_pool`) as a greenlet on this loop.

    What `fn` raises comes out as itself (not wrapped in an exception group), Ctrl-C included.
    `interruption` (default: one nobody requests) stops the pools `fn` runs gracefully.
    """
    failure: BaseException | None = None
    async with anyio.create_task_group() as task_group:
        token = _task_group.set(task_group)
        interruption_token = _interruption.set(interruption or Interruption())
        try:
            result = await spawn(fn)
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as error:  # re-raised below, unwrapped
            failure = error
        finally:
            _interruption.reset(interruption_token)
            _task_group.reset(token)
    if failure is not None:
        raise failure
    return result


@contextmanager
def stream_pool(
    iterator: Iterator[T],
    process_func: Callable[..., R],
    max_workers: int,
    timeout_seconds: float | None = None,
    executor_type: str = "thread",
    **kwargs: Any,
) -> Iterator[Iterator[Outcome[T, R]]]:
    """ARE's `stream_pool` contract; every run a cooperative task (see the module doc)."""
    del executor_type  # every executor type runs cooperatively here
    try:
        task_group = _task_group.get()
    except LookupError:
        raise RuntimeError(
            "areasync.gaia2.pool.stream_pool needs a task group: call it from code run by "
            "`await run_cooperatively(fn)`"
        ) from None
    if max_workers < 1:
        raise ValueError(f"max_workers must be at least 1, got {max_workers}")
    interruption = _interruption.get()
    send, receive = anyio.create_memory_object_stream[Outcome[T, R]](max_buffer_size=math.inf)
    scopes: set[anyio.CancelScope] = set()
    unwound: anyio.Event | None = None  # set when the last run has unwound after a cancel
    live = 0

    async def run_one(item: T, scope: anyio.CancelScope) -> None:
        nonlocal live
        outcome: Outcome[T, R] | None = None
        try:
            with scope:
                if not scope.cancel_called:  # cancelled before it started: never start it
                    try:
                        with anyio.move_on_after(timeout_seconds or None) as deadline:
                            outcome = (item, await spawn(process_func, item, **kwargs), None)
                    except Exception as error:  # the run's failure (its own timeouts too)
                        outcome = (item, None, error)
                    if deadline.cancelled_caught:
                        message = f"Operation timed out after {timeout_seconds} seconds"
                        outcome = (item, None, TimeoutError(message))
            # A run cancelled before it finished is counted by the iterator, never handed out.
            send.send_nowait(outcome or (item, None, _Unfinished()))
        finally:
            scopes.discard(scope)
            live -= 1
            if live == 0 and unwound is not None:
                unwound.set()

    def outcomes() -> Iterator[Outcome[T, R]]:
        started = finished = 0

        def fill() -> None:
            nonlocal started, live
            while started - finished < max_workers and not interruption.requested:
                try:
                    item = next(iterator)
                except StopIteration:
                    return
                # Counted and cancellable from now, not from when the task first runs.
                live += 1
                scope = anyio.CancelScope()
                scopes.add(scope)
                task_group.start_soon(run_one, item, scope)
                started += 1

        fill()
        while finished < started:
            outcome = wait(receive.receive())
            finished += 1
            if isinstance(outcome[2], _Unfinished):
                continue  # a run cancelled by the interruption: it did not finish
            fill()  # keep the pool full before handing the outcome out, as ARE does
            yield outcome

    def cancel_all() -> None:
        for scope in list(scopes):
            scope.cancel()

    stop_listening = interruption.listen(cancel_all)
    try:
        yield outcomes()
    finally:
        stop_listening()
        cancel_all()
        if live:
            unwound = anyio.Event()
            wait(unwound.wait())
        send.close()
        receive.close()


def untimed_stream_pool(*args: Any, timeout_seconds: float | None = None, **kwargs: Any) -> Any:
    """`stream_pool` without ARE's per-run timeout (which ARE passes by name): for runs whose
    time `process_func` bounds itself (`--workers`' run budget, which can end a run that
    never waits)."""
    del timeout_seconds
    return stream_pool(*args, **kwargs)
