"""Supervised worker processes on this machine: which code runs in which process.

Three kinds of process take part, and each module here runs in one of them:

* **The driver** (`pool.py`, `thread.py`): the process that wants work done elsewhere (today
  `areasync bench run --workers N`). `WorkerPool` starts the workers, calls their handlers,
  ends a call past its budget, and restarts a worker that dies; it runs on an event loop of
  its own (`LoopThread`), so that supervising never waits on the driver's own work.
* **The fork server**: multiprocessing's, started once by the driver with the heavy modules
  imported (the pool's `preload`: ARE and areasync's benchmark code, for a bench run). It runs
  no code of ours beyond those imports: it only forks.
* **The workers** (`worker.py`): each forked from the fork server, so it starts with those
  modules already imported. It serves the handlers its pool names (a module-level function
  returning them: `areasync.gaia2.remote.serving` for a bench run) on its own event loop, many
  calls at once, and ends when its driver's end of the channel closes.

A worker confines itself through the kernel as it starts (`confine.py`, over `landlock.py`
and `seccomp.py`), with the spec its pool sends: what it may read, write and connect to.

`channel.py` is the one thing both ends share: the messages and how they cross the socket.
`count.py` is how many session workers a server starts on this machine (its usable CPUs).
This package imports nothing else of areasync (tests/test_import_rules.py): what a worker
does is its handlers' business, so sessions can move into worker processes the same way.
"""
