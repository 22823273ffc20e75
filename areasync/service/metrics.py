"""Counters for `GET /metrics`, in the Prometheus text exposition format (version 0.0.4).

Plain integers bumped on the hot path (a frame sent is one `+= 1`), rendered only when scraped;
gauges (sessions, connections) are read from the live registry at render time rather than kept
in step by hand. No client library: the format is a few lines of text.
"""

from __future__ import annotations

import bisect
import collections
import enum
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the core imports this module: no journal (anyio) at run time
    from areasync.journal import SyncStats

# Tool calls run in microseconds when nothing is wrong; the upper buckets catch apps that do
# real work (file systems, large mailboxes) and a loaded event loop.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.00005,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
)


class Tally(enum.Enum):
    """A count the connection core asks its I/O layer to add one to (`Metrics.count`)."""

    FRAME_RECEIVED = "frames_received"
    PENDING_EVICTION = "pending_evictions"
    RATE_LIMIT_DISCONNECT = "rate_limit_disconnects"


class Histogram:
    """A cumulative Prometheus histogram over fixed buckets (seconds)."""

    def __init__(self, buckets: Iterable[float] = LATENCY_BUCKETS) -> None:
        self.bounds = tuple(sorted(buckets))
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value
        self.count += 1

    def render(self, name: str, help_text: str) -> list[str]:
        lines = [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
        running = 0
        for bound, count in zip(self.bounds, self.counts, strict=False):
            running += count
            lines.append(f'{name}_bucket{{le="{bound:g}"}} {running}')
        lines.append(f'{name}_bucket{{le="+Inf"}} {self.count}')
        lines.append(f"{name}_sum {self.total:.9g}")
        lines.append(f"{name}_count {self.count}")
        return lines


class Metrics:
    """What the service counts. Gauges are passed to `render` by the service."""

    def __init__(self) -> None:
        self.frames_sent = 0
        self.frames_received = 0
        self.stream_items = 0
        self.events = 0  # the events among the stream items (ARE's completed events)
        self.sessions_created = 0
        self.connections_opened = 0
        self.slow_consumer_disconnects = 0  # every 4008, write timeouts included
        self.write_timeout_disconnects = 0  # 4008 from the write-stall sweep (stalls.py)
        self.rate_limit_disconnects = 0  # 4029: out of rate-limit strikes (limits.py)
        self.pending_evictions = 0  # pre-hello sockets closed 4408 to admit newer ones
        # Closes whose peer did not finish the closing handshake within close_timeout: reset.
        self.close_resets = 0
        self.journal_failures = 0  # sessions ended because their journal failed (durable.py)
        self.errors: collections.Counter[str] = collections.Counter()
        self.closes: collections.Counter[int] = collections.Counter()
        self.tool_call_seconds = Histogram()

    def count(self, tally: Tally) -> None:
        """Add one to what the connection core counted (`core.Count`)."""
        match tally:
            case Tally.FRAME_RECEIVED:
                self.frames_received += 1
            case Tally.PENDING_EVICTION:
                self.pending_evictions += 1
            case Tally.RATE_LIMIT_DISCONNECT:
                self.rate_limit_disconnects += 1

    def render(
        self,
        *,
        sessions: Mapping[str, float],
        connections: Mapping[str, float],
        traces: int,
        journal: SyncStats | None = None,
    ) -> str:
        """The Prometheus text exposition of every metric; `journal`: what the state
        directory's journals made durable (zeros without one)."""
        lines: list[str] = []
        _metric(lines, "areasync_sessions", "gauge", "Sessions by state.", sessions, "state")
        _metric(
            lines, "areasync_connections", "gauge", "Attached clients by role.", connections, "role"
        )
        for name, help_text, value in self._counters():
            _metric(lines, name, "counter", help_text, value)
        _metric(
            lines,
            "areasync_errors_total",
            "counter",
            "Error frames sent, by code.",
            {code: float(n) for code, n in self.errors.items()},
        )
        _metric(
            lines,
            "areasync_closes_total",
            "counter",
            "Connections the server closed, by WebSocket close code.",
            {str(code): float(n) for code, n in self.closes.items()},
        )
        _metric(
            lines, "areasync_traces_written_total", "counter", "ARE trace files written.", traces
        )
        for name, help_text, value in _journal_counters(journal):
            _metric(lines, name, "counter", help_text, value)
        lines.extend(
            self.tool_call_seconds.render(
                "areasync_tool_call_seconds",
                "Time to run a tool call, from frame decoded to result queued (wait excluded).",
            )
        )
        return "\n".join(lines) + "\n"

    def _counters(self) -> list[tuple[str, str, float]]:
        """The plain counters, in the order they are rendered: name, help, value."""
        return [
            ("areasync_sessions_created_total", "Sessions created.", self.sessions_created),
            (
                "areasync_connections_opened_total",
                "WebSocket connections accepted.",
                self.connections_opened,
            ),
            ("areasync_frames_sent_total", "Frames written to WebSockets.", self.frames_sent),
            (
                "areasync_frames_received_total",
                "Frames read from WebSockets.",
                self.frames_received,
            ),
            (
                "areasync_stream_items_total",
                "Stream items produced by all sessions.",
                self.stream_items,
            ),
            ("areasync_events_total", "Events logged by all sessions.", self.events),
            (
                "areasync_slow_consumer_disconnects_total",
                "Clients closed with 4008 because they read too slowly.",
                self.slow_consumer_disconnects,
            ),
            (
                "areasync_write_timeout_disconnects_total",
                "Clients closed with 4008 because their socket took no bytes for write_timeout.",
                self.write_timeout_disconnects,
            ),
            (
                "areasync_rate_limit_disconnects_total",
                "Clients closed with 4029 because they kept sending while rate limited.",
                self.rate_limit_disconnects,
            ),
            (
                "areasync_journal_failures_total",
                "Sessions ended because their journal could not be written.",
                self.journal_failures,
            ),
            (
                "areasync_pending_evictions_total",
                "Connections closed with 4408 before hello to make room for newer ones.",
                self.pending_evictions,
            ),
            (
                "areasync_close_resets_total",
                "Closes reset because the peer did not finish the closing handshake in time.",
                self.close_resets,
            ),
        ]


def _journal_counters(stats: SyncStats | None) -> list[tuple[str, str, float]]:
    """The journals' counters (`journal.SyncStats`; zero without journals): name, help, value."""
    records, syncs, rounds, wait_s = (
        (0, 0, 0, 0.0)
        if stats is None
        else (stats.records, stats.syncs, stats.rounds, stats.wait_s)
    )
    return [
        ("areasync_journal_records_total", "Journal records made durable.", records),
        ("areasync_journal_syncs_total", "Journal files synced (fdatasync).", syncs),
        (
            "areasync_journal_sync_rounds_total",
            "Thread calls that wrote and synced journals (syncs per round above 1: group "
            "commit across sessions).",
            rounds,
        ),
        (
            "areasync_journal_wait_seconds_total",
            "Seconds journal records waited from their batch's first append to their sync's "
            "end, summed (over records_total: the mean wait of a reply for durability).",
            wait_s,
        ),
    ]


def _metric(
    lines: list[str],
    name: str,
    kind: str,
    help_text: str,
    samples: Mapping[str, float] | float,
    label: str = "code",
) -> None:
    """Append one metric's HELP, TYPE and sample lines."""
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} {kind}")
    if isinstance(samples, Mapping):
        for key, value in sorted(samples.items()):
            lines.append(f'{name}{{{label}="{key}"}} {value:g}')
    else:
        lines.append(f"{name} {samples:g}")
