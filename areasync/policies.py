"""A simulation's bounds and policies, importable without ARE.

`areasync.simulation` imports ARE (about a second); `ServiceConfig` and the `areasync` command's
parser need only these names, so they live here and `areasync.simulation` re-exports them.
"""

from __future__ import annotations

import enum

__all__ = ["DEFAULT_MAX_FILE_BYTES", "MAX_JUMP_S", "MAX_TICKS", "LagPolicy", "LeasePolicy"]

# The most ticks one `tick(n)` may run, and the most simulated seconds one jump may move the
# clock. A Gaia2 scenario lasts 1,800 s (1,800 ticks); a control far beyond that is a mistake
# or an attack on a scenario without a duration (it would hold the session's lane for hours,
# or overflow ARE's datetimes). Bigger moves are split into several controls.
MAX_TICKS = 100_000
MAX_JUMP_S = 7 * 86_400.0

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
"""Largest file a session may open for reading (an attachment, a document): 10 MiB
(`bridge/sandbox/audit.py` enforces it)."""


class LagPolicy(enum.StrEnum):
    """What a realtime session does when a tick runs late (slow ticks, a busy server)."""

    # Re-anchor: the late tick happens at its own simulated time, no time is lost - unless a
    # later time was already read (a command logged meanwhile): then at that time, since time
    # never goes backwards (`VirtualClock.anchor`); the schedule of later ticks is unchanged.
    SLIP = "slip"
    CATCH_UP = "catch_up"  # keep the schedule: simulated time includes the delay, ticks bunch up
    STRICT = "strict"  # end the session (FAILED) when the lag exceeds `max_lag`


class LeasePolicy(enum.StrEnum):
    """What happens when an agent holds its busy lease past the deadline (fast mode)."""

    RELEASE = "release"  # drop the lease, time moves on (the agent is treated as idle)
    END = "end"  # end the session: an agent that stops answering ends the run
