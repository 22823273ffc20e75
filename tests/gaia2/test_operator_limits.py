"""`areasync bench`'s commands read the operator's dataset under `--max-scenario-bytes`: a file
above it stops the command before anything runs, in one line naming the limit and the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.cli import main as bench_main
from areasync.gaia2.dataset import write_dataset

NO_MODEL = "http://127.0.0.1:9"  # never asked: the command stops first


def test_bench_run_refuses_a_dataset_file_above_max_scenario_bytes_in_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = write_dataset(tmp_path / "data", only=("tiny_email",))
    [scenario] = dataset.rglob("*.json")
    out = tmp_path / "out"
    args = compare.bench_args(dataset, out, NO_MODEL, extra=["--max-scenario-bytes", "1000"])
    assert bench_main(args) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"areasync bench run: dataset file {str(scenario)!r} is {scenario.stat().st_size} "
        "bytes, above the 1000-byte limit for scenario files (max_scenario_bytes); raise it "
        "with --max-scenario-bytes N"
    ]
    assert not out.exists()
