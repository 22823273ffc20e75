"""How many session workers `areasync serve` runs, and the banner line saying why when none.

The default is one session worker per CPU this process may use (its affinity mask, which a
container or `taskset` narrows; the machine's count where there is no mask): sessions then run
in kernel-confined processes behind the front (`areasync/front/`). With `--ray` the count is
each node's, and a count left out is resolved on each node, by this same rule, by its host
(`cluster/host.py`). `--workers 0` is one process on purpose, for debugging: its banner says
it is unconfined.
"""

from __future__ import annotations

import os

import msgspec

__all__ = ["WorkerCount", "usable_cpus", "worker_count"]


class WorkerCount(msgspec.Struct, frozen=True):
    """The session workers `serve` starts; `one_process` the banner line when there are none."""

    count: int
    one_process: str | None = None


def usable_cpus() -> int:
    """The CPUs this process may run on (at least 1)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity masks on this platform
        return os.cpu_count() or 1


def worker_count(given: int | None) -> WorkerCount:
    """`given` (`--workers`, None when left out) resolved: the rule is the module's."""
    if given is not None:
        if given == 0:
            return WorkerCount(
                0,
                "one process (--workers 0): every session runs in it, unconfined by the "
                "kernel (for debugging; leave --workers out for one confined worker per core)",
            )
        return WorkerCount(given)
    return WorkerCount(usable_cpus())
