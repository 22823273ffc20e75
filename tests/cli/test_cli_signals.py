"""SIGTERM ends `areasync serve` even while a tool call holds its event loop.

A real server process (`tests.cli.runaway_serve`: the command line with the runaway test
scenario registered) runs an agent's tool call that never returns by itself: a standard-library
`re` backtracking in C, which holds the interpreter lock and that no watchdog can interrupt,
or a Python loop, which the call watchdog stops at the budget. The tool prints a line before
it starts; the test sends SIGTERM only after reading it, then waits, with a generous bound,
for the process to exit. Nothing here measures how fast.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from websockets.asyncio.client import ClientConnection, connect

from areasync.journal import JournalStore
from areasync.service.durability.restore import inputs_of
from areasync.simulation import input_records as kinds
from tests.scenarios import RUNAWAY_STARTED, RunawayScenario
from tests.service.durable_support import read_banner, read_until, session_url
from tests.service.support import json_files

RUNAWAY = RunawayScenario.scenario_id
SERVE = [
    *(sys.executable, "-m", "tests.cli.runaway_serve", "serve", "--workers", "0"),
    *("--port", "0"),
    *("--mode", "manual", "--token", "cli-admin", "--scenario", RUNAWAY),
]


async def _agent(banner: str) -> ClientConnection:
    ws = await connect(session_url(banner, RUNAWAY))
    await ws.send(json.dumps({"type": "hello", "id": 0, "role": "agent", "token": "cli-admin"}))
    assert json.loads(await ws.recv())["type"] == "welcome"
    return ws


async def _reply(ws: ClientConnection, request_id: int) -> dict[str, object]:
    with anyio.fail_after(30):
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("id") == request_id:
                return frame  # type: ignore[no-any-return]


async def _call(ws: ClientConnection, request_id: int, tool: str, args: dict[str, object]) -> None:
    frame = {"type": "call_tool", "id": request_id, "tool": tool, "args": args}
    await ws.send(json.dumps(frame))


async def _exit_status(process: Process) -> int:
    try:
        with anyio.fail_after(120):
            return await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_sigterm_ends_the_server_while_a_tool_call_is_stuck_in_c(tmp_path: Path) -> None:
    command = [*SERVE, "--state-dir", str(tmp_path), "--shutdown-timeout", "2"]
    async with await anyio.open_process(command) as process:
        ws = await _agent(await read_banner(process))
        await _call(ws, 1, "RunawayApp__mark", {"label": "before"})
        assert (await _reply(ws, 1))["type"] == "result"
        await _call(ws, 2, "RunawayApp__backtrack", {"length": 60})
        await read_until(process, RUNAWAY_STARTED)
        process.send_signal(signal.SIGTERM)
        code = await _exit_status(process)
        assert process.stderr is not None
        said = "".join([chunk async for chunk in TextReceiveStream(process.stderr)])
    assert code == 1  # the backstop: the loop never took the signal
    assert "SIGTERM" in said and "printing where it was stuck" in said
    # Every acknowledged record is in the journal, which reads back whole.
    inputs = inputs_of(JournalStore(tmp_path).read(RUNAWAY))
    first = next(i for i in inputs if isinstance(i, kinds.CallTool))
    assert first.args == {"label": "before"}


async def test_sigterm_during_a_python_runaway_shuts_down_cleanly_with_its_trace(
    tmp_path: Path,
) -> None:
    command = [*SERVE, "--trace-dir", str(tmp_path), "--tool-budget", "1"]
    command += ["--shutdown-timeout", "60"]
    async with await anyio.open_process(command) as process:
        ws = await _agent(await read_banner(process))
        await _call(ws, 1, "RunawayApp__spin", {"seconds": 600.0})
        await read_until(process, RUNAWAY_STARTED)
        process.send_signal(signal.SIGTERM)
        code = await _exit_status(process)
    assert code == 0  # the watchdog stopped the call; the loop then shut the server down
    [trace] = json_files(tmp_path)
    assert trace.startswith(RUNAWAY)
