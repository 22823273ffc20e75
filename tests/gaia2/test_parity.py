"""`areasync bench run` against ARE's `are-benchmark run` on a tiny Gaia2 dataset and a stub LLM.

The default suite runs areasync's side only (in this process) and checks the verdicts ARE's
pipeline gives on this dataset; the `soak` tests run ARE's own CLI in a subprocess (its start-up
and judge construction take ~15 s a run) and assert both wrote the same verdicts and stats.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from areasync.gaia2 import compare
from areasync.gaia2.cli import are_command, bench_run_command
from areasync.gaia2.dataset import (
    DELAY,
    DELAYED,
    SCENARIOS,
    agent_scripts,
    expected_verdicts,
    write_dataset,
)
from areasync.gaia2.stub_llm import Script, StubLLM, actions_taken, format_action


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("gaia2"))


@pytest.fixture(scope="module")
def stub() -> Iterator[StubLLM]:
    with StubLLM(Script(agent=agent_scripts())) as server:
        yield server


def _option_signature(param: click.Parameter) -> tuple[Any, ...]:
    return (
        param.name,
        tuple(param.opts),
        tuple(param.secondary_opts),
        repr(param.type),
        repr(param.default),
        param.required,
        getattr(param, "is_flag", None),
        getattr(param, "hidden", None),
    )


def test_options_are_are_benchmarks() -> None:
    """`areasync bench run` takes exactly `are-benchmark`'s options (not its command argument),
    plus areasync's own three, whose names ARE does not use."""
    ours = {_option_signature(p) for p in bench_run_command().params}
    are = {_option_signature(p) for p in are_command().params if p.name != "command"}
    assert are <= ours
    assert {signature[0] for signature in ours - are} == {"resume", "retry", "report"}
    assert {p.name for p in are_command().params} - {
        p.name for p in bench_run_command().params
    } == {"command"}


def test_stub_speaks_are_default_agent_format() -> None:
    script = Script(
        agent={"marker": [{"action": "A__b", "action_input": {"x": 1}}, {"action": "C__d"}]}
    )
    first = script.reply(
        {"model": "openai/agent", "messages": [{"role": "user", "content": "marker"}]}
    )
    assert first.startswith("Thought:") and '"action": "A__b"' in first
    history = [
        {"role": "user", "content": "marker"},
        {"role": "assistant", "content": first},
    ]
    assert actions_taken(history) == 1
    assert '"action": "C__d"' in script.reply({"model": "agent", "messages": history})
    assert "[[True]]" in script.reply({"model": "openai/judge", "messages": []})
    assert format_action({"action": "X__y"}).rstrip().endswith("}")


@pytest.fixture(scope="module")
def agent_run(
    dataset: Path, stub: StubLLM, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """One in-process `areasync bench run` with the default agent, recording threads started
    and every real `time.sleep` / `threading.Event.wait` asked for (thread class, seconds)."""
    out = tmp_path_factory.mktemp("areasync_agent")
    started: list[tuple[str, object]] = []
    waits: list[tuple[str, float | None]] = []
    original_start = threading.Thread.start
    original_sleep = time.sleep
    original_wait = threading.Event.wait

    def recording_start(self: threading.Thread) -> None:
        started.append((self.name, getattr(self, "_target", None)))
        original_start(self)

    def recording_sleep(seconds: float) -> None:
        waits.append((type(threading.current_thread()).__name__, seconds))
        original_sleep(seconds)

    def recording_wait(self: threading.Event, timeout: float | None = None) -> bool:
        waits.append((type(threading.current_thread()).__name__, timeout))
        return original_wait(self, timeout)

    threading.Thread.start = recording_start  # type: ignore[method-assign]
    # Module attributes, as ARE calls them (`time.sleep(...)`, `event.wait(...)`).
    time.sleep = recording_sleep
    threading.Event.wait = recording_wait  # type: ignore[method-assign]
    try:
        wall = compare.run_areasync(compare.bench_args(dataset, out, stub.endpoint))
    finally:
        threading.Thread.start = original_start  # type: ignore[method-assign]
        time.sleep = original_sleep
        threading.Event.wait = original_wait  # type: ignore[method-assign]
    return {"out": out, "threads": started, "waits": waits, "wall": wall}


def test_bench_run_verdicts(agent_run: dict[str, Any]) -> None:
    """ARE's judge accepts the oracle-playing agent and rejects the one that skips an email.

    `tiny_delay_skip` skips only turn 2's email, so its verdict is decided after the delay.
    """
    table = compare.verdicts(agent_run["out"])
    assert {key[0] for key in table} == set(SCENARIOS)
    for (scenario_id, _), row in table.items():
        expected = expected_verdicts()[scenario_id]
        assert row["status"] == ("success" if expected else "failed"), row
        assert row["score"] == (1.0 if expected else 0.0)
        assert not row["has_exception"]
    for failing in ("tiny_skip", "tiny_delay_skip"):
        assert "EmailClientV2__send_email" in table[(failing, None)]["rationale"]
    stats = compare.stats(agent_run["out"])["statistics"]["global"]
    passes = sum(expected_verdicts().values())
    assert (stats["total_runs"], stats["success_runs"], stats["failed_runs"]) == (
        len(SCENARIOS),
        passes,
        len(SCENARIOS) - passes,
    )
    # ARE's exporter wrote a trace per run.
    assert len(list(Path(agent_run["out"]).glob("**/*.json"))) >= len(SCENARIOS) + 1


def test_bench_run_idles_on_virtual_time(agent_run: dict[str, Any]) -> None:
    """The delayed scenarios pass `DELAY` simulated seconds idling, at no real sleeping.

    Between turns ARE's default agent polls with `time.sleep(1)` (and ARE's environment thread
    would tick once a second): about `DELAY` polls and ticks per delayed scenario. Under
    `areasync bench run` each moves the scenario's virtual wall, so the whole run asks the real
    clock for a few untimed waits (futures of ARE's loader pool) and a few hundredths of a
    second - not one sleep per simulated second. (The spy sees calls made through the `time`
    and `threading` modules' attributes, which is how ARE makes them.)
    """
    timelines = compare.timeline(agent_run["out"])
    simulated = 0.0
    for scenario_id in sorted(DELAYED):
        events = timelines[(scenario_id, None)]
        users = [t for kind, _, t in events if kind == "USER"]
        assert len(users) == 2, events
        # The second message came `DELAY` after turn 1 (plus ARE's one-tick turn trigger) ...
        assert DELAY <= users[1] - users[0] <= DELAY + 5, events
        # ... the agent acted on it after it arrived, ending the run by telling the user.
        turn_2 = events[
            events.index(("USER", "AgentUserInterface.send_message_to_agent", users[1])) :
        ]
        assert [t for kind, _, t in turn_2 if kind == "AGENT"], events
        assert all(t >= users[1] for _, _, t in turn_2), events
        assert events[-1][:2] == ("AGENT", "AgentUserInterface.send_message_to_user"), events
        simulated += events[-1][2]
    assert simulated >= len(DELAYED) * DELAY
    # tqdm's monitor thread waits on its own schedule (10 s), whatever the run does. ARE's
    # stream_pool polls its futures every 10 ms: a handful of those, depending on load.
    waits = [(thread, s) for thread, s in agent_run["waits"] if thread != "TMonitor"]
    timed = sum(s for _, s in waits if s is not None)
    assert timed < simulated / 100, waits
    assert len(waits) < simulated / 4, waits


def test_bench_run_starts_no_environment_thread(agent_run: dict[str, Any]) -> None:
    """No thread per scenario: no environment loop, no scenario worker, on any thread."""
    from are.simulation.environment import Environment

    names = [name for name, _ in agent_run["threads"]]
    loops = [
        name
        for name, target in agent_run["threads"]
        if isinstance(getattr(target, "__self__", None), Environment)
    ]
    assert loops == [], names
    # ARE's loader reads files on a pool, tqdm may start its monitor, and the event loop
    # resolves host names on its default executor (`asyncio_N`, shut down by asyncio.run's
    # `_do_shutdown`); nothing else.
    allowed = ("ThreadPoolExecutor", "tqdm", "asyncio_", "Thread-")
    assert [n for n in names if not n.startswith(allowed)] == [], names
    assert [n for n in names if n.startswith("Thread-") and "_do_shutdown" not in n] == []


def test_bench_run_restores_are(agent_run: dict[str, Any]) -> None:
    """The clock substitution is scoped to the run: ARE's names are its own again."""
    import time

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


def test_bench_run_oracle(dataset: Path, stub: StubLLM, tmp_path: Path) -> None:
    """`--oracle`: no agent, the oracle's own events run; every scenario passes."""
    compare.run_areasync(compare.bench_args(dataset, tmp_path, stub.endpoint, oracle=True))
    table = compare.verdicts(tmp_path)
    assert {key[0] for key in table} == set(SCENARIOS)
    assert all(row["status"] == "success" for row in table.values()), table


def test_cli_hook_is_lazy() -> None:
    """`areasync bench run --help` goes through areasync's CLI to ARE's options."""
    from areasync.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    assert main(["bench", "run", "--help"]) == 0


# ARE's own run idles the delay for real: the soak parity runs use a shorter one.
SOAK_DELAY = 60.0


@pytest.fixture(scope="module")
def soak_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("gaia2_soak"), delay=SOAK_DELAY)


@pytest.mark.soak
@pytest.mark.parametrize("oracle", [False, True], ids=["agent", "oracle"])
def test_parity_with_are_benchmark(
    soak_dataset: Path, stub: StubLLM, tmp_path: Path, oracle: bool
) -> None:
    """ARE's CLI and areasync's write the same verdicts and stats, ids and durations aside.

    The dataset's delayed scenarios have ARE idle `SOAK_DELAY` real seconds between turns; both
    sides must deliver the second user message at the same simulated time.
    """
    are_out, ours_out = tmp_path / "are", tmp_path / "areasync"
    args = compare.bench_args(soak_dataset, are_out, stub.endpoint, oracle=oracle)
    compare.run_are(args)
    compare.run_areasync(compare.bench_args(soak_dataset, ours_out, stub.endpoint, oracle=oracle))
    assert compare.verdicts(ours_out) == compare.verdicts(are_out)
    assert compare.stats(ours_out) == compare.stats(are_out)
    are_times, our_times = compare.timeline(are_out), compare.timeline(ours_out)
    assert set(are_times) == set(our_times)
    for key, events in our_times.items():
        # Event kinds in order; the user's messages at the same simulated second.
        assert [e[:2] for e in events] == [e[:2] for e in are_times[key]], key
        users = [round(t) for kind, _, t in events if kind == "USER"]
        assert users == [round(t) for kind, _, t in are_times[key] if kind == "USER"], key
        if key[0] in DELAYED:
            assert users[1] - users[0] >= SOAK_DELAY, key
