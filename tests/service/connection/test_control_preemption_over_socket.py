"""Over the socket: stop, stop_session and shutdown interrupt a long tick/jump; bounds refuse.

The attack: `tick{n: 10**15}` on a session without a duration held the session's lane, so
`stop` and `stop_session` queued behind it for ever. Now a stop interrupts it at its next
yield (error `interrupted`), and `n` and jump spans have bounds (`invalid_field`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio

from areasync.protocol import EndedItem, Error, ErrorCode, Jump, Ping, Pong, Result, Stop, Tick
from areasync.protocol.frames import StopSession
from areasync.service import Service
from tests.service.support import attach, json_files, serving
from tests.waiting import eventually

NO_DURATION = "scenario_find_image_file"  # a registered scenario without a duration
HUGE_N = 10**12
TINY = 1e-9  # a yield after every tick: "it is running" does not depend on machine speed


def _ticks(service: Service) -> Callable[[], int]:
    session = service.registry.get(NO_DURATION)
    assert session is not None
    return lambda: int(session.sim.env.tick_count)


async def _until_running(ticks: Callable[[], int]) -> None:
    # Polled: the session signals no event for "n ticks have run".
    await eventually(lambda: ticks() >= 10)


def _long_ticks(**overrides: object) -> dict[str, object]:
    return {"max_ticks": HUGE_N, "control_budget": TINY, **overrides}


async def test_a_controllers_stop_interrupts_its_own_long_tick() -> None:
    async with (
        serving(NO_DURATION, **_long_ticks()) as service,
        attach(service, "controller", session=NO_DURATION) as controller,
    ):
        tick = Tick(id=controller.next_id(), n=HUGE_N)
        await controller.send(tick)
        await _until_running(_ticks(service))
        # Same connection, sent behind the tick: read at once, not after the tick.
        stop = Stop(id=controller.next_id())
        await controller.send(stop)
        ticked = await controller.reply_to(tick.id)
        stopped = await controller.reply_to(stop.id)
        ended = await controller.until_ended()
    assert isinstance(ticked, Error) and ticked.code == ErrorCode.INTERRUPTED
    assert "interrupted by a stop" in ticked.message
    assert isinstance(stopped, Result)
    assert ended.state == "stopped"
    assert _ticks(service)() < HUGE_N


async def test_frames_read_behind_a_long_tick_are_answered_in_order_after_it() -> None:
    async with (
        serving(NO_DURATION, **_long_ticks()) as service,
        attach(service, "controller", session=NO_DURATION) as controller,
    ):
        tick = Tick(id=controller.next_id(), n=HUGE_N)
        await controller.send(tick)
        await _until_running(_ticks(service))
        ping = Ping(id=controller.next_id())
        stop = Stop(id=controller.next_id())
        await controller.send(ping)
        await controller.send(stop)
        await controller.reply_to(stop.id)
    replies = [f for f in controller.frames if isinstance(f, Result | Error | Pong)]
    assert [f.id for f in replies] == [tick.id, ping.id, stop.id]


async def test_another_controllers_stop_interrupts_a_long_tick() -> None:
    async with (
        serving(NO_DURATION, **_long_ticks()) as service,
        attach(service, "controller", session=NO_DURATION) as ticker,
        attach(service, "controller", session=NO_DURATION) as stopper,
    ):
        tick = Tick(id=ticker.next_id(), n=HUGE_N)
        await ticker.send(tick)
        await _until_running(_ticks(service))
        validation = await stopper.call(Stop)
        ticked = await ticker.reply_to(tick.id)
    assert validation is not None
    assert isinstance(ticked, Error) and ticked.code == ErrorCode.INTERRUPTED


async def test_an_admins_stop_session_interrupts_a_long_tick() -> None:
    async with (
        serving(NO_DURATION, **_long_ticks()) as service,
        attach(service, "controller", session=NO_DURATION) as ticker,
        attach(service, "admin", session=NO_DURATION) as admin,
    ):
        tick = Tick(id=ticker.next_id(), n=HUGE_N)
        await ticker.send(tick)
        await _until_running(_ticks(service))
        result = await admin.call(StopSession, session_id=NO_DURATION)
        ticked = await ticker.reply_to(tick.id)
    assert result["state"] == "stopped"
    assert isinstance(ticked, Error) and ticked.code == ErrorCode.INTERRUPTED


async def test_shutdown_interrupts_a_long_tick_and_writes_every_trace(tmp_path: Path) -> None:
    async with serving(NO_DURATION, trace_dir=tmp_path, **_long_ticks()) as service:
        service.registry.create("scenario_tutorial")
        async with attach(service, "controller", session=NO_DURATION) as ticker:
            tick = Tick(id=ticker.next_id(), n=HUGE_N)
            await ticker.send(tick)
            await _until_running(_ticks(service))
            service.shutdown()
            ticked = await ticker.reply_to(tick.id)
            ended = await ticker.until_ended()
    assert isinstance(ticked, Error) and ticked.code == ErrorCode.INTERRUPTED
    assert ended.reason == "the server shut down"
    traces = json_files(tmp_path)
    assert len(traces) == 2
    assert any(name.startswith(NO_DURATION) for name in traces)


async def test_shutdown_ends_a_session_whose_stop_never_gets_the_lane(tmp_path: Path) -> None:
    # A command that never gives way (none does now; this is the backstop): the session is
    # ended outside its lane after shutdown_timeout and its trace is written.
    wedged = anyio.Event()
    released = anyio.Event()
    async with serving(NO_DURATION, trace_dir=tmp_path, shutdown_timeout=0.2) as service:
        session = service.registry.get(NO_DURATION)
        assert session is not None

        async def hold_the_lane() -> None:
            async with session.sim.lane:
                wedged.set()
                await released.wait()

        async with anyio.create_task_group() as tg:
            tg.start_soon(hold_the_lane)
            await wedged.wait()
            await service.__aexit__(None, None, None)
            released.set()
    assert session.sim.ended and session.sim.state == "failed"
    assert "did not stop in time" in str(session.sim.end_reason)
    [trace] = json_files(tmp_path)
    assert trace.startswith(NO_DURATION)


async def test_a_tick_over_the_bound_is_invalid_field_naming_it_and_changes_nothing() -> None:
    async with (
        serving(NO_DURATION, max_ticks=1000) as service,
        attach(service, "controller", session=NO_DURATION) as controller,
    ):
        error = await controller.fail(Tick, n=10**15)
        state = await controller.call(Tick, n=1000)
    assert error.code == ErrorCode.INVALID_FIELD
    assert "limit of 1000 ticks" in error.message and "split it" in error.message
    assert state["tick"] == 1000


async def test_a_jump_over_the_bound_is_invalid_field_naming_it_and_changes_nothing() -> None:
    async with (
        serving(NO_DURATION, max_jump=3600.0) as service,
        attach(service, "controller", session=NO_DURATION) as controller,
    ):
        by = await controller.fail(Jump, by=3600.5)
        to = await controller.fail(Jump, to=1e300)
        state = await controller.call(Jump, by=3600.0)
    for error in (by, to):
        assert error.code == ErrorCode.INVALID_FIELD
        assert "limit of 3600 s per jump" in error.message and "split it" in error.message
    assert state["time"] == 3600.0
    assert not any(isinstance(f, EndedItem) for f in controller.frames)
