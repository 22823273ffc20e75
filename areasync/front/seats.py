"""Which session worker holds which session, and where a new one goes.

The front's map of sessions to workers (by the worker's slot name: a slot keeps its name
across restarts, its sessions do not stay with it). It is filled by what workers answer
(`sessionworker.answers.Seat`): a create, a restore, a refresh. Placement is the least
loaded worker: the most room left under its share of `max_sessions` (`shares.py`), then the
first slot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from areasync.service.gate.auth import Tokens
from areasync.sessionworker.answers import Seat

__all__ = ["Seats"]


class Seats:
    """Sessions by worker, and the credentials of each in the front's `tokens`."""

    def __init__(self, tokens: Tokens) -> None:
        self.tokens = tokens
        self.where: dict[str, str] = {}  # session id -> worker name
        self.live: dict[str, bool] = {}

    def held(self, session_id: str) -> str | None:
        return self.where.get(session_id)

    def seat(self, worker: str, seats: Iterable[Seat]) -> None:
        """`worker` holds these sessions (their credentials are learnt)."""
        for seat in seats:
            self.where[seat.session_id] = worker
            self.live[seat.session_id] = seat.live
            if seat.credentials is not None:
                self.tokens.learn(seat.session_id, seat.credentials)

    def lose(self, worker: str) -> list[str]:
        """`worker`'s process is gone: its sessions, which it no longer holds."""
        lost = [sid for sid, name in self.where.items() if name == worker]
        for sid in lost:
            del self.where[sid]
        return lost

    def load(self, worker: str) -> int:
        return sum(1 for sid, name in self.where.items() if name == worker and self.live[sid])

    def least_loaded(self, workers: Iterable[str], shares: Mapping[str, int]) -> str:
        """The worker with the most room left under its share of live sessions, then the
        first (ValueError: none is up)."""
        names = list(workers)
        if not names:
            raise ValueError("no session worker is up")
        return min(names, key=lambda name: (self.load(name) - shares[name], names.index(name)))
