"""The temporary directory ARE makes as it is imported, removed when the process ends.

ARE's `are.simulation.config` calls `tempfile.mkdtemp(prefix="are_simulation_sandbox_")` at
import time and never removes the directory, so every process that imports ARE leaves one
behind in the temp dir: thousands after a day of commands and test runs. An `areasync`
command removes its own at exit. Nothing here imports ARE: a process that never imported it
has no directory to remove.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys

ARE_CONFIG = "are.simulation.config"
_registered: set[int] = set()  # the processes that registered the removal


def remove_ares_temp_dir_at_exit() -> None:
    """At this process's exit, remove the directory ARE made when this process imported it.

    Only in this process: a child forked from it that exits through `sys.exit` runs the
    parent's exit handlers too, and must not remove a directory its parent still uses.
    """
    owner = os.getpid()
    if owner in _registered:
        return
    _registered.add(owner)

    def remove() -> None:
        if os.getpid() != owner:
            return
        path = getattr(sys.modules.get(ARE_CONFIG), "ARE_SIMULATION_SANDBOX_PATH", None)
        if isinstance(path, str) and os.path.basename(path).startswith("are_simulation_sandbox_"):
            shutil.rmtree(path, ignore_errors=True)

    atexit.register(remove)
