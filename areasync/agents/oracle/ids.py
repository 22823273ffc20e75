"""The oracle agent's id translation: oracle-run ids -> the live session's.

A live session is a different instance of the scenario, so ids made with ``uuid4`` when the
scenario was built (a task id, an email id) differ from those in the oracle run; a perfect agent
would read them from the apps. The oracle agent learns the correspondence by aligning what it can
see on both sides: the apps' initial state (``get_state``), every tool result against the oracle
run's return value, and every scenario event on the stream against the same event of the oracle
run; it then rewrites ids in each action's arguments before calling.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from areasync.client import Client
from areasync.protocol import GENERATED_ID, EventItem, EventRecord

if TYPE_CHECKING:
    from areasync.agents.oracle.plan import OraclePlan

__all__ = ["EventAligner", "IdMap"]


class IdMap:
    """Oracle-run id -> live-session id, learned by aligning values seen on both sides.

    Only generated ids (uuid-shaped) are mapped, and only where two values agree everywhere
    else: a file name or a user's text is never rewritten.
    """

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def learn(self, oracle: Any, live: Any) -> None:
        """Walk two values of the same shape side by side; record ids that differ."""
        if isinstance(oracle, str) and isinstance(live, str):
            self._learn_string(oracle, live)
        elif isinstance(oracle, dict) and isinstance(live, dict):
            if oracle.keys() == live.keys():
                for key, value in oracle.items():
                    self.learn(value, live[key])
            elif len(oracle) == len(live):
                # Keyed by ids (tasks by task id, emails by email id): align in insertion order,
                # which both sides built the same way.
                pairs = zip(oracle.items(), live.items(), strict=True)
                for (okey, ovalue), (lkey, lvalue) in pairs:
                    self._learn_string(okey, lkey)
                    self.learn(ovalue, lvalue)
        elif isinstance(oracle, list) and isinstance(live, list) and len(oracle) == len(live):
            for ovalue, lvalue in zip(oracle, live, strict=True):
                self.learn(ovalue, lvalue)

    def _learn_string(self, oracle: str, live: str) -> None:
        if oracle == live:
            return
        found = GENERATED_ID.findall(oracle)
        if not found or GENERATED_ID.sub("<id>", oracle) != GENERATED_ID.sub("<id>", live):
            return
        for old, new in zip(found, GENERATED_ID.findall(live), strict=True):
            if old != new:
                self.ids.setdefault(old, new)

    def translate(self, value: Any) -> Any:
        """``value`` with every known oracle id replaced by its live counterpart."""
        if not self.ids:
            return value
        if isinstance(value, str):
            return GENERATED_ID.sub(lambda match: self.ids.get(match[0], match[0]), value)
        if isinstance(value, dict):
            return {self.translate(k): self.translate(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.translate(v) for v in value]
        return value


class EventAligner:
    """Pairs the session's scenario events with the oracle run's, to learn ids from both."""

    def __init__(self, plan: OraclePlan, ids: IdMap) -> None:
        self._ids = ids
        self._start = plan.start_time
        self._unmatched: dict[tuple[Any, ...], list[EventRecord]] = defaultdict(list)
        for record in plan.events:
            if record.event_type != "AGENT":
                self._unmatched[self._key(record, plan.start_time)].append(record)
        self._seen = 0  # the last seq looked at

    @staticmethod
    def _key(record: EventRecord, start: float) -> tuple[Any, ...]:
        return (record.event_type, round(record.time - start, 3), record.app, record.function)

    def catch_up(self, client: Client) -> None:
        live_start = client.clock.start_time
        for item in client.items_since(self._seen):
            if isinstance(item, EventItem) and item.event.event_type != "AGENT":
                candidates = self._unmatched.get(self._key(item.event, live_start))
                if candidates:
                    oracle = candidates.pop(0)
                    self._ids.learn(oracle.args, item.event.args)
                    self._ids.learn(oracle.return_value, item.event.return_value)
        self._seen = client.seq
