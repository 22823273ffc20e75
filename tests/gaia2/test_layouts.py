"""`areasync bench` on gaia2-cli's dataset layouts: rows of `{scenario_id, scenario}`, its
splits as configs (and Omnilingual's `{language}_{split}`), its materialized folders."""

from __future__ import annotations

import json
import os
from pathlib import Path

import datasets  # type: ignore[import-untyped]
import pytest

from areasync.gaia2 import compare
from areasync.gaia2.cli import main as bench_main
from areasync.gaia2.dataset import SPECS, scenario_json
from areasync.gaia2.layouts import with_data
from areasync.gaia2.stub_llm import StubLLM
from tests.stubs import stub_fixture

SCENARIO = "tiny_email"  # its agent script does the oracle's calls: a success
CONFIGS = ("execution", "fr_execution")  # a split of gaia2-cli, an Omnilingual config


stub = stub_fixture()


def hub_copy(root: Path) -> Path:
    """A local copy of a gaia2-cli-shaped Hub dataset: each config a `test` split of rows
    `{scenario_id, scenario}`, declared in its card as the Hub declares them."""
    card = ["---", "configs:"]
    for config in CONFIGS:
        folder = root / config
        folder.mkdir(parents=True)
        row = {"scenario_id": SCENARIO, "scenario": scenario_json(SPECS[SCENARIO])}
        (folder / "test.jsonl").write_text(json.dumps(row) + "\n")
        card += [
            f"- config_name: {config}",
            "  data_files:",
            "  - split: test",
            f"    path: {config}/test.jsonl",
        ]
    (root / "README.md").write_text("\n".join([*card, "---", ""]))
    return root


def results(out: Path) -> list[dict[str, object]]:
    lines = (out / "output.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def run(args: list[str], stub: StubLLM, out: Path) -> int:
    os.environ.setdefault("OPENAI_API_KEY", "stub")
    model = compare.model_args(stub.endpoint)
    extra = ["--agent", "default", "--num_runs", "1", "--output_dir", str(out), "--no-report"]
    return bench_main([*args, *model, *extra])


def test_gaia2_cli_rows_get_ares_data_column() -> None:
    rows = datasets.Dataset.from_list([{"scenario_id": "s", "scenario": "{}"}])
    assert list(with_data(rows)) == [{"scenario_id": "s", "scenario": "{}", "data": "{}"}]


def test_ares_rows_are_left_as_they_are() -> None:
    rows = datasets.Dataset.from_list([{"scenario_id": "s", "data": "{}"}])
    assert with_data(rows) is rows


def test_streamed_gaia2_cli_rows_get_ares_data_column_as_they_come() -> None:
    rows = datasets.IterableDataset.from_generator(
        lambda: iter([{"scenario_id": "s", "scenario": "{}"}])
    )
    assert [row["data"] for row in with_data(rows)] == ["{}"]


@pytest.mark.parametrize("config", CONFIGS)
def test_bench_runs_a_gaia2_cli_hub_dataset_and_its_language_configs(
    stub: StubLLM, tmp_path: Path, config: str
) -> None:
    dataset = hub_copy(tmp_path / "hub")
    out = tmp_path / "out"
    args = ["--hf-dataset", str(dataset), "--hf-config", config, "--hf-split", "test"]
    assert run(args, stub, out) == 0
    [result] = results(out)
    assert result["task_id"] == SCENARIO and result["score"] == 1.0


def test_bench_runs_gaia2_clis_materialized_folders(stub: StubLLM, tmp_path: Path) -> None:
    folder = tmp_path / "gaia2-cli" / "execution"  # its runner's cache, export_hf_to_json.py
    folder.mkdir(parents=True)
    (folder / f"{SCENARIO}.json").write_text(scenario_json(SPECS[SCENARIO]))
    out = tmp_path / "out"
    assert run(["-d", str(tmp_path / "gaia2-cli"), "--config", "execution"], stub, out) == 0
    [result] = results(out)
    assert result["task_id"] == SCENARIO and result["score"] == 1.0
