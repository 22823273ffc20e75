"""areasync on a real two-node Ray cluster (`conftest.py`): sessions placed on both nodes, each
node's host running a confined session worker per CPU (a client's socket held by its
session's worker, not the host), a client dialing the router redirected (307) to its
session's node, the lookup route, a session worker killed: its sessions come back on its node,
and a node killed: its sessions come back on the other node from their journals in the shared
directory, identical, and their clients resume through the router with since/epoch.

The tests of this module share one cluster and one router, and run in order: the last kills
the worker node.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import msgspec
import pytest
import pytest_asyncio
from websockets.asyncio.client import connect as ws_connect

from areasync.client import connect, list_sessions
from areasync.protocol.frames import PROTOCOL, StreamItem
from areasync.service import ServiceConfig
from tests.cluster.conftest import CLUSTER_TEST_TIMEOUT_S, HOST_START_S
from tests.front.support import (
    call,
    hello,
    hello_past_restore,
    proc_bytes,
    reply,
    server_side_inode,
    socket_inodes,
)
from tests.service.adapters.gaia2cli.test_bare import free_port
from tests.service.dashboard.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.waiting import eventually

try:
    from playwright.async_api import Browser, Page, async_playwright, expect
except ImportError:  # pragma: no cover - the dev extras install it; its tests skip without it
    async_playwright = None

ray = pytest.importorskip("ray")

from areasync.cluster import Router  # noqa: E402

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(CLUSTER_TEST_TIMEOUT_S),
    pytest.mark.slow,  # a Ray cluster of real processes, and a node killed
]

ADMIN = "cluster-admin"
SCENARIO = "scenario_tutorial"
TOOL = "SystemApp__get_current_time"
CREATED: dict[str, dict[str, Any]] = {}  # create_session's answers, by session id


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def router(ray_cluster: Any, request: pytest.FixtureRequest) -> AsyncIterator[Router]:
    """The router and a host on each node, with two sessions created through it."""
    # Every node of this machine reaches it. Not under pytest's numbered temp directories: a
    # pytest run started meanwhile (a test's own subprocess) may prune those while the hosts,
    # other processes, still write their journals there.
    state = Path(tempfile.mkdtemp(prefix="areasync-cluster-state-"))
    request.addfinalizer(lambda: shutil.rmtree(state, ignore_errors=True))
    first = free_port()  # each session's own gaia2-cli port from here on each node's loopback
    config = ServiceConfig(
        port=0,
        admin_token=ADMIN,
        state_dir=state,
        trace_dir=None,
        mode="manual",
        gaia2_port=0,
        gaia2_ports=(first, min(first + 63, 65535)),
        mcp_port=0,
    )
    router = Router(config, check_interval=0.25)
    await asyncio.wait_for(router.start(), HOST_START_S)
    try:
        for _ in range(2):
            created = await router.create_session(scenario=SCENARIO, mode="manual")
            CREATED[created.session_id] = msgspec.to_builtins(created)
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


async def http_text(url: str) -> tuple[int, str]:
    def get() -> tuple[int, str]:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    return await asyncio.to_thread(get)


async def test_the_lookup_route_gives_the_sessions_gaia2_cli_url_on_its_node(
    router: Router,
) -> None:
    session_id, created = sorted(CREATED.items())[0]
    user = created["tokens"]["user"]
    status, body = await http_json(f"{router.http_url}/api/sessions/{session_id}/url?token={user}")
    link = router.hosts[node_of(router, session_id)]
    assert status == 200 and link.info.gaia2_base is not None
    assert body["gaia2_url"] == f"{link.info.gaia2_base}/gaia2/{user}"
    health, _ = await http_text(f"{body['gaia2_url']}/health")
    answered, status_text = await http_text(f"{body['gaia2_url']}/status")
    assert health == 200 and answered == 200 and session_id in status_text


async def test_every_host_serves_gaia2_cli_on_a_port_of_its_own(router: Router) -> None:
    bases = [link.info.gaia2_base for link in router.hosts.values()]
    assert None not in bases and len(set(bases)) == len(bases) == 2


async def test_the_cluster_banner_prints_a_created_sessions_gaia2_cli_url(router: Router) -> None:
    from areasync.cluster.cli import banner

    created = await router.create_session(scenario=SCENARIO, mode="manual")
    link = router.hosts[str(created.node)]
    expected = f"{link.info.gaia2_base}/gaia2/{created.tokens['user']}"
    assert created.gaia2_url == expected
    assert f"gaia2-cli   {expected}" in banner(router, [created])


def own_links(entry: dict[str, Any], router: Router) -> tuple[str | None, str | None]:
    """The hosts of `entry`'s MCP URL and own gaia2-cli port, once its node's host is checked
    to be shown beside them and its MCP URL to be its node's."""
    session_id = entry.get("session_id", entry.get("id"))
    node_host = urlsplit(router.hosts[entry["node"]].info.http_url).hostname
    mcp, bare = urlsplit(entry["mcp_url"]), urlsplit(entry["gaia2_cli_url"])
    assert entry["node_host"] == node_host and mcp.path == f"/mcp/{session_id}"
    return mcp.hostname, bare.hostname


async def test_create_sessions_result_shows_its_mcp_url_and_own_gaia2_cli_port_with_its_nodes_host(
    router: Router,
) -> None:
    created = msgspec.to_builtins(await router.create_session(scenario=SCENARIO, mode="manual"))
    mcp_host, bare_host = own_links(created, router)
    assert (mcp_host, bare_host) == (created["node_host"], "127.0.0.1")
    status, text = await http_text(f"{created['gaia2_cli_url']}/status")  # its own port answers
    assert status == 200 and created["session_id"] in text


async def test_the_routers_session_list_shows_every_sessions_mcp_url_and_gaia2_cli_port(
    router: Router,
) -> None:
    status, body = await http_json(f"{router.http_url}/api/sessions?token={ADMIN}")
    assert status == 200
    listed = {entry["id"]: entry for entry in body["sessions"]}
    assert set(CREATED) <= set(listed)
    for entry in listed.values():
        own_links(entry, router)
    mcp_status, _ = await http_text(listed[sorted(CREATED)[0]]["mcp_url"])
    assert mcp_status == 401  # the node's MCP endpoint, asking for the agent's token


async def test_the_lookup_route_answers_an_unknown_token_401(router: Router) -> None:
    session_id = sorted(router.where)[0]
    status, body = await http_json(f"{router.http_url}/api/sessions/{session_id}/url?token=x")
    assert status == 401 and body["error"]["code"] == "unauthorized"


async def test_a_lookup_of_a_known_id_asks_no_host(router: Router) -> None:
    before = router.map_refreshes
    link = await router.locate(sorted(CREATED)[0])
    assert link is not None and router.map_refreshes == before


async def test_a_second_lookup_of_an_unknown_id_asks_no_host(router: Router) -> None:
    before = router.map_refreshes
    assert await router.locate("no-such-session") is None
    assert await router.locate("no-such-session") is None
    assert router.map_refreshes == before + 1


async def test_concurrent_lookups_of_unknown_ids_ask_the_hosts_once(router: Router) -> None:
    before = router.map_refreshes
    found = await asyncio.gather(*(router.locate(f"made-up-{n}") for n in range(20)))
    assert found == [None] * 20 and router.map_refreshes == before + 1


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


LISTED_KEYS = [
    *("id", "scenario_id", "url", "epoch", "state", "ended", "oracle", "import_mode", "judge"),
    *("waiting_for_agent", "next_due", "agents_busy", "end_reason", "restartable", "clock"),
    *("seq", "events", "connections", "validation", "trace", "trace_error", "created_at"),
    *("ended_at", "restored", "durable", "journal_error", "bounds", "gaia2_cli_url", "mcp_url"),
    *("worker", "node", "node_host"),
]
CREATED_KEYS = [
    *("session_id", "scenario_id", "import_mode", "judge", "url", "epoch", "mode", "tokens"),
    *("mcp_url", "gaia2_cli_url", "worker", "node", "node_host", "gaia2_url"),
]
NODE_KEYS = ["node_id", "url", "answered", "live", "rss"]


async def http_bytes(url: str, body: bytes | None = None) -> bytes:
    """The body of GET `url` (POST of `body`) with the admin token."""

    def get() -> bytes:
        headers = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
        request = urllib.request.Request(url, data=body, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            answer: bytes = response.read()
            return answer

    return await asyncio.to_thread(get)


def in_order(answer: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """`answer`'s values under `keys`, in that order (a key it lacks fails)."""
    assert list(answer) == keys
    return {key: answer[key] for key in keys}


async def test_the_routers_listing_create_answer_and_health_are_these_bytes(
    router: Router,
) -> None:
    # The exact bytes, as tests/front/test_front_answers_wire.py pins a front's: every key and
    # its place pinned, the values measured (times, tokens, loads) read from the answer.
    created_bytes = await http_bytes(f"{router.http_url}/api/sessions", create_body())
    created = json.loads(created_bytes)
    assert created_bytes == msgspec.json.encode(in_order(created, CREATED_KEYS))
    listing_bytes = await http_bytes(f"{router.http_url}/api/sessions")
    listing = json.loads(listing_bytes)
    expected = {
        "protocol": PROTOCOL,
        "access": {"role": "admin", "session_id": None},
        "sessions": [in_order(entry, LISTED_KEYS) for entry in listing["sessions"]],
        "nodes": [in_order(node, NODE_KEYS) for node in listing["nodes"]],
        "restoring": [],
        "refused_journals": {},
    }
    assert listing_bytes == msgspec.json.encode(expected)
    health = {"status": "ok", "protocol": PROTOCOL, "nodes": 2, "lost_nodes": 0, "restoring": 0}
    assert await http_bytes(f"{router.http_url}/health") == msgspec.json.encode(health)


async def test_list_sessions_reads_the_routers_sessions_with_their_node(router: Router) -> None:
    listed = await list_sessions(router.http_url, token=ADMIN)
    assert {(s.id, s.node) for s in listed} == set(router.where.items())
    for session in listed:
        assert session.node_host == urlsplit(router.hosts[str(session.node)].info.http_url).hostname


async def http_post(
    url: str, body: bytes, headers: dict[str, str] | None = None, method: str = "POST"
) -> tuple[int, Any]:
    """POST `body` to `url`: (status, the JSON answer)."""

    def post() -> tuple[int, Any]:
        request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    return await asyncio.to_thread(post)


def create_body(**fields: Any) -> bytes:
    return json.dumps({"scenario": SCENARIO, "mode": "manual", **fields}).encode()


async def every_hosts_sessions(router: Router) -> set[str]:
    """Every session id every host holds, asked of the hosts themselves."""
    answers = await asyncio.gather(
        *(router.call(link.actor.session_ids.remote()) for link in router.hosts.values())
    )
    return {sid for ids in answers for sid in ids}


async def test_a_session_posted_to_the_router_answers_201_with_its_url_node_and_tokens(
    router: Router,
) -> None:
    status, body = await http_post(
        f"{router.http_url}/api/sessions",
        create_body(),
        {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"},
    )
    assert status == 201
    session_id = body["session_id"]
    assert body["url"] == router.ws_url(session_id)
    assert body["node"] == router.where[session_id]
    async with connect(body["url"], role="agent", token=body["tokens"]["agent"]) as agent:
        assert agent.welcome.session_id == session_id


async def test_a_session_posted_to_the_router_goes_to_a_least_loaded_node(router: Router) -> None:
    await router.check()  # every host's live count, as the hosts report it
    counts = {node: link.load.live for node, link in router.hosts.items()}
    status, body = await http_post(
        f"{router.http_url}/api/sessions?token={ADMIN}", create_body(mode="fast")
    )
    assert status == 201
    assert counts[body["node"]] == min(counts.values())


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", "bad_frame"),
        (b'["scenario_tutorial"]', "bad_frame"),
        (create_body(colour="red"), "invalid_field"),
        (create_body(id=3), "invalid_field"),
        (create_body(mode="sideways"), "invalid_field"),
        (create_body(speed=-1), "invalid_field"),
        (json.dumps({"mode": "fast"}).encode(), "invalid_field"),
        (create_body(scenario="no_such_scenario"), "invalid_field"),
    ],
    ids=["not-json", "not-object", "unknown-field", "id", "mode", "speed", "no-source", "unknown"],
)
async def test_a_bad_create_body_is_answered_400_and_creates_nothing(
    router: Router, body: bytes, code: str
) -> None:
    before = await every_hosts_sessions(router)
    status, answer = await http_post(f"{router.http_url}/api/sessions?token={ADMIN}", body)
    assert (status, answer["error"]["code"]) == (400, code)
    assert await every_hosts_sessions(router) == before


@pytest.mark.parametrize("token", [None, "wrong", "agent"])
async def test_creating_through_the_router_needs_the_admin_token(
    router: Router, token: str | None
) -> None:
    if token == "agent":
        token = next(iter(CREATED.values()))["tokens"]["agent"]
    before = await every_hosts_sessions(router)
    query = "" if token is None else f"?token={token}"
    status, answer = await http_post(f"{router.http_url}/api/sessions{query}", create_body())
    assert (status, answer["error"]["code"]) == (401, "unauthorized")
    assert await every_hosts_sessions(router) == before


async def test_a_create_body_over_the_limit_is_answered_413(router: Router) -> None:
    big = router.config.max_frame_bytes + 1
    status, answer = await http_post(
        f"{router.http_url}/api/sessions?token={ADMIN}",
        create_body(scenario_json="x" * big, scenario=None),
    )
    assert (status, answer["error"]["code"]) == (413, "too_large")


async def test_a_create_with_no_node_up_is_answered_503_and_retryable(tmp_path: Any) -> None:
    config = ServiceConfig(port=0, admin_token=ADMIN, state_dir=tmp_path, trace_dir=None)
    idle = Router(config)  # never started: no host on any node
    response = await idle.routes.create(create_body(), ADMIN)
    assert response.status_code == 503
    assert response.headers["Retry-After"]
    assert json.loads(response.body)["error"]["code"] == "capacity"


@pytest.mark.parametrize(("method", "path"), [("PUT", "/api/sessions"), ("POST", "/health")])
async def test_the_router_answers_other_methods_405(router: Router, method: str, path: str) -> None:
    status, answer = await http_post(f"{router.http_url}{path}?token={ADMIN}", b"{}", None, method)
    assert (status, answer["error"]["code"]) == (405, "method_not_allowed")


async def test_the_router_passes_the_admins_scenario_list_on_from_a_host(router: Router) -> None:
    status, body = await http_json(f"{router.http_url}/api/scenarios?token={ADMIN}")
    assert status == 200 and SCENARIO in body["scenarios"]


async def test_the_router_passes_a_sessions_source_on_from_its_node(router: Router) -> None:
    session_id = sorted(CREATED)[0]
    status, body = await http_json(
        f"{router.http_url}/api/sessions/{session_id}/source?token={ADMIN}"
    )
    assert (status, body["scenario"], body["mode"]) == (200, SCENARIO, "manual")


async def test_the_router_passes_a_sessions_agent_token_on_from_its_node(router: Router) -> None:
    session_id = sorted(CREATED)[0]
    url = f"{router.http_url}/api/sessions/{session_id}/agent?token={ADMIN}"
    status, body = await http_json(url)
    assert status == 200 and body["session_id"] == session_id and body["token"]
    assert body["url"].endswith(f"/sessions/{session_id}")  # its node's, which a browser dials


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    """Headless chromium for the router's dashboard (skipped without it or playwright)."""
    if async_playwright is None or not CHROMIUM.exists():
        pytest.skip("the dashboard's browser tests need playwright and /usr/bin/chromium")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        yield launched
        await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A fresh page; the test fails on an uncaught script error in it."""
    context = await browser.new_context()
    opened = await context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    await context.close()
    assert errors == []


@pytest.mark.browser
async def test_new_session_on_the_routers_dashboard_creates_it_through_the_router(
    router: Router, page: Page
) -> None:
    opened = sorted(CREATED)[0]
    await page.goto(f"{router.http_url}/?session={opened}#token={ADMIN}")
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    await page.get_by_role("button", name="New session…").first.click()
    await expect(page.locator(f'#new-scenario option[value="{SCENARIO}"]')).to_have_count(1)
    await page.locator("#new-mode").select_option("manual")
    await page.get_by_role("button", name="Create", exact=True).click()
    await expect(page.locator("#crumb")).not_to_have_text(opened)
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    assert str(await page.locator("#crumb").text_content()) in router.where


@pytest.mark.browser
async def test_fork_on_the_routers_dashboard_forks_on_the_sessions_node(
    router: Router, page: Page
) -> None:
    source = sorted(CREATED)[1]
    await page.goto(f"{router.http_url}/?session={source}#token={ADMIN}")
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    await page.locator("#btn-fork").click()
    await expect(page.locator("#crumb")).not_to_have_text(source)
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    fork = str(await page.locator("#crumb").text_content())
    link = await router.locate(fork)
    assert link is not None and link.node_id == router.where[source]


@pytest.mark.browser
async def test_the_routers_dashboard_draws_no_server_metrics_it_has_none_of(
    router: Router, page: Page
) -> None:
    opened = sorted(CREATED)[0]
    await page.goto(f"{router.http_url}/?session={opened}#token={ADMIN}")
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    await expect(page.locator("#btn-new")).to_be_visible()  # the list came: the admin's page
    await expect(page.locator("#server-metrics")).to_be_hidden()
    assert await page.evaluate("window.__areasync.overview") is None


@pytest.mark.browser
async def test_a_session_token_opens_its_session_on_the_routers_dashboard(
    router: Router, page: Page
) -> None:
    session_id, created = sorted(CREATED.items())[0]
    observer = created["tokens"]["observer"]
    await page.goto(f"{router.http_url}/?session={session_id}#token={observer}")
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    await expect(page.locator("#role")).to_have_attribute("data-role", "observer")


async def worker_pids(router: Router, session_id: str) -> dict[str, int | None]:
    """Each session's worker pid on `session_id`'s node."""
    link = router.hosts[node_of(router, session_id)]
    pids: dict[str, int | None] = await router.call(link.actor.worker_pids.remote())
    return pids


async def test_every_node_runs_a_session_worker_per_cpu_of_the_node(router: Router) -> None:
    # Both nodes are this machine, whose CPUs a Ray worker process may use as this one may.
    cpus = len(os.sched_getaffinity(0))
    assert [link.info.workers for link in router.hosts.values()] == [cpus, cpus]
    assert {link.load.workers for link in router.hosts.values()} == {cpus}


async def test_a_clients_socket_is_held_by_its_sessions_worker_not_by_the_host(
    router: Router,
) -> None:
    session_id = sorted(CREATED)[0]
    link = router.hosts[node_of(router, session_id)]
    host = await router.call(link.actor.process_id.remote())
    hello = {"type": "hello", "id": 0, "role": "observer", "token": ADMIN}
    async with ws_connect(router.ws_url(session_id)) as ws:  # the 307 followed
        await ws.send(json.dumps(hello))
        assert json.loads(await ws.recv())["type"] == "welcome"
        node_port = urlsplit(link.info.ws_base).port
        assert node_port is not None
        inode = server_side_inode(node_port, ws.local_address[1])
        worker = (await worker_pids(router, session_id))[session_id]
        assert worker is not None and worker != host
        assert inode in socket_inodes(worker) and inode not in socket_inodes(host)


async def test_a_nodes_workers_are_confined_and_hold_no_admin_token(router: Router) -> None:
    pids = {pid for sid in CREATED for pid in (await worker_pids(router, sid)).values()}
    assert pids and None not in pids
    for pid in pids:
        assert b"\nNoNewPrivs:\t1\n" in proc_bytes(pid, "status")
        assert ADMIN.encode() not in proc_bytes(pid, "environ") + proc_bytes(pid, "cmdline")


async def test_a_killed_workers_sessions_come_back_on_its_node_and_their_clients_resume(
    router: Router,
) -> None:
    session_id = sorted(CREATED)[1]
    node = node_of(router, session_id)
    url = router.ws_url(session_id)  # each hello below follows the router's 307
    ws, welcome = await hello(url, "agent", ADMIN)
    await call(ws, 1, TOOL)
    _, items = await reply(ws, 1)
    seq = items[-1]["seq"]
    killed = (await worker_pids(router, session_id))[session_id]
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    with anyio.fail_after(HOST_START_S):
        await ws.wait_closed()
    again, rewelcome = await hello_past_restore(
        url, "agent", ADMIN, since=seq, epoch=welcome["epoch"]
    )
    assert rewelcome.get("restored") is True, rewelcome
    assert (rewelcome["epoch"], rewelcome["seq"]) == (welcome["epoch"], seq)
    await call(again, 2, TOOL)
    result, after = await reply(again, 2)
    await again.close()
    assert result["type"] == "result" and after[0]["seq"] == seq + 1
    restored = (await worker_pids(router, session_id))[session_id]
    assert restored not in (None, killed)
    assert router.where[session_id] == node  # the node's own front restored it


async def test_a_host_running_session_workers_takes_no_bench_pool(router: Router) -> None:
    link = next(iter(router.hosts.values()))
    with pytest.raises(ray.exceptions.RayTaskError, match="this host runs session workers"):
        await router.call(link.actor.bench_start.remote(1, None, None, False))


async def test_serve_ray_runs_the_workers_per_node_it_is_given_and_stops_on_sigterm(
    ray_cluster: Any, tmp_path: Path
) -> None:
    cluster, _ = ray_cluster
    command = [sys.executable, "-m", "areasync.cli", "serve", "--ray", cluster.address]
    command += ["--workers", "1", "--state-dir", str(tmp_path / "state"), "--port", "0"]
    command += ["--mode", "manual", "--scenario", SCENARIO]
    log = tmp_path / "stderr"
    with log.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=stderr
        )
    assert process.stdout is not None
    banner: list[str] = []
    try:
        async with asyncio.timeout(HOST_START_S):
            while not banner or not banner[-1].startswith("Ctrl-C stops every host"):
                line = await process.stdout.readline()
                assert line, f"serve --ray ended: {log.read_text()[-2000:]}"
                banner.append(line.decode().rstrip())
        nodes = [line for line in banner if line.startswith("  node ")]
        assert len(nodes) == 2 and all(line.endswith("(1 session worker(s))") for line in nodes)
        assert any(line.startswith(f"session {SCENARIO} on node ") for line in banner)
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(HOST_START_S):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


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
        await until(lambda: router.where.get(session_id) == head, seconds=HOST_START_S)
        await agent.call_tool(TOOL)  # reconnected through the router, resumed with since
        assert agent.epoch == epoch
        seen = list(agent.history)
    async with connect(url, role="observer", token=ADMIN, since=0) as observer:
        await until(lambda: observer.seq >= seen[-1].seq, seconds=HOST_START_S)
        whole = list(observer.history)
    assert seen[: len(before)] == before
    assert whole == seen


async def until(condition: Callable[[], bool], *, seconds: float) -> None:
    """Return once `condition()` holds; fail after `seconds` (polled every 50 ms)."""
    await eventually(condition, within=seconds, poll=0.05)
