"""Where a new or a lost session goes: the least loaded host, decided without I/O.

A host's load is its live sessions plus the sessions it was just given and has not reported yet
(creations under way, restores assigned), per session worker it runs them in (a node's front
places each on its own least loaded worker, `front/seats.py`), then its resident memory: a
session costs as much memory on a host as in one process (little: docs/topics/performance.md),
but its CPU is what it costs, and live sessions per worker are the best measure of that a host
can give without sampling. So the host whose workers carry the fewest sessions each wins (a
node with twice the CPUs takes twice the sessions); among equals the one using less memory;
among those the first by node id, so that a placement can be told in advance (tests, logs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["Load", "least_loaded", "spread"]


@dataclass
class Load:
    """What the router knows of one host's load (refreshed from `Host.load`)."""

    live: int = 0  # live sessions the host reported
    rss: int = 0  # its process's resident memory, in bytes
    pending: int = 0  # sessions given to it since it last reported
    workers: int = 1  # the processes its sessions run in

    def key(self, node_id: str) -> tuple[Fraction, int, str]:
        return (Fraction(self.live + self.pending, max(1, self.workers)), self.rss, node_id)


def least_loaded(loads: Mapping[str, Load]) -> str:
    """The node id of the least loaded host (module docstring). Raises ValueError if none."""
    if not loads:
        raise ValueError("no host to place a session on: the cluster has no live node")
    return min(loads, key=lambda node_id: loads[node_id].key(node_id))


def spread(session_ids: Iterable[str], loads: Mapping[str, Load]) -> dict[str, list[str]]:
    """Assign each session to the least loaded host in turn, counting the ones assigned:
    {node id: [session ids]}. `loads`' pending counts grow by what each host is given."""
    assigned: dict[str, list[str]] = {}
    for session_id in sorted(session_ids):
        node_id = least_loaded(loads)
        loads[node_id].pending += 1
        assigned.setdefault(node_id, []).append(session_id)
    return assigned
