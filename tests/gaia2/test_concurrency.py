"""`--max_concurrent_scenarios`: many runs at once on one event loop, ARE's verdicts unchanged.

The stub answers every request after a short latency, as a model would, and counts how many
requests it was answering at once: runs overlap their model calls only if they really run
concurrently in the one process. The runs stay in this process (`--workers 0`), where the
threads started are spied on; a worker process runs its runs on one event loop the same way
(`areasync/gaia2/remote.py`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.dataset import BASICS, expected_verdicts, write_dataset
from tests.stubs import stub_llm

NUM_RUNS = 2
LATENCY = 0.05


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("gaia2_concurrent"), only=BASICS)


def _run(dataset: Path, out: Path, concurrency: int) -> dict[str, Any]:
    """One run of the dataset, and the name of every thread started while it ran."""
    started: list[str] = []
    start = threading.Thread.start

    def recording_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    with stub_llm(latency=LATENCY) as stub:
        args = compare.bench_args(
            dataset,
            out,
            stub.endpoint,
            num_runs=NUM_RUNS,
            extra=["--max_concurrent_scenarios", str(concurrency), "--workers", "0"],
        )
        with patch.object(threading.Thread, "start", recording_start):
            compare.run_areasync(args)
        return {"out": out, "peak": stub.peak_concurrency, "threads": started}


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
    """Eight runs at once, and no environment, scenario or run thread while they ran: only
    ARE's loader pool, tqdm's monitor, and the event loop's name-resolution executor (and
    asyncio.run shutting that down)."""
    assert concurrent["threads"], "the spy saw no thread at all: it did not spy"
    allowed = ("ThreadPoolExecutor", "tqdm", "asyncio_")
    others = [n for n in concurrent["threads"] if not n.startswith(allowed)]
    assert all("_do_shutdown" in name for name in others), concurrent["threads"]
