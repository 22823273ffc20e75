"""A synthetic ARE scenario of N ENV events, for measuring loop machinery rather than apps.

Every event calls `BenchApp.bump`, a registered tool that adds to a counter: its cost is small and
does not depend on N, so what grows with N in a run is the loop's own work (queue, log, time).
A custom app also keeps the notification system out of it (no notification template matches its
events). Events are one simulated second apart, except that every fifth event shares the time of
the one before it: ties exercise the same-time path (ARE pops all events due at a tick together).
Build a fresh scenario per run: a run mutates the app and the events.
"""

from __future__ import annotations

from typing import Any

from are.simulation.apps.app import App
from are.simulation.scenarios.scenario import Scenario
from are.simulation.tool_utils import OperationType
from are.simulation.types import Action, Event, EventType, event_registered

APP_NAME = "BenchApp"


class BenchApp(App):
    """One integer of state and one cheap write tool."""

    def __init__(self, name: str | None = APP_NAME) -> None:
        super().__init__(name)
        self.total = 0

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.ENV)
    def bump(self, amount: int) -> int:
        """Add `amount` to the counter and return the new total."""
        self.total += amount
        return self.total

    def get_state(self) -> dict[str, Any]:
        return {"total": self.total}

    def load_state(self, state_dict: dict[str, Any]) -> None:
        self.total = int(state_dict["total"])

    def reset(self) -> None:
        super().reset()
        self.total = 0


def event_offset(index: int) -> int:
    """Seconds after the start at which event `index` (0-based) is scheduled.

    One second apart, except that every fifth event (index 5, 10, ...) ties with the one before.
    """
    return index - index // 5


class SyntheticScenario(Scenario):
    """`n_events` ENV events calling `BenchApp.bump(amount=1)`; no oracle events, no agent."""

    scenario_id: str = "areasync_bench_synthetic"
    n_events: int = 1000
    start_time: float | None = 0.0
    duration: float | None = None  # set from n_events in build_events_flow
    seed: int = 0

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        self.apps = [BenchApp()]

    def build_events_flow(self) -> None:
        app = self.get_typed_app(BenchApp)
        # Built directly rather than through capture mode: capture mode runs inspect.signature
        # per call, which would make building 100,000 events slower than running them.
        self.events = [
            Event(
                event_type=EventType.ENV,
                event_relative_time=float(event_offset(i)),
                action=Action(function=app.bump, args={"amount": 1}, app=app),
            )
            for i in range(self.n_events)
        ]
        # One second past the last event: the run ends on an empty queue, not on the bound.
        self.duration = float(event_offset(self.n_events - 1) + 1) if self.n_events else 1.0


def synthetic_scenario(n_events: int) -> SyntheticScenario:
    """A fresh, initialized synthetic scenario of `n_events` events."""
    scenario = SyntheticScenario(n_events=n_events)
    scenario.initialize()
    return scenario


def bench_total(scenario: Scenario) -> int:
    """The counter after a run: equals the number of events executed."""
    app: BenchApp = scenario.get_typed_app(BenchApp)
    return app.total
