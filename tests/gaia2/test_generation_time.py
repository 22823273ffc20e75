"""`--simulated_generation_time_mode`: simulated time passes for the model as ARE defines it.

`fixed`: every generation costs one simulated second (ARE pauses the environment while the
model generates, then resumes it one second later); `measured`: the model's own reported
duration, which no ARE 1.2.0 engine reports, so none. ARE's own runs of the same scenarios
(checked beside `are-benchmark run`) put the agent's actions at these seconds, plus its wall
clock's processing jitter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.dataset import write_dataset
from areasync.gaia2.stub_llm import StubLLM
from tests.stubs import stub_fixture

stub = stub_fixture()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("generation"), only=("tiny_email",))


def agent_times(dataset: Path, out: Path, stub: StubLLM, mode: str) -> list[tuple[str, float]]:
    extra = ["--simulated_generation_time_mode", mode]
    compare.run_areasync(compare.bench_args(dataset, out, stub.endpoint, extra=extra))
    [events] = compare.timeline(out).values()
    return [(tool, round(t, 3)) for kind, tool, t in events if kind == "AGENT"]


def test_fixed_mode_costs_one_simulated_second_per_generation(
    dataset: Path, stub: StubLLM, tmp_path: Path
) -> None:
    assert agent_times(dataset, tmp_path, stub, "fixed") == [
        ("EmailClientV2.send_email", 1.0),
        ("AgentUserInterface.send_message_to_user", 2.0),
    ]


def test_measured_mode_costs_what_the_engine_reports_none_here(
    dataset: Path, stub: StubLLM, tmp_path: Path
) -> None:
    assert agent_times(dataset, tmp_path, stub, "measured") == [
        ("EmailClientV2.send_email", 0.0),
        ("AgentUserInterface.send_message_to_user", 0.0),
    ]
