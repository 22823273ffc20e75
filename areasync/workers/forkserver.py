"""This process's fork server, running with the modules its pool wants preloaded.

multiprocessing keeps one fork server per process, and what it preloads is fixed when it starts.
A pool that found one already running with other modules (started in the same process for
another kind of pool: a bench run's, then a front's) would fork workers without what they need
imported: they would import it themselves after the fork, start threads on the way, and then
could not be confined (or, confined, could not read what the import needs). So every start goes
through `ensure_fork_server`, which remembers what the running server was started with and
restarts it when a pool wants other modules. One process runs one kind of pool at a time (a
command's own), so no live worker depends on a server that is restarted.

This module imports nothing heavy: `areasync serve` and `bench run` call it before ARE is
imported.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from multiprocessing import forkserver
from typing import Any

__all__ = ["ensure_fork_server"]

_started_with: tuple[str, ...] | None = None


def ensure_fork_server(preload: Sequence[str]) -> None:
    """Make this process's fork server one started with `preload`: start it if none runs,
    restart it if the running one was started with other modules (or not through here).
    Returns at once: the server imports in its own process."""
    global _started_with
    wanted = tuple(preload)
    server: Any = forkserver._forkserver  # its pid and `_stop` are not typed
    if server._forkserver_pid is not None and _started_with != wanted:
        server._stop()
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(wanted))
    forkserver.ensure_running()
    _started_with = wanted
