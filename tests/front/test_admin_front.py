"""An admin's controls through `areasync serve --workers 2`, as real processes.

The front carries out `create_session`, `stop_session` and `fork_session` itself, wherever the
session is (`front/admin.py`): an admin connected through a session one worker holds stops
or forks a session the other worker holds, with what a single process answers (the fork's
id, tokens, `forked_from` and its stream up to the cut, item for item).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection

from tests.front.support import (
    ADMIN,
    REAL_PROCESSES,
    WAIT,
    Front,
    call,
    front,
    hello,
    reply,
)
from tests.scenarios import RunawayScenario

pytestmark = REAL_PROCESSES

TUTORIAL = "scenario_tutorial"
RUNAWAY = RunawayScenario.scenario_id
MARK = "RunawayApp__mark"
# The first scenario goes to the first worker, the second to the other (the least loaded).
TWO_WORKERS = ("--scenario", RUNAWAY, "--scenario", TUTORIAL)


async def request(ws: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(frame))
    answer, _ = await reply(ws, frame["id"])
    return answer


async def replayed(url: str, token: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An observer's welcome with `since` 0, and the items replayed up to its seq."""
    ws, welcome = await hello(url, "observer", token, since=0)
    assert welcome["type"] == "welcome", welcome
    items: list[dict[str, Any]] = []
    with anyio.fail_after(WAIT):
        while (items[-1]["seq"] if items else 0) < welcome["seq"]:
            frame = json.loads(await ws.recv())
            if "seq" in frame:
                items.append(frame)
    await ws.close()
    return welcome, items


async def on_other_workers(served: Front) -> None:
    assert await served.holder(RUNAWAY) != await served.holder(TUTORIAL)


async def test_an_admin_through_one_worker_stops_a_session_the_other_worker_holds(
    tmp_path: Path,
) -> None:
    async with front(*TWO_WORKERS, log=tmp_path / "log") as served:
        await on_other_workers(served)
        watcher, _ = await hello(
            served.url(TUTORIAL), "observer", served.token(TUTORIAL, "observer")
        )
        admin, welcome = await hello(served.url(RUNAWAY), "admin", ADMIN)
        assert welcome["type"] == "welcome" and welcome["session_id"] == RUNAWAY
        stopped = await request(admin, {"type": "stop_session", "id": 1, "session_id": TUTORIAL})
        assert stopped["type"] == "result", stopped
        assert stopped["value"]["session_id"] == TUTORIAL
        with anyio.fail_after(WAIT):
            while json.loads(await watcher.recv())["type"] != "ended":
                pass
        listed = {s["id"]: s for s in (await served.sessions())["sessions"]}
        assert listed[TUTORIAL]["state"] == stopped["value"]["state"]
        assert listed[RUNAWAY]["state"] != stopped["value"]["state"]  # its own session runs on
        again = await request(admin, {"type": "stop_session", "id": 2, "session_id": TUTORIAL})
        assert again["type"] == "error" and again["code"] == "session_ended"
        await admin.close()


async def test_stopping_an_unknown_session_through_the_front_is_session_not_found(
    tmp_path: Path,
) -> None:
    async with front(*TWO_WORKERS, log=tmp_path / "log") as served:
        admin, _ = await hello(served.url(RUNAWAY), "admin", ADMIN)
        refused = await request(admin, {"type": "stop_session", "id": 1, "session_id": "nope"})
        assert refused["type"] == "error" and refused["code"] == "session_not_found"
        assert "/api/sessions" in refused["message"]
        assert {s["id"] for s in (await served.sessions())["sessions"]} == {RUNAWAY, TUTORIAL}
        await admin.close()


async def test_an_admin_through_one_worker_forks_a_session_the_other_worker_holds(
    tmp_path: Path,
) -> None:
    async with front(*TWO_WORKERS, log=tmp_path / "log") as served:
        await on_other_workers(served)
        agent, _ = await hello(served.url(RUNAWAY), "agent", served.token(RUNAWAY, "agent"))
        await call(agent, 1, MARK, label="before the cut")
        _, items = await reply(agent, 1)
        cut = items[-1]["seq"]
        await call(agent, 2, MARK, label="after the cut")
        await reply(agent, 2)
        admin, _ = await hello(served.url(TUTORIAL), "admin", ADMIN)
        fork = {"type": "fork_session", "id": 1, "session_id": RUNAWAY, "at_seq": cut}
        created = (await request(admin, fork))["value"]
        assert created["session_id"] != RUNAWAY
        assert set(created["tokens"]) == {"agent", "user", "observer", "controller"}
        assert created["url"] == served.url(created["session_id"])
        forked, forks_items = await replayed(created["url"], created["tokens"]["observer"])
        source, sources_items = await replayed(
            served.url(RUNAWAY), served.token(RUNAWAY, "observer")
        )
        assert forked["forked_from"] == {"session_id": RUNAWAY, "seq": cut}
        assert forked["epoch"] != source["epoch"]
        assert forked["seq"] == cut  # its records up to the cut durable with its journal
        assert forks_items == [item for item in sources_items if item["seq"] <= cut]
        await agent.close()
        await admin.close()


async def test_an_admins_create_session_frame_is_placed_by_the_front(tmp_path: Path) -> None:
    async with front(*TWO_WORKERS, log=tmp_path / "log") as served:
        admin, _ = await hello(served.url(RUNAWAY), "admin", ADMIN)
        frame = {"type": "create_session", "id": 1, "scenario": TUTORIAL, "mode": "manual"}
        created = (await request(admin, frame))["value"]
        agent, welcome = await hello(created["url"], "agent", created["tokens"]["agent"])
        assert welcome["type"] == "welcome" and welcome["session_id"] == created["session_id"]
        listed = {s["id"]: s["worker"] for s in (await served.sessions())["sessions"]}
        assert listed[created["session_id"]] == created["worker"]
        await agent.close()
        await admin.close()
