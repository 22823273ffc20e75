"""A command's process exits without the interpreter's last collection of its whole heap.

At exit, CPython's finalisation collects every generation while it clears the modules: for a
process that imported ARE (a server, a run, a benchmark sweep: millions of objects, LiteLLM's
too where it is loaded) that took a large part of a second on its own, each time a server
stopped. An `atexit` hook freezes the heap out of collection instead: objects are still freed
as their modules are cleared, only the cycles among them are not looked for. It applies only
to a command that is its process's own (`cli.main` run from the command line): code calling
`main` in-process, as tests do, keeps its collector as it was.
"""

from __future__ import annotations

import atexit
import gc

__all__ = ["exit_uncollected"]

_hooked = False


def exit_uncollected() -> None:
    """Freeze the heap out of the interpreter's last collections when this process exits."""
    global _hooked
    if not _hooked:
        _hooked = True
        atexit.register(gc.freeze)
