"""Catch what a server must never do under hostile input: log an error or lose a task's exception.

`watch_faults()` collects, while it is active, every log record at ERROR or above from any
logger (areasync's own, websockets' "connection handler failed", asyncio's "Task exception was
never retrieved") and every context handed to the event loop's exception handler. A hardening
test runs its whole scenario inside it and asserts `faults.problems == []` at the end: a server
that answered every bad frame correctly but logged a traceback on the way has still failed.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


class _Collector(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(level=logging.ERROR)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        text = f"{record.levelname} {record.name}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text += f" [{type(error).__name__}: {error}]"
        self.sink.append(text)


@dataclass
class Faults:
    """Error log records and loop exception contexts seen while watching."""

    problems: list[str] = field(default_factory=list)

    def on_loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        detail = f" [{type(error).__name__}: {error}]" if error is not None else ""
        self.problems.append(f"loop exception: {context.get('message')}{detail}")


@contextmanager
def watch_faults(loop: asyncio.AbstractEventLoop | None = None) -> Iterator[Faults]:
    """Collect server faults (see the module docstring) until the block exits."""
    faults = Faults()
    handler = _Collector(faults.problems)
    root = logging.getLogger()
    root.addHandler(handler)
    loop = loop or asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    loop.set_exception_handler(faults.on_loop_exception)
    # "Task exception was never retrieved" is reported when a task is freed, which for a task in
    # a reference cycle takes a collection: at the block's end, of the objects the block made.
    # What existed before it is frozen, out of the collector's sight: a full collection walks
    # the whole heap of the test process (ARE, pytest, every module), for every block. (A fork's
    # state copy in the block unfreezes everything, `bridge/state_copy.py`: the collection then
    # walks the whole heap, which finds as much.)
    gc.freeze()
    try:
        yield faults
        gc.collect()
    finally:
        gc.unfreeze()
        loop.set_exception_handler(previous)
        root.removeHandler(handler)
