"""The `areasync` command: run a scenario, print the protocol schema, serve sessions.

areasync run scenario_tutorial --mode fast --oracle
areasync bench run|judge|gaia2-run [are-benchmark's options] [--resume] [--retry N]
areasync bench report OUTPUT_DIR
areasync bench aggregate SHARD_DIR... --output_dir OUT
areasync schema
areasync serve [--scenario ID_OR_PATH ...]
areasync session create|stop|list --url ws://HOST:PORT --token ADMIN_TOKEN
areasync agent oracle --url ws://HOST:PORT --session ID --token TOKEN

`main` (the console script `areasync`, and `python -m areasync.cli`) picks the command; each is
a module of its own: the parser (`parser.py`), `run.py`, `serve.py` (`one_process.py` for
`--workers 0`), `schema.py`, `bench.py`, `sessions.py`, the agents' (`areasync.agents.cli`). None of
them imports ARE before its command runs, so that `areasync --help` and the front process stay
lean; `serve.py`, which imports the most, is imported only when it runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from areasync.cli import bench
from areasync.cli.parser import build_parser
from areasync.cli.run import print_event_table
from areasync.cli.values import port_range
from areasync.exits import exit_uncollected
from areasync.tempdirs import remove_ares_temp_dir_at_exit

__all__ = ["build_parser", "main", "port_range", "print_event_table"]

_parser = build_parser  # the parser's name before it had a module of its own


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `areasync` command `argv` (default: this process's arguments); its exit status."""
    # No argv: this is the process's own command (the `areasync` script, `python -m`).
    owns_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    remove_ares_temp_dir_at_exit()
    if argv[:1] == ["gaia2-cli"]:
        # gaia2-cli's app commands: stdlib only, so that each starts at once.
        from areasync.agents.gaia2.tools import main as gaia2_tools

        return gaia2_tools(argv[1:])
    if owns_process:
        exit_uncollected()  # a server or a run: ARE's heap is not collected as it exits
    status = bench.dispatch(argv, owns_process=owns_process)
    if status is not None:
        return status
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return int(handler(args.command)(args))


def handler(command: str) -> Callable[[argparse.Namespace], int]:
    """The function that runs `command`, one of the parser's; its module is imported now."""
    if command == "run":
        from areasync.cli.run import run

        return run
    if command == "schema":
        from areasync.cli.schema import schema

        return schema
    if command == "serve":
        from areasync.cli.serve import serve

        return serve
    if command == "agent":
        from areasync.agents.cli import run_agent

        return run_agent
    if command == "session":
        from areasync.cli.sessions import run_session

        return run_session
    return bench.usage
