"""`--max_concurrent_scenarios`: many runs at once on one event loop, ARE's verdicts unchanged.

The stub answers every request after a short latency, as a model would, and counts how many
requests it was answering at once: runs overlap their model calls only if they really run
concurrently in the one process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.dataset import BASICS, agent_scripts, expected_verdicts, write_dataset
from areasync.gaia2.stub_llm import Script, StubLLM

NUM_RUNS = 2
LATENCY = 0.05


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("gaia2_concurrent"), only=BASICS)


def _run(dataset: Path, out: Path, concurrency: int) -> dict[str, Any]:
    with StubLLM(Script(agent=agent_scripts()), latency=LATENCY) as stub:
        threads_before = threading.active_count()
        args = compare.bench_args(
            dataset,
            out,
            stub.endpoint,
            num_runs=NUM_RUNS,
            extra=["--max_concurrent_scenarios", str(concurrency)],
        )
        compare.run_areasync(args)
        return {
            "out": out,
            "peak": stub.peak_concurrency,
            "threads": threading.active_count() - threads_before,
        }


@pytest.fixture(scope="module")
def sequential(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run(dataset, tmp_path_factory.mktemp("one"), 1)


@pytest.fixture(scope="module")
def concurrent(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield _run(dataset, tmp_path_factory.mktemp("eight"), 8)


def test_concurrent_runs_overlap_their_model_calls(
    sequential: dict[str, Any], concurrent: dict[str, Any]
) -> None:
    assert sequential["peak"] == 1
    # 4 scenarios x 2 runs = 8 runs, all started at once: more than one asks the model at a time.
    assert 1 < concurrent["peak"] <= 8


def test_concurrent_runs_give_every_run_ares_verdict(concurrent: dict[str, Any]) -> None:
    table = compare.verdicts(concurrent["out"])
    assert set(table) == {(s, run) for s in BASICS for run in range(1, NUM_RUNS + 1)}
    for (scenario_id, _), row in table.items():
        assert row["status"] == ("success" if expected_verdicts()[scenario_id] else "failed"), row


def test_concurrency_changes_neither_verdicts_nor_stats(
    sequential: dict[str, Any], concurrent: dict[str, Any]
) -> None:
    assert compare.verdicts(concurrent["out"]) == compare.verdicts(sequential["out"])
    assert compare.stats(concurrent["out"]) == compare.stats(sequential["out"])


def test_concurrent_runs_start_no_thread_per_run(concurrent: dict[str, Any]) -> None:
    # Eight runs at once, and no thread left behind (nor one per run while they ran: see
    # test_parity's thread spy for the single run).
    assert concurrent["threads"] <= 0
