"""Write stalls: a socket that takes no bytes for `write_timeout` is closed with 4008.

One task for the whole server (`StallSweep.run`) looks at every attached connection every
`sweep_interval(write_timeout)` (1 s with the defaults), rather than a timer per connection or
per write: the cost is one pass over the connections per second, none on the write path but an
addition (`Connection.bytes_written`).

"Takes no bytes" is one of two things, whichever comes first:

- **the user-space write buffer made no progress**: the socket's transport still buffers bytes
  for the client, and neither has it emptied nor has the client taken a byte of it (bytes
  written since the last look, minus the growth of the buffer) for `write_timeout`. A busy
  session fills the buffer of a client that stops reading within a few hundred kB; this closes
  it even when `max_lag` items take longer than that to come;
- **a keepalive ping went unanswered**: the oldest ping websockets sent (every `ping_interval`)
  has waited `write_timeout` for its pong. On a quiet session the kernel's buffers absorb the
  few bytes of pings, so the user-space buffer stays empty; the unanswered ping is what shows
  that the client stopped reading. Such a client is closed within `ping_interval` +
  `write_timeout` (+ one sweep) of its last read. websockets' own ping timeout (1011) is off:
  this check replaces it, with the code that says what to do (4008: resume with `since`).

A client that reads, however slowly, takes bytes and answers pings behind what it is reading:
it is closed only if a ping waits `write_timeout` behind its backlog (as websockets' keepalive
would have closed it, with 1011). Closing is `Connection.write_stalled`: 4008 without
flushing, then the usual close (aborted after `close_timeout` if the peer does not finish it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from areasync.service.connection import Connection


def sweep_interval(write_timeout: float) -> float:
    """How often the sweep looks: once a second, or four times per timeout if that is shorter."""
    return min(1.0, write_timeout / 4)


class _Sample:
    __slots__ = ("buffered", "progress_at", "written")

    def __init__(self, written: int, buffered: int, now: float) -> None:
        self.written = written
        self.buffered = buffered
        self.progress_at = now


class StallSweep:
    """Closes the stalled among `connections` (a live view: the service's dict of them)."""

    def __init__(self, connections: Iterable[Connection], write_timeout: float) -> None:
        self.connections = connections
        self.write_timeout = write_timeout
        self._samples: dict[Connection, _Sample] = {}

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        interval = sweep_interval(self.write_timeout)
        while True:
            await anyio.sleep(interval)
            self.sweep(loop.time())

    def sweep(self, now: float) -> None:
        """Look at every attached connection once; `now` is the event loop's clock (pings are
        timed on it)."""
        timeout = self.write_timeout
        previous = self._samples
        samples: dict[Connection, _Sample] = {}
        for connection in list(self.connections):
            if connection.session is None:
                continue  # before hello: hello_timeout and the pending pool see to it
            ws = connection.ws
            transport = ws.transport
            if transport is None or transport.is_closing():
                continue
            buffered = transport.get_write_buffer_size()
            written = connection.bytes_written
            sample = previous.get(connection)
            if sample is None:
                sample = _Sample(written, buffered, now)
            else:
                taken = (written - sample.written) - (buffered - sample.buffered)
                if buffered == 0 or taken > 0:
                    sample.progress_at = now
                sample.written = written
                sample.buffered = buffered
            samples[connection] = sample
            stalled_for = now - sample.progress_at
            if buffered and stalled_for >= timeout:
                connection.write_stalled(
                    f"your socket took none of the {buffered} bytes waiting for it in "
                    f"{stalled_for:.1f} s"
                )
                continue
            waited = _oldest_ping_age(ws, now)
            if waited is not None and waited >= timeout:
                connection.write_stalled(f"a keepalive ping waited {waited:.1f} s for its pong")
        self._samples = samples


def _oldest_ping_age(ws: Any, now: float) -> float | None:
    # websockets keeps its unanswered pings in order: {payload: (pong future, sent at)}, sent
    # at on the event loop's clock.
    pings = getattr(ws, "pending_pings", None)
    if not pings:
        return None
    _, sent = next(iter(pings.values()))
    return float(now - sent)
