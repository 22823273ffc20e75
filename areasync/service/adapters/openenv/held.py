"""Episodes kept between HTTP requests, one per key, reaped when idle.

A client that speaks request by request (OpenEnv's `POST /reset` and `/step`, its `/mcp`
JSON-RPC, an MCP client over Streamable HTTP) has no connection whose end would detach its
episode from the session. So its episode is kept under a key (its credential) and reaped once
it got no request for `openenv_idle_timeout` seconds: it leaves the session, which runs on (an
agent's episode gives its fast-mode turn back). The key's next request is told it was reaped
(`was_reaped`), until it starts anew (`restart`). An episode with a request under way is never
reaped (`using`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable

import anyio

from areasync.service.adapters.openenv.credential import Credential
from areasync.service.adapters.openenv.episode import Episode
from areasync.service.sessions.registry import SessionRegistry

logger = logging.getLogger("areasync.service")


class HeldEpisodes:
    """The held episodes of one kind of client: see the module docstring."""

    def __init__(
        self,
        registry: SessionRegistry,
        what: str,
        valid: Callable[[str], bool],
        on_gone: Callable[[str], None] | None = None,
    ) -> None:
        self.registry = registry
        self.what = what  # what they are, for the log: "OpenEnv HTTP episodes"
        self._valid = valid  # whether a key's credential still opens something
        self._on_gone = on_gone  # told of each key whose episode was reaped or dropped
        self._held: dict[str, Episode] = {}
        self._busy: dict[Episode, int] = {}  # episodes with a request under way
        self._reaped: set[str] = set()  # keys whose episode was reaped

    def get(self, key: str) -> Episode | None:
        return self._held.get(key)

    def episode(self, key: str, credential: Credential) -> Episode:
        """`key`'s episode, made on its first request."""
        episode = self._held.get(key)
        if episode is None:
            episode = self._held[key] = Episode(self.registry, credential)
        return episode

    async def drop(self, key: str) -> None:
        """`key`'s client is done: its episode leaves its session (none: nothing to do)."""
        episode = self._held.pop(key, None)
        if episode is not None:
            self._gone(key)
            await episode.close()

    def _gone(self, key: str) -> None:
        if self._on_gone is not None:
            self._on_gone(key)

    def waiting(self) -> int:
        """How many episodes are in a bounded wait (`Episode.wait`)."""
        return sum(1 for episode in self._held.values() if episode.waiting)

    def was_reaped(self, key: str) -> bool:
        return key in self._reaped

    def restart(self, key: str) -> None:
        """`key` starts anew: its reaping is forgotten."""
        self._reaped.discard(key)

    @contextlib.asynccontextmanager
    async def using(self, episode: Episode) -> AsyncIterator[None]:
        """A request under way on `episode`: never reaped meanwhile, idle from its end."""
        self._busy[episode] = self._busy.get(episode, 0) + 1
        try:
            yield
        finally:
            left = self._busy.pop(episode) - 1
            if left:
                self._busy[episode] = left
            episode.touch()

    async def reap_idle(self) -> int:
        """Reap the episodes idle for `openenv_idle_timeout`; how many were."""
        limit = time.monotonic() - self.registry.config.openenv_idle_timeout
        idle = [
            (key, episode)
            for key, episode in self._held.items()
            if episode.last_active <= limit and episode not in self._busy
        ]
        for key, episode in idle:
            del self._held[key]
            self._reaped.add(key)
            self._gone(key)
            await episode.close()
        # Keys of credentials gone since: nothing can use them again.
        self._reaped = {key for key in self._reaped if self._valid(key)}
        return len(idle)

    async def close(self) -> None:
        """The server stops: every episode leaves its session."""
        held, self._held = self._held, {}
        for key, episode in held.items():
            self._gone(key)
            await episode.close()

    async def reap_forever(self) -> None:
        """`reap_idle` a few times per timeout, so an episode goes within 1.25 timeouts.
        It runs in the server's task group: a failure is logged, never the server's end."""
        interval = min(max(self.registry.config.openenv_idle_timeout / 4, 0.05), 30.0)
        while True:
            await anyio.sleep(interval)
            try:
                await self.reap_idle()
            except Exception:
                logger.exception("reaping idle %s failed; it runs again", self.what)
