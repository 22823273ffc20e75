"""A controller's long jump yields to the event loop: other sessions keep streaming meanwhile."""

from __future__ import annotations

from areasync.protocol import EventItem, Jump, Result, Resume
from bench.synthetic import synthetic_scenario
from tests.service.support import attach, serving

JUMPING = "areasync_bench_synthetic"  # the first synthetic session's id (its scenario id)


async def test_a_long_jump_in_one_session_does_not_stall_another_sessions_stream() -> None:
    async with serving(synthetic_scenario(3000), control_budget=1e-9) as service:
        other = service.registry.create(synthetic_scenario(200), mode="fast")
        jumping = service.registry.get(JUMPING)
        assert jumping is not None and other.id != JUMPING
        # Clients that leave frames unread: do not wait out websockets' closing handshake.
        quick = {"close_timeout": 0.2}
        async with (
            attach(service, "controller", session=JUMPING, **quick) as controller,
            attach(service, "controller", session=other.id, **quick) as starter,
            attach(service, "observer", session=other.id, **quick) as observer,
        ):
            jump = Jump(id=controller.next_id(), to=2000.0)
            await controller.send(jump)
            # The jump is under way: its items reach its own controller before its reply.
            first = await controller.until(lambda f: isinstance(f, EventItem | Result))
            assert isinstance(first, EventItem)
            # Meanwhile the other session starts (fast mode) and its observer gets its items.
            await starter.send(Resume(id=starter.next_id()))
            await observer.until(lambda f: isinstance(f, EventItem))
            # ... before the jump in the first session is over.
            assert len(jumping.sim.events()) < 2400
            reply = await controller.reply_to(jump.id)
            assert isinstance(reply, Result)
            assert len(jumping.sim.events()) >= 2400
            # Its reply came after every item the jump fired.
            items = [f for f in controller.frames if isinstance(f, EventItem)]
            assert controller.frames.index(reply) > controller.frames.index(items[-1])
            assert len(items) == len(jumping.sim.events())
