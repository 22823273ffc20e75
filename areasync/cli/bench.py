"""`areasync bench ...`: Gaia2's benchmark commands, handed their own arguments before argparse.

`bench run|judge|gaia2-run` take are-benchmark's own options (click, in `areasync.gaia2.cli`),
`bench report` and `bench aggregate` parse theirs (`areasync.gaia2.report`, `.shards`), so the
`areasync` parser never sees them: `dispatch` runs them from the raw arguments, importing what
each needs (ARE only for the are-benchmark ones) only then. `bench` alone, or an unknown bench
command, reaches the parser, whose `bench` entry says how to use them (`usage`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Final

__all__ = ["ARE_BENCHMARK", "COMMANDS", "dispatch", "usage"]

ARE_BENCHMARK: Final = ("run", "judge", "gaia2-run")
"""The bench commands that are are-benchmark's own, on the virtual clock."""

COMMANDS: Final = (*ARE_BENCHMARK, "report", "aggregate")
"""Every bench command, each with its own `--help` (the CLI reference lists them all)."""


def dispatch(argv: Sequence[str], *, owns_process: bool) -> int | None:
    """The exit status of `areasync ARGV` when it names a bench command; None otherwise (the
    parser then takes `argv`). `owns_process`: this is the process's own command."""
    if argv[:1] != ["bench"] or len(argv) < 2 or argv[1] not in COMMANDS:
        return None
    command, rest = argv[1], list(argv[2:])
    if command in ARE_BENCHMARK:
        from areasync.gaia2.cli import main as bench

        return bench(rest, command=command, owns_process=owns_process)
    if command == "aggregate":
        from areasync.gaia2.shards import main as bench_aggregate

        return bench_aggregate(rest)
    from areasync.gaia2.report import main as bench_report

    return bench_report(rest, prog="areasync bench report")


def usage(args: argparse.Namespace) -> int:
    """`areasync bench` without one of its commands: say how to use them; 2."""
    print(
        "usage: areasync bench run|judge|gaia2-run [are-benchmark's options] | areasync bench "
        "report OUTPUT_DIR (see --help)",
        file=sys.stderr,
    )
    return 2
