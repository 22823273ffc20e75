"""`areasync bench run` gives ARE's `are-benchmark run` verdicts, on the tiny Gaia2 dataset.

Both sides run for real against the stub LLM: ARE's own CLI in a subprocess (`compare.start_are`),
areasync's in this process, at the same time. ARE idles every wait between turns in real time,
so the default suite gives ARE only the scenarios without a long wait (`SPECS[...].long_wait`):
one agent run over all of them and one `--oracle --num_runs 2` run (oracle runs jump over
waits). areasync runs those too, and also the long-wait ones, whose verdicts it must give as ARE
does; the `soak` tests prove those verdicts on ARE's side (its run takes about 26 minutes: the
1,500 s turn) and repeat everything with `--num_runs 2`.

Which case gives which verdict, and why, is in `areasync.gaia2.dataset`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from are.simulation.scenarios.config import MAX_SCENARIO_DURATION, MAX_TIME_SCENARIO_DURATION

from areasync.gaia2 import compare
from areasync.gaia2.dataset import (
    CONFIG,
    DELAY,
    LATE_DELAY,
    SPECS,
    TIME_CONFIG,
    TIME_EVENT,
    agent_scripts,
    judge_rules,
    select,
    write_dataset,
)
from areasync.gaia2.stub_llm import (
    EMAIL_CHECKER,
    SIGNATURE_CHECKER,
    TONE_CHECKER,
    USER_MESSAGE_CHECKER,
    Script,
    StubLLM,
    judge_prompt,
)
from tests.stubs import stub_fixture

Key = tuple[str, int | None]
# ARE's own `are-benchmark run` is the reference: its two runs cost ARE about 25 s of CPU.
pytestmark = pytest.mark.slow

QUICK = [s.scenario_id for s in select(long_wait=False, config=CONFIG)]
SLOW = [s.scenario_id for s in select(long_wait=True, config=CONFIG)]
TIMED = [s.scenario_id for s in select(config=TIME_CONFIG)]


stub = stub_fixture(lambda: Script(agent=agent_scripts(), judge=judge_rules()))


@dataclass
class Runs:
    """Output folders of the default suite's runs (`are_*`: ARE's CLI; the rest: areasync)."""

    are_agent: Path  # agent, QUICK
    are_oracle: Path  # --oracle --num_runs 2, every execution scenario
    agent: Path  # agent, QUICK
    oracle: Path  # --oracle --num_runs 2, every execution scenario
    slow: Path  # agent, SLOW
    timed: Path  # agent, TIMED (config `time`)
    threads: list[tuple[str, object]]  # threads started during `slow`
    waits: list[tuple[str, float | None]]  # real sleeps/waits asked for during `slow`


@contextmanager
def _spy() -> Iterator[tuple[list[tuple[str, object]], list[tuple[str, float | None]]]]:
    """Records threads started, and real `time.sleep` / `threading.Event.wait` calls made
    through the modules' attributes (as ARE makes them), while in the `with` block."""
    threads: list[tuple[str, object]] = []
    waits: list[tuple[str, float | None]] = []
    start, sleep, wait = threading.Thread.start, time.sleep, threading.Event.wait

    def recording_start(thread: threading.Thread) -> None:
        threads.append((thread.name, getattr(thread, "_target", None)))
        start(thread)

    def recording_sleep(seconds: float) -> None:
        waits.append((type(threading.current_thread()).__name__, seconds))
        sleep(seconds)

    def recording_wait(event: threading.Event, timeout: float | None = None) -> bool:
        waits.append((type(threading.current_thread()).__name__, timeout))
        return wait(event, timeout)

    with (
        patch.object(threading.Thread, "start", recording_start),
        patch.object(time, "sleep", recording_sleep),
        patch.object(threading.Event, "wait", recording_wait),
    ):
        yield threads, waits


@pytest.fixture(scope="module")
def runs(stub: StubLLM, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """ARE's two runs start first, in subprocesses; areasync's four run meanwhile."""
    root = tmp_path_factory.mktemp("gaia2_parity")
    quick = write_dataset(root / "quick", only=QUICK)
    slow = write_dataset(root / "slow", only=SLOW)
    every = write_dataset(root / "every", config=CONFIG)
    timed = write_dataset(root / "timed", config=TIME_CONFIG)

    def args(dataset: Path, out: str, **options: Any) -> list[str]:
        return compare.bench_args(
            dataset, root / out, stub.endpoint, extra=compare.CONCURRENT, **options
        )

    are_agent = compare.start_are(args(quick, "are_agent"))
    are_oracle = compare.start_are(args(every, "are_oracle", oracle=True, num_runs=2))
    compare.run_areasync(args(quick, "agent"))
    compare.run_areasync(args(every, "oracle", oracle=True, num_runs=2))
    with _spy() as (threads, waits):
        compare.run_areasync(args(slow, "slow"))
    compare.run_areasync(args(timed, "timed", config=TIME_CONFIG))
    are_agent.wait(timeout=240)
    are_oracle.wait(timeout=240)
    return Runs(
        are_agent=root / "are_agent",
        are_oracle=root / "are_oracle",
        agent=root / "agent",
        oracle=root / "oracle",
        slow=root / "slow",
        timed=root / "timed",
        threads=threads,
        waits=waits,
    )


def _users(events: list[tuple[str, str, float]]) -> list[float]:
    return [t for kind, _, t in events if kind == "USER"]


def _judge_asked(stub: StubLLM, *needles: str) -> list[dict[str, Any]]:
    """The judge calls whose checker prompt holds every needle."""
    return [
        r
        for r in stub.requests
        if stub.script.is_judge(r) and all(n in judge_prompt(r) for n in needles)
    ]


# --- Parity: both sides, the scenarios without a long wait -------------------------------------


def test_agent_run_verdicts_equal_ares(runs: Runs) -> None:
    """Status, score, exception and the judge's rationale per scenario, as ARE wrote them."""
    ours, are = compare.verdicts(runs.agent), compare.verdicts(runs.are_agent)
    assert {key[0] for key in are} == set(QUICK)
    assert ours == are


def test_agent_run_stats_equal_ares(runs: Runs) -> None:
    assert compare.stats(runs.agent) == compare.stats(runs.are_agent)


def test_agent_run_verdicts_are_the_specs(runs: Runs) -> None:
    """The verdicts `SPECS` states for each case (and the parity above proves for ARE)."""
    for (scenario_id, _), row in compare.verdicts(runs.agent).items():
        expected = SPECS[scenario_id].success
        assert (row["status"], row["score"]) == (
            ("success", 1.0) if expected else ("failed", 0.0)
        ), scenario_id
        assert not row["has_exception"], row


def test_agent_run_timelines_match_ares(runs: Runs) -> None:
    """The same events in the same order; user messages at the same simulated times.

    ARE's agent polls for the next turn's message on its own real-time second (`time.sleep(1)`
    beside the environment's ticking thread), so each turn it reaches can start up to a second
    or two later than on areasync's virtual wall, where the poll follows the tick at once.
    """
    ours, are = compare.timeline(runs.agent), compare.timeline(runs.are_agent)
    assert set(ours) == set(are)
    for key, events in ours.items():
        assert [e[:2] for e in events] == [e[:2] for e in are[key]], key
        for turn, (t_ours, t_are) in enumerate(zip(_users(events), _users(are[key]), strict=True)):
            assert abs(t_ours - t_are) <= 3.0 * turn, (key, turn, t_ours, t_are)


def test_oracle_runs_twice_with_ares_verdicts_and_stats(runs: Runs) -> None:
    """`--oracle --num_runs 2`: every scenario twice (run numbers 1 and 2), all passing."""
    ours = compare.verdicts(runs.oracle)
    assert set(ours) == {(k, n) for k in (*QUICK, *SLOW) for n in (1, 2)}
    assert ours == compare.verdicts(runs.are_oracle)
    assert compare.stats(runs.oracle) == compare.stats(runs.are_oracle)
    assert all(row["status"] == "success" for row in ours.values()), ours


# --- What each case shows (both sides) ----------------------------------------------------------


def _row(out: Path, scenario_id: str) -> dict[str, Any]:
    return compare.verdicts(out)[(scenario_id, None)]


def test_missing_action_fails_on_tool_counts(runs: Runs) -> None:
    for out in (runs.agent, runs.are_agent):
        rationale = _row(out, "tiny_skip")["rationale"]
        assert "'EmailClientV2__send_email': Agent count 0, Oracle count 1" in rationale


def test_wrong_recipient_fails_the_hard_checker_without_asking_the_judge(
    runs: Runs, stub: StubLLM
) -> None:
    for out in (runs.agent, runs.are_agent):
        rationale = _row(out, "tiny_wrong_recipient")["rationale"]
        assert "EmailClientV2__send_email" in rationale
        assert "reason: tool judge reject" in rationale
    assert _judge_asked(stub, "carol@example.com") == []


def test_paraphrased_email_fails_because_ares_engine_lowercases_true(
    runs: Runs, stub: StubLLM
) -> None:
    """Same calls, other words: the soft checkers are asked, and the first, the signature
    checker, is answered `[[True]]` - which ARE's LiteLLM engine turns into `[[true]]`, no vote
    (None), so the email is rejected there; the tone and content checkers are never asked."""
    words = "Hello Bob, hope you are well!"
    asked = _judge_asked(stub, SIGNATURE_CHECKER, words)
    assert asked and all("[[True]]" in stub.script.reply(r) for r in asked)
    assert _judge_asked(stub, TONE_CHECKER, words) == []
    assert _judge_asked(stub, EMAIL_CHECKER, words) == []
    for out in (runs.agent, runs.are_agent):
        row = _row(out, "tiny_paraphrase_email")
        assert row["status"] == "failed"
        assert "EmailClientV2__send_email" in row["rationale"]
        assert "reason: tool judge reject" in row["rationale"]


def test_three_turns_pass_with_an_answer_the_judge_accepts(runs: Runs, stub: StubLLM) -> None:
    """Turn 3's answer, "7.0" for "7", is put to the judge's user-message checker, which
    accepts it; each turn's message came after the agent ended the previous turn."""
    assert _judge_asked(stub, USER_MESSAGE_CHECKER, "content: 7.0\n")
    for out in (runs.agent, runs.are_agent):
        assert _row(out, "tiny_three_turns")["status"] == "success"
        events = compare.timeline(out)[("tiny_three_turns", None)]
        assert len(_users(events)) == 3, events


def test_a_turn_the_judge_rejects_ends_the_scenario(runs: Runs, stub: StubLLM) -> None:
    """The judge rejects turn 2's "41.0" (for "41"): ARE stops the environment at that turn's
    check, the third user message never comes, the verdict is turn 2's."""
    rejected = _judge_asked(stub, USER_MESSAGE_CHECKER, "content: 41.0\n")
    assert rejected and all("[[Failure]]" in stub.script.reply(r) for r in rejected)
    for out in (runs.agent, runs.are_agent):
        row = _row(out, "tiny_turn_rejected")
        assert row["status"] == "failed"
        assert "AgentUserInterface__send_message_to_user" in row["rationale"]
        assert "-content: 41\n" in row["rationale"]
        events = compare.timeline(out)[("tiny_turn_rejected", None)]
        assert len(_users(events)) == 2, events
        assert events[-1][:2] == ("AGENT", "AgentUserInterface.send_message_to_user"), events
        assert [e[1] for e in events].count("EmailClientV2.send_email") == 1, events


# --- Long waits: areasync's side (ARE's in the soak tests) -------------------------------------


def test_long_wait_scenarios_get_ares_verdicts(runs: Runs) -> None:
    for out, chosen in ((runs.slow, SLOW), (runs.timed, TIMED)):
        table = compare.verdicts(out)
        assert {key[0] for key in table} == set(chosen)
        for (scenario_id, _), row in table.items():
            assert row["status"] == ("success" if SPECS[scenario_id].success else "failed"), row


def test_later_turns_come_their_delay_after_the_previous_turn(runs: Runs) -> None:
    """Turn 2's message comes its delay of simulated time after turn 1 ended (plus ARE's
    one-tick turn check), and the agent acts on it there."""
    timelines = compare.timeline(runs.slow)
    for scenario_id, delay in (
        ("tiny_delay", DELAY),
        ("tiny_delay_skip", DELAY),
        ("tiny_late_turn", LATE_DELAY),
    ):
        events = timelines[(scenario_id, None)]
        users = _users(events)
        assert len(users) == 2, events
        assert delay <= users[1] - users[0] <= delay + 5, events
        assert events[-1][:2] == ("AGENT", "AgentUserInterface.send_message_to_user"), events
        assert events[-1][2] >= users[1], events


def test_time_scenarios_get_420_seconds_the_others_1800(runs: Runs) -> None:
    """ARE's runner gives a scenario tagged Time 420 s, any other 1,800 s, whatever its JSON
    said (the trace records the duration it ran with)."""
    for out, expected in (
        (runs.slow, MAX_SCENARIO_DURATION),
        (runs.agent, MAX_SCENARIO_DURATION),
        (runs.timed, MAX_TIME_SCENARIO_DURATION),
    ):
        assert set(compare.durations(out).values()) == {expected}, out


def test_a_turn_due_past_the_time_limit_never_comes(runs: Runs) -> None:
    """`tiny_time_late_turn`'s second message is due about 1,500 s in: past the 420 s of a Time
    scenario. The run idles to its end and stops there without turn 2; ARE's judge, whose
    oracle pre-run also stopped at 420 s, finds nothing missing (see the soak test)."""
    key = ("tiny_time_late_turn", None)
    events = compare.timeline(runs.timed)[key]
    assert len(_users(events)) == 1, events
    assert compare.run_durations(runs.timed)[key] >= MAX_TIME_SCENARIO_DURATION


def test_time_agent_waits_for_the_email_then_answers(runs: Runs) -> None:
    """`tiny_time_wait`: the agent's `wait_for_notification` jumps to Bob's email at 300 s,
    and the agent answers it there; `tiny_time_early` answers before it came, and fails."""
    events = compare.timeline(runs.timed)[("tiny_time_wait", None)]
    kinds = [e[:2] for e in events]
    assert kinds == [
        ("USER", "AgentUserInterface.send_message_to_agent"),
        ("AGENT", "SystemApp.wait_for_notification"),
        ("ENV", "EmailClientV2.send_email_to_user_only"),
        ("AGENT", "EmailClientV2.send_email"),
        ("AGENT", "AgentUserInterface.send_message_to_user"),
    ], events
    assert events[2][2] == TIME_EVENT
    assert events[3][2] >= TIME_EVENT
    early = compare.verdicts(runs.timed)[("tiny_time_early", None)]
    assert "'EmailClientV2__send_email_to_user_only': Agent count 0" in early["rationale"]


def test_an_event_past_the_time_limit_comes_but_the_judge_never_expected_it(
    runs: Runs,
) -> None:
    """`tiny_time_past_limit`: Bob's email is due 1,500 s in. The agent's wait jumps there
    (past the 420 s end, as ARE's does) and it answers as the oracle would, yet fails: ARE's
    judge pre-ran the oracle only to 420 s, so it counts the email and the answer as extra."""
    key = ("tiny_time_past_limit", None)
    events = compare.timeline(runs.timed)[key]
    assert [e[1] for e in events[2:4]] == [
        "EmailClientV2.send_email_to_user_only",
        "EmailClientV2.send_email",
    ], events
    assert events[2][2] == LATE_DELAY > MAX_TIME_SCENARIO_DURATION
    rationale = compare.verdicts(runs.timed)[key]["rationale"]
    assert "'EmailClientV2__send_email_to_user_only': Agent count 1, Oracle count 0" in rationale
    assert "'EmailClientV2__send_email': Agent count 1, Oracle count 0" in rationale


def test_bench_run_idles_on_virtual_time(runs: Runs) -> None:
    """The long waits cost no real sleeping.

    Between turns ARE's default agent polls with `time.sleep(1)` (and ARE's environment thread
    would tick once a second): about 2,100 polls and ticks over `SLOW`'s waits. Under
    `areasync bench run` each moves the scenario's virtual wall, so the whole run asks the real
    clock for a few untimed waits (futures of ARE's loader pool) and a few hundredths of a
    second - not one sleep per simulated second.
    """
    simulated = sum(events[-1][2] for events in compare.timeline(runs.slow).values())
    assert simulated >= 2 * DELAY + LATE_DELAY
    # tqdm's monitor thread waits on its own schedule (10 s), whatever the run does. ARE's
    # stream_pool polls its futures every 10 ms: a handful of those, depending on load.
    waits = [(thread, s) for thread, s in runs.waits if thread != "TMonitor"]
    timed = sum(s for _, s in waits if s is not None)
    assert timed < simulated / 100, waits
    assert len(waits) < simulated / 4, waits


def test_bench_run_starts_no_environment_thread(runs: Runs) -> None:
    """No thread per scenario: no environment loop, no scenario worker, on any thread."""
    from are.simulation.environment import Environment

    names = [name for name, _ in runs.threads]
    loops = [
        name
        for name, target in runs.threads
        if isinstance(getattr(target, "__self__", None), Environment)
    ]
    assert loops == [], names
    # ARE's loader reads files on a pool, tqdm may start its monitor, and the event loop
    # resolves host names on its default executor (`asyncio_N`, shut down by asyncio.run's
    # `_do_shutdown`); nothing else.
    allowed = ("ThreadPoolExecutor", "tqdm", "asyncio_", "Thread-")
    assert [n for n in names if not n.startswith(allowed)] == [], names
    assert [n for n in names if n.startswith("Thread-") and "_do_shutdown" not in n] == []


def test_bench_run_restores_are(runs: Runs) -> None:
    """The clock substitution is scoped to the run: ARE's names are its own again."""
    import are.simulation.agents.default_agent.are_simulation_main as agent_main
    import are.simulation.multi_scenario_runner as multi
    import are.simulation.scenario_runner as scenario_runner
    import are.simulation.scenarios.scenario_imported_from_json.utils as preprocess
    from are.simulation.environment import Environment
    from are.simulation.utils.streaming_utils import stream_pool

    assert scenario_runner.Environment is Environment
    assert preprocess.Environment is Environment
    assert agent_main.time is time
    assert multi.stream_pool is stream_pool


# --- The command itself --------------------------------------------------------------------------


def test_bench_run_help_goes_through_areasync_cli_to_ares_options(capsys: Any) -> None:
    """(That `areasync --help` imports no ARE is tests/cli/test_cli_messages.py's.)"""
    from areasync.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    assert "bench run" in capsys.readouterr().out
    assert main(["bench", "run", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert "--judge_model" in help_text and "--max_concurrent_scenarios" in help_text


# --- Soak: ARE's side of the long waits, and --num_runs 2 with the agent -----------------------


@dataclass
class SoakRuns:
    """(ARE's folder, areasync's folder) per run: agent runs of both configs, twice each, and
    the Time config's oracle run."""

    execution: tuple[Path, Path]
    timed: tuple[Path, Path]
    timed_oracle: tuple[Path, Path]


@pytest.fixture(scope="module")
def soak_runs(stub: StubLLM, tmp_path_factory: pytest.TempPathFactory) -> SoakRuns:
    """Every scenario, `--num_runs 2`: ARE's three runs at once (the 1,500 s turn sets the
    pace: about 26 minutes), areasync's meanwhile."""
    root = tmp_path_factory.mktemp("gaia2_soak")
    dataset = write_dataset(root / "dataset")
    runs: dict[str, tuple[Path, Path]] = {}
    options: dict[str, dict[str, Any]] = {
        "execution": {"num_runs": 2},
        "timed": {"num_runs": 2, "config": TIME_CONFIG},
        "timed_oracle": {"num_runs": 2, "config": TIME_CONFIG, "oracle": True},
    }
    started = []
    for name, opts in options.items():
        are_out, ours_out = root / name / "are", root / name / "areasync"
        runs[name] = (are_out, ours_out)
        args = compare.bench_args(dataset, are_out, stub.endpoint, extra=compare.CONCURRENT, **opts)
        started.append(compare.start_are(args))
    for name, opts in options.items():
        args = compare.bench_args(
            dataset, runs[name][1], stub.endpoint, extra=compare.CONCURRENT, **opts
        )
        compare.run_areasync(args)
    for run in started:
        run.wait(timeout=2 * LATE_DELAY + 600)
    return SoakRuns(**runs)


def _soak_pairs(soak_runs: SoakRuns) -> list[tuple[Path, Path]]:
    return [soak_runs.execution, soak_runs.timed, soak_runs.timed_oracle]


@pytest.mark.soak
def test_soak_verdicts_and_stats_equal_ares(soak_runs: SoakRuns) -> None:
    for are, ours in _soak_pairs(soak_runs):
        assert compare.verdicts(ours) == compare.verdicts(are), ours
        assert compare.stats(ours) == compare.stats(are), ours


@pytest.mark.soak
def test_soak_verdicts_are_the_specs(soak_runs: SoakRuns) -> None:
    """Every scenario, twice, with the verdict `SPECS` states (what the default suite asserts
    for areasync's long waits)."""
    are, _ = soak_runs.execution
    are_timed, _ = soak_runs.timed
    table = {**compare.verdicts(are), **compare.verdicts(are_timed)}
    assert set(table) == {(k, n) for k in SPECS for n in (1, 2)}
    for (scenario_id, _), row in table.items():
        assert row["status"] == ("success" if SPECS[scenario_id].success else "failed"), row


@pytest.mark.soak
def test_soak_timelines_match_ares(soak_runs: SoakRuns) -> None:
    """The same events in order; each user message within a few seconds of ARE's (whose
    agent polls on its own real-time second, later under the load of many scenarios), and the
    same distance into the run for the long waits."""
    for are, ours in _soak_pairs(soak_runs):
        are_times, our_times = compare.timeline(are), compare.timeline(ours)
        assert set(are_times) == set(our_times)
        for key, events in our_times.items():
            assert [e[:2] for e in events] == [e[:2] for e in are_times[key]], key
            pairs = zip(_users(events), _users(are_times[key]), strict=True)
            for turn, (t_ours, t_are) in enumerate(pairs):
                assert abs(t_ours - t_are) <= 5.0 * turn, (key, turn, t_ours, t_are)


@pytest.mark.soak
def test_soak_time_limit_ends_both_runs_at_420_seconds(soak_runs: SoakRuns) -> None:
    """`tiny_time_late_turn`: both sides run to the Time limit and no further."""
    for out in soak_runs.timed:
        for run in (1, 2):
            duration = compare.run_durations(out)[("tiny_time_late_turn", run)]
            assert MAX_TIME_SCENARIO_DURATION <= duration <= MAX_TIME_SCENARIO_DURATION + 5, out
