"""A watchdog that stops one synchronous call that holds its thread past its wall-time budget.

Why this exists. A session's tools and events run ARE's code synchronously on the event loop's
thread: while one call runs, every session, socket and HTTP request of the server waits. Some of
ARE's tools cost what an agent chooses (a search over data the agent built, a listing of a tree
it made), so one call can freeze the server for as long as the agent likes. Worker processes a
supervisor can kill are the real cure; until then this module bounds one call in place.

How. `Watchdog.call(fn, budget)` marks the call as running on this thread (a `Running` record
in a per-thread slot) and runs it. One daemon thread for the whole process polls the slots; when
a call has run past its deadline, it raises `OverTime` in the call's thread with
`PyThreadState_SetAsyncExc`, again every further `budget` seconds while the call still runs (ARE
code that swallows the first with `except Exception` gets another). The call then unwinds as
from any exception: ARE logs the failed action, and the caller answers the budget error.

The exception never lands outside its call. The watchdog raises only under its lock, only
into the call that still occupies the slot, and never once the call has said it is leaving.
The interpreter delivers an asynchronous exception only where it checks for pending work (a
call, a function's entry, a backward jump), so every such point between arming the slot and
releasing it is inside a `try` that catches `OverTime`: the call itself, and the release, tried
up to three times (after `leaving` is set at most two can still arrive: one pending from before
and the one the watchdog may have been raising at that instant). The release empties the slot
under the lock and withdraws any exception still pending. A call that finished just as the
watchdog fired keeps its result.

What it cannot stop: code in C that holds the interpreter lock and never returns to the
interpreter (the standard library's `re` backtracking, a sort of millions of items). The
exception waits, pending, until the C call returns, and the watchdog thread itself cannot run
until then. That is why agent-chosen regular expressions go through a matcher with a timeout
(`areasync.bridge.patterns`), and why listings and creations have caps
(`areasync.bridge.sandbox.confinement`, `areasync.bridge.sandbox.audit`). Worker processes close the
rest.
"""

from __future__ import annotations

import ctypes
import functools
import math
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["OverBudget", "OverTime", "Running", "Watchdog", "over_time", "watchdog"]

T = TypeVar("T")

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
_set_async_exc.restype = ctypes.c_int
_NOTHING = ctypes.py_object()  # a NULL object: withdraws a pending asynchronous exception


class _Withdrawn(BaseException):
    """Stands in for a pending `OverTime` as it is withdrawn, and is taken at once."""


def _checkpoint() -> None:
    """A Python call: the interpreter looks for pending asynchronous exceptions at its entry."""


def _take_pending() -> None:
    """Withdraw whatever the watchdog left pending in this thread, by delivery, not by erasure.

    Erasing it (`PyThreadState_SetAsyncExc(id, NULL)`) leaves CPython's "asynchronous exception
    pending" flag set with nothing to deliver: every later call then takes the interpreter's
    slow path, and with a tracer or profiler on (a debugger, coverage, `sys.setprofile`) the
    first call loops for ever at its entry. Replacing it with `_Withdrawn` and taking that here
    clears the flag as any delivered exception does. Called once the call has left its slot,
    so the watchdog cannot raise again meanwhile."""
    thread = threading.get_ident()
    try:
        _set_async_exc(thread, _Withdrawn)
        for _ in range(3):
            _checkpoint()
    except _Withdrawn:
        return
    _set_async_exc(thread, _NOTHING)  # not delivered at a call (another interpreter): erase


class OverBudget(Exception):
    """A call went over one of its bounds (its wall time, or what else its caller counts)."""


class OverTime(OverBudget):
    """A call ran past its wall-time budget and was stopped (see the module docstring).

    An `Exception`, not a `BaseException`, on purpose: ARE's wrappers then log the interrupted
    action as failed, with this message, as they log any tool that raises. Raised
    asynchronously, the exception is made from its class with no arguments, so its message
    comes from the class (`over_time` makes one per budget)."""

    seconds: float = 0.0

    def __str__(self) -> str:
        return (
            f"the call ran past its budget of {self.seconds:g} s of wall time (tool_budget) "
            "and was stopped: every session of the server waits while one call runs. Ask for "
            "less (a simpler pattern, a smaller directory); the operator can raise the budget "
            "with `areasync serve --tool-budget`"
        )


@functools.lru_cache(maxsize=64)
def over_time(seconds: float) -> type[OverTime]:
    """The `OverTime` class whose message names a budget of `seconds`."""
    return type("OverTime", (OverTime,), {"seconds": float(seconds), "__module__": __name__})


class Running:
    """One call the watchdog watches: its thread, deadline, and what it has been charged."""

    __slots__ = (
        "deadline",
        "exceeded",
        "fired",
        "leaving",
        "listed",
        "max_listing",
        "seconds",
        "thread",
    )

    def __init__(self, seconds: float, max_listing: int | None = None) -> None:
        self.thread = threading.get_ident()
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.fired = 0  # asynchronous exceptions raised into the call
        self.leaving = False  # the call is done: no exception may be raised into it any more
        # Why the call went over a bound (set by whoever found out: the watchdog, the regex
        # matcher's timeout, a listing past its cap); None while within them.
        self.exceeded: OverBudget | None = None
        self.listed = 0  # directory entries the call has listed (`charge_listing`)
        self.max_listing = max_listing

    def out_of_time(self) -> OverBudget:
        """The call found out itself that it is past its deadline (a matcher's timeout):
        the exception to raise. The watchdog then waits one more budget before raising one
        of its own, in case ARE swallows this one and goes on."""
        self.exceeded = self.exceeded or over_time(self.seconds)()
        self.deadline = time.monotonic() + self.seconds
        return self.exceeded


class Watchdog:
    """Bounds calls in any thread (see the module docstring); one per process (`watchdog`)."""

    def __init__(self, *, poll: float = 0.25) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, Running] = {}  # by thread id
        self._thread: threading.Thread | None = None
        # Wall seconds between two looks at the running calls: at most `poll`, lowered to a
        # tenth of the smallest budget seen, but not below 10 ms.
        self._period = poll
        self._shortest = math.inf  # the smallest budget seen

    def current(self) -> Running | None:
        """The call running on this thread under a budget, if any."""
        return self._running.get(threading.get_ident())

    def call(
        self,
        fn: Callable[..., T],
        *args: Any,
        seconds: float,
        max_listing: int | None = None,
    ) -> T:
        """`fn(*args)`, stopped with `OverTime` if it runs past `seconds` of wall time (see
        `run`)."""
        return self.run(Running(seconds, max_listing), fn, *args)

    def run(self, running: Running, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` as the call `running` (made on this thread, just now), stopped with
        `OverTime` if it runs past its deadline.

        Returns what `fn` returned, or raises what it raised; if the call went over a bound
        (`Running.exceeded`) and raised, the bound's exception is raised instead (ARE may have
        wrapped it in another), with the call's own as its cause. A call nested in another on
        the same thread runs as part of it (`running` is then never armed)."""
        if running.thread in self._running:
            return fn(*args)
        if running.seconds < self._shortest:
            self._start(running.seconds)
        self._running[running.thread] = running
        # From here to the release, an exception raised into this thread lands in a `try`
        # that catches OverTime (see the module docstring: no call, function entry or
        # backward jump outside one).
        failure: BaseException | None = None
        result: Any = None
        try:
            result = fn(*args)
        except BaseException as exc:
            failure = exc
        running.leaving = True
        try:
            self._release(running)
        except OverTime:
            try:
                self._release(running)
            except OverTime:
                self._release(running)
        if failure is None:
            return result
        if running.exceeded is not None and isinstance(failure, Exception):
            raise running.exceeded from failure
        raise failure

    def stand_aside(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)`, which bounds itself (a matcher's timeout): the watchdog does
        not raise into the running call meanwhile, since its exception, pending until `fn`
        returns from C, would then land in ARE's handling of `fn`'s own."""
        running = self.current()
        if running is None:
            return fn(*args, **kwargs)
        deadline, running.deadline = running.deadline, math.inf
        try:
            return fn(*args, **kwargs)
        finally:
            if running.deadline == math.inf:  # not moved on by `out_of_time`
                running.deadline = deadline

    def away(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)`, during which this thread runs other work (a greenlet switched out
        while a worker thread does `fn`'s job: `areasync.bridge.offload`): the running call
        leaves its slot meanwhile, so that the watchdog never raises into that other work,
        and takes it back after (past its deadline, with one more budget before the watchdog
        raises: `fn` bounds itself, and its own timeout is about to be raised). Called from
        inside the running call, so an exception that lands on the way out goes up to the
        call's own `run`, which takes it."""
        running = self.current()
        if running is None:
            return fn(*args)
        running.leaving = True
        self._release(running)
        if running.fired:  # it ran out of time before it could go
            assert running.exceeded is not None
            raise running.exceeded
        try:
            return fn(*args)
        finally:
            now = time.monotonic()
            if now >= running.deadline:
                running.deadline = now + running.seconds
            running.leaving = False
            self._running[running.thread] = running

    def _release(self, running: Running) -> None:
        with self._lock:
            if self._running.get(running.thread) is running:
                del self._running[running.thread]
        if running.fired:
            _take_pending()

    # -- the watchdog thread -------------------------------------------------------------------

    def _start(self, seconds: float) -> None:
        self._shortest = seconds
        period = min(max(seconds / 10, 0.01), 0.25)
        if period < self._period:
            self._period = period
        if self._thread is None and seconds < math.inf:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._watch, name="areasync call watchdog", daemon=True
                    )
                    self._thread.start()

    def _watch(self) -> None:
        pause = threading.Event()  # never set: a wait on it is a sleep no one else can patch
        while True:
            pause.wait(self._period)
            now = time.monotonic()
            for running in list(self._running.values()):
                if now >= running.deadline:
                    self._fire(running, now)

    def _fire(self, running: Running, now: float) -> None:
        with self._lock:
            if running.leaving or self._running.get(running.thread) is not running:
                return
            exceeded = over_time(running.seconds)
            running.exceeded = running.exceeded or exceeded()
            running.fired += 1
            # The next attempt, should ARE swallow this one: one more budget later.
            running.deadline = now + max(running.seconds, self._period)
            _set_async_exc(running.thread, exceeded)


watchdog = Watchdog()
"""The process's watchdog."""
