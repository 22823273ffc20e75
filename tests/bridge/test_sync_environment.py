"""`SyncEnvironment`: ARE's blocking API on the virtual clock, with no thread."""

import threading

import pytest
from are.simulation.environment import EnvironmentConfig
from are.simulation.types import EnvironmentState

from areasync import SyncEnvironment
from areasync.bridge.sync import VirtualWall
from areasync.conformance.normal_form import first_difference, normalized_log
from areasync.conformance.reference_loops import run_are_time_loop
from areasync.conformance.scenarios import load_scenario
from tests.scenarios import timeline


def time_based(wall: VirtualWall, **config: object) -> SyncEnvironment:
    return SyncEnvironment(
        EnvironmentConfig(oracle_mode=True, verbose=False, **config),  # type: ignore[arg-type]
        wall=wall,
    )


def test_run_blocks_until_the_end_and_starts_no_thread() -> None:
    before = threading.active_count()
    env = SyncEnvironment(EnvironmentConfig(oracle_mode=True, queue_based_loop=True))
    env.run(load_scenario("scenario_tutorial"))
    assert env.state == EnvironmentState.STOPPED
    assert threading.active_count() == before


def test_time_based_run_logs_what_ares_time_loop_logs() -> None:
    env = time_based(VirtualWall(), exit_when_no_events=True)
    env.run(load_scenario("scenario_tutorial"))
    reference = run_are_time_loop(load_scenario("scenario_tutorial"))
    assert first_difference(normalized_log(env), normalized_log(reference)) is None
    assert env.tick_count == reference.tick_count


def test_sleeping_on_the_virtual_wall_runs_the_ticks_that_fall_due() -> None:
    wall = VirtualWall()
    env = time_based(wall)
    env.run(timeline(1, 5, initialize=True), wait_for_end=False)
    wall.sleep(2.5)
    assert env.get_app("TimelineApp").marks == ["t=1"]
    assert env.tick_count == 3  # ticks at 0, 1 and 2 s
    wall.sleep(3)
    assert env.get_app("TimelineApp").marks == ["t=1", "t=5"]


def test_nothing_moves_while_nobody_sleeps() -> None:
    env = time_based(VirtualWall())
    env.run(timeline(1, initialize=True), wait_for_end=False)
    assert env.current_time == 0.0
    assert len(env.event_log) == 0


def test_pause_freezes_the_loop_until_resume() -> None:
    wall = VirtualWall()
    env = time_based(wall)
    env.run(timeline(1, initialize=True), wait_for_end=False)
    env.pause()
    wall.sleep(10)
    assert len(env.event_log) == 0
    env.resume()
    wall.sleep(2)
    assert len(env.event_log) == 1


def test_join_on_a_paused_environment_refuses_instead_of_hanging() -> None:
    env = time_based(VirtualWall())
    env.run(timeline(1, initialize=True), wait_for_end=False)
    env.pause()
    with pytest.raises(RuntimeError, match="wait forever"):
        env.join()


def test_stop_then_join_ends_the_run() -> None:
    wall = VirtualWall()
    env = time_based(wall)
    env.run(timeline(1, 20, initialize=True), wait_for_end=False)
    wall.sleep(2)
    env.stop()
    env.join()
    assert env.state == EnvironmentState.STOPPED
    assert env.get_app("TimelineApp").marks == ["t=1"]
