"""gaia2-cli's port per session (`--gaia2-ports`) in front of session workers: bound here,
every accepted connection handed whole to the session's worker.

Why here: a session worker opens no socket (its seccomp filter allows none), and a session's
port must outlive the worker holding it (a lost worker's sessions are restored on another,
with the same URL). So the front binds a session's port when it learns of the session (from
a create, a restore, a refresh: `bind`), keeps it until it stops, and hands each connection
accepted there to the session's worker as it hands a WebSocket (`Handoff.gaia2_port`). No
byte is read here: the port names the session, and the worker's adapter serves the
connection from its first byte, every request of its keep-alive for that session (a port
serves one session). No HTTP passes through the front.

Which port, and when the range is used up, is `gaia2cli/bare.py`'s rule: the lowest of the
range no session holds that the kernel lets this process bind; a session past the range gets
none, and the reason is logged. A port is given back when the front stops (a session's
port is held for the front's life, not only until the session is discarded).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from areasync.service.adapters.gaia2cli.bare import BarePorts, Bound

__all__ = ["SessionPorts", "accept_all"]

logger = logging.getLogger("areasync.front")

# Hands one accepted connection of `session_id`'s port `port` on (it owns the socket).
Hand = Callable[[str, int, socket.socket], Coroutine[Any, Any, None]]


def accept_all(sock: socket.socket, take: Callable[[socket.socket], None], what: str) -> None:
    """Accept every connection waiting on the listening, non-blocking `sock`, each to `take`
    (out of descriptors, the rest wait in the backlog for the next readiness)."""
    while True:
        try:
            conn, _ = sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            logger.warning("%s: accept failed: %s", what, exc)
            return
        take(conn)


class SessionPorts:
    """The ports of `first`..`last`, each accepting for one session (module docstring)."""

    def __init__(self, first: int, last: int, hand: Hand) -> None:
        self.ports = BarePorts(first, last)
        self._hand = hand
        self._tasks: set[asyncio.Task[Any]] = set()

    def port_of(self, session_id: str) -> int | None:
        bound = self.ports.of_session.get(session_id)
        return None if bound is None else bound.port

    def bind(self, session_ids: Iterable[str]) -> list[str]:
        """A port for each of `session_ids` that has none, accepting from now on; the ids
        given one."""
        given = []
        for session_id in session_ids:
            if session_id in self.ports.of_session:
                continue
            bound = self.ports.take(session_id)
            if isinstance(bound, str):
                logger.warning("session %s has no gaia2-cli port: %s", session_id, bound)
                continue
            assert bound.sock is not None
            loop = asyncio.get_running_loop()
            loop.add_reader(bound.sock.fileno(), self._accept, bound)
            given.append(session_id)
        return given

    def _accept(self, bound: Bound) -> None:
        """The port is readable: hand every connection waiting there."""
        assert bound.sock is not None
        accept_all(bound.sock, functools.partial(self._take, bound), f"gaia2-cli port {bound.port}")

    def _take(self, bound: Bound, conn: socket.socket) -> None:
        task = asyncio.get_running_loop().create_task(
            self._hand(bound.session_id, bound.port, conn)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        loop = asyncio.get_running_loop()
        for bound in self.ports.held.values():
            if bound.sock is not None:
                with contextlib.suppress(ValueError, OSError):
                    loop.remove_reader(bound.sock.fileno())
        self.ports.close()
        for task in self._tasks:
            task.cancel()
