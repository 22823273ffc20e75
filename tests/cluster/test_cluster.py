"""areasync on a real two-node Ray cluster (`conftest.py`): sessions placed on both nodes, a
client dialing the router redirected (307) to its session's node, the lookup route, and a
node killed: its sessions come back on the other node from their journals in the shared
directory, identical, and their clients resume through the router with since/epoch.

The tests of this module share one cluster and one router, and run in order: the last kills
the worker node.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio

from areasync.client import connect
from areasync.protocol.frames import StreamItem
from areasync.service import ServiceConfig

ray = pytest.importorskip("ray")

from areasync.cluster import Router  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADMIN = "cluster-admin"
SCENARIO = "scenario_tutorial"
TOOL = "SystemApp__get_current_time"
CREATED: dict[str, dict[str, Any]] = {}  # create_session's answers, by session id


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def router(
    ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Router]:
    """The router and a host on each node, with two sessions created through it."""
    state = tmp_path_factory.mktemp("shared-state")  # every node of this machine reaches it
    config = ServiceConfig(
        port=0, admin_token=ADMIN, state_dir=state, trace_dir=None, mode="manual"
    )
    router = Router(config, check_interval=0.25)
    await asyncio.wait_for(router.start(), 90)
    try:
        for _ in range(2):
            created = await router.create_session(scenario=SCENARIO, mode="manual")
            CREATED[created["session_id"]] = created
        yield router
    finally:
        await asyncio.wait_for(router.stop(), 30)


def node_of(router: Router, session_id: str) -> str:
    return router.where[session_id]


def sessions_on(router: Router, node_id: str) -> list[str]:
    return sorted(sid for sid, node in router.where.items() if node == node_id)


async def http_json(url: str) -> tuple[int, Any]:
    def get() -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    return await asyncio.to_thread(get)


async def test_sessions_are_placed_on_both_nodes(router: Router, ray_cluster: Any) -> None:
    cluster, worker = ray_cluster
    nodes = set(router.where.values())
    assert nodes == {cluster.head_node.node_id, worker.node_id}


async def test_a_host_runs_asyncios_own_event_loop(router: Router) -> None:
    assert {link.info.loop for link in router.hosts.values()} == {
        "asyncio.unix_events._UnixSelectorEventLoop"
    }


async def test_a_client_dialing_the_router_is_redirected_to_its_node_and_calls_a_tool(
    router: Router,
) -> None:
    for session_id in list(router.where):
        async with connect(router.ws_url(session_id), role="agent", token=ADMIN) as agent:
            assert agent.welcome.session_id == session_id
            assert await agent.call_tool(TOOL) is not None


async def test_a_sessions_own_token_works_through_the_router_and_its_url_is_the_routers(
    router: Router,
) -> None:
    session_id, created = sorted(CREATED.items())[0]
    assert created["url"] == router.ws_url(session_id)
    async with connect(created["url"], role="agent", token=created["tokens"]["agent"]) as agent:
        assert agent.welcome.session_id == session_id
    status, body = await http_json(
        f"{router.http_url}/api/sessions/{session_id}/url?token={created['tokens']['observer']}"
    )
    assert status == 200 and body["session_id"] == session_id


async def test_the_lookup_route_gives_a_sessions_node_url(router: Router) -> None:
    session_id = sorted(router.where)[0]
    link = router.hosts[node_of(router, session_id)]
    status, body = await http_json(f"{router.http_url}/api/sessions/{session_id}/url?token={ADMIN}")
    assert status == 200
    assert body["url"] == f"{link.info.ws_base}/sessions/{session_id}"
    assert body["node"] == link.node_id


async def test_the_lookup_route_answers_an_unknown_token_401(router: Router) -> None:
    session_id = sorted(router.where)[0]
    status, body = await http_json(f"{router.http_url}/api/sessions/{session_id}/url?token=x")
    assert status == 401 and body["error"]["code"] == "unauthorized"


async def test_the_routers_session_list_has_every_nodes_sessions(router: Router) -> None:
    status, body = await http_json(f"{router.http_url}/api/sessions?token={ADMIN}")
    assert status == 200
    assert {(s["id"], s["node"]) for s in body["sessions"]} == set(router.where.items())


async def test_the_routers_dashboard_may_connect_to_every_node(router: Router) -> None:
    def get() -> tuple[int, str, bytes]:
        with urllib.request.urlopen(f"{router.http_url}/", timeout=10) as response:
            return response.status, response.headers["Content-Security-Policy"], response.read()

    status, csp, page = await asyncio.to_thread(get)
    assert status == 200 and b"<html" in page.lower()
    connect = next(d for d in csp.split(";") if d.strip().startswith("connect-src")).split()
    for link in router.hosts.values():
        assert link.info.ws_base in connect


async def test_the_routers_session_list_gives_each_session_its_nodes_url(router: Router) -> None:
    status, body = await http_json(f"{router.http_url}/api/sessions?token={ADMIN}")
    assert status == 200
    for session in body["sessions"]:
        link = router.hosts[session["node"]]
        assert session["url"] == f"{link.info.ws_base}/sessions/{session['id']}"


async def test_a_lost_nodes_sessions_come_back_identical_and_their_clients_resume(
    router: Router, ray_cluster: Any
) -> None:
    cluster, worker = ray_cluster
    head = cluster.head_node.node_id
    lost = sessions_on(router, worker.node_id)
    assert lost
    session_id = lost[0]
    url = router.ws_url(session_id)
    async with connect(url, role="agent", token=ADMIN, since=0, backoff_max=0.5) as agent:
        await agent.call_tool(TOOL)
        before: list[StreamItem] = list(agent.history)
        epoch = agent.epoch
        cluster.remove_node(worker, allow_graceful=False)  # SIGKILL of the node's processes
        await until(lambda: router.where.get(session_id) == head, seconds=30)
        await agent.call_tool(TOOL)  # reconnected through the router, resumed with since
        assert agent.epoch == epoch
        seen = list(agent.history)
    async with connect(url, role="observer", token=ADMIN, since=0) as observer:
        await until(lambda: observer.seq >= seen[-1].seq, seconds=10)
        whole = list(observer.history)
    assert seen[: len(before)] == before
    assert whole == seen


async def until(condition: Callable[[], bool], *, seconds: float) -> None:
    """Return once `condition()` holds; fail after `seconds` (polled every 50 ms)."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    pytest.fail(f"not within {seconds} s: {condition}")
