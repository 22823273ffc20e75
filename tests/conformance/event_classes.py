"""One small scenario per event class ARE ships, built the way ARE's own tests build them.

Each case is a fresh, initialized Scenario per call (ARE scenarios are single-use). The
validation cases follow `are/simulation/tests/validation_test.py` and
`timeout_agent_validation_test.py`: an agent is asked for "I am a robot", AGENT events answer
at chosen times, and validators check the answers. `TURN_CONDITIONS` is the Gaia2-shaped
scenario through Gaia2's preprocessing, which rewires its turns through per-tick
`condition_turn_N` condition checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from are.simulation.apps.agent_user_interface import AgentUserInterface
from are.simulation.apps.system import SystemApp
from are.simulation.scenarios.scenario import Scenario
from are.simulation.types import (
    AbstractEnvironment,
    AbstractEvent,
    AgentValidationEvent,
    ConditionCheckEvent,
    Event,
    EventRegisterer,
    EventType,
    StopEvent,
    ValidationEvent,
)

from areasync.conformance.scenario_json import export_scenario_json, load_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID

ROBOT = "I am a robot"
NOT_A_ROBOT = "I am not a robot"


def said(content: str) -> Callable[[AbstractEnvironment], bool]:
    def milestone(env: AbstractEnvironment) -> bool:
        ui: AgentUserInterface = env.get_app(AgentUserInterface.__name__)
        return any(m.content == content for m in ui.get_all_messages_from_agent())

    milestone.__name__ = f"said_{content.replace(' ', '_')}"
    return milestone


def agent_said(content: str) -> Callable[[AbstractEnvironment, AbstractEvent], bool]:
    def milestone(env: AbstractEnvironment, event: AbstractEvent) -> bool:
        return (
            type(event) is Event
            and isinstance(event.action.app, AgentUserInterface)
            and event.function_name() == "send_message_to_user"
            and event.action.args.get("content") == content
        )

    milestone.__name__ = f"agent_said_{content.replace(' ', '_')}"
    return milestone


class _EventClassScenario(Scenario):
    """A conversation with the agent, plus what `build` adds (the event class under test)."""

    start_time: float | None = 0
    duration: float | None = 20
    seed: int = 3

    # Set per case before `initialize()` (see `event_class_scenario`).
    build: Callable[[_EventClassScenario], list[Any]] | None = None

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        self.apps = [AgentUserInterface(), SystemApp()]

    def build_events_flow(self) -> None:
        with EventRegisterer.capture_mode():
            assert self.build is not None, "set the case's builder before initialize()"
            self.events = self.build(self)

    # The conversation every case shares: the user asks at 1 s; the agent answers at 7 and 9 s.
    def ask(self) -> Event:
        ui = self.get_typed_app(AgentUserInterface)
        return (
            ui.send_message_to_agent(content=f'Tell me "{ROBOT}".')
            .with_id("ask")
            .depends_on(None, delay_seconds=1)
        )

    def answer(self, after: AbstractEvent, content: str, delay: float, event_id: str) -> Event:
        ui = self.get_typed_app(AgentUserInterface)
        return (
            ui.send_message_to_user(content=content)
            .with_id(event_id)
            .with_type(EventType.AGENT)
            .depends_on(after, delay_seconds=delay)
        )


def _plain_events(s: _EventClassScenario) -> list[Any]:
    ask = s.ask()
    ui = s.get_typed_app(AgentUserInterface)
    check = ui.get_last_message_from_user().with_id("env_read").depends_on(ask, delay_seconds=2)
    return [ask, check, s.answer(ask, ROBOT, 6, "answer_1")]


def _oracle_events(s: _EventClassScenario) -> list[Any]:
    ask = s.ask()
    ui = s.get_typed_app(AgentUserInterface)
    oracle = ui.send_message_to_user(content=ROBOT).oracle().depends_on(ask, delay_seconds=3)
    return [ask, oracle.with_id("oracle_answer")]


def _condition_check(s: _EventClassScenario) -> list[Any]:
    ask = s.ask()
    answer = s.answer(ask, ROBOT, 6, "answer_1")
    heard = (
        ConditionCheckEvent.from_condition(said(ROBOT), every_tick=2, timeout=12)
        .with_id("heard")
        .depends_on(ask)
    )
    ui = s.get_typed_app(AgentUserInterface)
    thanks = ui.send_message_to_agent(content="Thanks").with_id("thanks")
    heard.followed_by(thanks, delay_seconds=1)
    return [ask, answer, heard, thanks]


def _validation(milestones: list[Any], minefields: list[Any], every: int, timeout: int) -> Any:
    def build(s: _EventClassScenario) -> list[Any]:
        ask = s.ask()
        first = s.answer(ask, ROBOT, 6, "answer_1")
        second = s.answer(first, NOT_A_ROBOT, 2, "answer_2")
        check = (
            ValidationEvent(milestones=milestones, minefields=minefields)
            .schedule(every_ticks=every, timeout=timeout)
            .with_id("validate")
            .depends_on(ask)
        )
        return [ask, first, second, check]

    return build


def _agent_validation(milestones: list[Any], timeout: int) -> Any:
    def build(s: _EventClassScenario) -> list[Any]:
        ask = s.ask()
        first = s.answer(ask, ROBOT, 6, "answer_1")
        second = s.answer(first, NOT_A_ROBOT, 2, "answer_2")
        check = (
            AgentValidationEvent(milestones=milestones, timeout=timeout)
            .with_id("agent_validate")
            .depends_on(ask)
        )
        return [ask, first, second, check]

    return build


def _stop(s: _EventClassScenario) -> list[Any]:
    ask = s.ask()
    first = s.answer(ask, ROBOT, 6, "answer_1")
    stop = StopEvent().with_id("stop").depends_on(ask, delay_seconds=4)
    after = s.answer(ask, NOT_A_ROBOT, 8, "answer_after_stop")
    return [ask, first, stop, after]


BUILDERS: dict[str, Callable[[_EventClassScenario], list[Any]]] = {
    "event": _plain_events,
    "oracle_event": _oracle_events,
    "condition_check_event": _condition_check,
    # Both milestones reached (7 s and 9 s), checked every tick.
    "validation_milestones": _validation([said(ROBOT), said(NOT_A_ROBOT)], [], 1, 10),
    # Checked every 2 ticks: the second milestone is seen at the first check after 9 s.
    "validation_every_2_ticks": _validation([said(ROBOT), said(NOT_A_ROBOT)], [], 2, 12),
    # Times out before the second milestone: ARE fails the run.
    "validation_timeout": _validation([said(ROBOT), said(NOT_A_ROBOT)], [], 1, 7),
    # A minefield stepped on at 7 s: ARE fails the run there.
    "validation_minefield": _validation([], [said(ROBOT)], 1, 15),
    "agent_validation_milestones": _agent_validation(
        [agent_said(ROBOT), agent_said(NOT_A_ROBOT)], 10
    ),
    # Times out (in ticks) before the second answer: ARE fails the run.
    "agent_validation_timeout": _agent_validation([agent_said(ROBOT), agent_said(NOT_A_ROBOT)], 5),
    "stop_event": _stop,
}

TURN_CONDITIONS = "turn_conditions"
CASES = [*BUILDERS, TURN_CONDITIONS]


def event_class_scenario(case: str) -> Scenario:
    """A fresh, initialized scenario for `case` (one of `CASES`)."""
    if case == TURN_CONDITIONS:
        return load_scenario_json(export_scenario_json(GAIA2_SHAPED_ID), benchmark=True)
    scenario = _EventClassScenario()
    scenario.scenario_id = f"event_class_{case}"
    scenario.build = BUILDERS[case]
    scenario.initialize()
    return scenario
