"""`areasync serve --workers 0`: every session served in this process, until a signal.

For debugging: its banner says it is unconfined. It raises the open files limit (every socket
is a descriptor) and warns when the limit is below what the ports may hold, starts the service,
prints its banner, and on SIGINT or SIGTERM shuts it down within `serve.shutdown_deadline`
(`signals.py`). A service that cannot start (`ServiceError`: a scenario that fails to load, a
port taken) is one line on stderr and status 2.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import anyio

from areasync.signals import ShutdownSignals

__all__ = ["serve_in_process"]


def serve_in_process(
    config: Any, scenarios: list[str], one_process: str, shutdown_within: float
) -> int:
    """Serve `scenarios` with `config` in this process until a signal; the exit status.
    `one_process`: the banner's line saying how sessions run; `shutdown_within`: wall seconds
    the shutdown may take before the process exits anyway (`serve.shutdown_deadline`)."""
    # Imported once the options are known good: a refusal before this answers without ARE.
    from areasync.service.starting import ServiceError

    failures: list[BaseException] = []
    try:
        anyio.run(_serve, config, scenarios, one_process, shutdown_within)
    except* ServiceError as group:
        # Task groups wrap what fails inside them (nested); report each ServiceError itself.
        failures.extend(_leaves(group))
    for failure in failures:
        print(f"areasync serve: {failure}", file=sys.stderr)
    return 2 if failures else 0


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


async def _serve(
    config: Any, scenarios: list[str], one_process: str, shutdown_within: float
) -> None:
    from areasync.service import Service
    from areasync.service.fdlimit import raise_open_files_limit
    from areasync.service.gc_policy import settle as settle_gc

    # Every socket is a file descriptor: raise the soft limit to the hard one, and say so.
    log = logging.getLogger("areasync.service")
    limit = raise_open_files_limit()
    if limit is not None:
        before, after = limit
        if after > before:
            log.info("open files limit raised from %d to %d (the hard limit)", before, after)
        # Every socket the ports may hold: authenticated, pending and parked (admission.py),
        # and the gaia2-cli and MCP ports'.
        sockets = config.max_connections + 5 * config.max_pending_hellos
        if config.gaia2_port is not None:
            sockets += config.gaia2_max_connections
        if config.mcp_port is not None:
            sockets += config.max_connections
        if after < sockets + 64:
            log.warning(
                "the open files limit (%d) is below the sockets the ports may hold (%d: "
                "max_connections + 5 x max_pending_hellos + gaia2_max_connections) + 64: "
                "accept() may fail before those limits are reached; raise `ulimit -n`",
                after,
                sockets,
            )

    service = Service(config, scenarios)
    signals = ShutdownSignals(
        saying=(
            "ending sessions, writing traces, closing connections"
            if config.state_dir is None
            else "suspending sessions in their journals, closing connections"
        ),
        answer_within=config.shutdown_timeout,
        shutdown_within=shutdown_within,
    )
    signals.install()
    async with anyio.create_task_group() as tg:

        async def serve(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
            await service.serve(task_status=task_status)
            if service.suspended:
                print(
                    f"areasync: {service.suspended} session(s) suspended in their journals; "
                    f"start again with --state-dir {config.state_dir} to resume them",
                    file=sys.stderr,
                    flush=True,
                )
            tg.cancel_scope.cancel()  # served and shut down: stop waiting for a signal

        await tg.start(serve)
        settle_gc()
        # The note is the banner's second line, where a front's says what confines its workers.
        first, rest = service.banner().split("\n", 1)
        print(f"{first}\n{one_process}\n{rest}", flush=True)
        await signals.taken()
        service.shutdown()
        await anyio.sleep_forever()  # until `serve` returns and cancels the group
