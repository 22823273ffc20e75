"""The scenarios the conformance suite runs: ARE's registered ones and two of areasync's own.

Every registered ARE scenario that needs no network is a reference; two more, built here with
ARE's authoring API, cover what the registered ones do not: a Gaia2-shaped scenario (Gaia2's
JSON round trip, two turns, tied events) and one where ticks show in the log.

Reference scenarios (`reference_scenario_ids`) and their tick counts (queue loop, time loop)
    scenario_apps_tutorial (9, 10), scenario_events_tutorial (15, 16), scenario_find_image_file
    (1, 2), scenario_tutorial (17, 18), scenario_validation_tutorial (7, 8), and two of this
    module's own: `GAIA2_SHAPED_ID` (15, 16) and `REMINDER_TICKS_ID` (12, 12: a
    ReminderApp, so ticks show in the log, and an event exactly on the duration bound, which runs
    in neither loop; the queue loop still reports tick 12, which never ran). Without per-tick
    events the two loops log the same normal form; with a ReminderApp they differ (the time loop
    checks reminders every second, the queue loop only at event times), which is why a realtime
    run is compared with the time loop and a fast run with the queue loop. An ARE trap met on the
    way: `App.__init__` seeds every app's rng with 0 and `Scenario.initialize()` re-seeds it with
    `scenario.seed` (default 0), so ids drawn while populating apps are drawn again at run time
    (a reminder added at population is silently replaced by the first one added during the run).
    The Gaia2-shaped scenario is described with the scenario JSON round trip
    (`areasync.conformance.scenario_json`).
"""

from __future__ import annotations

import json
from typing import Any

from are.simulation.scenarios.scenario import Scenario
from are.simulation.scenarios.utils.constants import ALL_SCENARIOS
from are.simulation.types import EventType

__all__ = [
    "GAIA2_SHAPED_ID",
    "NETWORK_SCENARIOS",
    "REMINDER_TICKS_ID",
    "gaia2_shaped_scenario",
    "load_scenario",
    "offline_scenario_ids",
    "reference_scenario_ids",
    "reminder_ticks_scenario",
]

# Registered ARE scenarios that need the network (Hugging Face hub, MCP servers).
NETWORK_SCENARIOS: frozenset[str] = frozenset({"scenario_hf_demo_mcp", "scenario_mcp_demo"})

GAIA2_SHAPED_ID = "areasync_gaia2_shaped"
REMINDER_TICKS_ID = "areasync_reminder_ticks"


def offline_scenario_ids() -> list[str]:
    """Registered ARE scenarios that run without network access, sorted."""
    return sorted(set(ALL_SCENARIOS) - NETWORK_SCENARIOS)


def reference_scenario_ids() -> list[str]:
    """Everything the conformance suite runs: the offline registered ids and this module's own."""
    return [*offline_scenario_ids(), GAIA2_SHAPED_ID, REMINDER_TICKS_ID]


def load_scenario(scenario: Scenario | str) -> Scenario:
    """A fresh, initialized scenario from a registered id, `GAIA2_SHAPED_ID` or `REMINDER_TICKS_ID`.

    A Scenario instance is initialized if needed and returned as is: ARE scenarios are single-use
    (a run mutates their apps and events), so callers pass a fresh one per run.
    """
    if isinstance(scenario, str):
        if scenario == GAIA2_SHAPED_ID:
            scenario = gaia2_shaped_scenario()
        elif scenario == REMINDER_TICKS_ID:
            scenario = reminder_ticks_scenario()
        elif scenario in ALL_SCENARIOS:
            scenario = ALL_SCENARIOS[scenario]()
        else:
            raise KeyError(f"unknown scenario id {scenario!r}")
    scenario.initialize()  # a no-op when already initialized
    return scenario


def gaia2_shaped_scenario() -> Scenario:
    """A small scenario shaped like Gaia2's, built through ARE's authoring API (not initialized).

    Two turns; apps from ARE's ALL_APPS with initial state; a USER root message; ENV events hanging
    off USER/ENV events, two of them tied; oracle events with string arguments, two tied; an ENV
    event whose argument is the `{{placeholder}}` of an oracle event's return value.
    """
    return _Gaia2Shaped()


class _Gaia2Shaped(Scenario):
    scenario_id: str = GAIA2_SHAPED_ID
    start_time: float | None = 1_728_979_200.0  # 2024-10-15 08:00:00 UTC, as Gaia2 uses dates
    duration: float | None = 60.0
    seed: int = 0

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        from are.simulation.apps import (
            AgentUserInterface,
            CalendarApp,
            ContactsApp,
            EmailClientV2,
            SystemApp,
        )
        from are.simulation.apps.contacts import Contact

        contacts = ContactsApp()
        contacts.add_contact(
            Contact(
                first_name="Alice",
                last_name="Martin",
                email="alice@example.com",
                phone="+33 612 345 678",
                contact_id="c0ffee00c0ffee00c0ffee00c0ffee00",
            )
        )
        self.apps = [AgentUserInterface(), CalendarApp(), contacts, EmailClientV2(), SystemApp()]

    def build_events_flow(self) -> None:
        def arg(value: Any) -> dict[str, str]:
            if isinstance(value, list):
                return {"value": json.dumps(value), "type": "list"}
            return {"value": str(value), "type": type(value).__name__}

        def add(
            event_id: str,
            event_type: EventType,
            app: str,
            function: str,
            after: list[str],
            delay: float,
            **params: Any,
        ) -> None:
            self.add_event(
                app_name=app,
                function_name=function,
                parameters={k: arg(v) for k, v in params.items()},
                predecessor_event_ids=after,
                event_type=event_type,
                event_id=event_id,
                event_relative_time=delay,
            )

        user, env, agent = EventType.USER, EventType.ENV, EventType.AGENT
        ui, mail, cal = "AgentUserInterface", "EmailClientV2", "CalendarApp"
        add("user_1", user, ui, "send_message_to_agent", [], 2, content="Email Alice the agenda.")
        add("agent_time", agent, "SystemApp", "get_current_time", ["user_1"], 1)
        add("agent_lookup", agent, "ContactsApp", "search_contacts", ["user_1"], 1, query="Alice")
        add("env_mail", env, mail, "create_and_add_email", ["user_1"], 3,
            sender="bob@example.com", recipients=["user@meta.com"], subject="Lunch?",
            content="Lunch at noon?")  # fmt: skip
        add("env_invite", env, cal, "add_calendar_event_by_attendee", ["user_1"], 3,
            who_add="Bob", title="Lunch", start_datetime="2024-10-15 12:00:00",
            end_datetime="2024-10-15 13:00:00")  # fmt: skip
        add("agent_send", agent, mail, "send_email", ["agent_lookup"], 2,
            recipients=["alice@example.com"], subject="Agenda",
            content="1. Budget 2. Hiring")  # fmt: skip
        add("env_reply", env, mail, "reply_to_email_from_user", ["env_mail"], 2,
            sender="alice@example.com", email_id="{{agent_send}}", content="Thanks!")  # fmt: skip
        add("agent_done", agent, ui, "send_message_to_user", ["agent_send"], 6, content="Sent.")
        add("user_2", user, ui, "send_message_to_agent", ["agent_done"], 2,
            content="Book lunch with Alice tomorrow.")  # fmt: skip
        add("agent_book", agent, cal, "add_calendar_event", ["user_2"], 1,
            title="Lunch with Alice", start_datetime="2024-10-16 12:00:00",
            end_datetime="2024-10-16 13:00:00", attendees=["Alice Martin"])  # fmt: skip
        add("agent_done_2", agent, ui, "send_message_to_user", ["agent_book"], 1, content="Booked.")


def reminder_ticks_scenario() -> Scenario:
    """A scenario where ticks show in the log, and an event sits exactly on the duration bound.

    ReminderApp's `get_due_reminders` is logged as an AGENT event on every tick,
    so the log records when ticks ran: at event times only in the queue loop, every second in the
    time loop, which therefore give *different* logs here (a reminder due at 4 s is noticed at
    4 s by the time loop, at the next event time, 6 s, by the queue loop). The ENV event at exactly
    `start + duration` runs in neither loop (the bound is exclusive); the time loop then ends on
    the duration, not on an empty queue.
    """
    return _ReminderTicks()


class _ReminderTicks(Scenario):
    scenario_id: str = REMINDER_TICKS_ID
    start_time: float | None = 1_728_979_200.0  # 2024-10-15 08:00:00 UTC
    duration: float | None = 12.0
    # Not 0: App.__init__ seeds every app's rng with 0 and initialize() re-seeds it with the
    # scenario's seed, so with seed 0 the first id drawn at run time repeats the first drawn while
    # populating, and "Call Bob" would silently overwrite "Stand-up" in ReminderApp.reminders.
    seed: int = 7

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        from are.simulation.apps import AgentUserInterface, ReminderApp, SystemApp

        reminders = ReminderApp()
        reminders.add_reminder(
            title="Stand-up", due_datetime="2024-10-15 08:00:04", description="Daily stand-up"
        )
        self.apps = [AgentUserInterface(), reminders, SystemApp()]

    def build_events_flow(self) -> None:
        from are.simulation.apps import AgentUserInterface, ReminderApp
        from are.simulation.types import EventRegisterer

        ui = self.get_typed_app(AgentUserInterface)
        reminders = self.get_typed_app(ReminderApp)
        with EventRegisterer.capture_mode():
            ask = ui.send_message_to_agent(content="Remind me to call Bob.").depends_on(
                None, delay_seconds=2
            )
            remind = (
                reminders.add_reminder(
                    title="Call Bob", due_datetime="2024-10-15 08:00:07", description="Bob"
                )
                .oracle()
                .depends_on(ask, delay_seconds=1)
            )
            nudge_a = ui.send_message_to_agent(content="Any news?").depends_on(
                None, delay_seconds=6
            )
            nudge_b = ui.send_message_to_agent(content="Still there?").depends_on(
                None, delay_seconds=6
            )
            done = (
                ui.send_message_to_user(content="Reminder set.")
                .oracle()
                .depends_on(remind, delay_seconds=6)
            )
            too_late = ui.send_message_to_agent(content="At the bound").depends_on(
                None, delay_seconds=12
            )
        self.events = [ask, remind, nudge_a, nudge_b, done, too_late]
