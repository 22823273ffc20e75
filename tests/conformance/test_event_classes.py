"""Every event class ARE ships runs and streams as ARE's own loops log it.

For each case of `tests.conformance.event_classes` (Event, OracleEvent, ConditionCheckEvent,
ValidationEvent milestones/minefields/timeouts with `schedule(every_ticks, timeout)`,
AgentValidationEvent, StopEvent, Gaia2's `condition_turn_N`), in oracle mode: a `fast` run ends
like ARE's queue-based loop and a `realtime` run like ARE's time-based loop (the reference
runners run ARE's unmodified loop code on a fake clock): same normalized log, same final state,
same tick count. Every completed event also reaches the stream as one record with the app and
function ARE's log has (a completed ValidationEvent's action is a bound method, not an Action).
"""

from __future__ import annotations

import anyio
import pytest
from are.simulation.environment import Environment

from areasync import Simulation
from areasync.conformance.normal_form import first_difference, normalized_log
from areasync.conformance.reference_loops import run_are_queue_loop, run_are_time_loop
from areasync.protocol import EventItem
from tests.conformance.event_classes import CASES, event_class_scenario

MODES = {"fast": run_are_queue_loop, "realtime": run_are_time_loop}


def run_areasync(case: str, mode: str) -> Simulation:
    sim = Simulation.load(event_class_scenario(case), mode=mode, oracle=True, speed=1000.0)
    anyio.run(sim.run)
    return sim


def run_are(case: str, mode: str) -> Environment:
    return MODES[mode](event_class_scenario(case))


def streamed(sim: Simulation) -> list[tuple[str, str | None, str | None]]:
    return sorted(
        (item.event.event_type, item.event.app, item.event.function)
        for item in sim.log.items
        if isinstance(item, EventItem)
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_each_event_class_logs_what_ares_loop_logs(case: str, mode: str) -> None:
    ours = normalized_log(run_areasync(case, mode).env)
    theirs = normalized_log(run_are(case, mode))
    assert ours, "the case logged nothing: it tests nothing"
    assert first_difference(ours, theirs) is None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_each_event_class_ends_in_ares_final_state_and_tick(case: str, mode: str) -> None:
    ours, theirs = run_areasync(case, mode).env, run_are(case, mode)
    assert (ours.state, ours.tick_count) == (theirs.state, theirs.tick_count)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_each_completed_event_streams_with_ares_app_and_function(case: str, mode: str) -> None:
    sim = run_areasync(case, mode)
    logged = sorted((e.event_type, e.app, e.function) for e in normalized_log(sim.env))
    assert streamed(sim) == logged


@pytest.mark.parametrize("mode", MODES)
def test_a_validation_event_streams_with_no_app_and_validate_as_function(mode: str) -> None:
    records = [r for r in streamed(run_areasync("validation_milestones", mode))]
    validations = [r for r in records if r[0] == "VALIDATION"]
    assert validations and set(validations) == {("VALIDATION", None, "validate")}


def test_a_condition_check_streams_with_no_app_and_the_condition_name() -> None:
    records = streamed(run_areasync("condition_check_event", "fast"))
    conditions = {r for r in records if r[0] == "CONDITION"}
    assert conditions == {("CONDITION", None, "said_I_am_a_robot")}


def test_a_failed_validation_ends_the_session_failed_not_crashed() -> None:
    sim = run_areasync("validation_minefield", "fast")
    assert sim.ended and sim.env.state.value == "FAILED"
