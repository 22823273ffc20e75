"""Resuming with hello{since, epoch}: exactly the missed items, in order, then the live stream."""

from __future__ import annotations

from areasync.protocol import (
    CallTool,
    CloseCode,
    Error,
    ErrorCode,
    Hello,
    Jump,
    Replay,
    Role,
)
from tests.service.support import attach, raw, serving


async def test_since_zero_replays_the_whole_stream_then_goes_live() -> None:
    async with serving() as service, attach(service, Role.CONTROLLER) as controller:
        await controller.call(Jump, next_event=True)
        async with attach(service, Role.OBSERVER, since=0) as observer:
            assert observer.welcome is not None and observer.welcome.replay is Replay.FULL
            await observer.until_seq(observer.welcome.seq)
            await controller.call(Jump, by=0.5)
            await observer.until_seq(observer.welcome.seq + 1)
    assert observer.seqs == list(range(1, observer.welcome.seq + 2))


async def test_reconnecting_with_since_and_epoch_gets_exactly_the_missed_items() -> None:
    async with serving() as service, attach(service, Role.CONTROLLER) as controller:
        async with attach(service, Role.OBSERVER, since=0) as before:
            assert before.welcome is not None
            await before.until_seq(before.welcome.seq)
        last, epoch = before.seqs[-1], before.welcome.epoch
        await controller.call(Jump, next_event=True)
        await controller.call(Jump, next_event=True)
        async with attach(service, Role.OBSERVER, since=last, epoch=epoch) as after:
            assert after.welcome is not None and after.welcome.replay is Replay.FULL
            await after.until_seq(after.welcome.seq)
            await controller.call(Jump, by=1.0)
            await after.until_seq(after.welcome.seq + 1)
    assert after.seqs == list(range(last + 1, after.welcome.seq + 2))


async def test_a_forced_disconnect_then_resume_has_no_gap_and_no_duplicate() -> None:
    async with serving() as service, attach(service, Role.AGENT) as agent:
        async with attach(service, Role.OBSERVER, since=0) as first:
            assert first.welcome is not None
            for _ in range(5):
                await agent.call(CallTool, tool="SystemApp__get_current_time")
            await first.until_seq(first.welcome.seq + 3)
            first.ws.transport.abort()  # the network drops: no close handshake
        for _ in range(5):  # the session goes on meanwhile
            await agent.call(CallTool, tool="SystemApp__get_current_time")
        async with attach(
            service, Role.OBSERVER, since=first.seqs[-1], epoch=first.welcome.epoch
        ) as second:
            assert second.welcome is not None
            await second.until_seq(second.welcome.seq)
    received = first.seqs + second.seqs
    assert received == list(range(1, second.welcome.seq + 1))


async def test_an_unknown_epoch_resets_and_replays_the_whole_stream() -> None:
    async with serving() as service, attach(service, Role.CONTROLLER) as controller:
        await controller.call(Jump, next_event=True)
        async with attach(service, Role.OBSERVER, since=2, epoch="from-another-server") as peer:
            assert peer.welcome is not None and peer.welcome.replay is Replay.RESET
            await peer.until_seq(peer.welcome.seq)
    assert peer.seqs == list(range(1, peer.welcome.seq + 1))


async def test_since_ahead_of_the_stream_is_replay_unavailable_and_closed() -> None:
    async with serving() as service:
        epoch = service.registry.get("scenario_tutorial").epoch  # type: ignore[union-attr]
        async with raw(service) as peer:
            await peer.send(
                Hello(id=1, role=Role.OBSERVER, token=service.tokens.admin, since=99, epoch=epoch)
            )
            error = await peer.recv()
            code, _ = await peer.closed()
    assert isinstance(error, Error) and error.code == ErrorCode.REPLAY_UNAVAILABLE
    assert code == CloseCode.BAD_HELLO


async def test_a_wrong_token_learns_nothing_about_the_stream_position() -> None:
    async with serving() as service:
        epoch = service.registry.get("scenario_tutorial").epoch  # type: ignore[union-attr]
        async with raw(service) as peer:
            await peer.send(Hello(id=1, role=Role.OBSERVER, token="x", since=10**6, epoch=epoch))
            error = await peer.recv()
    assert isinstance(error, Error) and error.code == ErrorCode.UNAUTHORIZED
