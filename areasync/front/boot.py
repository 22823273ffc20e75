"""The front's fork server, booted as `areasync serve` starts rather than once the front runs.

A session worker cannot start before the fork server has imported `PRELOAD` (ARE, areasync's
service, ARE's scenario discovery: `sessionworker/preload.py`), the longest import of the
start-up (the front itself imports no ARE: `tests/test_import_rules.py`). Booted by the front's
pool, the fork server began importing only once the front had imported and set up; booted here,
before the CLI imports the front, both run at once, each on a core. A start that then fails (a
state dir refused, a port taken) leaves a fork server that ends with the process, as every fork
server does.

This module imports nothing heavy: it runs before ARE is imported.
"""

from __future__ import annotations

__all__ = ["PRELOAD", "boot_fork_server"]

# What the fork server imports once, so that a worker starts with it imported (and ARE's
# scenarios discovered): `sessionworker/preload.py`.
PRELOAD = ("areasync.sessionworker.preload",)


def boot_fork_server() -> None:
    """Start this process's fork server with `PRELOAD` now (`workers/forkserver.py`). Returns
    at once: the fork server imports in its own process, and the front's pool forks its
    workers from it."""
    from areasync.workers.forkserver import ensure_fork_server

    ensure_fork_server(PRELOAD)
