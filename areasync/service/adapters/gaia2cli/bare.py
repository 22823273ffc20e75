"""A port per session: gaia2-cli's adapter at the bare root of `http://127.0.0.1:PORT`.

Why: gaia2-cli's runner reaches an adapter as `http://127.0.0.1:{port}` and calls `/health`,
`/status`, `/notify` right under it, with no path before them and no credential: upstream runs
one container, hence one adapter, per scenario, and tells the runner its port. With
`--gaia2-ports FIRST-LAST` each session gets a port of that range when it is registered
(created, forked or restored), and the adapter serves that session at its root, as the
session's user (the role of the banner's gaia2-cli URL: it reads everything, and sends the
user's messages). The URL is the session's `gaia2_cli_url` (the banner, `create_session`'s
result, `GET /api/sessions`).

Such a port carries no credential, so it listens on loopback only, whatever `--host` says:
only processes of this machine reach it, which is the trust upstream's adapter has on its
container's loopback. The port's screens are the adapter's (`screens.py`): Host (a loopback
name), Origin (none but those allowed: the port serves no page), bodies by their heads.

Which port: the lowest of the range no session holds that the kernel lets this process bind
(one another process holds is skipped, and tried again for the next session). The socket is
bound and listening when the session is registered, before its first event, so its URL
answers at once (connections wait in the backlog until aiohttp serves the socket). A session
holds its port until it is discarded (`keep_ended` ended sessions are kept), so that a runner
reads a finished run's artifacts there. When the range is used up, a new session gets no port,
and its `gaia2_cli_error` says why and which option to widen; the session itself runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
from typing import Final

from areasync.protocol.sessions import SessionLinks

LOOPBACK: Final = "127.0.0.1"
_BACKLOG: Final = 128


@dataclasses.dataclass
class Bound:
    """A port of the range, bound and listening for one session (`sock` None: bound by the
    front of `serve --workers N`, which hands its connections to the session's worker)."""

    port: int
    session_id: str
    sock: socket.socket | None


class BarePorts:
    """The ports of `first`..`last` and the session holding each."""

    def __init__(self, first: int, last: int) -> None:
        self.first = first
        self.last = last
        self.held: dict[int, Bound] = {}
        self.of_session: dict[str, Bound] = {}

    def take(self, session_id: str) -> Bound | str:
        """A port bound for `session_id`, or why there is none."""
        busy = 0
        for port in range(self.first, self.last + 1):
            if port in self.held:
                continue
            sock = _listen(port)
            if sock is None:
                busy += 1
                continue
            bound = Bound(port, session_id, sock)
            self.held[port] = bound
            self.of_session[session_id] = bound
            return bound
        others = f", {busy} held by other processes" if busy else ""
        return (
            f"no free port in --gaia2-ports {self.first}-{self.last} ({len(self.held)} held by "
            f"sessions until they are discarded{others}): widen the range, or lower keep_ended "
            "so that ended sessions give theirs back sooner"
        )

    def release(self, session_id: str) -> Bound | None:
        """Forget `session_id`'s port (its socket is the caller's to close), if it had one."""
        bound = self.of_session.pop(session_id, None)
        if bound is not None:
            self.held.pop(bound.port, None)
        return bound

    def at(self, port: int) -> Bound | None:
        return self.held.get(port)

    def hold(self, port: int, session_id: str) -> Bound:
        """Record that `session_id` is served at `port`, bound elsewhere (by a front)."""
        self.release(session_id)
        bound = Bound(port, session_id, None)
        self.held[port] = self.of_session[session_id] = bound
        return bound

    def close(self) -> None:
        for bound in self.held.values():
            if bound.sock is not None:
                bound.sock.close()
        self.held.clear()
        self.of_session.clear()


def _listen(port: int) -> socket.socket | None:
    """A non-blocking socket listening on loopback `port`, or None if it cannot be bound."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        sock.listen(_BACKLOG)
        sock.setblocking(False)
    except OSError:
        with contextlib.suppress(OSError):
            sock.close()
        return None
    return sock


def url(port: int) -> str:
    return f"http://{LOOPBACK}:{port}"


def banner_lines(links: SessionLinks) -> list[str]:
    """The banner's words on a session's own port: its URL, or why it has none."""
    if links.gaia2_cli_url:
        return [f"{links.gaia2_cli_url}  (its own port: gaia2-cli's runner's adapter URL)"]
    if links.gaia2_cli_error:
        return [f"no port of its own: {links.gaia2_cli_error}"]
    return []
