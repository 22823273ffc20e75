"""`areasync serve`: its options made a ServiceConfig and checked, then served one of three ways.

With session workers (the default: one per CPU), `front/` serves and a fork server runs the
sessions; with `--ray`, `cluster/` runs a host per node behind a router; with `--workers 0`,
every session runs in this process (`one_process.py`). Whichever way, a bad option or an
operator's scenario file too large is refused here, in one line and with status 2, before
anything starts (a front and its workers, or ARE's import). Each way is imported only once
chosen: the front imports no ARE. This module imports only what checking the options needs:
with workers, everything imported before the fork server boots (`front/boot.py`) delays ARE's
import in it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from areasync.bridge.operator_files import TooLargeError, check_file, names_a_file
from areasync.cli.tunables import tunables_given
from areasync.protocol.frames import ImportMode, Mode
from areasync.workers.count import worker_count

__all__ = ["serve", "shutdown_deadline"]


def serve(args: argparse.Namespace) -> int:
    """Serve the sessions `args` asks for until a signal ends the server; its exit status."""
    from areasync.policies import LeasePolicy
    from areasync.service.config import ServiceConfig

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.log_level != "debug":
        # ARE narrates scenario registration and every run at INFO: keep the banner readable.
        logging.getLogger("are").setLevel(logging.WARNING)
    try:
        config = ServiceConfig(
            host=args.host,
            port=args.port,
            gaia2_port=args.gaia2_port,
            gaia2_ports=args.gaia2_ports,
            scenario_dir=args.scenario_dir,
            mcp_port=args.mcp_port,
            allow_origins=tuple(args.allow_origin),
            allow_hosts=tuple(args.allow_host),
            admin_token=args.token or os.environ.get("AREASYNC_TOKEN") or None,
            trace_dir=Path(args.trace_dir) if args.trace_dir else None,
            mode=Mode(args.mode or _default_mode(args.scenario)),
            speed=args.speed,
            oracle=args.oracle,
            import_mode=ImportMode(args.import_mode),
            lease_timeout=args.lease_timeout,
            lease_policy=LeasePolicy(args.lease_policy),
            max_sessions=args.max_sessions,
            **_memory_limit(args.memory_limit),
            judge_model=args.judge_model,
            judge_provider=args.judge_provider,
            judge_endpoint=args.judge_endpoint,
            state_dir=Path(args.state_dir) if args.state_dir else None,
            durability=args.durability,
            retention=args.retention,
            seed=args.seed,
            **tunables_given(args),
        )
    except ValueError as exc:
        print(f"areasync serve: {exc}", file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 0:
        print("areasync serve: --workers is a count of processes: 0 or more", file=sys.stderr)
        return 2
    workers = worker_count(args.workers)
    if args.require_confinement and not workers.count:
        print(
            "areasync serve: --require-confinement confines session worker processes; with "
            "--workers 0 every session runs in one process, unconfined: give --workers N "
            "(or leave it out), or leave out --require-confinement",
            file=sys.stderr,
        )
        return 2
    # An operator's scenario file too large is refused before anything starts (a front and its
    # workers, or ARE's import): the same line a session's creation would give.
    for source in args.scenario or []:
        if names_a_file(source) and os.path.isfile(source):
            try:
                check_file(source, config.max_scenario_bytes)
            except TooLargeError as exc:
                print(f"areasync serve: cannot create a session: {exc}", file=sys.stderr)
                return 2
    if args.ray:
        from areasync.cluster.cli import serve_cluster

        if workers.one_process is not None:
            print(workers.one_process, flush=True)
        # A count left out is resolved on each node: one worker per CPU of that node.
        return serve_cluster(
            args.ray, config, args.scenario or [], args.workers, args.require_confinement
        )
    if workers.count:
        from areasync.front.boot import boot_fork_server

        boot_fork_server()  # it imports ARE while the front (which imports none) starts below
        from areasync.front.cli import serve_front

        scenarios = args.scenario or ["scenario_tutorial"]
        # The workers' stops, then the pool's kill of what is left (workers/pool.py: STOP_S).
        return serve_front(
            config,
            workers.count,
            scenarios,
            shutdown_deadline(config) + 10.0,
            require_confinement=args.require_confinement,
        )
    assert workers.one_process is not None
    from areasync.cli.one_process import serve_in_process

    scenarios = args.scenario or ["scenario_tutorial"]
    return serve_in_process(config, scenarios, workers.one_process, shutdown_deadline(config))


def shutdown_deadline(config: Any) -> float:
    """Wall seconds a shut-down may take before the process exits anyway: the sessions' stop
    bound, the close handshakes' and a margin (the service bounds each step itself; this is
    the backstop)."""
    return float(
        config.shutdown_timeout + config.shutdown_grace + config.close_timeout + 1.0 + 10.0
    )


def _memory_limit(given: int | str | None) -> dict[str, Any]:
    """`memory_limit` for ServiceConfig: left out for its default, None for "none"."""
    if given is None:
        return {}
    return {"memory_limit": None if given == "none" else int(given)}


def _default_mode(scenarios: list[str] | None) -> str:
    # The default session is for someone who just typed `make serve`: in fast mode it waits,
    # time standing still, until an agent attaches or the dashboard's Start runs it (realtime
    # would run it to its end, unwatched, 20 s after start-up).
    return "fast" if scenarios is None else "realtime"
