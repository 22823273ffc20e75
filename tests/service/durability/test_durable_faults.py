"""Durable sessions under faults: a real `areasync serve --state-dir --seed` SIGKILLed at random
points of an oracle agent's run, and during a reconnect storm, and started again each time on
the same port and directory. Every client reconnects by itself and ends with exactly the
server's stream, and the run's events equal an uninterrupted run's, ids included.

The scenario is a Gaia2-shaped JSON file of two turns (`bench/synthetic.synthetic_scenario_json`:
30 oracle actions among ENV events, about 250 stream items), so kills land in tool calls, in
jumps, between them and in a turn's change. The oracle agent plays it with a controller (pace
jump), both through `Resilient`: a call or jump whose connection broke before its reply is
resolved from the stream once the client has reconnected (see `durable_support`).

Kill points are drawn from a seeded generator and printed in every assertion's message:
`FAULT_SEED=S` replays a failure. A kill comes once a watching observer has received a chosen
number of items (up to the oracle's last tool call), after a chosen delay of up to 30 ms, so it
lands anywhere the run is then: in a sync, between a record and its reply, in a client's
reconnect. The agent's closing `idle`, which lets the session end, waits for the last kill; a
kill after the end is the last test's.

What every client must end with:

- raw observers (`RawObserver`, recording every frame as it arrives): seqs exactly 1..N, no
  gap, no duplicate, each item byte-equal to the server's whole stream fetched afresh after the
  end;
- areasync Clients (the agent, its controller, observers): their history the same, from the
  seq they attached at; never a reset (same epoch throughout);
- the whole stream equal, frame for frame, to that of an uninterrupted run of the same
  scenario with the same `--seed` (run once per module).

Two bugs these tests found have a test of their own at the end: a client resuming while a
journal record awaited its sync froze the whole server, and a kill once a session's end was
durable lost the end for clients that had not received it.

`make test` runs the short form (3 kills in one run; 2 kills during a storm of 24 observers).
`make soak` runs the long form: FAULT_RUNS runs (default 10) of FAULT_KILLS kills (default 5)
each, and as many storms, with successive seeds.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from areasync.agents.oracle.agent import OraclePlan, oracle_plan, run_oracle_agent
from areasync.client import Client, connect
from areasync.journal import JournalStore
from areasync.protocol import EventItem, StreamItem, decode_server_frame
from bench.synthetic import synthetic_scenario_json
from tests.bounds import PROCESS_S
from tests.hardening.storm import _cut
from tests.service.durability.held_sync_serve import ARM, HELD, RELEASE
from tests.service.durable_support import (
    TALLY,
    TOKEN,
    RawObserver,
    Resilient,
    Restartable,
    agent_token,
    frames,
    read_until,
    session_url,
    whole_stream,
)
from tests.waiting import eventually, settled

SESSION = "fault_run"  # the scenario file's stem
SERVER_SEED = 7  # --seed: every server of this module makes the same ids
SEED = int(os.environ.get("FAULT_SEED", "20261124"))
RUNS = int(os.environ.get("FAULT_RUNS", "10"))  # long form
KILLS = int(os.environ.get("FAULT_KILLS", "5"))  # long form, per run
RECONNECT = {"backoff_initial": 0.02, "backoff_max": 0.2, "max_reconnect_attempts": None}


@dataclass
class Reference:
    """The scenario file, the oracle's plan and an uninterrupted run's whole stream."""

    path: Path
    plan: OraclePlan
    stream: list[StreamItem] = field(default_factory=list)


_REFERENCE: list[Reference] = []


async def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """Computed once per module: the first test pays for it."""
    if not _REFERENCE:
        directory = tmp_path_factory.mktemp("fault-reference")
        path = directory / f"{SESSION}.json"
        path.write_text(synthetic_scenario_json(60, turns=2))
        ref = Reference(path, await oracle_plan(str(path)))
        async with contextlib.AsyncExitStack() as stack:
            server = Restartable(serve_command(directory / "state", path), directory / "log", stack)
            banner = await server.start()
            url = session_url(banner, SESSION)
            await play(url, agent_token(banner), ref.plan)
            ref.stream = await whole_stream(url)
        _REFERENCE.append(ref)
    return _REFERENCE[0]


def serve_command(state: Path, scenario: Path) -> Any:
    def command(port: int) -> list[str]:
        return [
            *(sys.executable, "-m", "areasync.cli", "serve", "--workers", "0", "--port", str(port)),
            *("--token", TOKEN, "--scenario", str(scenario), "--mode", "fast", "--trace-dir", ""),
            *("--state-dir", str(state), "--durability", "group:0"),
            *("--seed", str(SERVER_SEED)),
        ]

    return command


async def play(
    url: str, token: str, plan: OraclePlan, idle_after: anyio.Event | None = None
) -> tuple[Client, Client, int]:
    """The oracle agent's run to the session's end, with its controller, both resilient; the
    two clients (closed) and how many of their requests had to be resolved. `idle_after`: the
    agent's last request, the `idle` that lets the session end, waits for it."""
    async with (
        connect(url, role="agent", token=token, **RECONNECT) as agent,
        connect(url, role="controller", token=TOKEN, **RECONNECT) as controller,
    ):
        acting, driving = Resilient(agent, idle_after=idle_after), Resilient(controller)
        report = await run_oracle_agent(acting.client, plan, controller=driving.client)
        assert report.ok, report.to_json()
        await agent.wait_ended()
        await controller.wait_ended()
    return agent, controller, acting.resolved + driving.resolved


@dataclass
class FaultRun:
    """What one faulted run left: its kill points, every client and the server's stream."""

    seed: int
    points: list[tuple[int, float]]  # (items the watcher had, delay in s) per kill
    kills: int = 0
    killed: anyio.Event = field(default_factory=anyio.Event)  # every kill is done
    raw: list[RawObserver] = field(default_factory=list)
    clients: list[Client] = field(default_factory=list)
    resolved: int = 0
    banners: list[str] = field(default_factory=list)
    stream: list[StreamItem] = field(default_factory=list)

    def __str__(self) -> str:
        kills = ", ".join(f"after item {n} + {delay * 1000:.0f} ms" for n, delay in self.points)
        return f"FAULT_SEED={self.seed}: {self.kills} kill(s) ({kills})"


async def kill_at(server: Restartable, watch: RawObserver, run: FaultRun) -> None:
    """SIGKILL the server at each of `run.points`, starting it again each time."""
    for count, delay in run.points:
        await watch.wait_for(count)
        await anyio.sleep(delay)
        await server.kill()
        run.kills += 1
        run.banners.append(await server.start())
    run.killed.set()


async def observe(client: Client, cut_at: list[int]) -> None:
    """Follow `client`'s stream to `ended`, cutting its socket at each seq of `cut_at`."""
    targets = sorted(cut_at)
    async for item in client.stream(since=0):
        if targets and item.seq >= targets[0]:
            targets.pop(0)
            _cut(client)


async def faulted_run(
    tmp_path: Path,
    ref: Reference,
    *,
    seed: int,
    kills: int,
    storm: int = 0,
    cuts: int = 0,
) -> FaultRun:
    """One run of the oracle agent, its server SIGKILLed at `kills` random points, with a watch
    observer, two areasync observers and `storm` raw observers (and as many areasync ones / 6)
    each dropping its socket at `cuts` random seqs."""
    rng = random.Random(seed)
    total = len(ref.stream)
    # Kills land while the oracle plays: the agent's `idle`, which lets the session end, waits
    # for the last of them (a kill once the session has ended loses its tail: see the last
    # test of this module).
    last_call = max(item.seq for item in ref.stream if is_agent_event(item))
    counts = sorted(rng.sample(range(1, last_call), kills))
    run = FaultRun(seed, [(n, rng.uniform(0, 0.03)) for n in counts])
    plan_cuts = [rng.sample(range(1, total), cuts) for _ in range(storm + storm // 6)]
    progress: list[Client] = []
    try:
        with anyio.fail_after(60 + 20 * kills):
            await _faulted(tmp_path, ref, run, rng, storm, plan_cuts, progress)
    except TimeoutError:
        raise AssertionError(f"{run}: stuck; {where(run, progress)}") from None
    TALLY["runs"] += 1
    TALLY["kills"] += run.kills
    TALLY["resolved"] += run.resolved
    TALLY["clients"] += len(run.raw) + len(run.clients)
    TALLY["reconnects"] += sum(raw.connections - 1 for raw in run.raw)
    TALLY["reconnects"] += sum(client.reconnects for client in run.clients)
    TALLY["items"] += sum(len(raw.items) for raw in run.raw)
    TALLY["items"] += sum(len(client.history) for client in run.clients)
    return run


async def _faulted(
    tmp_path: Path,
    ref: Reference,
    run: FaultRun,
    rng: random.Random,
    storm: int,
    plan_cuts: list[list[int]],
    progress: list[Client],
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        server = Restartable(serve_command(tmp_path / "state", ref.path), tmp_path / "log", stack)
        banner = await server.start()
        url = session_url(banner, SESSION)
        watch = RawObserver(url, "watch", rng=random.Random(rng.random()))
        run.raw = [watch] + [
            RawObserver(url, f"storm-{n}", cut_at=plan_cuts[n], rng=random.Random(rng.random()))
            for n in range(storm)
        ]
        observers = [
            await stack.enter_async_context(
                connect(url, role="observer", token=TOKEN, since=0, **RECONNECT)
            )
            for _ in range(2 + storm // 6)
        ]
        progress.extend(observers)
        async with anyio.create_task_group() as tg:
            for raw in run.raw:
                tg.start_soon(raw.run)
            for n, client in enumerate(observers[2:]):
                tg.start_soon(observe, client, plan_cuts[storm + n])
            tg.start_soon(kill_at, server, watch, run)
            agent, controller, run.resolved = await play(
                url, agent_token(banner), ref.plan, idle_after=run.killed
            )
            for client in observers:
                await client.wait_ended()
        run.clients = [agent, controller, *observers]
        run.stream = await whole_stream(url)


def where(run: FaultRun, clients: list[Client]) -> str:
    """Where each client stands, for a run that did not finish."""
    raw = [f"{r.name}: {len(r.items)} items, {r.connections} conn" for r in run.raw]
    ours = [
        f"{c.role}: seq {c.seq}, connected {c.connected}, closed {c.closed}, {c.reconnects} rec"
        for c in clients
    ]
    return "; ".join(raw + ours)


def assert_exact(run: FaultRun, ref: Reference) -> None:
    """Every client holds exactly the server's stream, which is the uninterrupted run's."""
    whole = frames(run.stream)
    everything = list(range(1, len(run.stream) + 1))
    assert run.kills == len(run.points), run
    for raw in run.raw:
        assert raw.seqs == everything, (str(run), raw.name, first_difference(raw.seqs))
        assert frames(raw.items) == whole, (str(run), raw.name)
    for client in run.clients:
        first = client.history[0].seq
        assert client.resets == 0 and client.epoch == run.clients[0].epoch, (str(run), client)
        assert [item.seq for item in client.history] == everything[first - 1 :], str(run)
        assert frames(client.history) == whole[first - 1 :], (str(run), client.role)
    assert events(run.stream) == events(ref.stream), str(run)
    assert whole == frames(ref.stream), str(run)


def is_agent_event(item: StreamItem) -> bool:
    return isinstance(item, EventItem) and item.event.event_type == "AGENT"


def events(items: list[StreamItem]) -> list[bytes]:
    return frames([item for item in items if isinstance(item, EventItem)])


def first_difference(seqs: list[int]) -> str:
    for index, seq in enumerate(seqs, start=1):
        if seq != index:
            return f"at position {index}: got seq {seq}"
    return f"ends at {len(seqs)}"


# -- short form (make test) ------------------------------------------------------------------


@pytest.mark.slow  # a server killed and started again at each kill
async def test_three_sigkills_at_random_points_of_an_oracle_run_lose_and_repeat_nothing(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    ref = await reference(tmp_path_factory)
    run = await faulted_run(tmp_path, ref, seed=SEED, kills=3)
    assert_exact(run, ref)
    assert all("restored from its journal" in banner for banner in run.banners), run


@pytest.mark.slow  # a server killed and started again at each kill
async def test_sigkills_during_a_reconnect_storm_leave_every_observer_the_exact_stream(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    ref = await reference(tmp_path_factory)
    run = await faulted_run(tmp_path, ref, seed=SEED + 1, kills=2, storm=24, cuts=4)
    assert_exact(run, ref)
    assert sum(raw.cuts for raw in run.raw) == 24 * 4, run


# -- long form (make soak) -------------------------------------------------------------------


@pytest.mark.soak
@pytest.mark.parametrize("n", range(RUNS))
async def test_many_sigkills_over_many_oracle_runs(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, n: int
) -> None:
    ref = await reference(tmp_path_factory)
    assert_exact(await faulted_run(tmp_path, ref, seed=SEED + 100 + n, kills=KILLS), ref)


@pytest.mark.soak
@pytest.mark.parametrize("n", range(RUNS))
async def test_many_sigkills_during_reconnect_storms(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, n: int
) -> None:
    ref = await reference(tmp_path_factory)
    run = await faulted_run(tmp_path, ref, seed=SEED + 200 + n, kills=KILLS, storm=36, cuts=8)
    assert_exact(run, ref)


# -- bugs these tests found ------------------------------------------------------------------


async def test_a_client_resuming_while_a_record_awaits_its_sync_gets_its_welcome_and_replay(
    tmp_path: Path,
) -> None:
    # The welcome of a resuming client waits for every record appended so far to be durable,
    # and the replay's items after `since` are visible already. The writer took those items as
    # due, wrote nothing ahead of the welcome, and looped without yielding (websockets' drain
    # returns at once on an idle socket): the whole server froze, every session with it.
    # The server process holds the sync of the agent's next tool call record (held_sync_serve)
    # while the client resumes, and answers a health check meanwhile; released, it goes on.
    command = [
        *(sys.executable, "-m", "tests.service.durability.held_sync_serve"),
        *("serve", "--workers", "0"),
        *("--port", "0", "--token", TOKEN),
        *("--scenario", "scenario_tutorial", "--mode", "manual", "--trace-dir", ""),
        *("--state-dir", str(tmp_path / "state"), "--durability", "group:1000"),
    ]
    tool = "SystemApp__get_current_time"
    async with contextlib.AsyncExitStack() as stack:
        server = Restartable(lambda port: command, tmp_path / "log", stack)
        banner = await server.start()
        url = session_url(banner, "scenario_tutorial")
        agent = await stack.enter_async_context(connect(url, role="agent", token=TOKEN))
        await agent.call_tool(tool)  # durable: its items are visible
        seen = agent.seq
        assert seen > 1
        order: list[str] = []

        async def call() -> None:
            await agent.call_tool(tool)
            order.append("answered")

        async def resume() -> None:
            resuming = RawObserver(
                url, "resuming", rng=random.Random(0), since=1, epoch=agent.epoch
            )
            ws = await resuming.connect()  # welcomed, once the call's record is synced
            order.append("welcomed")
            async for data in ws:  # then the items after seq 1 up to the call's event
                item = decode_server_frame(data)
                if isinstance(item, EventItem) and item.seq > seen:
                    break
            await ws.close()
            assert resuming.welcomes[0].epoch == agent.epoch

        with anyio.fail_after(PROCESS_S):
            async with anyio.create_task_group() as tg:
                await command_server(server, ARM)
                tg.start_soon(call)
                await read_until(server.process, HELD)  # the call's record awaits its sync
                tg.start_soon(resume)
                assert await healthy(server.port)  # the server serves while the client resumes
                await settled()  # an answer not waiting for the sync has been received by now
                order.append("released")
                await command_server(server, RELEASE)
    assert order[0] == "released", order
    assert sorted(order[1:]) == ["answered", "welcomed"]


async def command_server(server: Restartable, command: str) -> None:
    """Send held_sync_serve's `command` to the server process."""
    assert server.process is not None and server.process.stdin is not None
    await server.process.stdin.send(f"{command}\n".encode())


async def healthy(port: int) -> bool:
    async with httpx.AsyncClient(trust_env=False) as http:
        response = await http.get(f"http://127.0.0.1:{port}/health")
    return response.status_code == 200


async def test_a_session_whose_end_was_durable_at_the_kill_still_replays_after_the_restart(
    tmp_path: Path,
) -> None:
    # A restart restored only the sessions that had not ended: a client that had not received
    # the end of a session whose `Ended` was on disk got session_not_found instead of the
    # items it missed. The sessions that ended last (up to keep_ended) are rebuilt for replay.
    scenario = "scenario_apps_tutorial"
    command = [
        *(sys.executable, "-m", "areasync.cli", "serve", "--workers", "0", "--token", TOKEN),
        *("--trace-dir", ""),
        *("--scenario", scenario, "--mode", "fast", "--state-dir", str(tmp_path / "state")),
    ]
    plan = await oracle_plan(scenario)
    async with contextlib.AsyncExitStack() as stack:
        server = Restartable(lambda port: [*command, "--port", str(port)], tmp_path / "log", stack)
        banner = await server.start()
        url = session_url(banner, scenario)
        await play(url, agent_token(banner), plan)
        before = await whole_stream(url)
        store = JournalStore(tmp_path / "state")
        # The other process signals nothing.
        await eventually(lambda: store.read(scenario).ended is not None, poll=0.02)
        await server.kill()
        banner = await server.start()
        with anyio.fail_after(30):
            after = await whole_stream(url)
    assert frames(after) == frames(before)
    assert "1 ended session(s) kept for replay" in banner
