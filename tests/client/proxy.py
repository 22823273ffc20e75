"""A TCP proxy on loopback that cuts its connections at random points, to test reconnects.

Each connection through it is given a random byte budget for the server-to-client direction;
when it is spent, both sockets are closed abruptly, wherever that falls: in the WebSocket
handshake, in the hello/welcome exchange, or in the middle of a frame. The randomness is seeded,
so a failing run can be repeated.
"""

from __future__ import annotations

import contextlib
import random
from types import TracebackType

import anyio
import anyio.abc
from anyio.abc import SocketStream


class CuttingProxy:
    """Forwards 127.0.0.1:<port> to 127.0.0.1:<target_port>, cutting connections at random."""

    def __init__(
        self,
        target_port: int,
        *,
        seed: int = 0,
        budget: tuple[int, int] = (300, 6000),
        cuts: int | None = None,
    ) -> None:
        self.target_port = target_port
        self.rng = random.Random(seed)
        self.budget = budget
        self.max_cuts = cuts  # None: cut every connection; else only the first `cuts` ones
        self.cuts = 0
        self.connections = 0
        self.port = 0
        self._task_group: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> CuttingProxy:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(listener.serve, self._handle)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()
        await self._task_group.__aexit__(None, None, None)

    async def _handle(self, client: SocketStream) -> None:
        self.connections += 1
        cutting = self.max_cuts is None or self.cuts < self.max_cuts
        budget = self.rng.randint(*self.budget) if cutting else None
        try:
            server = await anyio.connect_tcp("127.0.0.1", self.target_port)
        except OSError:
            await client.aclose()
            return
        async with client, server, anyio.create_task_group() as tg:

            async def upstream() -> None:
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    async for chunk in client:
                        await server.send(chunk)
                tg.cancel_scope.cancel()

            async def downstream() -> None:
                remaining = budget
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    async for chunk in server:
                        if remaining is not None and len(chunk) >= remaining:
                            await client.send(chunk[:remaining])
                            self.cuts += 1
                            break  # cut: both sockets close when the task group exits
                        if remaining is not None:
                            remaining -= len(chunk)
                        await client.send(chunk)
                tg.cancel_scope.cancel()

            tg.start_soon(upstream)
            tg.start_soon(downstream)
