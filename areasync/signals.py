"""How `areasync serve` ends on SIGINT or SIGTERM, even while a call holds the event loop.

Why this exists. asyncio's signal handling (`loop.add_signal_handler`, which
`anyio.open_signal_receiver` uses) only wakes the event loop, which then runs the handler: a
tool call holding the loop (a runaway, a backtracking regular expression in C) held the
signal with it, and only SIGKILL stopped the server.

What happens instead. The handlers are plain Python signal handlers. The interpreter runs
them in the main thread, the event loop's, between two bytecodes of whatever runs there, and
even in the middle of a standard-library `re` match, which checks for signals as it
backtracks. (A thread blocked in `sigwait` would not do: it needs the interpreter lock to act,
which such a match holds.) The first signal:

* arms a backstop that needs neither the event loop nor the interpreter lock: `faulthandler`'s
  watchdog thread, written in C, which prints every thread's stack (where the server was
  stuck) and exits with status 1 if the event loop has not taken the signal within
  `shutdown_timeout`;
* makes a second SIGINT or SIGTERM exit at once, with status 128 + the signal's number;
* hands the signal to the event loop (`call_soon_threadsafe`). When the loop takes it, the
  backstop moves to the whole shutdown's bound (`shutdown_deadline`) and the service shuts down:
  sessions end with their traces written (or are suspended in their journals), clients are
  closed 1001.

A pure-Python call holding the loop is stopped by the call watchdog (`areasync.bridge.watchdog`)
within its budget, after which the loop takes the signal and the shutdown is clean. A call
stuck in C that never checks for signals (sorting millions of items) delays even the handler;
worker processes that a supervisor can kill will close that. What a backstop exit loses:
nothing that was acknowledged (a journaled record is on disk before its reply, and a journal
is never left half-written: `areasync.journal`), but the traces of sessions that had not
ended, and, with a state dir, the records the stuck loop had not yet handed to the writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import os
import signal
import sys
import threading
from types import FrameType

import anyio

__all__ = ["SIGNALS", "ShutdownSignals", "exit_after"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class ShutdownSignals:
    """SIGINT and SIGTERM for one `areasync serve` process (see the module docstring); made
    and installed on the event loop, in the main thread."""

    def __init__(self, *, saying: str, answer_within: float, shutdown_within: float) -> None:
        self._saying = saying  # what the server does on the first signal
        self._answer_within = answer_within
        self._shutdown_within = shutdown_within
        self._loop = asyncio.get_running_loop()
        self._taken = anyio.Event()
        self.signum: int | None = None  # the first signal, once the loop has taken it

    def install(self) -> None:
        for signum in SIGNALS:
            signal.signal(signum, self._first)

    async def taken(self) -> int:
        """Wait until the event loop has taken the first signal; its number."""
        await self._taken.wait()
        assert self.signum is not None
        return self.signum

    def _first(self, signum: int, frame: FrameType | None) -> None:
        # Runs wherever the main thread was: it only arms the backstop, swaps the handlers,
        # writes one line with os.write (stderr's buffer may be in the middle of a write) and
        # asks the loop to take the signal.
        for other in SIGNALS:
            signal.signal(other, _exit_now)
        exit_after(self._answer_within)
        _say(
            f"\nareasync: {signal.Signals(signum).name}: {self._saying}... (a second Ctrl-C or "
            f"SIGTERM exits at once, writing nothing; if the server cannot stop within "
            f"{self._answer_within:g} s it exits with status 1, printing where it was stuck)\n"
        )
        self._loop.call_soon_threadsafe(self._take, signum)

    def _take(self, signum: int) -> None:
        exit_after(self._shutdown_within)
        if self.signum is None:
            self.signum = signum
            self._taken.set()


def _exit_now(signum: int, frame: FrameType | None) -> None:
    _say(f"\nareasync: second {signal.Signals(signum).name}: exiting now\n")
    os._exit(128 + signum)


def _say(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, text.encode(errors="replace"))


def exit_after(seconds: float) -> None:
    """Exit with status 1, printing every thread's stack, if the process still runs `seconds`
    from now; replaces the previous such deadline. `faulthandler`'s thread: it fires even while
    the interpreter lock is held (a call stuck in C)."""
    try:
        faulthandler.dump_traceback_later(seconds, exit=True, file=sys.stderr)
    except (AttributeError, ValueError, OSError, RuntimeError):  # stderr has no descriptor
        timer = threading.Timer(seconds, os._exit, (1,))
        timer.daemon = True
        timer.start()
