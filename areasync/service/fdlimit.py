"""The process's open-files limit, raised for a server that holds thousands of sockets.

Each connection is a file descriptor, and so is each socket in its handshake or waiting for
its hello (`max_pending_hellos`) and each one closing (up to `close_timeout`). A soft
RLIMIT_NOFILE of 1,024, the default of many systems, would make `accept` fail long before
`max_connections` (1,024) + `max_pending_hellos` (256). `areasync serve` raises the soft limit
as far as the hard limit allows at start-up and says what it got.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("areasync.service")


def raise_open_files_limit(wanted: int | None = None) -> tuple[int, int] | None:
    """Raise the soft RLIMIT_NOFILE toward the hard limit (or `wanted`, if lower).

    Returns (before, after), or None where there is no such limit (not a POSIX system).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if wanted is None else wanted
    if hard != resource.RLIM_INFINITY:
        target = min(target, hard)
    if target == resource.RLIM_INFINITY:  # pragma: no cover - an unlimited hard limit
        target = 1 << 20
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:  # pragma: no cover - refused by the system
            logger.warning("could not raise the open-files limit from %d: %s", soft, exc)
            return soft, soft
        return soft, target
    return soft, soft
