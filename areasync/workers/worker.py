"""What runs in a worker process: the pool's calls, served by its handlers on an event loop.

A worker is forked from the pool's fork server (`pool.py`), with the heavy modules already
imported there, and runs `main(sock, serve)`:

* `serve` is a module-level function (pickled by name, so the worker imports its module: the
  fork server has preloaded it) returning a context manager that yields the handlers: method
  name -> async function. It is entered around the worker's event loop, so whatever it sets up
  (ARE's pipeline on the virtual clock, for a bench run) lasts the worker's life. `Ready` is
  sent once it is entered.
* Each `Call` runs as a task of its own: a worker runs many calls at once. Its reply is
  `Returned` with the value, or `Raised` with the exception's type name and text.
* `Cancel` cancels the call's task: it unwinds at its next wait and is answered `Cancelled`.
  A call that never waits holds the event loop: nothing in the worker can stop it, so the
  driver kills the worker after a grace (`pool.py`).
* `confinement`, if the pool gives one, is applied first (`confine.py`): before the handlers
  are set up and before any thread starts. `Ready` carries what was applied; a confinement
  that cannot be applied is sent as `Raised` (call id 0) instead, and the worker exits.
* Ctrl-C is ignored here: the terminal sends it to every process of its group, and the
  driver decides what stops (it cancels calls through the channel, then closes it).
* The driver's end closing (the pool closing, or the driver dying) ends the worker: its calls
  are cancelled and the handlers' context is left. The channel is read on a thread of its
  own, so this holds even while a call holds the loop: the process then ends after
  `EXIT_GRACE_S`.
* The worker dies with its parent, the fork server (`PR_SET_PDEATHSIG`, `SIGKILL`), and lets
  the fork server end with its driver: multiprocessing gives every process its fork server
  forks the fork server's "alive" descriptor, and the fork server ends only once every
  holder has closed it, so the worker closes its copy. The driver ending, however it ends,
  then ends the fork server, and the kernel kills the workers: a driver killed with SIGKILL
  leaves no worker running, even one whose loop and reader thread a call holds, and none
  writes into the driver's private directories once the next driver may reclaim them
  (`privatedirs.py`). A fork server that ended before the worker set this is the case
  above: the channel is closed already.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import pickle
import signal
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from multiprocessing import forkserver

from areasync.workers import channel
from areasync.workers.channel import Call, Cancel, Cancelled, Message, Raised, Ready, Returned
from areasync.workers.confine import Confinement, ConfinementError, Report, confine

__all__ = ["EXIT_GRACE_S", "Handler", "Serve", "main"]

Handler = Callable[..., Awaitable[object]]
# `serve()`, or `serve(side)` for a pool with a side channel.
Serve = Callable[..., AbstractContextManager[Mapping[str, Handler]]]

# After its driver went away: how long a worker whose loop is held by a call may take to end.
EXIT_GRACE_S = 5.0
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Have the kernel kill this process (SIGKILL) when its parent, the fork server, ends
    (Linux; elsewhere the closed channel ends it), and let the fork server end with its
    driver (module docstring)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    server = getattr(forkserver, "_forkserver", None)
    alive = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(alive, int):
        with contextlib.suppress(OSError):
            os.close(alive)
        server._forkserver_alive_fd = None  # type: ignore[union-attr]


def main(
    sock: socket.socket,
    serve: Serve,
    confinement: Confinement | None = None,
    side: socket.socket | None = None,
) -> None:
    """A worker process's body (the pool's `Process` target); `side`, the pool's side channel
    (`side_channel=True`), is handed to `serve`. The confinement is applied once the process
    holds both its channels, before `serve` sets anything up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    try:
        report = None if confinement is None else confine(confinement)
    except ConfinementError as error:  # said to the pool, which gives it as the start's failure
        with contextlib.suppress(OSError):
            sock.sendall(channel.encode(Raised(0, type(error).__name__, str(error))))
        raise SystemExit(1) from None
    with serve() if side is None else serve(side) as handlers:
        asyncio.run(_Worker(sock, handlers, report).serve())


class _Worker:
    def __init__(
        self, sock: socket.socket, handlers: Mapping[str, Handler], report: Report | None
    ) -> None:
        self._sock = sock
        self._handlers = handlers
        self._report = report
        self._tasks: dict[int, asyncio.Task[None]] = {}

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        closed = asyncio.Event()
        reader = threading.Thread(
            target=self._read, args=(loop, closed), name="areasync worker channel", daemon=True
        )
        reader.start()
        self._send(Ready(os.getpid(), self._report))
        await closed.wait()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _read(self, loop: asyncio.AbstractEventLoop, closed: asyncio.Event) -> None:
        """The reader thread: hands each message to the loop; at the end, ends the process."""
        while True:
            try:
                message = channel.read(self._sock)
            except channel.ChannelError:
                message = None
            if message is None:
                break
            try:
                loop.call_soon_threadsafe(self._take, message)
            except RuntimeError:  # the loop is closed: the worker is ending anyway
                return
        try:
            loop.call_soon_threadsafe(closed.set)
        except RuntimeError:
            return
        # The main thread ends the process first, unless a call holds the loop.
        time.sleep(EXIT_GRACE_S)
        os._exit(1)

    def _take(self, message: Message) -> None:
        if isinstance(message, Call):
            handler = self._handlers.get(message.method)
            if handler is None:
                known = ", ".join(sorted(self._handlers))
                text = f"this worker has no handler {message.method!r} (it has: {known})"
                self._send(Raised(message.id, "LookupError", text))
                return
            task = asyncio.get_running_loop().create_task(self._run(message, handler))
            self._tasks[message.id] = task
        elif isinstance(message, Cancel):
            running = self._tasks.get(message.id)
            if running is not None:
                running.cancel()

    async def _run(self, call: Call, handler: Handler) -> None:
        reply: Message
        try:
            reply = Returned(call.id, await handler(*call.args))
        except asyncio.CancelledError:
            reply = Cancelled(call.id)
        except Exception as error:
            reply = Raised(call.id, type(error).__name__, str(error))
        finally:
            self._tasks.pop(call.id, None)
        self._send(reply)

    def _send(self, message: Message) -> None:
        try:
            frame = channel.encode(message)
        except (pickle.PicklingError, TypeError, AttributeError, channel.ChannelError) as error:
            if not isinstance(message, Returned):
                raise  # only a handler's value can fail to pickle
            text = f"its value could not be sent back: {error}"
            frame = channel.encode(Raised(message.id, type(error).__name__, text))
        with contextlib.suppress(OSError):  # the driver is gone: the reader thread ends us
            self._sock.sendall(frame)
