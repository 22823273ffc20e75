"""A real service with its gaia2-cli adapter on loopback, and an agent on the session's socket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from areasync.client import Client, connect
from areasync.protocol.frames import Mode, Role
from areasync.service import Service
from tests.service.adapters.gaia2cli.harness import Harness
from tests.service.support import THROUGH_FRONT, TUTORIAL, config, through_front

TO_USER = "AgentUserInterface__send_message_to_user"


@asynccontextmanager
async def adapter(**overrides: Any) -> AsyncIterator[Service]:
    """scenario_tutorial in fast mode (it waits for its agent), the adapter on a free port
    (through a front's workers with `AREASYNC_TEST_WORKERS`, as `serving`)."""
    fields: dict[str, Any] = {"gaia2_port": 0, "mode": Mode.FAST}
    fields.update(overrides)
    if THROUGH_FRONT:  # `make through-workers`: the front's shared port, handed to a worker
        async with through_front((TUTORIAL,), config(**fields)) as front:
            yield front
        return
    async with Service(config(**fields), (TUTORIAL,)) as service:
        yield service


def harness(service: Service, role: Role = Role.USER) -> Harness:
    return Harness(service.gaia2_url(TUTORIAL, role))


@asynccontextmanager
async def agent(service: Service) -> AsyncIterator[Client]:
    """The session's agent, connected over its WebSocket (time moves once it idles)."""
    token = service.tokens.of(TUTORIAL)[Role.AGENT]
    async with connect(service.ws_url(TUTORIAL), role="agent", token=token) as client:
        yield client


def stream_seq(service: Service) -> int:
    """How many items the session's stream holds: input that changed something adds some."""
    return service.registry.sessions[TUTORIAL].sim.log.seq


async def finish(sim: Client) -> None:
    """Let the tutorial run to its end: take the user's message (6 s in), then idle."""
    await sim.wait_for_notification(timeout=60)
    await sim.idle()


def notified(service: Service) -> str:
    """Every notification the session put on its stream for the agent, as one text."""
    return "\n".join(n.message for n in service.registry.sessions[TUTORIAL].sim.notifications())
