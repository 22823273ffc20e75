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
block early (a break, Ctrl-C) cancels the runs still going and waits until they unwound.
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


async def run_cooperatively(fn: Callable[[], R]) -> R:
    """Run `fn` (synchronous code that may use `stream_pool`) as a greenlet on this loop.

    What `fn` raises comes out as itself (not wrapped in an exception group), Ctrl-C included.
    """
    failure: BaseException | None = None
    async with anyio.create_task_group() as task_group:
        token = _task_group.set(task_group)
        try:
            result = await spawn(fn)
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as error:
            failure = error
        finally:
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
    send, receive = anyio.create_memory_object_stream[Outcome[T, R]](max_buffer_size=math.inf)
    scopes: set[anyio.CancelScope] = set()
    unwound: anyio.Event | None = None  # set when the last run has unwound after a cancel
    live = 0

    async def run_one(item: T, scope: anyio.CancelScope) -> None:
        nonlocal live
        try:
            with scope:
                if scope.cancel_called:  # cancelled before it started: never start it
                    return
                try:
                    with anyio.fail_after(timeout_seconds or None):
                        result = await spawn(process_func, item, **kwargs)
                except TimeoutError:
                    outcome: Outcome[T, R] = (
                        item,
                        None,
                        TimeoutError(f"Operation timed out after {timeout_seconds} seconds"),
                    )
                except Exception as error:
                    outcome = (item, None, error)
                else:
                    outcome = (item, result, None)
                send.send_nowait(outcome)
        finally:
            scopes.discard(scope)
            live -= 1
            if live == 0 and unwound is not None:
                unwound.set()

    def outcomes() -> Iterator[Outcome[T, R]]:
        started = finished = 0

        def fill() -> None:
            nonlocal started, live
            while started - finished < max_workers:
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
            fill()  # keep the pool full before handing the outcome out, as ARE does
            yield outcome

    try:
        yield outcomes()
    finally:
        for scope in list(scopes):
            scope.cancel()
        if live:
            unwound = anyio.Event()
            wait(unwound.wait())
        send.close()
        receive.close()
