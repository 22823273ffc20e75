"""An SSE client that stops reading is dropped; the session and the other clients never wait."""

from __future__ import annotations

import anyio

from tests.service.adapters.gaia2cli.harness import SseReader, stalled_socket
from tests.service.adapters.gaia2cli.support import TO_USER, adapter, agent, harness
from tests.service.support import TUTORIAL, WAIT
from tests.waiting import eventually

BIG = "x" * 64 * 1024  # each message is this big, to fill the stalled client's buffers soon
MAX_MESSAGES = 200  # 12.5 MiB: more than loopback socket buffers hold


async def test_a_stalled_sse_client_is_dropped_while_another_gets_every_message() -> None:
    async with (
        adapter(write_timeout=1.0, gaia2_sse_bytes=256 * 1024) as service,
        agent(service) as sim,
    ):
        base = service.gaia2_url(TUTORIAL)
        stalled = stalled_socket(base)
        live = await SseReader.open(base)
        runner = harness(service)
        received: list[int] = []

        async def read_until_last() -> None:
            while True:
                event, data = await live.next()
                if event == "chat":
                    received.append(data["seq"])
                    if data["message"]["content"][0]["text"] == "last":
                        return

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(read_until_last)
                sent = 0

                async def dropped() -> bool:
                    return bool((await runner.health())["sseClients"] <= 1)

                with anyio.fail_after(4 * WAIT):
                    while sent < MAX_MESSAGES and not await dropped():
                        await sim.call_tool(TO_USER, content=BIG)
                        sent += 1
                # Its buffers are full: the drop now waits for write_timeout (never dropped:
                # the test fails here).
                await eventually(dropped, within=4 * WAIT, what="the stalled client's drop")
                await sim.call_tool(TO_USER, content="last")
        finally:
            live.close()
            stalled.close()
    assert received == list(range(1, sent + 2))
