"""`areasync bench run --shard I/K` and `areasync bench aggregate`: a sweep as K independent jobs,
merged into what one unsharded run writes (against one, on the stub LLM, as the other gaia2
tests run).

"The same" is what two unsharded runs of the same sweep share: the rows of `output.jsonl` (in
(scenario, run) order: a run writes them as its runs finish), `benchmark_stats.json` and the
report's per-run results, but for timings and ARE's random ids (a trace's name has a random
suffix, an agent event's id in the judge's rationale a uuid); each trace path is the output
directory's.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.cli import main as bench_main
from areasync.gaia2.dataset import write_dataset
from areasync.gaia2.shards import Shard, ShardError
from areasync.gaia2.shards import main as aggregate_main
from areasync.gaia2.stub_llm import StubLLM
from areasync.gaia2.sweep import RunRecords
from tests.stubs import stub_llm

SCENARIOS = ("tiny_email", "tiny_skip", "tiny_wrong_recipient", "tiny_three_turns")
RUNS = 2
# Timings: each execution's own.
TIMINGS = {"timestamp", "job_duration", "avg_run_duration", "avg_run_duration_std", "duration"}


def sweep(dataset: Path, out: Path, stub: StubLLM, *extra: str) -> int:
    os.environ.setdefault("OPENAI_API_KEY", "stub")
    args = compare.bench_args(dataset, out, stub.endpoint, num_runs=RUNS, extra=list(extra))
    return bench_main(args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One unsharded sweep, the same sweep as two shards, and their aggregate."""
    root = tmp_path_factory.mktemp("shards")
    dataset = write_dataset(root / "data", only=SCENARIOS)
    out = {name: root / name for name in ("whole", "shard1", "shard2", "merged")}
    with stub_llm() as stub:
        assert sweep(dataset, out["whole"], stub) == 0
        assert sweep(dataset, out["shard1"], stub, "--shard", "1/2") == 0
        assert sweep(dataset, out["shard2"], stub, "--shard", "2/2") == 0
    merged = ["--output_dir", str(out["merged"]), str(out["shard2"]), str(out["shard1"])]
    assert aggregate_main(merged) == 0
    return out


def rows(out: Path) -> list[dict[str, Any]]:
    """`output.jsonl`'s rows in (scenario, run) order, each trace path relative to `out` with
    ARE's random suffix taken off."""
    found = []
    for line in (out / "output.jsonl").read_text().splitlines():
        row = json.loads(line)
        trace = Path(row["trace_id"])
        assert trace.is_file() and trace.is_relative_to(out)
        row["trace_id"] = re.sub(r"_[0-9a-f]{8}\.json$", "", str(trace.relative_to(out)))
        found.append(row)
    return comparable(sorted(found, key=lambda r: (r["task_id"], r["metadata"]["run_number"])))


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def comparable(value: Any) -> Any:
    """`value` without timings, ARE's uuids masked."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    if isinstance(value, str):
        return UUID.sub("<uuid>", value)
    return value


def test_each_shard_runs_every_run_of_its_share_of_the_scenarios_in_id_order(
    runs: dict[str, Path],
) -> None:
    ordered = sorted(SCENARIOS)
    for index, name in ((0, "shard1"), (1, "shard2")):
        recorded = {(r.scenario_id, r.run_number) for r in RunRecords(runs[name]).all()}
        share = ordered[index::2]
        assert recorded == {(s, n) for s in share for n in range(1, RUNS + 1)}


def test_the_aggregate_output_jsonl_holds_the_unsharded_runs_rows(runs: dict[str, Path]) -> None:
    assert rows(runs["merged"]) == rows(runs["whole"])


def test_the_aggregate_benchmark_stats_are_the_unsharded_runs_timings_aside(
    runs: dict[str, Path],
) -> None:
    whole, merged = (
        json.loads((runs[k] / "benchmark_stats.json").read_text()) for k in ("whole", "merged")
    )
    assert comparable(merged) == comparable(whole)


def test_the_aggregate_report_holds_the_unsharded_runs_results(runs: dict[str, Path]) -> None:
    def results(out: Path) -> dict[str, Any]:
        found = {}
        for path in sorted(out.glob("run_*/*/*/result.json")):
            result = json.loads(path.read_text())
            result.pop("are_traces")  # ARE's trace names: a random suffix
            found[str(path.relative_to(out))] = comparable(result)
        return found

    assert results(runs["merged"]) == results(runs["whole"])
    assert (runs["merged"] / "index.html").is_file()


def test_aggregate_refuses_a_missing_shard_in_one_line(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert aggregate_main(["-o", str(tmp_path / "out"), str(runs["shard1"])]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "areasync bench aggregate: shards 2/2 are missing: give all 2 directories"
    ]
    assert not (tmp_path / "out").exists()


def test_aggregate_refuses_to_write_into_a_shards_own_directory(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    shards = [str(runs["shard1"]), str(runs["shard2"])]
    before = (runs["shard1"] / "output.jsonl").read_bytes()
    assert aggregate_main(["-o", str(runs["shard1"]), *shards]) == 2
    assert "is shard 1/2's own directory: merge into a new one" in capsys.readouterr().err
    assert (runs["shard1"] / "output.jsonl").read_bytes() == before


def test_aggregate_refuses_an_unsharded_output_directory(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert aggregate_main(["-o", str(tmp_path / "out"), str(runs["whole"])]) == 2
    assert "holds a sweep run without --shard I/K" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_a_shard_that_is_not_i_of_k_is_refused_saying_what_is_expected(text: str) -> None:
    with pytest.raises(ShardError, match=r"expected I/K with 1 <= I <= K"):
        Shard.parse(text)


def test_a_shard_without_a_config_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = write_dataset(tmp_path / "data", only=("tiny_email",))
    args = compare.bench_args(dataset, tmp_path / "out", "http://127.0.0.1:9")
    at = args.index("--config")
    del args[at : at + 2]
    assert bench_main([*args, "--shard", "1/2"]) == 2
    assert "--shard 1/2 needs --config C" in capsys.readouterr().err
