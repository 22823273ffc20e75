"""OpenEnv's HTTP routes keep no episode for ever: a token's HTTP episode that gets no request
for `openenv_idle_timeout` seconds leaves its session (which runs on), as an idle `/ws` is
reaped; its next step says so, and a reset starts a new episode.
"""

from __future__ import annotations

from typing import Any

import anyio

from areasync.protocol.frames import Role
from areasync.service import Service
from tests.service.support import TUTORIAL, WAIT, serving, tokens
from tests.waiting import eventually

LIST_APPS = {"action": {"action_type": "list_apps"}}


async def post(service: Service, route: str, body: dict[str, Any]) -> tuple[int, Any]:
    import requests

    base = service.openenv_url(tokens(service, TUTORIAL)[Role.AGENT])

    def send() -> tuple[int, Any]:
        response = requests.post(f"{base}{route}", json=body, timeout=WAIT)
        return response.status_code, response.json()

    return await anyio.to_thread.run_sync(send)


def agents_attached(service: Service) -> int:
    session = service.registry.get(TUTORIAL)
    assert session is not None
    return session.connection_counts()[Role.AGENT.value]


async def until_no_agent(service: Service) -> None:
    await eventually(lambda: not agents_attached(service), within=WAIT)  # the reaper's


async def test_an_idle_http_episode_leaves_its_session_which_runs_on() -> None:
    async with serving(openenv_idle_timeout=0.2) as service:
        status, _ = await post(service, "/reset", {})
        assert status == 200 and agents_attached(service) == 1
        await until_no_agent(service)
        session = service.registry.get(TUTORIAL)
        assert session is not None and not session.ended


async def test_a_reaped_http_episodes_next_step_says_so_and_a_reset_starts_anew() -> None:
    async with serving(openenv_idle_timeout=0.2) as service:
        await post(service, "/reset", {})
        await until_no_agent(service)
        refused, said = await post(service, "/step", LIST_APPS)
        again, _ = await post(service, "/reset", {})
        stepped, observed = await post(service, "/step", LIST_APPS)
    assert refused == 410 and "reaped" in said["detail"]["message"]
    assert "POST <base>/reset" in said["detail"]["message"]
    assert (again, stepped) == (200, 200) and observed["observation"]["action_success"]


async def test_an_http_episode_used_within_the_timeout_is_kept() -> None:
    async with serving(openenv_idle_timeout=60) as service:
        await post(service, "/reset", {})
        reaped = await service.http.openenv.held.reap_idle()
        status, _ = await post(service, "/step", LIST_APPS)
    assert reaped == 0 and status == 200
