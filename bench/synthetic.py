"""A synthetic ARE scenario of N ENV events, for measuring loop machinery rather than apps.

Every event calls `BenchApp.bump`, a registered tool that adds to a counter: its cost is small and
does not depend on N, so what grows with N in a run is the loop's own work (queue, log, time).
A custom app also keeps the notification system out of it (no notification template matches its
events). Events are one simulated second apart, except that every fifth event shares the time of
the one before it: ties exercise the same-time path (ARE pops all events due at a tick together).
Build a fresh scenario per run: a run mutates the app and the events.
"""

from __future__ import annotations

import json
from typing import Any

from are.simulation.apps import AgentUserInterface, EmailClientV2, SystemApp
from are.simulation.apps.app import App
from are.simulation.scenarios.scenario import Scenario
from are.simulation.tool_utils import OperationType
from are.simulation.types import Action, Event, EventType, event_registered

from areasync.gaia2.dataset import json_arg, json_event

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


# -- the same kind of load as ARE JSON, for the importer ------------------------------------


def synthetic_scenario_json(n_events: int, *, turns: int = 4) -> str:
    """A Gaia2-shaped ARE export of about `n_events` events in `turns` turns, as JSON text.

    Shaped to exercise every check ARE's importer runs per event: each turn opens with a user
    message (the first turn's has no dependency, a later one's waits on the oracle's previous
    end of turn), then ENV events in chains of five hanging off it (each ENV event has one
    predecessor, as ARE requires; every other one answers its predecessor's email through a
    `{{placeholder}}`), oracle (AGENT) events fanning in on up to three earlier oracle events,
    and an end-of-turn `send_message_to_user` that waits on the last four oracle events, later
    than everything else in its turn. Relative times vary (1-3 s), so ARE's time checks run.
    What ARE accepts, the benchmark import accepts too (its turns can be rewired).
    """
    per_turn = max(n_events // max(turns, 1), 8)
    events: list[dict[str, Any]] = []
    previous_end: str | None = None
    for turn in range(turns):
        user = f"t{turn}_user"
        events.append(
            json_event(
                user,
                "USER",
                [] if previous_end is None else [previous_end],
                2.0,
                "AgentUserInterface",
                "send_message_to_agent",
                [json_arg("content", f"Turn {turn}: answer every email.")],
            )
        )
        body = per_turn - 2
        n_env = body // 2
        oracle_ids: list[str] = []
        for i in range(n_env):
            event_id = f"t{turn}_env{i}"
            parent = user if i % 5 == 0 else f"t{turn}_env{i - 1}"
            if i % 2 == 1:  # a reply to the email its predecessor added
                function = "reply_to_email_from_user"
                args = [
                    json_arg("sender", "bob@example.com"),
                    json_arg("email_id", "{{" + parent + "}}"),
                    json_arg("content", f"Reply {i}"),
                ]
            else:
                function = "create_and_add_email"
                args = [
                    json_arg("sender", "bob@example.com"),
                    json_arg("recipients", '["user@meta.com"]', "list"),
                    json_arg("subject", f"Mail {turn}.{i}"),
                    json_arg("content", "Please answer."),
                ]
            events.append(
                json_event(
                    event_id, "ENV", [parent], float(1 + i % 3), "EmailClientV2", function, args
                )
            )
        for i in range(body - n_env):
            event_id = f"t{turn}_agent{i}"
            dependencies = [user, *oracle_ids[-3:]] if i % 4 == 0 else oracle_ids[-3:] or [user]
            events.append(
                json_event(
                    event_id,
                    "AGENT",
                    dependencies,
                    float(1 + i % 2),
                    "SystemApp",
                    "get_current_time",
                    [],
                )
            )
            oracle_ids.append(event_id)
        previous_end = f"t{turn}_done"
        events.append(
            json_event(
                previous_end,
                "AGENT",
                oracle_ids[-4:] or [user],
                float(3 * per_turn + 10),  # the turn's latest event, as ARE requires
                "AgentUserInterface",
                "send_message_to_user",
                [json_arg("content", f"Turn {turn} done.")],
            )
        )
    definition = {
        "scenario_id": f"areasync_bench_import_{len(events)}",
        "seed": 0,
        "duration": float(turns * (3 * per_turn + 20) * 4),
        "time_increment_in_seconds": 1,
        "start_time": 1728979200.0,
        "hints": [],
        "tags": [],
    }
    document = {
        "version": "are_simulation_v1",
        "context": "",
        "metadata": {"definition": definition},
        "apps": [
            {"name": cls.__name__, "class_name": cls.__name__, "app_state": cls().get_state()}
            for cls in (AgentUserInterface, EmailClientV2, SystemApp)
        ],
        "events": events,
        "completed_events": [],
        "world_logs": [],
        "augmentation": None,
    }
    return json.dumps(document)
