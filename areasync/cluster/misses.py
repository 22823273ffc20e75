"""The ids no host held when the router last asked: a bounded negative cache, sans-I/O.

The router finds a session's node in its map; on a miss it asks every host (`Router.locate`,
`refresh_map`), which costs about a hundred times a hit. Anyone may send handshakes for made-up
ids, so without a memory of misses each one asked every host again: a load on every node, and
a timing oracle (a known id answered fast, an unknown one slowly, every time). An id that every
host just said it does not hold is remembered here for `ttl` seconds, at most `size` ids (the
oldest go first): its next lookups ask nobody, and cost what a hit costs.

An id the router learns (a session it creates, one a later refresh finds) leaves the cache at
once. A session created through a node's own protocol after its id was looked up and missed is
found once its entry expires (`ttl`, a few seconds); clients of such a session dial its node,
not the router, anyway (its URL is the node's).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

DEFAULT_SIZE = 4096
DEFAULT_TTL_S = 5.0


class Misses:
    """Ids looked up and held by no host, each until `ttl` seconds after its miss."""

    def __init__(
        self,
        *,
        size: int = DEFAULT_SIZE,
        ttl: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if size < 1 or not ttl > 0:
            raise ValueError(f"a miss cache needs size >= 1 and ttl > 0, got {size} and {ttl}")
        self.size = size
        self.ttl = ttl
        self._clock = clock
        self._until: OrderedDict[str, float] = OrderedDict()  # id -> when it expires, oldest first

    def __len__(self) -> int:
        return len(self._until)

    def __contains__(self, session_id: object) -> bool:
        """Whether `session_id` missed less than `ttl` seconds ago (expired entries go)."""
        self._expire()
        return session_id in self._until

    def add(self, session_id: str) -> None:
        """`session_id` missed now."""
        self._until.pop(session_id, None)
        self._until[session_id] = self._clock() + self.ttl
        while len(self._until) > self.size:
            self._until.popitem(last=False)

    def discard(self, session_id: str) -> None:
        """`session_id` exists after all (the router learned where)."""
        self._until.pop(session_id, None)

    def _expire(self) -> None:
        now = self._clock()
        while self._until:
            oldest, until = next(iter(self._until.items()))
            if until > now:
                return
            del self._until[oldest]
