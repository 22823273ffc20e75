"""What one call of a session's ARE code may cost: wall time, and directory entries listed.

Why this exists. A tool call or a scenario event runs ARE's code synchronously on the event
loop; while it runs, every other session waits. `CallBudget.run` is the one wrapper around
each of them (`ToolBox.call`, `AsyncEnvironment.process_event`), with three guards, each honest
about what it can stop:

* wall time (`seconds`, `ServiceConfig.tool_budget`): the process's watchdog
  (`areasync.bridge.watchdog`) interrupts Python code that runs past it;
* regular expressions an agent chose: matched with a timeout at the call's deadline
  (`areasync.bridge.patterns`), since a backtracking `re` runs in C and cannot be interrupted;
* directory entries listed (`max_listing`): every listing of a local file system inside the call
  (`fsspec`'s `LocalFileSystem.ls`: ARE's `ls`, `tree`, recursive `cat`/`rm`/`mv`) is counted,
  and the call is refused with `OverListing` past the cap: a deterministic refusal, the same on
  a replay. (How many files a session may create is the sandbox's: `Sandbox.max_files_created`.)

A call that went over a bound raises `OverTime` or `OverListing` (both `OverBudget`); ARE
logs the action as failed with the message, as any failing tool. An interrupted call may leave
its app's state as far as it got, as any exception in the middle of ARE's code would; ARE's
thread-local event flags (`EventRegisterer`) are put back as they were before the call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from are.simulation.types import EventRegisterer
from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

from areasync.bridge import patterns
from areasync.bridge.watchdog import OverBudget, OverTime, Running, watchdog

__all__ = ["UNBOUNDED", "CallBudget", "OverBudget", "OverListing", "OverTime"]

T = TypeVar("T")


class OverListing(OverBudget):
    """A call listed more directory entries than `max_listing` allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the call listed more than {limit} directory entries, the most one call may list "
            "(max_listing): list a smaller directory; the operator can raise it with "
            "`areasync serve --max-listing`"
        )
        self.limit = limit


class CallBudget:
    """A session's bounds on one call (see the module docstring); None: no bound."""

    __slots__ = ("_seconds", "bounded", "max_listing", "seconds")

    def __init__(self, seconds: float | None = None, max_listing: int | None = None) -> None:
        self.seconds = seconds
        self.max_listing = max_listing
        self._seconds = math.inf if seconds is None else seconds
        self.bounded = seconds is not None or max_listing is not None
        if self.bounded:
            install()

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` within the bounds; raises `OverTime` or `OverListing` if it went over
        one and raised (see `Watchdog.run`)."""
        if not self.bounded:
            return fn(*args)
        flags = _flags.__dict__
        active, capturing = flags.get("active", True), flags.get("capture_mode", False)
        running = Running(self._seconds, self.max_listing)
        try:
            return watchdog.run(running, fn, *args)
        finally:
            if running.fired:
                # An exception raised into ARE's `disable()`/`capture_mode()` may have cut
                # their restoring short; nothing can be raised into this thread any more.
                _flags.active = active
                _flags.capture_mode = capturing


UNBOUNDED = CallBudget()
"""No bound: ARE's code runs as it would without areasync."""

_flags = EventRegisterer._thread_local


def charge_listing(entries: int) -> None:
    """Count `entries` listed against the running call's `max_listing`; raise `OverListing`
    past it. Outside a call with a budget, nothing."""
    running = watchdog.current()
    if running is None or running.max_listing is None:
        return
    running.listed += entries
    if running.listed > running.max_listing:
        running.exceeded = running.exceeded or OverListing(running.max_listing)
        raise running.exceeded


_installed = False
_local_ls = LocalFileSystem.ls


def _counted_ls(self: LocalFileSystem, path: str, detail: bool = False, **kwargs: Any) -> Any:
    listing = _local_ls(self, path, detail=detail, **kwargs)
    charge_listing(len(listing))
    return listing


def install() -> None:
    """Route agent-chosen patterns through the bounded matcher and count local listings
    (once per process; outside a budgeted call both behave as before)."""
    global _installed
    if _installed:
        return
    patterns.install()
    LocalFileSystem.ls = _counted_ls
    _installed = True
