"""`python -m tests.agents.held_import MODULE PORT ARGS...`: the `areasync` command with
ARGS, its first import of MODULE held until the test lets it go.

What a busy machine does by chance (an import of ARE or LiteLLM taking tens of seconds), made
certain: when the command first imports MODULE, it connects to the test on loopback PORT, says
`held`, and waits until the test sends a byte or closes the connection (or the test is gone),
then imports MODULE as usual. Nothing of areasync is replaced.

`run_held` is the test's side: it runs the command so, and awaits what the test checks while
the import is held before it lets the import go.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import runpy
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from tests.bounds import PROCESS_S

if TYPE_CHECKING:  # the command's process imports nothing of areasync before its own start
    from areasync.service.sessions.session import Session

HELD = b"held"


class HeldImport(importlib.abc.MetaPathFinder):
    """Holds the first import of `module` (module docstring); finds nothing itself."""

    def __init__(self, module: str, port: int) -> None:
        self.module = module
        self.port = port
        self.done = False

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == self.module and not self.done:
            self.done = True
            with socket.create_connection(("127.0.0.1", self.port)) as test:
                test.sendall(HELD)
                test.recv(1)  # a byte, or the test's end closing
        return None


async def run_held(
    module: str,
    args: Sequence[str],
    while_held: Callable[[], Awaitable[None]],
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`areasync ARGS` in a child process, its first import of `module` held until
    `while_held()` returned; the finished process (it fails the test after PROCESS_S)."""
    done: list[subprocess.CompletedProcess[str]] = []

    async def play(port: int) -> None:
        held = [sys.executable, "-m", "tests.agents.held_import", module, str(port), *args]
        with anyio.fail_after(PROCESS_S):
            ran = await anyio.run_process(held, check=False, env=env)
        out, err = ran.stdout.decode(), ran.stderr.decode()
        done.append(subprocess.CompletedProcess(held, ran.returncode, out, err))

    (test,) = (await anyio.create_tcp_listener(local_host="127.0.0.1")).listeners
    assert isinstance(test, anyio.abc.SocketListener)
    async with test:
        port = test.extra(anyio.abc.SocketAttribute.local_port)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(play, port)
            with anyio.fail_after(PROCESS_S):
                async with await test.accept() as hold:
                    assert await hold.receive(len(HELD)) == HELD
                    await while_held()
    (result,) = done
    return result


async def the_agent_answers_a_ping(session: Session) -> None:
    """Ping the agent attached to `session` (a server's own session) and await its pong."""
    from areasync.protocol import Role

    (agent,) = [c for c in session.connections if c.role is Role.AGENT]
    pong = await agent.ws.ping()
    await pong


def main(argv: list[str]) -> None:
    module, port, *args = argv
    sys.meta_path.insert(0, HeldImport(module, int(port)))
    sys.argv = ["areasync", *args]
    runpy.run_module("areasync.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
