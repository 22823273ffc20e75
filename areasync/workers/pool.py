"""The driver's side of the worker processes: start them fast, supervise them, call them.

`WorkerPool(size, serve, preload=...)` keeps `size` worker processes (`worker.py`) running on
this machine, each serving `serve`'s handlers, and `call(worker, method, *args, budget=...)`
runs one handler call in one of them. The pool lives on one asyncio event loop; the bench
driver gives it a thread of its own (`thread.py`), so that supervising never waits on the
driver's own work.

* **Fast starts: a preloaded fork server.** Workers are forked by multiprocessing's fork
  server: a process started once, with the `preload` modules imported
  (`set_forkserver_preload`), so a worker costs a fork and its handlers' set-up, not an
  interpreter importing ARE (docs/topics/performance.md measures both). The fork server has
  no thread when it forks; the driver has several, which is why workers are not forked from
  the driver. The fork server is the process's own: the first pool to start it decides what
  it preloads. As with every start method but `fork`, a worker imports the driver's main module (as
  `__mp_main__`): a script that starts a pool keeps its work under `if __name__ ==
  "__main__":`.
* **Supervision.** A worker whose channel closes (it exited, crashed or was killed) is lost:
  every call under way there fails with `WorkerLost` (the caller may run it again elsewhere),
  and its slot starts a new worker at once. A slot whose worker dies before it is ready
  `START_ATTEMPTS` times in a row is given up (`Worker.gone` says why), and its calls fail
  with `WorkerLost`.
* **Budgets.** A call given a `budget` (seconds) that has not answered by then is cancelled in
  its worker, where it unwinds at its next wait; if it has not given way within `grace_s`, its
  worker is killed (SIGKILL) and restarted, and the worker's other calls fail with
  `WorkerLost`. The call raises `BudgetSpent`, saying whether the worker was killed. A call
  its caller cancels is ended the same way.
* **A side channel** (`side_channel=True`): each process also gets a Unix `SOCK_SEQPACKET`
  socketpair of its own, for what the pickled channel cannot carry (a file descriptor with
  `socket.send_fds`: the front hands accepted sockets to session workers over it). Its
  worker end is passed to `serve(side)`; `Worker.side` is the driver's end for the running
  process (None while it starts).
* **Losses are told** (`on_lost`): called with the slot, the pid of a process once that
  process has ended (whatever ended it), and whether the pool killed it (a call that did not
  give way), before its slot starts a new one.
* **Confinement.** Given a `confinement` (`confine.Confinement`), each worker applies it to
  itself as it starts, before its handlers (`worker.py`); `Worker.confined` is what it
  applied (`confine.Report`).
* **Closing** closes every channel (a worker ends when its driver's end closes), waits up to
  `STOP_S` for each process, and kills what is left.

What happened to the workers (restarts, kills, slots given up) is kept in `events`, in order,
for the caller to say.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

from areasync.workers import channel
from areasync.workers.channel import Call, Cancel, Cancelled, Message, Raised, Ready, Returned
from areasync.workers.confine import Confinement, Report
from areasync.workers.forkserver import ensure_fork_server
from areasync.workers.worker import Serve
from areasync.workers.worker import main as worker_main

__all__ = [
    "GRACE_S",
    "POOLS",
    "START_ATTEMPTS",
    "STOP_S",
    "BudgetSpent",
    "CallFailed",
    "PoolError",
    "Worker",
    "WorkerLost",
    "WorkerPool",
]

logger = logging.getLogger("areasync.workers")

GRACE_S = 10.0  # a cancelled call's time to give way before its worker is killed
START_ATTEMPTS = 3  # a slot whose worker dies before it is ready this often in a row is given up
START_S = 300.0  # a start (the fork server's imports included) not ready by then has failed
STOP_S = 5.0  # a worker's time to end once its channel is closed, before it is killed


class WorkerLost(Exception):
    """The worker running the call ended (exited, crashed, was killed) before it answered."""

    def __init__(self, text: str, pid: int | None = None) -> None:
        self.pid = pid  # the process that ended (None: the slot had none)
        super().__init__(text)


class BudgetSpent(Exception):
    """The call had not answered within its budget, and was ended."""

    def __init__(self, worker: str, budget_s: float, grace_s: float, killed: bool) -> None:
        self.worker = worker
        self.budget_s = budget_s
        self.grace_s = grace_s
        self.killed = killed  # it did not give way, so its worker was killed
        how = (
            f"it did not give way within {grace_s:g} s, so {worker} was killed and restarted"
            if killed
            else "it was cancelled at its next wait"
        )
        super().__init__(f"was still going after its budget of {budget_s:g} s: {how}")


class CallFailed(Exception):
    """The handler raised in the worker: its exception's type name and text."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        self.message = message
        super().__init__(f"{kind}: {message}")


class PoolError(RuntimeError):
    """No worker of the pool could start."""


@dataclass
class _Live:
    """One running process of a slot."""

    process: BaseProcess
    pid: int
    writer: asyncio.StreamWriter
    side: socket.socket | None = None  # the driver's end of its side channel
    calls: dict[int, asyncio.Future[Message]] = field(default_factory=dict)
    killed: str | None = None  # why the pool killed it
    ending: asyncio.Future[str] | None = None  # the one wait for its exit (`_ended`)


class Worker:
    """One slot of the pool: a worker process, started again whenever it is lost."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gone: str | None = None  # why the slot was given up
        self.starts: list[float] = []  # seconds from asking for each process to it being ready
        self.restarts = 0
        self.confined: Report | None = None  # what its latest process applied to itself
        self._live: _Live | None = None
        self._settled = asyncio.Event()  # set while a process is ready, or once given up

    @property
    def pid(self) -> int | None:
        """The running process's id (None while it starts, or once the slot is given up)."""
        return None if self._live is None else self._live.pid

    @property
    def side(self) -> socket.socket | None:
        """The driver's end of the running process's side channel (pool's `side_channel`)."""
        return None if self._live is None else self._live.side

    @property
    def running(self) -> int:
        """Calls under way in the running process."""
        return 0 if self._live is None else len(self._live.calls)


def _retrieve(future: asyncio.Future[Message]) -> None:
    """Mark a call's outcome seen: a caller that gave up on it never awaits it."""
    if not future.cancelled():
        future.exception()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.kill(pid, signal.SIGKILL)


def _exit_text(process: BaseProcess) -> str:
    code = process.exitcode
    if code is None:
        return "did not end"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


# The pools of this process that are not closed: what a test or a diagnosis looks workers up in.
POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


class WorkerPool:
    """`size` supervised worker processes serving `serve`'s handlers (module docstring)."""

    def __init__(
        self,
        size: int,
        serve: Serve,
        *,
        preload: Sequence[str] = (),
        grace_s: float = GRACE_S,
        side_channel: bool = False,
        on_lost: Callable[[Worker, int, bool], None] | None = None,
        confinement: Confinement | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"a worker pool needs at least one worker, got {size}")
        self.workers = [Worker(f"worker-{n}") for n in range(1, size + 1)]
        self.events: list[str] = []  # restarts, kills, slots given up: in order
        self._serve = serve
        self._preload = list(preload)
        self._grace_s = grace_s
        self._side_channel = side_channel
        self._on_lost = on_lost
        # Applied by each process started from now on: a pool whose paths are known only
        # once its owner has set up (a front's state dir) is given it before `start()`.
        self.confinement = confinement
        self._context = multiprocessing.get_context("forkserver")
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._endings: set[asyncio.Future[str]] = set()  # waits for processes to end
        self._closing = False
        POOLS.add(self)

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every worker (on the running loop); `ready()` waits for them."""
        ensure_fork_server(self._preload)
        for worker in self.workers:
            self._track(self._launch(worker))

    async def ready(self) -> None:
        """Wait until every slot has a ready worker or was given up; PoolError if all were."""
        for worker in self.workers:
            await worker._settled.wait()
        if all(worker.gone for worker in self.workers):
            raise PoolError(f"no worker process could start: {self.workers[0].gone}")

    async def close(self) -> None:
        """Stop supervising, close every channel, then end the processes (module docstring)."""
        self._closing = True
        for worker in self.workers:
            worker._settled.set()  # calls waiting for a worker give up
        # Starts, watches and ends of calls: a start cancelled part way ends what it started.
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        lives = [worker._live for worker in self.workers if worker._live is not None]
        for live in lives:
            live.writer.close()
            if live.side is not None:
                live.side.close()
            for future in live.calls.values():
                if not future.done():
                    future.set_exception(WorkerLost("the pool was closed", live.pid))
        await asyncio.gather(*(self._ended(live) for live in lives))
        await asyncio.gather(*self._endings)
        POOLS.discard(self)

    def _track(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _note(self, event: str) -> None:
        self.events.append(event)
        logger.warning("%s", event)

    async def _launch(self, worker: Worker) -> None:
        """Start the slot's process; give the slot up after START_ATTEMPTS failed starts."""
        failures: list[str] = []
        while len(failures) < START_ATTEMPTS and not self._closing:
            began = time.perf_counter()
            try:
                live, reader = await asyncio.wait_for(self._spawn(worker), START_S)
            except TimeoutError:
                failures.append(f"not ready within {START_S:g} s")
                continue
            except _StartFailed as error:
                failures.append(str(error))
                continue
            except Exception as error:  # it could not even be started (`serve` unpicklable...)
                failures.append(f"{type(error).__name__}: {error}")
                continue
            worker.starts.append(time.perf_counter() - began)
            worker._live = live
            worker._settled.set()
            self._track(self._watch(worker, live, reader))
            return
        if not self._closing:
            worker.gone = f"its process could not start ({'; '.join(failures)})"
            worker._settled.set()
            self._note(f"{worker.name} given up: {worker.gone}")

    async def _spawn(self, worker: Worker) -> tuple[_Live, asyncio.StreamReader]:
        ours, theirs = socket.socketpair()
        side_ours: socket.socket | None = None
        side_theirs: socket.socket | None = None
        if self._side_channel:
            side_ours, side_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        process = self._context.Process(
            target=worker_main,
            args=(theirs, self._serve, self.confinement, side_theirs),
            name=f"areasync {worker.name}",
            daemon=True,
        )
        try:
            # Blocks until the fork server has forked: the first time, until it has imported
            # its preload. Cancelled, the thread still starts it: the process then finds its
            # channel closed, and ends.
            await asyncio.to_thread(_start, process, theirs, side_theirs)
        except BaseException:
            ours.close()
            if side_ours is not None:
                side_ours.close()
            raise
        assert process.pid is not None
        try:
            reader, writer = await asyncio.open_unix_connection(sock=ours)
            first = await channel.receive(reader)
        except BaseException:
            _kill(process.pid)
            ours.close()
            if side_ours is not None:
                side_ours.close()
            raise
        if not isinstance(first, Ready):
            writer.close()
            if side_ours is not None:
                side_ours.close()
            if isinstance(first, Raised):  # its confinement could not be applied (`worker.py`)
                await asyncio.to_thread(_join, process)
                raise _StartFailed(f"it could not confine itself: {first.message}")
            raise _StartFailed(f"it {await asyncio.to_thread(_join, process)} before it was ready")
        worker.confined = first.confined
        return _Live(process, process.pid, writer, side_ours), reader

    async def _watch(self, worker: Worker, live: _Live, reader: asyncio.StreamReader) -> None:
        """Hand each reply to its call until the channel ends; then the worker is lost."""
        try:
            while (message := await channel.receive(reader)) is not None:
                if isinstance(message, Returned | Raised | Cancelled):
                    future = live.calls.get(message.id)
                    if future is not None and not future.done():
                        future.set_result(message)
        except Exception as error:  # a frame that does not decode: the worker is broken
            live.killed = f"was killed: it sent what is not a message ({error})"
            _kill(live.pid)
        await self._lost(worker, live)

    async def _lost(self, worker: Worker, live: _Live) -> None:
        worker._live = None
        worker._settled.clear()
        live.writer.close()
        if live.side is not None:
            live.side.close()
        ended = await self._ended(live)
        reason = live.killed or ended
        where = f"{worker.name} (pid {live.pid}) {reason}"
        for future in live.calls.values():
            if not future.done():
                future.set_exception(WorkerLost(where, live.pid))
        if self._on_lost is not None and not self._closing:
            try:
                self._on_lost(worker, live.pid, live.killed is not None)
            except Exception:  # the listener's bug must not stop the restart
                logger.exception("on_lost failed for %s", worker.name)
        if self._closing:
            return
        worker.restarts += 1
        self._note(f"{where}; restarting it")
        await self._launch(worker)

    async def _ended(self, live: _Live) -> str:
        """Wait (once, however many ask) for the process to end, killing it after STOP_S;
        how it ended."""
        if live.ending is None:
            live.ending = asyncio.ensure_future(asyncio.to_thread(_join, live.process))
            self._endings.add(live.ending)
            live.ending.add_done_callback(self._endings.discard)
        return await asyncio.shield(live.ending)

    # -- calls --------------------------------------------------------------------------------

    async def call(
        self, worker: Worker, method: str, *args: Any, budget: float | None = None
    ) -> Any:
        """`method(*args)` in `worker`'s process (waiting until it is ready); its value.

        Raises `WorkerLost` (the process ended first, or the slot was given up), `BudgetSpent`
        (not answered within `budget` seconds), `CallFailed` (the handler raised).
        """
        live = await self._ready(worker)
        call_id = next(self._ids)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieve)
        frame = channel.encode(Call(call_id, method, args))  # the caller's error if it fails
        live.calls[call_id] = future
        self._send(live, frame)
        try:
            reply = await asyncio.wait_for(asyncio.shield(future), budget)
        except TimeoutError:
            spent = float(budget or 0)
            what = f"a call past its budget of {spent:g} s"
            killed = await self._stop(worker, live, call_id, what)
            raise BudgetSpent(worker.name, spent, self._grace_s, killed) from None
        except asyncio.CancelledError:
            self._track(self._stop(worker, live, call_id, "a call its caller cancelled"))
            raise
        finally:
            if future.done():
                live.calls.pop(call_id, None)
        if isinstance(reply, Returned):
            return reply.value
        if isinstance(reply, Raised):
            raise CallFailed(reply.kind, reply.message)
        raise CallFailed("CancelledError", "the call was cancelled in its worker")

    async def wait_ready(self, worker: Worker) -> None:
        """Wait until `worker` has a ready process; `WorkerLost` if the slot was given up or
        the pool is closing."""
        await self._ready(worker)

    async def _ready(self, worker: Worker) -> _Live:
        while True:
            if worker.gone is not None:
                raise WorkerLost(f"{worker.name} was given up: {worker.gone}")
            if self._closing:
                raise WorkerLost(f"{worker.name}: the pool is closing")
            live = worker._live
            if live is not None:
                return live
            await worker._settled.wait()

    def _send(self, live: _Live, frame: bytes) -> None:
        if not live.writer.is_closing():
            live.writer.write(frame)  # a worker that is gone fails its calls through `_lost`

    async def _stop(self, worker: Worker, live: _Live, call_id: int, what: str) -> bool:
        """End a call: cancel it in the worker, and kill the worker if it has not given way
        within the grace. Whether the worker was killed."""
        future = live.calls.get(call_id)
        if future is None or future.done():
            live.calls.pop(call_id, None)
            return False
        self._send(live, channel.encode(Cancel(call_id)))
        done, _ = await asyncio.wait({future}, timeout=self._grace_s)
        live.calls.pop(call_id, None)
        if done or worker._live is not live:
            return False
        live.killed = f"was killed: {what} did not give way within {self._grace_s:g} s"
        _kill(live.pid)
        return True


class _StartFailed(Exception):
    """A worker process ended before it was ready."""


# multiprocessing reads a forkserver child's exit status from its sentinel, on whichever thread
# asks first: `Process.start` polls every child, and `join` polls its own. Two threads reading
# one sentinel would garble the status, so every poll here is made under this lock (the waits
# themselves are not: they read nothing).
_POLLING = threading.Lock()


def _start(process: BaseProcess, theirs: socket.socket, side: socket.socket | None) -> None:
    """Start the process with the worker's ends of its channels, then close those ends here."""
    try:
        with _POLLING:
            process.start()
    finally:
        theirs.close()
        if side is not None:
            side.close()


def _join(process: BaseProcess) -> str:
    """Wait for the process to end (killing it after STOP_S); how it ended."""
    if not multiprocessing.connection.wait([process.sentinel], STOP_S):
        if process.pid is not None:
            _kill(process.pid)
        multiprocessing.connection.wait([process.sentinel], STOP_S)
    with _POLLING:
        process.join(0)
    return _exit_text(process)
