"""How a harness tests its agent with areasync's pytest plugin, end to end.

Installing areasync is all the setup there is: the plugin registers itself with pytest and
provides `areasync_server`, `areasync_client` and `areasync_simulation`. No conftest, no event
loop fixture, no `@pytest.mark.asyncio` (under pytest-asyncio, strict or auto mode).

    pytest examples/test_harness_example.py

The agent under test here is a toy with no LLM: in `scenario_tutorial` the user asks for the
pdf Greg will email to be sent on to John Doe; the agent checks the inbox until Greg's email is
there, forwards it, tells the user, and hands its turn back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from areasync.client import Client
from areasync.protocol import StreamItem
from areasync.testing import AreasyncServer, ClientFactory, SimulationFactory


async def toy_agent(sim: Client) -> None:
    """Wait for the user, then for Greg's email; forward it to John; tell the user."""
    # ARE's own way to wait: in fast mode the clock jumps to the next notification (here the
    # user's request) or to the timeout, whichever comes first.
    await sim.wait_for_notification(timeout=60)
    while True:
        inbox = await sim.call_tool("EmailClientApp__list_emails", folder_name="INBOX")
        mails = [mail for mail in inbox["emails"] if mail["sender"] == "gregb@example.com"]
        if mails:
            break
        await sim.wait_for_notification(timeout=3)  # no notification for new email: poll
    await sim.call_tool(
        "EmailClientApp__forward_email",
        email_id=mails[0]["email_id"],
        recipients=["johndoe@example.com"],
    )
    await sim.call_tool("AgentUserInterface__send_message_to_user", content="Sent it to John.")
    await sim.idle()  # done: let the session run to its end


async def test_the_agent_completes_scenario_tutorial(
    areasync_server: AreasyncServer, areasync_client: ClientFactory
) -> None:
    # The default server: scenario_tutorial in fast mode, waiting for its agent.
    agent = await areasync_client(role="agent")
    with anyio.fail_after(30):  # wall seconds: a bug fails the test instead of hanging it
        await toy_agent(agent)
        ended = await agent.wait_ended()
    assert ended.validation is not None and ended.validation.success is True
    # The server is in-process: the session's ARE environment is right there to inspect.
    env = areasync_server.simulation().env
    forwarded = [e for e in env.event_log.list_view() if e.function_name() == "forward_email"]
    assert len(forwarded) == 1


@pytest.mark.areasync(scenario="scenario_tutorial", mode="manual")
async def test_the_agent_sees_the_users_message_when_the_clock_gets_there(
    areasync_client: ClientFactory,
) -> None:
    # Manual mode: nothing moves unless a controller moves it.
    agent = await areasync_client(role="agent")
    controller = await areasync_client(role="controller")
    with anyio.fail_after(30):
        await controller.jump(to=5.5)
        assert not [n async for n in _notifications_so_far(agent)]
        await controller.jump(to=6)  # scenario_tutorial's user writes at 6 s
        async for note in agent.notifications():
            assert note.message_type == "USER_MESSAGE"
            break


async def _notifications_so_far(client: Client) -> AsyncIterator[StreamItem]:
    await client.ping()  # replies come after every stream item before them: we are up to date
    for item in client.history:
        if item.__struct_config__.tag == "notification":
            yield item


def test_the_same_scenario_runs_in_process_without_a_socket(
    areasync_simulation: SimulationFactory,
) -> None:
    simulation = areasync_simulation("scenario_tutorial", mode="fast", oracle=True)
    validation = anyio.run(simulation.run)
    assert validation is not None and validation.success is True
    assert [e.function for e in simulation.events()][-1] == "forward_email"
