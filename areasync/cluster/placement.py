"""Where a new or a lost session goes: the least loaded host, decided without I/O.

A host's load is its live sessions plus the sessions it was just given and has not reported yet
(creations under way, restores assigned), then its resident memory: a session costs as much
memory on a host as in one process (little: docs/topics/performance.md), but its CPU is what it
costs, and live sessions are the best measure of that a host can give without sampling. So the
host with the fewest sessions wins; among equals the one using less memory; among those the
first by node id, so that a placement can be told in advance (tests, logs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Load", "least_loaded", "spread"]


@dataclass
class Load:
    """What the router knows of one host's load (refreshed from `Host.load`)."""

    live: int = 0  # live sessions the host reported
    rss: int = 0  # its process's resident memory, in bytes
    pending: int = 0  # sessions given to it since it last reported

    def key(self, node_id: str) -> tuple[int, int, str]:
        return (self.live + self.pending, self.rss, node_id)


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
