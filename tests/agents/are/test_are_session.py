"""The ARE agent's link to a live session (`areasync.agents.are.session`)."""

from __future__ import annotations

import anyio
import anyio.to_thread

from areasync.agents.are.session import SessionLink
from areasync.client import connect
from areasync.protocol import NotificationItem, Role
from areasync.testing import AreasyncServer

WAIT_S = 60.0  # a bound, not a speed claim


async def test_waiting_for_news_with_a_notification_unread_keeps_the_agents_turn(
    areasync_server: AreasyncServer,
) -> None:
    token = areasync_server.tokens()[Role.AGENT]
    async with connect(areasync_server.url, role=Role.AGENT, token=token, since=0) as client:
        await client.idle()  # the fast session runs to the user's message at 6 s
        with anyio.fail_after(WAIT_S):
            async for item in client.stream(since=0):
                if isinstance(item, NotificationItem):
                    break
        # The agent has read nothing into its queue yet (as when its first look came before
        # the notification arrived): going idle to wait for news must not let time run on.
        link = SessionLink(client=client)
        with anyio.fail_after(WAIT_S):
            await anyio.to_thread.run_sync(link.wait_for_news)
        await anyio.wait_all_tasks_blocked()
        simulation = areasync_server.simulation()
        assert simulation.now == 6.0 and not simulation.ended
