"""`areasync serve --judge_*`: a remote agent over the socket is scored as `are-benchmark run`
scores it in-process.

A real server on loopback with Gaia2's judge pointed at the stub LLM (its judge model answers
what the test says), Gaia2 JSON exported by ARE (the tiny dataset's email scenarios, and
calendar scenarios built here the same way, whose reworded title only the judge's LLM can
accept), and a scripted agent on areasync's client. The reference verdicts are ARE's own:
ARE's `load_and_preprocess_scenario_str` with `are-benchmark run`'s runner config and the same
stub judge, ARE's threaded `Environment`, the same actions, `scenario.validate`.
"""

from __future__ import annotations

import json
import re
import signal
import sys
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
from anyio.streams.text import TextReceiveStream

from areasync.bridge.judge.options import DEFAULT_JUDGE_MODEL, JudgeOptions
from areasync.bridge.sandbox import audit as sandbox_module
from areasync.cli import main
from areasync.client import AreasyncError, Client, connect
from areasync.client.sessions import CreatedSession
from areasync.gaia2.dataset import (
    DONE,
    EMAIL,
    SPECS,
    START_TIME,
    json_arg,
    json_event,
    scenario_json,
    through_ares_exporter,
)
from areasync.gaia2.stub_llm import JUDGE_MODEL, Script, StubLLM
from areasync.protocol import EndedItem, Role
from areasync.protocol.records import Validation
from areasync.service import Service, ServiceConfig
from tests.bounds import PROCESS_S
from tests.service.adapters.gaia2cli.harness import Harness
from tests.service.support import http_get
from tests.stubs import stub_fixture
from tests.waiting import eventually_blocking

ADMIN = "judge-admin-token"
WALL_S = PROCESS_S  # any one session, or a server's start, before the test fails
ACCEPT = "Evaluation: [[Success]]"  # what ARE's event checker reads as a match
REJECT = "Evaluation: [[Failure]]"
NO_JUDGE = Validation()  # ARE's "no validation"

LUNCH = {"start_datetime": "2024-10-16 12:00:00", "end_datetime": "2024-10-16 13:00:00"}
# The oracle's calendar event, and the agent's with another wording of its title: only the
# judge's LLM can match the two (ARE's hard checks match every other argument).
CALENDAR_AS_ORACLE = {
    "action": "CalendarApp__add_calendar_event",
    "action_input": {"title": "Lunch with Bob", **LUNCH},
}
CALENDAR_REWORDED = {
    "action": "CalendarApp__add_calendar_event",
    "action_input": {"title": "Bob lunch", **LUNCH},
}
CALENDAR_DONE = {
    "action": "AgentUserInterface__send_message_to_user",
    "action_input": {"content": "Done: lunch is in your calendar."},
}
TURN_2_TASK = "Now email bob@example.com with subject 'Hi' saying 'Hello Bob', then tell me."


# -- Gaia2 JSON -----------------------------------------------------------------------------


def calendar_json(scenario_id: str, *, second_turn: bool = False) -> str:
    """A Gaia2 scenario as ARE exports it: put lunch with Bob in the calendar, then tell the
    user; with `second_turn`, 5 s after that the user asks for the tiny dataset's email."""
    from are.simulation.apps import SystemApp
    from are.simulation.apps.agent_user_interface import AgentUserInterface
    from are.simulation.apps.calendar import CalendarApp
    from are.simulation.apps.contacts import Contact, ContactsApp
    from are.simulation.apps.email_client import EmailClientV2

    contacts = ContactsApp()
    contacts.add_contact(
        Contact(first_name="Ada", last_name="User", is_user=True, email="user@meta.com")
    )
    contacts.add_contact(Contact(first_name="Bob", last_name="Smith", email="bob@example.com"))
    task = "Put lunch with Bob in my calendar tomorrow 12:00-13:00, then tell me."
    args = [json_arg(name, value) for name, value in CALENDAR_AS_ORACLE["action_input"].items()]
    events = [
        _user("user0", [], 0.0, task),
        json_event("cal0", "AGENT", ["user0"], 1.0, "CalendarApp", "add_calendar_event", args),
        _told("done0", "cal0", CALENDAR_DONE["action_input"]["content"]),
    ]
    if second_turn:
        recipients = json_arg("recipients", '["bob@example.com"]', "list[str]")
        email = [recipients, json_arg("subject", "Hi"), json_arg("content", "Hello Bob")]
        events += [
            _user("user1", ["done0"], 5.0, TURN_2_TASK),
            json_event("email1", "AGENT", ["user1"], 1.0, "EmailClientV2", "send_email", email),
            _told("done1", "email1", DONE["action_input"]["content"]),
        ]
    apps = (AgentUserInterface(), contacts, CalendarApp(), EmailClientV2(), SystemApp())
    document = {
        "version": "are_simulation_v1",
        "context": "",
        "metadata": {
            "definition": {
                "scenario_id": scenario_id,
                "seed": 0,
                "duration": 120.0,
                "time_increment_in_seconds": 1,
                "start_time": START_TIME,
                "hints": [],
                "tags": ["Execution"],
            }
        },
        "apps": [
            {"name": app.name, "class_name": type(app).__name__, "app_state": app.get_state()}
            for app in apps
        ],
        "events": events,
        "completed_events": [],
        "world_logs": [],
        "augmentation": None,
    }
    return through_ares_exporter(document)


def _user(event_id: str, after: list[str], delay: float, content: str) -> dict[str, Any]:
    message = [json_arg("content", content)]
    return json_event(
        event_id, "USER", after, delay, "AgentUserInterface", "send_message_to_agent", message
    )


def _told(event_id: str, after: str, content: str) -> dict[str, Any]:
    message = [json_arg("content", content)]
    return json_event(
        event_id, "AGENT", [after], 1.0, "AgentUserInterface", "send_message_to_user", message
    )


def tagged(text: str, *tags: str) -> str:
    """The same scenario with other capability tags (Gaia2's Time scenarios get 420 s)."""
    document = json.loads(text)
    document["metadata"]["definition"]["tags"] = list(tags)
    return json.dumps(document)


# -- the stub judge -------------------------------------------------------------------------


@dataclass
class JudgeScript(Script):
    """The stub's script; its judge answers `judge_reply`, and waits for `gate` if one is set
    (`entered` is set first), so that a test can look at the server mid-judgment."""

    gate: threading.Event | None = None
    entered: threading.Event = field(default_factory=threading.Event)

    def reply(self, request: Any) -> str:
        gate = self.gate
        if gate is not None and str(request.get("model", "")).endswith(self.judge_model):
            self.entered.set()
            gate.wait(WALL_S)
        return super().reply(request)


stub = stub_fixture(JudgeScript)


@pytest.fixture
def script(stub: StubLLM) -> Iterator[JudgeScript]:
    """The stub's script, accepting and ungated for each test."""
    script = stub.script
    assert isinstance(script, JudgeScript)
    script.judge_reply, script.gate = ACCEPT, None
    script.entered.clear()
    yield script
    if script.gate is not None:
        script.gate.set()  # never leave the stub's thread waiting


def judge_options(endpoint: str) -> JudgeOptions:
    return JudgeOptions(model=f"openai/{JUDGE_MODEL}", provider="local", endpoint=endpoint)


def judge_calls(stub: StubLLM) -> int:
    return sum(1 for request in stub.requests if request.get("model", "").endswith(JUDGE_MODEL))


# -- the server and the agent ---------------------------------------------------------------


@asynccontextmanager
async def serving(
    tmp_path: Path, judge: JudgeOptions | None, **options: Any
) -> AsyncIterator[Service]:
    """A real server on loopback, fast mode, the tutorial as the admin's way in."""
    config = ServiceConfig(
        port=0,
        admin_token=ADMIN,
        trace_dir=tmp_path / "traces",
        mode="fast",
        judge_model=None if judge is None else judge.model,
        judge_provider=None if judge is None else judge.provider,
        judge_endpoint=None if judge is None else judge.endpoint,
        close_timeout=2.0,
        shutdown_grace=1.0,
        **options,
    )
    async with Service(config, ["scenario_tutorial"]) as service:
        yield service


@pytest.fixture
async def judged(stub: StubLLM, tmp_path: Path) -> AsyncIterator[Service]:
    async with serving(tmp_path, judge_options(stub.endpoint)) as service:
        yield service


async def create(service: Service, text: str, **options: Any) -> CreatedSession:
    """`create_session` over the socket, with the admin token: the API a harness uses."""
    async with connect(service.ws_url("scenario_tutorial"), role="admin", token=ADMIN) as admin:
        return await admin.create_session(scenario_json=text, mode="fast", **options)


async def act(agent: Client, actions: list[dict[str, Any]]) -> None:
    """One turn: the user's message, then `actions`."""
    await agent.wait_for_notification(timeout=3600)
    for action in actions:
        await agent.call_tool(action["action"], **action["action_input"])


async def play(created: CreatedSession, *turns: list[dict[str, Any]]) -> EndedItem:
    """A scripted agent over the socket: each turn's actions, then idle until the end."""
    with anyio.fail_after(WALL_S):
        async with connect(created.url, role="agent", token=created.tokens["agent"]) as agent:
            for actions in turns:
                await act(agent, actions)
            await agent.idle()
            return await agent.wait_ended()


def simulation(service: Service, created: CreatedSession) -> Any:
    session = service.registry.get(created.session_id)
    assert session is not None
    return session.sim


def user_messages(service: Service, created: CreatedSession) -> list[str]:
    return [
        str(record.args.get("content"))
        for record in simulation(service, created).events()
        if record.function == "send_message_to_agent"
    ]


# -- ARE's own verdict ----------------------------------------------------------------------


def are_verdict(text: str, options: JudgeOptions, actions: list[dict[str, Any]]) -> Validation:
    """ARE's verdict on a single-turn scenario played with `actions`: ARE's own loading and
    preprocessing with `are-benchmark run`'s runner config and this judge, ARE's threaded
    Environment as ScenarioRunner builds it, the actions as the agent's tool calls once the
    user's message is in, then `scenario.validate` (ScenarioRunner's run, its agent scripted)."""
    from are.simulation.agents.are_simulation_agent_config import LLMEngineConfig
    from are.simulation.environment import Environment, EnvironmentConfig
    from are.simulation.notification_system import VerboseNotificationSystem
    from are.simulation.scenarios.config import ScenarioRunnerConfig
    from are.simulation.scenarios.scenario_imported_from_json.utils import (
        load_and_preprocess_scenario_str,
    )
    from are.simulation.types import EnvironmentType

    engine = LLMEngineConfig(
        model_name=options.model, provider=options.provider, endpoint=options.endpoint
    )
    config = ScenarioRunnerConfig(agent="default", judge_engine_config=engine)
    scenario, _ = load_and_preprocess_scenario_str(config, text)
    env = Environment(
        environment_type=EnvironmentType.CLI,
        config=EnvironmentConfig(
            oracle_mode=False,
            queue_based_loop=False,
            time_increment_in_seconds=scenario.time_increment_in_seconds,
            exit_when_no_events=False,
            start_time=scenario.start_time,
        ),
        notification_system=VerboseNotificationSystem(),
    )
    env.run(scenario, wait_for_end=False)
    try:
        eventually_blocking(
            lambda: any(
                e.function_name() == "send_message_to_agent" for e in env.event_log.list_view()
            ),
            within=WALL_S,
            what="ARE's delivery of the user's message",
        )
        tools = {tool.name: tool for tool in env.get_tools()}
        for action in actions:
            tools[action["action"]](**action["action_input"])
        result = scenario.validate(env)
    finally:
        env.stop()
    return Validation(
        success=result.success,
        exception=None if result.exception is None else str(result.exception),
        rationale=result.rationale,
    )


def without_ids(validation: Validation | None) -> Validation | None:
    """A verdict with the agent's event ids (uuid4 per run) blanked out."""
    if validation is None:
        return None
    rationale = validation.rationale
    if isinstance(rationale, str):
        rationale = re.sub(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", "<id>", rationale)
    return msgspec.structs.replace(validation, rationale=rationale)


# -- verdicts -------------------------------------------------------------------------------


async def test_an_agent_doing_the_oracles_actions_succeeds_with_ares_rationale(
    judged: Service, script: JudgeScript
) -> None:
    created = await create(judged, scenario_json(SPECS["tiny_email"]))
    ended = await play(created, [EMAIL, DONE])
    assert ended.validation == Validation(success=True, rationale="None")
    assert created.import_mode == "benchmark"  # auto, with a judge: Gaia2's import


async def test_an_agent_that_skips_the_email_fails_with_ares_rationale(
    judged: Service, script: JudgeScript
) -> None:
    created = await create(judged, scenario_json(SPECS["tiny_skip"]))
    ended = await play(created, [DONE])
    assert ended.validation is not None
    assert ended.validation.success is False
    assert "Agent count 0, Oracle count 1" in ended.validation.rationale


async def test_the_judges_llm_accepts_a_reworded_action(
    judged: Service, script: JudgeScript, stub: StubLLM
) -> None:
    before = judge_calls(stub)
    created = await create(judged, calendar_json("lunch"))
    ended = await play(created, [CALENDAR_REWORDED, CALENDAR_DONE])
    assert ended.validation == Validation(success=True, rationale="None")
    assert judge_calls(stub) > before


async def test_a_judge_that_rejects_fails_the_session(judged: Service, script: JudgeScript) -> None:
    script.judge_reply = REJECT
    created = await create(judged, calendar_json("lunch"))
    ended = await play(created, [CALENDAR_REWORDED, CALENDAR_DONE])
    assert ended.validation is not None
    assert ended.validation.success is False
    assert "tool judge reject" in ended.validation.rationale


@pytest.mark.parametrize(
    ("scenario", "actions", "reply"),
    [
        (lambda: scenario_json(SPECS["tiny_email"]), [EMAIL, DONE], ACCEPT),
        (lambda: scenario_json(SPECS["tiny_skip"]), [DONE], ACCEPT),
        (lambda: calendar_json("lunch"), [CALENDAR_REWORDED, CALENDAR_DONE], ACCEPT),
        (lambda: calendar_json("lunch"), [CALENDAR_REWORDED, CALENDAR_DONE], REJECT),
    ],
    ids=["right", "wrong", "reworded-accepted", "reworded-rejected"],
)
async def test_the_sessions_verdict_is_ares_own(
    judged: Service,
    script: JudgeScript,
    stub: StubLLM,
    scenario: Any,
    actions: list[dict[str, Any]],
    reply: str,
) -> None:
    """The same JSON, the same actions, the same judge: over the socket and in ARE itself."""
    script.judge_reply = reply
    text = scenario()
    created = await create(judged, text)
    ended = await play(created, actions)
    reference = await anyio.to_thread.run_sync(
        are_verdict, text, judge_options(stub.endpoint), actions
    )
    assert without_ids(ended.validation) == without_ids(reference)


# -- turns ----------------------------------------------------------------------------------


async def test_an_accepted_turn_opens_the_next_and_both_are_judged(
    judged: Service, script: JudgeScript
) -> None:
    created = await create(judged, calendar_json("two_turns", second_turn=True))
    ended = await play(created, [CALENDAR_REWORDED, CALENDAR_DONE], [EMAIL, DONE])
    assert ended.validation == Validation(success=True, rationale="None")
    assert TURN_2_TASK in user_messages(judged, created)


async def test_a_rejected_turn_ends_the_session_before_the_next_turn(
    judged: Service, script: JudgeScript
) -> None:
    script.judge_reply = REJECT
    created = await create(judged, calendar_json("two_turns", second_turn=True))
    ended = await play(created, [CALENDAR_REWORDED, CALENDAR_DONE])
    assert ended.validation is not None
    assert ended.validation.success is False
    assert "tool judge reject" in ended.validation.rationale
    assert TURN_2_TASK not in user_messages(judged, created)
    sim = simulation(judged, created)
    assert sim.now - sim.env.start_time < sim.env.duration  # stopped there, not run out


async def test_the_event_loop_serves_on_while_the_judge_thinks(
    judged: Service, script: JudgeScript
) -> None:
    script.gate = threading.Event()
    created = await create(judged, calendar_json("two_turns", second_turn=True))
    sim = simulation(judged, created)
    assert sim.judge is not None
    sandboxes: list[Any] = []
    are_call = sim.judge.link._are_call

    def observed(*args: Any, **kwargs: Any) -> Any:
        sandboxes.append(sandbox_module.current())
        return are_call(*args, **kwargs)

    sim.judge.link._are_call = observed
    async with anyio.create_task_group() as tg:
        ended: list[EndedItem] = []

        async def agent() -> None:
            ended.append(await play(created, [CALENDAR_REWORDED, CALENDAR_DONE], [EMAIL, DONE]))

        tg.start_soon(agent)
        # The end of turn 1: the judge's LLM is asked from inside a tick, and does not answer.
        assert await anyio.to_thread.run_sync(script.entered.wait, WALL_S)
        status, _headers, _body = await http_get(judged, "/health")
        assert status == 200
        async with connect(
            judged.ws_url("scenario_tutorial"), role=Role.OBSERVER, token=ADMIN
        ) as other:
            assert await other.get_state(["AgentUserInterface"])
        assert not sim.ended
        assert TURN_2_TASK not in user_messages(judged, created)
        script.gate.set()
    assert ended[0].validation == Validation(success=True, rationale="None")
    assert sandboxes and all(box is sim.sandbox for box in sandboxes)


async def test_gaia2_clis_status_stays_running_until_the_judges_verdict_is_out(
    stub: StubLLM, script: JudgeScript, tmp_path: Path
) -> None:
    async with serving(tmp_path, judge_options(stub.endpoint), gaia2_port=0) as service:
        created = await create(service, calendar_json("one_turn"))
        runner = Harness(service.gaia2_url(created.session_id))
        script.gate = threading.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(play, created, [CALENDAR_REWORDED, CALENDAR_DONE])
            # The last turn is judged as the session ends: its LLM does not answer yet.
            assert await anyio.to_thread.run_sync(script.entered.wait, WALL_S)
            during = await runner.status()
            script.gate.set()
        after = await runner.wait_status()
    assert during["status"] == "running" and "judgment" not in during
    assert after["status"] == "complete" and after["judgment"]["success"] is True


# -- durations ------------------------------------------------------------------------------


@pytest.mark.parametrize(("tags", "duration"), [(("Execution",), 1800.0), (("Time",), 420.0)])
async def test_a_judged_session_lasts_as_long_as_in_gaia2(
    judged: Service, script: JudgeScript, tags: tuple[str, ...], duration: float
) -> None:
    created = await create(judged, tagged(scenario_json(SPECS["tiny_email"]), *tags))
    assert simulation(judged, created).clock_state().duration == duration


async def test_without_a_judge_a_benchmark_session_is_not_judged_and_keeps_its_duration(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, None) as service:
        text = scenario_json(SPECS["tiny_email"])
        created = await create(service, text, import_mode="benchmark")
        json_duration = json.loads(text)["metadata"]["definition"]["duration"]
        assert json_duration not in (1800.0, 420.0)
        assert simulation(service, created).clock_state().duration == json_duration
        ended = await play(created, [EMAIL, DONE])
        assert ended.validation == NO_JUDGE
        auto = await create(service, scenario_json(SPECS["tiny_skip"]))
        assert auto.import_mode == "plain"  # single-turn: auto imports it plain, as before


async def test_the_session_listing_names_its_judge(judged: Service, script: JudgeScript) -> None:
    created = await create(judged, scenario_json(SPECS["tiny_email"]))
    status, _headers, body = await http_get(
        judged, "/api/sessions", {"Authorization": f"Bearer {ADMIN}"}
    )
    assert status == 200
    [listed] = [s for s in json.loads(body)["sessions"] if s["id"] == created.session_id]
    assert listed["judge"] == {"model": f"openai/{JUDGE_MODEL}", "provider": "local"}


# -- a failing judge ------------------------------------------------------------------------


@pytest.fixture
async def judge_down(tmp_path: Path) -> AsyncIterator[Service]:
    """A server whose judge endpoint refuses connections (a port nobody listens on)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with serving(tmp_path, judge_options(f"http://127.0.0.1:{port}/v1")) as service:
        yield service


async def test_a_judge_failing_on_the_last_turn_fails_the_session_saying_why(
    judge_down: Service,
) -> None:
    created = await create(judge_down, calendar_json("lunch"))
    ended = await play(created, [CALENDAR_REWORDED, CALENDAR_DONE])
    assert ended.validation is not None
    assert ended.validation.success is False
    assert ended.validation.rationale == "Exception"  # ARE's, when its judge raises
    assert "the judge (model 'openai/judge' via provider 'local') failed" in (
        ended.validation.exception
    )
    assert "Connection refused" in ended.validation.exception


async def test_a_judge_failing_at_a_turns_end_ends_the_session_failed_saying_why(
    judge_down: Service,
) -> None:
    created = await create(judge_down, calendar_json("two_turns", second_turn=True))
    ended = await play(created, [CALENDAR_REWORDED, CALENDAR_DONE])
    assert ended.state == "failed"
    assert ended.reason is not None and "judging turn 1 of 2" in ended.reason
    assert ended.validation is not None
    assert ended.validation.success is False
    assert "Connection refused" in ended.validation.exception
    assert TURN_2_TASK not in user_messages(judge_down, created)


# -- options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--judge_model", "openai/judge"], "--judge_model given without --judge_provider"),
        (["--judge_endpoint", "http://127.0.0.1:9/v1"], "without --judge_provider"),
        (["--judge_provider", "local"], "--judge_provider local needs --judge_endpoint"),
        (["--judge_provider", "nobody"], "'nobody' is not one of ARE's providers"),
        (
            ["--judge_provider", "local", "--judge_endpoint", "127.0.0.1:9"],
            "is not an http(s) URL",
        ),
    ],
)
def test_serve_refuses_incomplete_judge_options_at_start_up(
    options: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--port", "0", *options]) == 2
    assert message in capsys.readouterr().err


async def test_serve_with_judge_options_judges_its_gaia2_scenarios(
    stub: StubLLM, tmp_path: Path
) -> None:
    scenario = tmp_path / "tiny_email.json"
    scenario.write_text(scenario_json(SPECS["tiny_email"]))
    # A front (one session worker is enough), whose banner says what its workers say of the
    # judge.
    command = [
        sys.executable, "-m", "areasync.cli", "serve", "--port", "0", "--workers", "1",
        "--mode", "fast",
        "--token", ADMIN, "--trace-dir", str(tmp_path / "traces"), "--scenario", str(scenario),
        "--judge_model", f"openai/{JUDGE_MODEL}", "--judge_provider", "local",
        "--judge_endpoint", stub.endpoint,
    ]  # fmt: skip
    async with await anyio.open_process(command) as process:
        assert process.stdout is not None
        banner = ""
        with anyio.fail_after(WALL_S):
            async for chunk in TextReceiveStream(process.stdout):
                banner += chunk
                if "Ctrl-C" in banner:
                    break
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(WALL_S):
            assert await process.wait() == 0
    assert "judge:       model 'openai/judge' via provider 'local'" in banner
    assert "session tiny_email  (scenario tiny_email, fast, benchmark import, judged" in banner


def test_serve_help_documents_the_judge_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--judge_model", "--judge_provider", "--judge_endpoint"):
        assert option in text
    assert "1800 s, 420 s for Time scenarios" in text


def test_the_default_judge_model_is_ares() -> None:
    from are.simulation.validation.configs import DEFAULT_JUDGE_MODEL as ARES

    assert DEFAULT_JUDGE_MODEL == ARES


# -- the sandbox ----------------------------------------------------------------------------


def with_attachment(text: str, path: Path) -> str:
    """The scenario with its oracle's email carrying `path` as an attachment."""
    document = json.loads(text)
    [email] = [
        e
        for e in document["events"]
        if e["event_type"] == "AGENT" and e["action"]["function"] == "send_email"
    ]
    email["action"]["args"].append(json_arg("attachment_paths", json.dumps([str(path)]), "list"))
    return json.dumps(document)


async def test_the_oracle_pre_run_reads_no_host_file(
    judged: Service, script: JudgeScript, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the host's secret")
    text = with_attachment(scenario_json(SPECS["tiny_email"]), secret)
    with pytest.raises(AreasyncError, match="could not set up Gaia2's judge") as refused:
        await create(judged, text)
    assert "it is outside this session's sandbox" in str(refused.value)
