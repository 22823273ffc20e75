"""What a session worker runs, named for the front without importing it.

The pool sends the fork server a function to run in each worker (`workers/worker.py`'s
`serve`). The front may not import the worker's handlers (`handlers.py`: the service, the
bridge, ARE; `tests/test_import_rules.py`), so it sends `serving`, which imports them where it
runs: in the worker, whose fork server preloaded them (`preload.py`). Nothing imports this
module but the front, so the lazy import closes no cycle.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from areasync.workers.worker import Handler

__all__ = ["serving"]


def serving(side: socket.socket) -> AbstractContextManager[Mapping[str, Handler]]:
    """The pool's `serve` for session workers: `handlers.serving`, imported where it runs (in
    the worker), never in the front."""
    from areasync.sessionworker.handlers import serving as handlers_serving

    return handlers_serving(side)
