"""areasync against ARE itself: the same scenarios give the same event logs and tick counts.

For every registered scenario that needs no network (plus a Gaia2-shaped scenario and one with a
ReminderApp, from `areasync.conformance`), in oracle mode:
- a `fast` run equals ARE's queue-based loop (log and tick index);
- a `realtime` run at high speed equals ARE's time-based loop (log and tick count);
- either loop stepped by exclusive jumps (`advance_to(t, inclusive=False)`) to each time it is
  about to tick at, then one step, is still that ARE loop: the tick at t runs exactly once;
- a Gaia2-shaped scenario exported to ARE's JSON format loads and runs the same way.
Logs are compared in `conformance.normalized_log`'s id-free normal form.
"""

import anyio
import pytest
from are.simulation.scenarios.scenario import Scenario

from areasync import Simulation
from areasync.conformance.normal_form import first_difference, normalized_log
from areasync.conformance.reference_loops import run_are_queue_loop, run_are_time_loop
from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID, load_scenario, reference_scenario_ids
from areasync.protocol import EventItem
from tests.scenarios import timeline

SCENARIOS = reference_scenario_ids()


def run_areasync(scenario_id: str, mode: str, speed: float = 1.0) -> Simulation:
    sim = Simulation.load(load_scenario(scenario_id), mode=mode, oracle=True, speed=speed)
    anyio.run(sim.run)
    return sim


def run_fast_by_exclusive_jumps(scenario_id: str) -> Simulation:
    """ARE's queue-based loop, each step preceded by an exclusive jump to the step's time."""
    sim = Simulation.load(load_scenario(scenario_id), mode="fast", oracle=True)
    engine = sim.engine
    while not engine.finished:
        due = engine.next_due_us()
        if due is not None and not engine.at_end(due):
            engine.advance_to(due, inclusive=False)
            assert engine.next_due_us() == due  # stopped just before it
        if not engine.step_fast():
            if not engine.finished:
                engine.run_out()
            break
    return sim


def run_ticks_by_exclusive_jumps(scenario_id: str) -> Simulation:
    """ARE's time-based loop (manual ticks), each tick preceded by an exclusive jump to its time."""
    sim = Simulation.load(load_scenario(scenario_id), mode="manual", oracle=True)
    engine = sim.engine
    while not engine.finished:
        engine.advance_to(engine.next_grid_us(), inclusive=False)
        if not engine.step_grid():
            break
    return sim


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_fast_run_logs_what_ares_queue_loop_logs(scenario_id: str) -> None:
    ours = normalized_log(run_areasync(scenario_id, "fast").env)
    theirs = normalized_log(run_are_queue_loop(load_scenario(scenario_id)))
    assert first_difference(ours, theirs) is None


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_fast_run_ends_on_ares_queue_loop_tick_index(scenario_id: str) -> None:
    ours = run_areasync(scenario_id, "fast").env.tick_count
    theirs = run_are_queue_loop(load_scenario(scenario_id)).tick_count
    assert ours == theirs


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_realtime_run_logs_what_ares_time_loop_logs(scenario_id: str) -> None:
    ours = normalized_log(run_areasync(scenario_id, "realtime", speed=1000.0).env)
    theirs = normalized_log(run_are_time_loop(load_scenario(scenario_id)))
    assert first_difference(ours, theirs) is None


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_realtime_run_ticks_as_often_as_ares_time_loop(scenario_id: str) -> None:
    ours = run_areasync(scenario_id, "realtime", speed=1000.0).env.tick_count
    theirs = run_are_time_loop(load_scenario(scenario_id)).tick_count
    assert ours == theirs


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_fast_steps_after_exclusive_jumps_log_what_ares_queue_loop_logs(scenario_id: str) -> None:
    ours = normalized_log(run_fast_by_exclusive_jumps(scenario_id).env)
    theirs = normalized_log(run_are_queue_loop(load_scenario(scenario_id)))
    assert first_difference(ours, theirs) is None


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_fast_steps_after_exclusive_jumps_end_on_ares_queue_loop_tick_index(
    scenario_id: str,
) -> None:
    ours = run_fast_by_exclusive_jumps(scenario_id).env.tick_count
    theirs = run_are_queue_loop(load_scenario(scenario_id)).tick_count
    assert ours == theirs


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_ticks_after_exclusive_jumps_log_what_ares_time_loop_logs(scenario_id: str) -> None:
    ours = normalized_log(run_ticks_by_exclusive_jumps(scenario_id).env)
    theirs = normalized_log(run_are_time_loop(load_scenario(scenario_id)))
    assert first_difference(ours, theirs) is None


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_ticks_after_exclusive_jumps_are_as_many_as_ares_time_loops(scenario_id: str) -> None:
    ours = run_ticks_by_exclusive_jumps(scenario_id).env.tick_count
    theirs = run_are_time_loop(load_scenario(scenario_id)).tick_count
    assert ours == theirs


def test_a_gaia2_shaped_json_export_runs_like_the_original() -> None:
    text = export_scenario_json(GAIA2_SHAPED_ID)
    from_json = Simulation.load(text, mode="fast", oracle=True)
    anyio.run(from_json.run)
    original = run_are_queue_loop(load_scenario(GAIA2_SHAPED_ID))
    assert first_difference(normalized_log(from_json.env), normalized_log(original)) is None
    assert from_json.validation is not None and from_json.validation.success is not False


# Times a hair off their microsecond in binary (i * 0.01 gives 0.35000000000000003, 0.1 + 0.2
# gives 0.30000000000000004): the engine schedules in whole microseconds, and such an event must
# still fire at its microsecond, not stall the loop that ticks there.
FRACTIONAL_TIMES = [i * 0.01 for i in range(60)] + [0.1 + 0.2, 1 / 3, 2.675, 7.000001]


def fractional_timeline() -> Scenario:
    scenario = timeline(*FRACTIONAL_TIMES, duration=12.0)
    scenario.initialize()
    return scenario


async def test_events_at_fractional_times_log_in_fast_mode_what_ares_queue_loop_logs() -> None:
    sim = Simulation.load(fractional_timeline(), mode="fast", oracle=True)
    with anyio.fail_after(30):  # the loop used to stall at the first such event
        await sim.run()
    ours = normalized_log(sim.env, ndigits=6)
    theirs = normalized_log(run_are_queue_loop(fractional_timeline()), ndigits=6)
    assert len(ours) >= len(FRACTIONAL_TIMES)
    assert first_difference(ours, theirs) is None


async def test_events_at_fractional_times_log_in_realtime_what_ares_time_loop_logs() -> None:
    sim = Simulation.load(fractional_timeline(), mode="realtime", oracle=True, speed=1000.0)
    with anyio.fail_after(30):
        await sim.run()
    ours = normalized_log(sim.env)
    theirs = normalized_log(run_are_time_loop(fractional_timeline()))
    assert len(ours) >= len(FRACTIONAL_TIMES)
    assert first_difference(ours, theirs) is None


async def test_a_jump_over_events_at_fractional_times_fires_each_once() -> None:
    async with Simulation.load(fractional_timeline(), mode="manual") as sim:
        with anyio.fail_after(30):
            await sim.jump(by=10.0)
        fired = [i.event for i in sim.log.items if isinstance(i, EventItem)]
    assert len([e for e in fired if e.function == "fire"]) == len(FRACTIONAL_TIMES)
