"""ARE's default agent over the socket plays a session exactly as ARE's runner plays it in-process.

For every scenario of the tiny Gaia2 dataset, with the stub LLM playing `agent_scripts()`,
`areasync.agents.are.agent` (what `areasync agent are` runs) attached to a live fast session
makes the same tool calls as ARE's default agent run by ARE's own `ScenarioRunner`, the stub
receives the same requests (system prompt with the tool descriptions, then the same
conversation, ids aside), and the session's event log equals the in-process run's in the
conformance normal form. `tiny_reads` adds reads whose results are ARE objects and calls that
fail in the app or in binding, so that what the model reads of results and errors is checked
too. See tests/agents/runs.py for the two runs.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import anyio
import anyio.from_thread
import anyio.lowlevel
import pytest

from areasync.conformance.normal_form import first_difference
from areasync.gaia2 import compare
from areasync.gaia2.dataset import (
    DELAY,
    agent_scripts,
    expected_verdicts,
    write_dataset,
)
from areasync.gaia2.stub_llm import JUDGE_MODEL, Script, StubLLM
from tests.agents.runs import (
    READS_ID,
    READS_MARKER,
    SCENARIOS,
    Run,
    in_process,
    over_the_socket,
    prompts,
    read_steps,
)
from tests.stubs import stub_fixture, stub_llm
from tests.waiting import eventually_blocking, settled
from tests.walls import JumpingWall

SCENARIO_IDS = [*SCENARIOS, READS_ID]


class SleepSpy:
    """Stands in for the `time` module of ARE's agent loop: records `sleep`, never sleeps."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    def __getattr__(self, name: str) -> Any:
        import time

        return getattr(time, name)


stub = stub_fixture(lambda: Script(agent={**agent_scripts(), READS_MARKER: read_steps()}))


@pytest.fixture(scope="module")
def reference(stub: StubLLM) -> dict[str, Run]:
    return {scenario_id: in_process(stub, scenario_id) for scenario_id in SCENARIO_IDS}


@pytest.fixture(scope="module")
def live(stub: StubLLM, reference: dict[str, Run]) -> dict[str, Any]:
    """The socket runs, with the idle `time.sleep` of ARE's agent loop spied on."""
    import are.simulation.agents.default_agent.are_simulation_main as agent_main

    spy = SleepSpy()
    with patch.object(agent_main, "time", spy):
        runs = anyio.run(over_the_socket, stub, SCENARIO_IDS)
    return {"runs": runs, "slept": spy.slept}


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_the_agent_makes_the_same_tool_calls(
    reference: dict[str, Run], live: dict[str, Any], scenario_id: str
) -> None:
    ours, theirs = live["runs"][scenario_id], reference[scenario_id]
    assert ours.report.ok, ours.report.error
    assert theirs.calls, "the in-process agent made calls"
    assert ours.calls == theirs.calls


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_the_session_logs_what_ares_run_logs(
    reference: dict[str, Run], live: dict[str, Any], scenario_id: str
) -> None:
    ours, theirs = live["runs"][scenario_id].log, reference[scenario_id].log
    assert ours == theirs, first_difference(ours, theirs)


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_the_model_receives_the_same_prompts(
    reference: dict[str, Run], live: dict[str, Any], scenario_id: str
) -> None:
    ours, theirs = prompts(live["runs"][scenario_id]), prompts(reference[scenario_id])
    assert len(ours) == len(theirs) > 0
    for step, (mine, are) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == are, f"request {step} differs"


def test_the_system_prompt_describes_the_scenarios_tools(live: dict[str, Any]) -> None:
    system = live["runs"]["tiny_email"].requests[0]["messages"][0]["content"]
    for described in (
        "- EmailClientV2__send_email: Acts on app EmailClientV2:",
        "- SystemApp__wait_for_notification:",
        "Returns an output of type: string",  # from the app method's annotation
        "Whenever the environment is updated with any of the following tools",  # ARE's policy
    ):
        assert described in system
    # ARE's agent drops the user-message readers: its user messages come as notifications.
    assert "AgentUserInterface__get_last_message_from_user" not in system


def test_results_and_failures_read_as_in_process(live: dict[str, Any]) -> None:
    """The observations of `tiny_reads` are ARE objects and the apps' own error texts (their
    equality with the in-process run is test_the_model_receives_the_same_prompts)."""
    last = live["runs"][READS_ID].requests[-1]["messages"]
    text = "\n".join(str(message["content"]) for message in last)
    assert "ReturnedEmails(emails=[Email(" in text
    assert "Email: user@meta.com\nIs User: True" in text  # ARE's Contact.__str__
    assert "Error in tool call execution: Email with id 0000" in text
    assert "missing a required argument: 'idx'" in text
    calls = live["runs"][READS_ID].report.calls
    assert [call.error is not None for call in calls].count(True) == 2


def test_idling_between_turns_never_sleeps(live: dict[str, Any]) -> None:
    """The delayed scenarios idle DELAY simulated seconds between turns, which ARE's loop
    polls through with time.sleep(1); over the socket the agent waits on the stream."""
    assert live["slept"] == []
    for scenario_id in ("tiny_delay", "tiny_delay_skip"):
        calls = live["runs"][scenario_id].report.calls
        assert calls[-1].time >= DELAY


def test_the_agent_stops_the_session_when_done(live: dict[str, Any]) -> None:
    for run in live["runs"].values():
        assert run.report.stopped_by_agent
        assert run.report.ended_state == "stopped"
        # No judge yet: ARE's "no validation", as the in-process run without a judge.
        assert run.validation is not None and run.validation.success is None


def test_fixed_generation_time_moves_the_clock_as_ares_runner_does(stub: StubLLM) -> None:
    """`fixed`: ARE adds 1 s of simulated time per generation; a controller's jump does here."""
    theirs = in_process(stub, "tiny_delay", generation="fixed")
    ours = anyio.run(lambda: over_the_socket(stub, ["tiny_delay"], generation="fixed"))[
        "tiny_delay"
    ]
    assert [call.time for call in ours.report.calls] == [1.0, 2.0, 304.0, 305.0]
    assert ours.report.generation_jumps == len(ours.requests)
    assert ours.log == theirs.log, first_difference(ours.log, theirs.log)
    assert prompts(ours) == prompts(theirs)


class Witness(Script):
    """The stub, noting the session's clock and leases whenever the model is asked.

    The model thinks `seconds` of the session's wall (`wall`, moved by hand) and then until
    the service's event loop has settled (`tests.waiting.settled`, run on that loop from the
    stub's thread): whatever the session would do meanwhile, it has done by then."""

    def __init__(self, seconds: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seconds = seconds
        self.wall = JumpingWall(follows=True)
        self.sim: Any = None
        self.loop: Any = None  # the service's event loop (anyio's token of it)
        self.seen: list[tuple[float, float, dict[str, float], str]] = []

    def watch(self, session: Any) -> None:
        """`over_the_socket`'s `on_session`, on the service's loop."""
        self.sim = session.sim
        self.loop = anyio.lowlevel.current_token()

    def reply(self, request: Any) -> str:
        before = self.sim.clock_state(peek=True).time
        anyio.from_thread.run_sync(self.wall.jump, self.seconds, token=self.loop)
        anyio.from_thread.run(settled, token=self.loop)
        state = self.sim.clock_state(peek=True)
        self.seen.append((before, state.time, self.sim.leases, state.state))
        return super().reply(request)


def test_the_clock_stands_still_while_the_model_generates() -> None:
    """Fast mode: the agent holds its busy lease through every generation, so a slow model
    lets no simulated time pass (tiny_email would otherwise run to its end meanwhile)."""
    witness = Witness(0.3, agent=agent_scripts())
    with stub_llm(witness) as slow:
        run = anyio.run(
            lambda: over_the_socket(
                slow, ["tiny_email"], on_session=witness.watch, wall=witness.wall.wall
            )
        )
    assert len(witness.seen) == 2
    for before, after, leases, state in witness.seen:
        assert after == before
        assert any(holder.startswith("agent:") for holder in leases), leases
        assert state == "running"
    assert [call.time for call in run["tiny_email"].report.calls] == [0.0, 0.0]


def test_a_realtime_clock_is_paused_while_the_model_generates() -> None:
    """Realtime: a controller pauses the clock around each generation, as ARE's runner pauses
    its environment, and resumes it after."""
    witness = Witness(0.2, agent=agent_scripts())
    with stub_llm(witness) as slow:
        run = anyio.run(
            lambda: over_the_socket(
                slow,
                ["tiny_email"],
                mode="realtime",
                speed=1.0,
                on_session=witness.watch,
                wall=witness.wall.wall,
            )
        )
    assert len(witness.seen) == 2
    for before, after, _, state in witness.seen:
        assert state == "paused"
        assert after == before
    assert run["tiny_email"].report.ok
    assert [call for call, _ in run["tiny_email"].calls] == [
        "EmailClientV2__send_email",
        "AgentUserInterface__send_message_to_user",
    ]


# -- verdicts -------------------------------------------------------------------------------


# The judged service (`areasync serve --judge_model/--judge_provider/--judge_endpoint`) gives
# Gaia2 sessions ARE's judge, and `ended.validation` carries its verdict.
def test_the_agent_over_the_socket_gets_ares_verdicts(
    stub: StubLLM, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """ARE's verdicts (`are-benchmark run`'s pipeline with ARE's judge, the stub judging)
    equal the judged sessions' `ended.validation` after the agent played them."""
    dataset = write_dataset(tmp_path_factory.mktemp("gaia2"), only=SCENARIOS)
    out = tmp_path_factory.mktemp("bench")
    compare.run_areasync(compare.bench_args(dataset, out, stub.endpoint))
    theirs = {
        scenario_id: row["status"] == "success"
        for (scenario_id, _), row in compare.verdicts(out).items()
    }
    judge = {
        "judge_model": f"openai/{JUDGE_MODEL}",
        "judge_provider": "local",
        "judge_endpoint": stub.endpoint,
    }
    runs = anyio.run(lambda: over_the_socket(stub, list(SCENARIOS), service_options=judge))
    ours = {scenario_id: run.validation.success for scenario_id, run in runs.items()}
    assert theirs == {scenario_id: expected_verdicts()[scenario_id] for scenario_id in SCENARIOS}
    assert ours == theirs


# -- without a controller ---------------------------------------------------------------------


def test_with_an_agent_token_the_session_runs_on_to_its_end(
    stub: StubLLM, reference: dict[str, Run]
) -> None:
    """An agent token cannot stop the session: once the agent is done it goes idle, and the
    fast session runs to its duration at once."""
    run = anyio.run(lambda: over_the_socket(stub, ["tiny_email"], controller=False))
    ours = run["tiny_email"]
    assert ours.calls == reference["tiny_email"].calls
    assert not ours.report.stopped_by_agent
    assert (ours.report.ended_state, ours.report.reason) == ("stopped", None)


def test_the_agent_ends_its_loop_when_the_session_ends(stub: StubLLM) -> None:
    """Imported plain, tiny_delay's second message hangs off the oracle's end of turn, so it
    never comes: ARE's agent (no number of turns) waits for notifications until the
    environment stops. The session's end stops it the same way, at the same point."""
    import are.simulation.agents.default_agent.are_simulation_main as agent_main

    theirs = in_process(stub, "tiny_delay", import_mode="plain")
    spy = SleepSpy()
    with patch.object(agent_main, "time", spy):
        run = anyio.run(
            lambda: over_the_socket(stub, ["tiny_delay"], import_mode="plain", controller=False)
        )
    ours = run["tiny_delay"]
    assert ours.report.ok, ours.report.error
    assert ours.calls == theirs.calls
    assert ours.log == theirs.log, first_difference(ours.log, theirs.log)
    assert prompts(ours) == prompts(theirs)
    assert spy.slept == []


def test_the_socket_keeps_receiving_while_the_model_generates() -> None:
    """ARE's agent blocks while the model generates; the client's reader does not: in a
    realtime session that nothing pauses (an agent token), the ticks of those wall seconds
    reach the agent's client while the stub is still answering."""
    clients: list[Any] = []
    received: list[tuple[int, int]] = []

    class Counting(Script):
        def reply(self, request: Any) -> str:
            before = clients[0].seq
            # The model thinking, in the stub's own thread, until a tick reached the agent's
            # client meanwhile (the bound only turns a blocked reader into a failure).
            eventually_blocking(lambda: clients[0].seq != before, what="a tick meanwhile")
            received.append((before, clients[0].seq))
            return super().reply(request)

    counting = Counting(agent=agent_scripts())
    with stub_llm(counting) as slow:
        run = anyio.run(
            lambda: over_the_socket(
                slow,
                ["tiny_email"],
                mode="realtime",
                speed=100.0,
                controller=False,
                on_agent=clients.append,
            )
        )
    assert run["tiny_email"].report.ok
    assert len(received) == 2
    assert all(after > before for before, after in received), received
