"""The server's limits split over its session workers: `max_sessions`, `max_connections`.

`areasync serve --max-sessions M --max-connections C --workers N` means what it means in one
process: M live sessions and C WebSocket connections, server-wide. Each worker admits its
share (`split`: as even as can be, the first workers one more), the front places a new
session on the worker with the most room left (`front/seats.py`), and a worker refuses past
its share with the one-process message. Fewer than one of each per worker cannot be split:
the front refuses to start (`check`). A lost worker's sessions are restored on the workers up
beyond their shares (a restore is never refused for room), until they end.
"""

from __future__ import annotations

import dataclasses

from areasync.service.config import ServiceConfig

__all__ = ["check", "for_worker", "split"]

_SPLIT = (("max_sessions", "--max-sessions"), ("max_connections", "--max-connections"))


def split(total: int, parts: int) -> list[int]:
    """`total` in `parts` shares as even as can be, the first ones one more."""
    base, extra = divmod(total, parts)
    return [base + (1 if index < extra else 0) for index in range(parts)]


def check(config: ServiceConfig, workers: int) -> str | None:
    """Why `config`'s limits cannot be split over `workers` (None: they can)."""
    for field, option in _SPLIT:
        total = getattr(config, field)
        if total < workers:
            return (
                f"{option} {total} is below --workers {workers}: each session worker needs "
                f"a share of at least one; raise {option} or lower --workers"
            )
    return None


def for_worker(config: ServiceConfig, workers: int, index: int) -> ServiceConfig:
    """`config` with worker `index`'s shares of the server's limits."""
    return dataclasses.replace(
        config,
        max_sessions=split(config.max_sessions, workers)[index],
        max_connections=split(config.max_connections, workers)[index],
    )
