"""Write stalls: a socket that takes no bytes for `write_timeout` is closed with 4008.

One task for the whole server (`StallSweep.run`) looks at every attached connection every
`sweep_interval(write_timeout)` (1 s with the defaults), rather than a timer per connection or
per write: the cost is one pass over the connections per second (an `ioctl` each), and none on
the write path but an addition (`Connection.bytes_written`).

**Taken** is what the client's TCP stack has accepted of the data the server wrote to it: the
bytes the connection handed its transport, minus what the transport still buffers (user space)
and what the kernel has not sent or has not had acknowledged (`SIOCOUTQ`; on systems without
it, only the user-space buffer counts). The client's receive window closes when its
application stops reading, and then taken stops growing. A connection is **stalled**, and
closed with 4008 (`Connection.write_stalled`), when taken has not grown for `write_timeout` and
either

- data is waiting for it (user space or kernel; more than `CONTROL_SLACK` bytes, which a few
  control frames in flight never make): a busy session's client that stopped
  reading - closed even when `max_lag` items take longer than that to come; or
- a keepalive ping has waited `write_timeout` for its pong: a quiet session's client that
  stopped reading (the kernel's buffers absorb the few bytes of pings, so no data waits; the
  unanswered ping is what shows it). It is closed within `ping_interval` + `write_timeout`
  (+ one sweep) of its last read. websockets' own ping timeout (1011) is off: this replaces
  it, with the code that says what to do (4008: resume with `since`).

While nothing is owed (no data waiting, no ping unanswered) the clock does not run. A client
that reads, however slowly, takes bytes: it is never closed by this, even when its pongs come
late behind a backlog in the kernel's buffers (websockets' keepalive would have closed it with
1011). Pings and pongs are not counted as data: only data the client took is progress.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Final, Protocol

import anyio
from websockets.asyncio.server import ServerConnection

from areasync.service.gate import sockets

logger = logging.getLogger("areasync.service")

# Bytes waiting that may be control frames alone (a ping, a pong, a close: at most 131 bytes
# each) rather than data: not a reason to close by themselves.
CONTROL_SLACK: Final = 512


def sweep_interval(write_timeout: float) -> float:
    """How often the sweep looks: once a second, or four times per timeout if that is shorter."""
    return min(1.0, write_timeout / 4)


class Writer(Protocol):
    """What the sweep reads of a connection, and its one call (`Connection` is one)."""

    @property
    def ws(self) -> ServerConnection: ...

    @property
    def session(self) -> object | None:
        """Its session once its hello is accepted, None before."""

    @property
    def bytes_written(self) -> int:
        """Bytes handed to its socket so far."""

    def write_stalled(self, why: str) -> None:
        """Close it with 4008 for `why`."""


class _Sample:
    __slots__ = ("progress_at", "taken")

    def __init__(self, taken: int, now: float) -> None:
        self.taken = taken
        self.progress_at = now


class StallSweep:
    """Closes the stalled among `connections` (a live view: the service's dict of them)."""

    def __init__(self, connections: Iterable[Writer], write_timeout: float) -> None:
        self.connections = connections
        self.write_timeout = write_timeout
        self._samples: dict[Writer, _Sample] = {}

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        interval = sweep_interval(self.write_timeout)
        while True:
            await anyio.sleep(interval)
            try:
                self.sweep(loop.time())
            except Exception:
                logger.exception("the stalled-connection sweep failed; it runs again")

    def sweep(self, now: float) -> None:
        """Look at every attached connection once; `now` is the event loop's clock (pings are
        timed on it)."""
        timeout = self.write_timeout
        previous = self._samples
        samples: dict[Writer, _Sample] = {}
        for connection in list(self.connections):
            if connection.session is None:
                continue  # before hello: hello_timeout and the pending pool see to it
            ws = connection.ws
            unsent = sockets.unsent(ws)
            if unsent is None:
                continue
            taken = connection.bytes_written - unsent
            ping_age = sockets.oldest_ping_age(ws, now)
            sample = previous.get(connection)
            if sample is None:
                sample = _Sample(taken, now)
            elif taken > sample.taken or (unsent <= CONTROL_SLACK and ping_age is None):
                sample.taken = max(taken, sample.taken)
                sample.progress_at = now  # it took data, or nothing is owed
            samples[connection] = sample
            stalled_for = now - sample.progress_at
            if stalled_for < timeout:
                continue
            if ping_age is not None and ping_age >= timeout:
                connection.write_stalled(f"a keepalive ping waited {ping_age:.1f} s for its pong")
            elif unsent > CONTROL_SLACK:
                connection.write_stalled(
                    f"your socket took none of the {unsent} bytes waiting for it in "
                    f"{stalled_for:.1f} s"
                )
        self._samples = samples
