"""When an `areasync bench` command's fixed costs end and begin: its phase marks.

A sweep's wall time is its fixed costs (start-up: imports, the workers' fork server, loading
the dataset; and the end: ARE's outputs, the report, closing the workers) plus what its runs
take. `--timings PATH` writes the marks below to PATH as JSON when the command ends, so a
bench (bench/fixed_costs.py) reads what the command itself saw rather than guessing from
its output. Each mark is wall-clock seconds since the epoch (`time.time()`), comparable with a
parent process's own clock; a mark never reached is null.

The marks are process-global (`MARKS`, emptied by `reset` as a command starts: code may run
several commands in one process, one after the other). `first` keeps the earliest time a mark
was reached since, `latest` the last.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

import msgspec

__all__ = ["MARKS", "Mark", "Marks", "first", "latest", "reset", "write"]

Mark = Literal[
    "entered",
    "are_cli_imported",
    "first_run_dispatched",
    "first_run_started",
    "last_run_ended",
    "are_returned",
    "places_closed",
    "report_written",
    "exiting",
]


class Marks(msgspec.Struct):
    """The phase marks of one command, in the order they are reached."""

    # The command's entry (`areasync bench ...`), after the interpreter and `areasync.cli`.
    entered: float | None = None
    # ARE's `are-benchmark` CLI imported (its options are the command's).
    are_cli_imported: float | None = None
    # The first run handed to ARE's `process_scenario` (or, with --workers, to a worker).
    first_run_dispatched: float | None = None
    # The first run under way where it runs: in this process, as it is dispatched; in a
    # worker process, once that worker is ready and the run sent to it (null with --ray).
    first_run_started: float | None = None
    # The last run's result back in this process (its files written, its record kept).
    last_run_ended: float | None = None
    # ARE's command returned: output.jsonl, benchmark_stats.json (and gaia2-run's summary).
    are_returned: float | None = None
    # The worker processes (or Ray hosts) let go.
    places_closed: float | None = None
    # The report (per-run files and index.html) written.
    report_written: float | None = None
    # The command's last step, just before the process exits.
    exiting: float | None = None


MARKS = Marks()


def reset() -> None:
    """Forget every mark: a command starts."""
    for name in MARKS.__struct_fields__:
        setattr(MARKS, name, None)


def first(name: Mark) -> None:
    """Mark `name` now unless it was reached before."""
    if getattr(MARKS, name) is None:
        setattr(MARKS, name, time.time())


def latest(name: Mark) -> None:
    """Mark `name` now, replacing an earlier time."""
    setattr(MARKS, name, time.time())


def write(path: str | Path) -> None:
    """Write the marks to `path` as JSON."""
    Path(path).write_bytes(msgspec.json.encode(MARKS))
