"""Handlers for the pool's tests, served in real worker processes (imported there by name).

Each does one thing a worker must cope with: answer, fail, wait until cancelled, hold its
event loop, die, or never start.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

Handlers = dict[str, Callable[..., Awaitable[Any]]]


async def pid() -> int:
    return os.getpid()


async def echo(*args: Any) -> tuple[Any, ...]:
    return args


async def fail(text: str) -> None:
    raise ValueError(text)


async def wait_forever(marker: str) -> None:
    """Wait until cancelled; then leave `marker` behind, so the test sees it unwound."""
    try:
        await asyncio.Event().wait()
    finally:
        with open(marker, "w", encoding="utf-8") as f:  # noqa: ASYNC230  # a few bytes
            f.write("cancelled")


async def hold_the_loop() -> None:
    """Never wait: nothing in the worker can stop this."""
    while True:
        pass


async def die(*args: Any) -> None:
    os._exit(3)


async def unpicklable() -> Any:
    return lambda: None


@contextmanager
def serving() -> Iterator[Handlers]:
    yield {
        "pid": pid,
        "echo": echo,
        "fail": fail,
        "wait_forever": wait_forever,
        "hold_the_loop": hold_the_loop,
        "die": die,
        "unpicklable": unpicklable,
    }


@contextmanager
def dying() -> Iterator[Handlers]:
    """A bench worker whose every run kills its process."""
    yield {"run": die}


@contextmanager
def never_starting() -> Iterator[Handlers]:
    raise RuntimeError("these handlers cannot be set up")
    yield {}  # pragma: no cover
