"""`areasync serve --workers 2`, as real processes: a front and two session workers.

A client dials the front's one URL per session and gets what a single process gives it; the
front reads the hello, then hands the socket itself to the session's worker and keeps no
descriptor of it; the admin token never reaches a worker; a worker killed (SIGKILL) or stuck
(a tool call holding its loop in C) is replaced and its sessions come back from their
journals, resumed by their clients with `since`; SIGTERM stops every process.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import pytest

from areasync.journal import JournalStore
from areasync.service.durability.restore import inputs_of
from tests.front.support import (
    ADMIN,
    REAL_PROCESSES,
    WAIT,
    call,
    ended,
    front,
    hello,
    hello_past_restore,
    pipelined,
    proc_bytes,
    reply,
    running,
    server_side_inode,
    socket_inodes,
)
from tests.scenarios import RUNAWAY_STARTED, RunawayScenario
from tests.service.durable_support import read_until

pytestmark = REAL_PROCESSES

TUTORIAL = "scenario_tutorial"
RUNAWAY = RunawayScenario.scenario_id
MARK = "RunawayApp__mark"


async def test_a_client_through_the_front_is_welcomed_answered_and_resumes_with_since(
    tmp_path: Path,
) -> None:
    async with front("--scenario", RUNAWAY, log=tmp_path / "log") as served:
        url, token = served.url(RUNAWAY), served.token(RUNAWAY, "agent")
        ws, welcome = await hello(url, "agent", token)
        assert welcome["type"] == "welcome" and welcome["session_id"] == RUNAWAY
        await call(ws, 1, MARK, label="one")
        result, items = await reply(ws, 1)
        assert result == {"type": "result", "id": 1, "value": None} or result["type"] == "result"
        assert [i["type"] for i in items] == ["event"]  # its AGENT event, before its result
        last = items[-1]["seq"]
        await ws.close()
        again, rewelcome = await hello(url, "agent", token, since=last - 1, epoch=welcome["epoch"])
        assert rewelcome["replay"] == "full" and rewelcome["epoch"] == welcome["epoch"]
        await call(again, 2, MARK, label="two")
        _, replayed = await reply(again, 2)
        assert replayed[0]["seq"] == last  # the item after `since`, replayed
        await again.close()


async def test_a_wrong_token_is_refused_by_the_front_as_by_a_server(tmp_path: Path) -> None:
    async with front("--scenario", RUNAWAY, log=tmp_path / "log") as served:
        ws, refused = await hello(served.url(RUNAWAY), "agent", "not-a-token")
        assert refused["type"] == "error" and refused["code"] == "unauthorized"
        with anyio.fail_after(WAIT):
            await ws.wait_closed()
        assert ws.close_code == 4001


async def test_the_front_keeps_no_descriptor_of_a_socket_it_handed_over(tmp_path: Path) -> None:
    async with front("--scenario", RUNAWAY, log=tmp_path / "log") as served:
        ws, welcome = await hello(served.url(RUNAWAY), "agent", served.token(RUNAWAY, "agent"))
        assert welcome["type"] == "welcome"
        inode = server_side_inode(served.port, ws.local_address[1])
        worker = await served.holder(RUNAWAY)
        assert inode in socket_inodes(worker)
        assert inode not in socket_inodes(served.process.pid)
        await call(ws, 1, MARK, label="after the hand-off")
        result, _ = await reply(ws, 1)
        assert result["type"] == "result"
        await ws.close()


async def test_the_admin_token_is_in_no_worker_environment_nor_command_line(
    tmp_path: Path,
) -> None:
    async with front("--scenario", RUNAWAY, log=tmp_path / "log") as served:
        ws, welcome = await hello(served.url(RUNAWAY), "admin", ADMIN)  # an admin hello too
        assert welcome["type"] == "welcome"
        pids = await served.worker_pids()
        assert len(pids) == 2
        for pid in pids.values():
            for part in ("environ", "cmdline"):
                assert ADMIN.encode() not in proc_bytes(pid, part)
        await ws.close()


async def test_a_killed_workers_sessions_resume_on_a_live_worker_with_since(
    tmp_path: Path,
) -> None:
    async with front("--scenario", RUNAWAY, log=tmp_path / "log") as served:
        url, token = served.url(RUNAWAY), served.token(RUNAWAY, "agent")
        ws, welcome = await hello(url, "agent", token)
        await call(ws, 1, MARK, label="before the kill")
        _, items = await reply(ws, 1)
        seq = items[-1]["seq"]
        os.kill(await served.holder(RUNAWAY), signal.SIGKILL)
        with anyio.fail_after(WAIT):
            await ws.wait_closed()
        again, rewelcome = await hello_past_restore(
            url, "agent", token, since=seq, epoch=welcome["epoch"]
        )
        assert rewelcome.get("restored") is True, (rewelcome, served.said())
        assert rewelcome["epoch"] == welcome["epoch"] and rewelcome["seq"] == seq
        await call(again, 2, MARK, label="after the kill")
        result, after = await reply(again, 2)
        assert result["type"] == "result" and after[0]["seq"] == seq + 1
        await again.close()


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("RunawayApp__backtrack", {"length": 60}),  # holds the interpreter lock in C
        ("RunawayApp__hang", {}),  # releases it: the call's record is written
    ],
)
async def test_a_worker_stuck_in_c_is_killed_and_its_sessions_resume_without_the_call(
    tmp_path: Path, tool: str, args: dict[str, object]
) -> None:
    # Placed on the least loaded worker in turn: the runaway and the second tutorial share one.
    scenarios = ("--scenario", RUNAWAY, "--scenario", TUTORIAL, "--scenario", TUTORIAL)
    state = ("--state-dir", str(tmp_path / "state"), "--tool-budget", "3")
    async with front(*scenarios, *state, log=tmp_path / "log") as served:
        neighbour = f"{TUTORIAL}-2"
        assert await served.holder(RUNAWAY) == await served.holder(neighbour)
        stuck_url, stuck_token = served.url(RUNAWAY), served.token(RUNAWAY, "agent")
        ws, welcome = await hello(stuck_url, "agent", stuck_token)
        await call(ws, 1, tool, **args)
        await read_until(served.process, RUNAWAY_STARTED)
        with anyio.fail_after(WAIT):
            await ws.wait_closed()  # its worker was killed
        again, back = await hello_past_restore(
            stuck_url, "agent", stuck_token, since=welcome["seq"], epoch=welcome["epoch"]
        )
        assert back.get("restored") is True, (back, served.said())
        told = json.loads(await again.recv())
        assert told["type"] == "error" and told["code"] == "tool_budget_exceeded"
        assert "recorded abandoned" in told["message"]
        await call(again, 2, MARK, label="after the abandoned call")  # not run again: answered
        result, _ = await reply(again, 2)
        assert result["type"] == "result"
        inputs = inputs_of(JournalStore(tmp_path / "state").read(RUNAWAY))
        sources = [(i.source, getattr(i, "tool", None)) for i in inputs]
        # A call that holds the loop holds its own record too (the loop hands records to the
        # journal's writer), so it is seldom on disk; if it is, `abandoned` follows it, so no
        # replay runs it again (the restore just did not).
        if ("call_tool", tool) in sources:
            stuck = sources.index(("call_tool", tool))
            assert sources[stuck + 1] == ("abandoned", None)
        for session_id in (TUTORIAL, neighbour):  # the neighbour restored on a live worker
            token = served.token(session_id, "observer")
            observer, answer = await hello_past_restore(
                served.url(session_id), "observer", token, since=0
            )
            assert answer["type"] == "welcome"
            await observer.send('{"type": "ping", "id": 5}')
            pong, _ = await reply(observer, 5)
            assert pong["type"] == "pong"
            await observer.close()


async def test_sigterm_stops_the_front_and_every_worker(tmp_path: Path) -> None:
    async with front("--scenario", RUNAWAY, log=tmp_path / "log") as served:
        pids = list((await served.worker_pids()).values())
        served.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(WAIT):
            code = await served.process.wait()
        assert code == 0
        # The front waits for each worker to end before it exits (workers/pool.py, close).
        assert all(ended(pid) for pid in pids)


async def test_frames_sent_with_the_hello_in_one_write_are_handed_over_and_answered(
    tmp_path: Path,
) -> None:
    async with front("--scenario", RUNAWAY, log=tmp_path / "log") as served:
        token = served.token(RUNAWAY, "agent")
        hello_frame = {"type": "hello", "id": 0, "role": "agent", "token": token}
        calls = [
            {"type": "call_tool", "id": n, "tool": MARK, "args": {"label": f"piped {n}"}}
            for n in (1, 2)
        ]
        answers = await pipelined(served.url(RUNAWAY), [hello_frame, *calls], until_id=2)
        assert answers[0]["type"] == "welcome"
        assert [a["id"] for a in answers if a["type"] == "result"] == [1, 2]


async def test_sigterm_without_a_state_dir_ends_the_sessions_and_writes_their_traces(
    tmp_path: Path,
) -> None:
    # As one process does without --state-dir: the workers' private journals go with the run,
    # so their sessions are not suspended there, they end.
    traces = tmp_path / "traces"
    extra = ("--scenario", RUNAWAY, "--trace-dir", str(traces))
    async with front(*extra, log=tmp_path / "log") as served:
        served.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(WAIT):
            assert await served.process.wait() == 0
    assert [p.name for p in traces.iterdir() if p.name.startswith(RUNAWAY)]


async def test_max_sessions_is_the_servers_split_over_its_workers(tmp_path: Path) -> None:
    # --max-sessions 2 over two workers: one each. The operator's session takes worker-1's.
    async with front("--scenario", RUNAWAY, "--max-sessions", "2", log=tmp_path / "log") as f:
        create = {"scenario": TUTORIAL, "mode": "manual"}
        status, created = await anyio.to_thread.run_sync(f.post, "/api/sessions", create)
        assert status == 201, (created, f.said())
        assert await f.holder(created["session_id"]) != await f.holder(RUNAWAY)
        status, refused = await anyio.to_thread.run_sync(f.post, "/api/sessions", create)
        assert status == 503 and refused["error"]["code"] == "capacity"
        assert "(max_sessions)" in refused["error"]["message"]


async def test_limits_that_cannot_be_split_over_the_workers_refuse_the_start(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log"
    async with running("--max-sessions", "1", log=log) as process:
        with anyio.fail_after(WAIT):
            assert await process.wait() == 2
    assert "--max-sessions 1 is below --workers 2" in log.read_text()
