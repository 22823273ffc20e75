"""OpenEnv with `--state-dir`: an observation reporting an action leaves the server only once
the action's journal record is durable, over OpenEnv's WebSocket and its HTTP routes alike;
what it reports is what was so when the action was done, however long the sync took.

The journal's sync is held on a threading event (`support.replace_sync`): while it is held
the record is not durable, and the step's answer must not come. The order of things is forced
by the events; that no answer came while the sync was held is read once the service has settled
(`tests.waiting.settled`: every task of the loop, the service's and the client's, waits on
something), so a server that answers without waiting has answered by then, however slow the
machine.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from areasync.journal import JournalStore
from areasync.protocol.frames import NotificationItem, Role, StreamItem
from areasync.service import Service
from areasync.service.durability.restore import inputs_of
from areasync.simulation import input_records as kinds
from tests.service.adapters.openenv.client import GenericEnvClient
from tests.service.support import TUTORIAL, WAIT, replace_sync, serving, tokens
from tests.waiting import settled

SEND = {"app_name": "AgentUserInterface", "tool_name": "send_message_to_user"}
ACTION = {
    "action_type": "call_tool",
    **SEND,
    "tool_args": {"content": "kept"},
    "advance_time": False,
}


class HeldSync:
    """Syncs pass until `arm()`; the next one then waits for `release()`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed, self.syncing, self.released = (threading.Event() for _ in range(3))
        replace_sync(monkeypatch, self._before)

    def _before(self, fd: int) -> None:
        if self.armed.is_set():
            self.syncing.set()
            self.released.wait(WAIT)

    def arm(self) -> None:
        self.armed.set()

    def release(self) -> None:
        self.released.set()


class SyncTurns:
    """Syncs pass until `arm()`; each one then waits for a turn the test gives (`allow`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed = threading.Event()
        self.entered = threading.Semaphore(0)
        self.turns = threading.Semaphore(0)
        replace_sync(monkeypatch, self._before)

    def _before(self, fd: int) -> None:
        if self.armed.is_set():
            self.entered.release()
            self.turns.acquire(timeout=WAIT)

    def arm(self) -> None:
        self.armed.set()

    async def syncing(self) -> None:
        """Return once the next held sync has begun."""
        assert await anyio.to_thread.run_sync(lambda: self.entered.acquire(timeout=WAIT))

    def allow(self) -> None:
        self.turns.release()

    def disarm(self) -> None:
        self.armed.clear()
        self.turns.release(100)  # every sync still waiting


def calls_in_journal(state_dir: Path) -> int:
    records = inputs_of(JournalStore(state_dir).read(TUTORIAL))
    return sum(1 for r in records if isinstance(r, kinds.CallTool))


async def answered_after_the_sync(held: HeldSync, step: Callable[[], Awaitable[Any]]) -> list[str]:
    """Run `step` with the next sync held: what happened, in order ("released", "answered")."""
    order: list[str] = []

    async def run() -> None:
        await step()
        order.append("answered")

    held.arm()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.to_thread.run_sync(held.syncing.wait, WAIT)  # the step's record is syncing
        await settled()  # an answer not waiting on the sync has come by now
        order.append("released")
        held.release()
    return order


def agent_url(service: Service) -> str:
    return service.openenv_url(tokens(service, TUTORIAL)[Role.AGENT])


async def test_a_websocket_steps_observation_waits_for_its_record_to_be_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldSync(monkeypatch)
    async with (
        serving(state_dir=tmp_path) as service,
        GenericEnvClient(base_url=agent_url(service)) as env,
    ):
        with anyio.fail_after(WAIT):
            await env.reset()
            order = await answered_after_the_sync(held, lambda: env.step(ACTION))
    assert order == ["released", "answered"]
    assert calls_in_journal(tmp_path) == 1


async def test_an_http_steps_observation_waits_for_its_record_to_be_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldSync(monkeypatch)
    async with (
        serving(state_dir=tmp_path) as service,
        httpx.AsyncClient(timeout=WAIT, trust_env=False) as http,  # in this loop: `settled`
    ):
        base = agent_url(service)

        async def post(route: str, body: dict[str, Any]) -> Any:
            response = await http.post(f"{base}{route}", json=body)
            assert response.status_code == 200, response.text
            return response.json()

        with anyio.fail_after(WAIT):
            await post("/reset", {})
            order = await answered_after_the_sync(held, lambda: post("/step", {"action": ACTION}))
    assert order == ["released", "answered"]
    assert calls_in_journal(tmp_path) == 1


async def test_a_fast_steps_observation_tells_what_its_action_left_not_where_time_ran_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs = SyncTurns(monkeypatch)
    async with (
        serving(state_dir=tmp_path, mode="fast") as service,
        GenericEnvClient(base_url=agent_url(service)) as env,
    ):
        session = service.registry.get(TUTORIAL)
        assert session is not None
        notified = anyio.Event()

        def on_item(seq: int, item: StreamItem) -> None:
            if isinstance(item, NotificationItem):
                notified.set()

        session.sim.log.listeners.append(on_item)
        step = {"action_type": "call_tool", **SEND, "tool_args": {"content": "a"}}
        observations: list[Any] = []
        with anyio.fail_after(WAIT):
            start = await env.reset()
            syncs.arm()
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: _append(observations, env.step(step)))
                await syncs.syncing()  # the tool call's record
                syncs.allow()
                await syncs.syncing()  # the record of the turn it gave up: time runs...
                await notified.wait()  # ...to the user's message at 6 s, while it syncs
                syncs.disarm()
            later = await env.step({"action_type": "list_apps"})
    (advanced,) = observations
    assert advanced.observation["metadata"]["time_advanced"] is True
    assert advanced.observation["current_time"] == start.observation["current_time"]
    assert advanced.observation["notifications"] == []
    assert later.observation["current_time"] == 6.0
    assert [n["timestamp"] for n in later.observation["notifications"]] == [6.0]


async def _append(into: list[Any], answer: Awaitable[Any]) -> None:
    into.append(await answer)
