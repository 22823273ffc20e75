"""`AsyncEnvironment.add_to_log` of an event that cannot notify logs exactly what ARE's does.

ARE's `Environment.add_to_log` and ours, given the same completed event of every function of
every app class ARE ships (as every event type, with an app that has a name, one that only
has `app_name()`, and none; with a result, an exception and a `self` argument), leave the same
world log entry (every field but the id ARE draws and then overwrites) and the same event log.
Each of these events is one `cannot_notify` answers for, so ours takes its written-out path.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from are.simulation.environment import Environment, EnvironmentConfig
from are.simulation.notification_system import VerboseNotificationSystem
from are.simulation.types import Action, CompletedEvent, EventMetadata, EventType

from areasync.bridge import notifications
from areasync.bridge.environment import AsyncEnvironment
from areasync.bridge.notifications import cannot_notify
from tests.bridge.test_notification_prefilter import APP_CLASSES, functions_of


class Named:
    name = "Named"


class Unnamed:
    def app_name(self) -> str:
        return "from app_name()"


def events_that_cannot_notify() -> list[CompletedEvent]:
    made = []
    functions = {f.__name__: f for c in APP_CLASSES for f in functions_of(c)}
    for i, (name, function) in enumerate(sorted(functions.items())):
        event_type = list(EventType)[i % len(EventType)]
        app = (Named(), Unnamed(), None)[i % 3]
        metadata = (
            EventMetadata(return_value={"n": i})
            if i % 2
            else EventMetadata(exception="boom", exception_stack_trace="trace")
        )
        action = Action(function=function, args={"self": app, "x": i, "y": name}, app=app)
        if app is None:
            action.app = None
        event = CompletedEvent(
            event_type=event_type,
            action=action,
            metadata=metadata,
            event_time=1_700_000_000.0 + i,
            event_id=f"event-{name}",
        )
        if cannot_notify(event):
            made.append(event)
    return made


EVENTS = events_that_cannot_notify()


def logged(env: Environment, event: CompletedEvent) -> tuple[dict[str, Any], list[Any]]:
    env.add_to_log(event)
    entry = dataclasses.asdict(env.world_logs[-1])
    return entry, [
        (e.event_id, e.event_time, e.event_type, e.action.function, e.action.args, e.metadata)
        for e in env.event_log.list_view()
    ]


def test_there_are_many_events_that_cannot_notify() -> None:
    assert len(EVENTS) > 100


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.event_id)
def test_an_event_that_cannot_notify_is_logged_as_ares_add_to_log_logs_it(
    event: CompletedEvent,
) -> None:
    ares = Environment(EnvironmentConfig(), notification_system=VerboseNotificationSystem())
    ours = AsyncEnvironment(EnvironmentConfig(), notification_system=VerboseNotificationSystem())
    # Else ours would go through ARE's own code too, and this would compare ARE with itself.
    assert notifications.ignores(ours.notification_system) and not ours.agent_action_validators
    expected_entry, expected_log = logged(ares, event)
    entry, log = logged(ours, event)
    assert {**entry, "id": None} == {**expected_entry, "id": None}
    assert entry["id"] == event.event_id
    assert log == expected_log
    assert ours.notification_system.message_queue.list_view() == []
