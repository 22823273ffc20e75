"""Starting the server's background tasks so that none of their failures can end the server.

Why this exists. The server's task group (`Service.serve`) runs every session's task, every
session's journal, and the periodic sweeps beside the connections. In a task group the first
task that raises cancels all the others and the group raises: one session's journal that
could not encode a record ended the whole process (exit 1), every other session with it.

`start` runs a task in a task group so that an exception it raises is logged with its
traceback and handed to `on_failure` (a session's task ends that session with the reason), and
never reaches the group. Cancellation is not a failure: it goes through as asked. A loop that
should outlive a failing round (a sweep) catches per round itself, so that it goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.abc

logger = logging.getLogger("areasync.service")

__all__ = ["start"]


def start(
    task_group: anyio.abc.TaskGroup,
    fn: Callable[..., Awaitable[Any]],
    *args: Any,
    what: str,
    on_failure: Callable[[Exception], None] | None = None,
) -> None:
    """`task_group.start_soon(fn, *args)`, its failure contained (module docstring); `what`
    names the task in the task's name and in the log."""
    task_group.start_soon(_contained, fn, args, what, on_failure, name=f"areasync {what}")


async def _contained(
    fn: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
    what: str,
    on_failure: Callable[[Exception], None] | None,
) -> None:
    try:
        await fn(*args)
    except Exception as exc:
        logger.exception("%s failed; the server goes on without it", what)
        if on_failure is None:
            return
        try:
            on_failure(exc)
        except Exception:
            logger.exception("%s failed, and so did ending what it served", what)
