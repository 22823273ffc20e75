"""The one call site where a session worker confines itself (Landlock, no_new_privs, rlimits,
no network), once it is forked and holds its channels, before it serves anything.

The confinement itself is `areasync/workers/confine.py`'s (written apart); until it lands
this records what the worker needs and does nothing else, so that the call site and the
paths are settled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Needs", "confine_session_worker"]


@dataclass(frozen=True)
class Needs:
    """What a session worker must still reach once confined."""

    writable: tuple[Path, ...]  # read-write: its journals, its sessions' sandboxes, traces
    readable: tuple[Path, ...]  # read-only beyond the interpreter's own files


def confine_session_worker(writable: Sequence[Path], readable: Sequence[Path] = ()) -> Needs:
    """Confine this process to `writable` (read-write) and `readable` (read-only); what it
    was given. A no-op until `areasync.workers.confine` exists."""
    return Needs(tuple(writable), tuple(readable))
