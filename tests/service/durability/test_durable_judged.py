"""Judged sessions are durable: their judge's answers are records, replayed without the model.

A real server on loopback with `--state-dir` and Gaia2's judge pointed at the stub LLM (the
same stub, scenarios and scripted agent as `test_gaia2_judge.py`), a two-turn Gaia2 scenario
whose reworded calendar title only the judge's LLM accepts. The stub counts the questions it
is asked: a replay asks none that the run got an answer to.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec
import pytest

from areasync.client import connect
from areasync.client.sessions import CreatedSession
from areasync.gaia2.dataset import DONE, EMAIL, call, email
from areasync.gaia2.stub_llm import JUDGE_MODEL, StubLLM
from areasync.journal import JournalStore
from areasync.journal import writer as journal_writer
from areasync.protocol.codec import Encoding, encode_server_frame
from areasync.protocol.frames import EventItem
from areasync.protocol.records import Validation
from areasync.service import Service, ServiceConfig
from areasync.service.durability.restore import inputs_of, rebuild, replayed
from areasync.simulation import ReplayDivergedError, Simulation
from areasync.simulation import input_records as kinds
from areasync.simulation.input_records import InputRecord
from tests.service.sessions.test_gaia2_judge import (
    CALENDAR_DONE,
    CALENDAR_REWORDED,
    TURN_2_TASK,
    WALL_S,
    JudgeScript,
    calendar_json,
    judge_calls,
    judge_options,
    play,
    script,
)
from tests.service.support import http_get
from tests.stubs import stub_fixture
from tests.waiting import eventually

__all__ = ["script"]  # the stub's fixture, shared with the judge's tests

ADMIN = "judged-admin-token"
SUCCESS = Validation(success=True, rationale="None")
# Turn 2 starts with a look at the inbox (read-only: nothing the judge compares).
LOOK = call("EmailClientV2__list_emails", folder_name="INBOX")
TURNS = ([CALENDAR_REWORDED, CALENDAR_DONE], [LOOK, EMAIL, DONE])
# The email in other words than the oracle's: only the judge's LLM accepts it.
EMAIL_REWORDED = email(content="Hello Bob, hello!")


@dataclass
class HoldingScript(JudgeScript):
    """The judge's stub script; armed (`hold`), it answers that many more judge requests,
    then holds the next ones (`held` set) until `unhold`."""

    hold_after: int | None = None
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    _answered: int = 0

    def hold(self, after: int) -> None:
        self.held.clear()
        self.release.clear()
        self._answered, self.hold_after = 0, after

    def unhold(self) -> None:
        """Answer again; a held request gets its answer now."""
        self.hold_after = None
        self.release.set()

    def reply(self, request: Any) -> str:
        if self.hold_after is not None and str(request.get("model", "")).endswith(JUDGE_MODEL):
            if self._answered >= self.hold_after:
                self.held.set()
                self.release.wait(WALL_S)
            self._answered += 1
        return super().reply(request)


stub = stub_fixture(HoldingScript)


@pytest.fixture
def holding(script: JudgeScript) -> Iterator[HoldingScript]:
    """The stub's script, answering every request; never left holding one."""
    assert isinstance(script, HoldingScript)
    script.unhold()
    yield script
    script.unhold()


@asynccontextmanager
async def judged_server(
    tmp_path: Path, state: Path, endpoint: str | None, model: str | None = None
) -> AsyncIterator[Service]:
    """A real server on loopback, fast mode, journaling to `state`; judged if `endpoint` (by
    the stub's judge model, or `model`)."""
    judge = None if endpoint is None else judge_options(endpoint)
    if judge is not None and model is not None:
        judge = dataclasses.replace(judge, model=model)
    config = ServiceConfig(
        port=0,
        admin_token=ADMIN,
        trace_dir=tmp_path / "traces",
        mode="fast",
        state_dir=state,
        judge_model=None if judge is None else judge.model,
        judge_provider=None if judge is None else judge.provider,
        judge_endpoint=None if judge is None else judge.endpoint,
        close_timeout=2.0,
        shutdown_grace=1.0,
    )
    async with Service(config, ["scenario_tutorial"]) as service:
        yield service


async def create(service: Service, mode: str = "fast", speed: float = 1.0) -> CreatedSession:
    url = service.ws_url("scenario_tutorial")
    async with connect(url, role="admin", token=ADMIN) as admin:
        return await admin.create_session(
            scenario_json=calendar_json("two_turns", second_turn=True), mode=mode, speed=speed
        )


def frames(sim: Simulation) -> list[bytes]:
    return [encode_server_frame(item, Encoding.MSGPACK) for item in sim.log.items]


def sim_of(service: Service, session_id: str) -> Simulation:
    session = service.registry.get(session_id)
    assert session is not None
    return session.sim


async def played(tmp_path: Path, stub: StubLLM) -> Simulation:
    """A judged session played to its end on a server with a state dir; its simulation."""
    async with judged_server(tmp_path, tmp_path / "state", stub.endpoint) as service:
        created = await create(service)
        await play(created, *TURNS)
        return sim_of(service, created.session_id)


def judge_records(sim: Simulation) -> list[InputRecord]:
    return [record for record in sim.records if isinstance(record, kinds.Judge)]


async def replay(sim: Simulation, records: list[InputRecord], endpoint: str) -> Simulation:
    """`sim`'s session rebuilt from `records` as a restart or a fork does, in a worker thread."""
    assert sim.creation is not None
    text = calendar_json("two_turns", second_turn=True)
    return await anyio.to_thread.run_sync(
        lambda: replayed(text, "auto", sim.creation, records, judge=judge_options(endpoint))
    )


async def test_a_judged_run_replays_frame_for_frame_without_asking_the_judge(
    tmp_path: Path, stub: StubLLM, script: JudgeScript
) -> None:
    async with judged_server(tmp_path, tmp_path / "state", stub.endpoint) as service:
        created = await create(service)
        ended = await play(created, *TURNS)
        sim = sim_of(service, created.session_id)
        assert ended.validation == SUCCESS and len(judge_records(sim)) >= 2
        journal = JournalStore(tmp_path / "state").read(created.session_id)
        assert journal.created is not None
        asked = judge_calls(stub)
        again, _ = await anyio.to_thread.run_sync(
            rebuild, journal.created, journal, judge_options(stub.endpoint)
        )
    assert judge_calls(stub) == asked  # every answer came from the journal
    assert frames(again) == frames(sim)
    assert again.validation == sim.validation == SUCCESS
    assert again.records == sim.records  # the judge's answers included


async def test_a_replay_past_the_last_answer_on_disk_asks_the_judge_from_there(
    tmp_path: Path, stub: StubLLM, script: JudgeScript
) -> None:
    sim = await played(tmp_path, stub)
    answers = judge_records(sim)
    last = sim.records.index(answers[-1])
    asked = judge_calls(stub)
    # The crash came while the last question was asked: its answer never reached the disk.
    again = await replay(sim, list(sim.records[:last]), stub.endpoint)
    assert judge_calls(stub) == asked + 1  # that question only, asked again
    assert judge_records(again) == judge_records(sim)  # answered as before: the run goes on
    assert frames(again) == frames(sim)[: len(again.log.items)]
    [condition] = [item.event for item in again.log.items if isinstance(item, EventItem)][-1:]
    assert condition.event_type == "CONDITION" and condition.return_value is True  # accepted


async def test_a_recorded_answer_to_another_question_stops_the_replay_saying_so(
    tmp_path: Path, stub: StubLLM, script: JudgeScript
) -> None:
    sim = await played(tmp_path, stub)
    records = list(sim.records)
    first = records.index(judge_records(sim)[0])
    # The run asked something else here.
    records[first] = msgspec.structs.replace(records[first], call="0" * 64)
    asked = judge_calls(stub)
    with pytest.raises(ReplayDivergedError, match="the replay asked the judge") as diverged:
        await replay(sim, records, stub.endpoint)
    assert "asking something else" in str(diverged.value)
    assert judge_calls(stub) == asked


async def test_a_fork_of_a_judged_session_replays_its_answers_then_its_own_turn_is_judged(
    tmp_path: Path, stub: StubLLM, script: JudgeScript
) -> None:
    async with judged_server(tmp_path, tmp_path / "state", stub.endpoint) as service:
        created = await create(service)
        await play(created, *TURNS)
        sim = sim_of(service, created.session_id)
        # Cut after the agent's look at the inbox in turn 2 (turn 1 judged before), its turn
        # held (its lease is journaled).
        [cut] = [
            item.seq
            for item in sim.log.items
            if isinstance(item, EventItem) and item.event.function == "list_emails"
        ]
        asked = judge_calls(stub)
        url = service.ws_url("scenario_tutorial")
        async with connect(url, role="admin", token=ADMIN) as admin:
            fork = await admin.fork_session(created.session_id, at_seq=cut)
        forked = sim_of(service, fork.session_id)
        assert judge_calls(stub) == asked  # turn 1's answers came from the records
        assert frames(forked) == frames(sim)[:cut]
        ended = await play_on(fork)
        assert judge_calls(stub) > asked  # its own second turn, judged by the model
    # Its own email, which the stub's checkers cannot accept (it says no "[[True]]"), while
    # the source's, the oracle's words, passed.
    assert sim.validation == SUCCESS
    assert ended.validation is not None and ended.validation.success is False
    assert "oracle event (ID: email1), reason: tool judge reject" in ended.validation.rationale


async def play_on(fork: CreatedSession) -> Any:
    """The agent of a fork cut inside turn 2: an email of its own wording, to the end."""
    with anyio.fail_after(60):
        async with connect(fork.url, role="agent", token=fork.tokens["agent"]) as agent:
            for action in (EMAIL_REWORDED, DONE):
                await agent.call_tool(action["action"], **action["action_input"])
            await agent.idle()
            return await agent.wait_ended()


async def test_a_server_without_a_judge_refuses_a_judged_session_saying_so_and_starts_the_rest(
    tmp_path: Path, stub: StubLLM, script: JudgeScript
) -> None:
    async with judged_server(tmp_path, tmp_path / "state", stub.endpoint) as service:
        created = await create(service)  # live: waiting for its agent
    async with judged_server(tmp_path, tmp_path / "state", None) as service:
        _, _, body = await http_get(service, f"/api/sessions?token={ADMIN}")
        listed = json.loads(body)
    why = listed["refused_journals"][created.session_id]
    assert "was judged (model 'openai/judge' via provider 'local')" in why
    assert "this server has no judge: start it with --judge_model openai/judge" in why
    assert [s["id"] for s in listed["sessions"]] == ["scenario_tutorial"]


async def test_a_server_with_another_judge_refuses_a_judged_session_saying_which_to_start_with(
    tmp_path: Path, stub: StubLLM, script: JudgeScript
) -> None:
    async with judged_server(tmp_path, tmp_path / "state", stub.endpoint) as service:
        created = await create(service)
    async with judged_server(tmp_path, tmp_path / "state", stub.endpoint, "openai/other") as again:
        _, _, body = await http_get(again, f"/api/sessions?token={ADMIN}")
        listed = json.loads(body)
    why = listed["refused_journals"][created.session_id]
    assert "and this server's judge is model 'openai/other' via provider 'local'" in why
    assert "start the server with --judge_model openai/judge --judge_provider local" in why
    assert [s["id"] for s in listed["sessions"]] == ["scenario_tutorial"]


def journaled_judge_answers(state: Path, session_id: str) -> list[dict[str, Any]]:
    journal = JournalStore(state).read(session_id)
    return [msgspec.structs.asdict(r) for r in inputs_of(journal) if isinstance(r, kinds.Judge)]


async def test_nothing_the_judges_verdict_caused_is_shown_before_its_answers_are_durable(
    tmp_path: Path, stub: StubLLM, holding: HoldingScript, monkeypatch: pytest.MonkeyPatch
) -> None:
    armed, syncing, release = threading.Event(), threading.Event(), threading.Event()
    real = journal_writer.sync_file

    def sync_file(fd: int) -> None:  # the journal's sync, held once armed
        if armed.is_set():
            syncing.set()
            release.wait(WALL_S)
        real(fd)

    monkeypatch.setattr(journal_writer, "sync_file", sync_file)
    async with judged_server(tmp_path, tmp_path / "state", stub.endpoint) as service:
        created = await create(service)
        session = service.registry.get(created.session_id)
        assert session is not None and session.journal is not None
        journal, sim = session.journal, session.sim
        with anyio.fail_after(WALL_S):
            async with connect(created.url, role="agent", token=created.tokens["agent"]) as agent:
                await agent.wait_for_notification(timeout=3600)
                holding.hold(after=0)  # turn 1's first question waits
                for action in TURNS[0]:
                    await agent.call_tool(action["action"], **action["action_input"])
                async with anyio.create_task_group() as tg:
                    tg.start_soon(agent.wait_for_notification, 3600)
                    assert await anyio.to_thread.run_sync(holding.held.wait, WALL_S)
                    await eventually(lambda: journal.durable == journal.appended, within=WALL_S)
                    armed.set()  # every record so far is on disk; the answers will not be
                    holding.unhold()
                    # The judge answers and accepts turn 1, which opens turn 2: in memory.
                    await eventually(lambda: TURN_2_TASK in str(sim.log.items[-1]), within=WALL_S)
                    assert await anyio.to_thread.run_sync(syncing.wait, WALL_S)
                    first_answer = judge_records(sim)[0]
                    assert journal.limit() == first_answer.seq  # the oldest pending record
                    caused = [item.seq for item in sim.log.items if item.seq > first_answer.seq]
                    assert caused and session.hub.seq < caused[0]  # held back, every one
                    assert all(c.position < caused[0] for c in session.connections)
                    release.set()
                assert agent.seq >= caused[-1]  # shown once released
        answers = journaled_judge_answers(tmp_path / "state", created.session_id)
    assert [answer["call"] for answer in answers] == [record.call for record in judge_records(sim)]


async def test_a_lease_taken_while_the_judge_is_asked_replays_where_it_was_taken(
    tmp_path: Path, stub: StubLLM, holding: HoldingScript
) -> None:
    async with judged_server(tmp_path, tmp_path / "state", stub.endpoint) as service:
        created = await create(service)
        token = created.tokens["agent"]
        with anyio.fail_after(WALL_S):
            async with connect(created.url, role="agent", token=token) as agent:
                await agent.wait_for_notification(timeout=3600)
                holding.hold(after=0)  # turn 1's first question waits
                for action in TURNS[0]:
                    await agent.call_tool(action["action"], **action["action_input"])
                async with anyio.create_task_group() as tg:
                    tg.start_soon(agent.wait_for_notification, 3600)
                    assert await anyio.to_thread.run_sync(holding.held.wait, WALL_S)
                    # Another agent connection arrives meanwhile: it takes its turn (a lease).
                    async with connect(created.url, role="agent", token=token):
                        holding.unhold()
                        await eventually(
                            lambda: len(judge_records(sim_of(service, created.session_id))) >= 2,
                            within=WALL_S,
                        )
                url = service.ws_url("scenario_tutorial")
                async with connect(url, role="admin", token=ADMIN) as admin:
                    await admin.stop_session(created.session_id)
        sim = sim_of(service, created.session_id)
    records = list(sim.records)
    first = records.index(judge_records(sim)[0])
    assert records[first - 1].source == "lease_begin"  # taken while the question was asked
    asked = judge_calls(stub)
    again = await replay(sim, records, stub.endpoint)
    assert judge_calls(stub) == asked
    assert frames(again) == frames(sim)
    assert again.validation == sim.validation


async def test_a_judge_failure_is_replayed_as_recorded_never_asked_again(
    tmp_path: Path, stub: StubLLM, holding: HoldingScript
) -> None:
    outage = stub.fail_next(10**6, status=400, model=JUDGE_MODEL)
    try:
        async with judged_server(tmp_path, tmp_path / "state", stub.endpoint) as service:
            created = await create(service)
            ended = await play(created, TURNS[0])
            sim = sim_of(service, created.session_id)
        failures, asked = outage.failed, judge_calls(stub)
        again = await replay(sim, list(sim.records), stub.endpoint)
        assert (outage.failed, judge_calls(stub)) == (failures, asked)  # nothing asked
    finally:
        stub.fail_next(0)
    assert ended.state == "failed" and "failed" in str(judge_records(sim)[0].failure)
    assert frames(again) == frames(sim)
    assert again.validation == sim.validation and again.validation.rationale == "Exception"


async def test_a_judged_realtime_run_replays_frame_for_frame_without_asking_the_judge(
    tmp_path: Path, stub: StubLLM, script: JudgeScript
) -> None:
    async with judged_server(tmp_path, tmp_path / "state", stub.endpoint) as service:
        created = await create(service, mode="realtime", speed=100.0)
        with anyio.fail_after(WALL_S):
            async with connect(created.url, role="agent", token=created.tokens["agent"]) as agent:
                for turn in TURNS:  # turn 1's task is out already: realtime waits for no one
                    if turn is not TURNS[0]:
                        await agent.wait_for_notification(timeout=600)
                    for action in turn:
                        await agent.call_tool(action["action"], **action["action_input"])
            url = service.ws_url("scenario_tutorial")
            async with connect(url, role="admin", token=ADMIN) as admin:
                stopped = await admin.stop_session(created.session_id)
        sim = sim_of(service, created.session_id)
    asked = judge_calls(stub)
    again = await replay(sim, list(sim.records), stub.endpoint)
    assert judge_calls(stub) == asked
    assert stopped.validation == SUCCESS and len(judge_records(sim)) >= 2
    assert any(record.source == "realtime_tick" for record in sim.records)
    assert frames(again) == frames(sim) and again.validation == sim.validation
