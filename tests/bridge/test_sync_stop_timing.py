"""When a stopped time-based `SyncEnvironment` ends: at the next tick time, as ARE's thread does.

ARE's time-based loop sleeps a wall second between ticks and looks at the stop flag only when it
wakes, so after `stop()` - or a StopEvent, or a failed validation inside a tick - its epilogue
(final validation checks, the second ENVIRONMENT_STOP message, the final time) happens one
increment after the last tick, with no tick there. Found by comparing ARE's own suite run on both
environments (tests/conformance/are_suite): every `env.stop(); env.join()` ended one increment
earlier on ours.
"""

from __future__ import annotations

from datetime import datetime

from are.simulation.environment import Environment, EnvironmentConfig
from are.simulation.notification_system import MessageType
from are.simulation.types import EnvironmentState, StopEvent

from areasync import SyncEnvironment
from areasync.bridge.sync import VirtualWall
from areasync.conformance.reference_loops import fake_wall_clock
from tests.scenarios import timeline


def _config() -> EnvironmentConfig:
    return EnvironmentConfig(start_time=0, duration=10, oracle_mode=True, verbose=False)


def _schedule_stop_at_3(env: Environment) -> None:
    scenario = timeline(1, 5, initialize=True)
    env.register_apps(scenario.apps)
    stop = StopEvent()
    stop.event_relative_time = 3.0
    env.schedule([*scenario.events, stop])


def _outcome(env: Environment) -> tuple[list[float], float, int, list[str], EnvironmentState]:
    stops = [
        round(m.timestamp.timestamp() - env.start_time, 3)
        for m in env.notification_system.message_queue.list_view()
        if m.message_type == MessageType.ENVIRONMENT_STOP
    ]
    log = [e.event_id for e in env.event_log.list_view()]
    final = round(env.time_manager.time() - env.start_time, 3)
    return stops, final, env.tick_count, log, env.state


def test_stop_event_ends_the_run_where_ares_time_loop_ends_it() -> None:
    with fake_wall_clock():
        reference = Environment(_config())
        _schedule_stop_at_3(reference)
        reference.start()
        reference.join()
        expected = _outcome(reference)  # read inside: ARE's TimeManager reads the patched clock
    ours = SyncEnvironment(_config(), wall=VirtualWall())
    _schedule_stop_at_3(ours)
    ours.start()
    ours.join()

    stops, final, ticks, log, state = _outcome(ours)
    assert (stops, final, ticks, log, state) == expected
    # stop() posts at 3 s (the StopEvent's tick), the loop's epilogue one increment later.
    assert stops == [3.0, 4.0]
    assert final == 4.0


def test_external_stop_takes_effect_at_the_next_tick_time() -> None:
    wall = VirtualWall()
    env = SyncEnvironment(_config(), wall=wall)
    env.run(timeline(1, 5, initialize=True), wait_for_end=False)
    wall.sleep(2.5)  # ticks at 0, 1 and 2 s
    env.stop()
    env.join()

    stamps = [
        datetime.timestamp(m.timestamp)
        for m in env.notification_system.message_queue.list_view()
        if m.message_type == MessageType.ENVIRONMENT_STOP
    ]
    assert stamps == [2.5, 3.0]
    assert env.time_manager.time() == 3.0
    assert env.tick_count == 3  # no tick at 3 s: the loop only woke to see the flag
    assert env.get_app("TimelineApp").marks == ["t=1"]
    assert env.state == EnvironmentState.STOPPED


def test_stop_while_paused_ends_at_once() -> None:
    # ARE's thread would spin on the pause flag forever; ending at once is the useful reading.
    wall = VirtualWall()
    env = SyncEnvironment(_config(), wall=wall)
    env.run(timeline(1, initialize=True), wait_for_end=False)
    wall.sleep(0.5)
    env.pause()
    env.stop()
    env.join()
    assert env.time_manager.time() == 0.5
    assert env.state == EnvironmentState.STOPPED
