"""Sweeps without Ray: one `bench run` as K independent jobs, merged afterwards.

Users of HPC clusters (SLURM arrays, Apptainer) run a sweep as many jobs that never talk to
each other; each job is `areasync bench run ... --shard I/K --output_dir DIR_I`, and once all
have finished, `areasync bench aggregate DIR_1 ... DIR_K --output_dir OUT` writes what one
unsharded run would have written.

Rules:

* **The share.** Shard I of K (I in 1..K) runs the scenarios at positions p with
  p mod K == I - 1, positions counted from 0 in scenario-id order of what ARE's loader gives
  (after `--limit`), each with all its `--num_runs` runs: a pure function of the dataset, the
  same on every machine. A shard that would hold no scenario (K above the dataset's size) is
  refused by ARE's run of its config, with the reason. `--shard` needs `--config`: a run's
  record does not name its config, and `aggregate` writes one config's statistics.
* **Aggregate.** The directories must be the K shards of one sweep: the same options but the
  shard and the model endpoints (`.areasync/options.json`), each shard once, each finished
  (its `output.jsonl` written), no run in two of them; otherwise one line says which and
  nothing is written. The runs are the shards' records (`sweep.RunRecords`), in (scenario,
  run) order; ARE's own writers make `output.jsonl` and `benchmark_stats.json` from them (as
  `are-benchmark run` does after its runs, with the same model, provider, config and noise);
  the traces are copied beside them (`hf/`, `lite/`, a one-format dump's top-level files),
  every trace path made the copy's; the records go to `OUT/.areasync/` (so `OUT` is a
  finished sweep's directory) and the report is written as `bench run` writes it. Timings
  are the shards' own: each run's duration as recorded, and as the job's duration the
  longest shard's (the jobs ran side by side).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

from areasync.gaia2.runs import HF_DIR, LITE_DIR, OUTPUT_JSONL, STATS_JSON
from areasync.gaia2.sweep import RECORDS_DIR, RunRecord, RunRecords

OPTIONS_JSON = "options.json"
# Options the shards of one sweep may differ in: where each job reached its models (each job of
# a cluster may have its own server), not what they were.
PLACES = frozenset({"endpoint", "judge_endpoint", "a2a_endpoint"})


class ShardError(ValueError):
    """A shard that cannot be run, or shards that cannot be merged: the one line says why."""


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`I/K` with 1 <= I <= K, or a ShardError saying what is expected."""
        index, _, count = text.partition("/")
        try:
            shard = cls(int(index), int(count))
        except ValueError:
            shard = cls(0, 0)
        if not 1 <= shard.index <= shard.count:
            raise ShardError(
                f"--shard {text!r}: expected I/K with 1 <= I <= K (shard I of K), e.g. 1/4"
            )
        return shard

    def owns(self, position: int) -> bool:
        return position % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def share(items: Sequence[Any], shard: Shard) -> list[Any]:
    """The items (ARE's `(scenario, completed_events)` pairs) that are `shard`'s."""
    ordered = sorted(items, key=lambda item: str(item[0].scenario_id))
    kept = [item for position, item in enumerate(ordered) if shard.owns(position)]
    if not kept:
        raise ShardError(
            f"shard {shard} holds no scenario: the dataset has {len(ordered)}; use a K of at "
            f"most {len(ordered)}"
        )
    return kept


@contextmanager
def sharded(shard: Shard | None) -> Iterator[None]:
    """Within the block, ARE's benchmark runs only `shard`'s scenarios (all if None)."""
    if shard is None:
        yield
        return
    import are.simulation.benchmark.scenario_executor as executor
    from are.simulation.utils.countable_iterator import CountableIterator

    setup = executor.setup_scenarios_iterator

    def setup_shard(*args: Any, **kwargs: Any) -> Any:
        kept = share(list(setup(*args, **kwargs)), shard)
        return CountableIterator(iter(kept), len(kept))

    with patch.object(executor, "setup_scenarios_iterator", setup_shard):
        yield


# -- aggregate ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardDir:
    """One shard's output directory, as `aggregate` reads it."""

    path: Path
    shard: Shard
    options: dict[str, Any]  # the sweep's options, but the shard


def read_shard(path: Path) -> ShardDir:
    """The shard written to `path`, or a ShardError saying why it is not a finished shard."""
    options_file = path / RECORDS_DIR / OPTIONS_JSON
    try:
        options = json.loads(options_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ShardError(
            f"{path} is not the output directory of an `areasync bench run --shard I/K` "
            f"({options_file} is missing or unreadable)"
        ) from None
    text = options.pop("shard", None) if isinstance(options, dict) else None
    if not isinstance(text, str):
        raise ShardError(f"{path} holds a sweep run without --shard I/K: nothing to merge")
    if not (path / OUTPUT_JSONL).is_file():
        raise ShardError(
            f"shard {text} in {path} has not finished (no {OUTPUT_JSONL}): rerun its command "
            "with --resume, then aggregate"
        )
    return ShardDir(path, Shard.parse(text), options)


def check_shards(shards: Sequence[ShardDir]) -> None:
    """Raise a ShardError unless `shards` are every shard of one sweep, each once."""
    first = shards[0]
    for other in shards[1:]:
        changed = sorted(
            key
            for key in (set(first.options) | set(other.options)) - PLACES
            if first.options.get(key) != other.options.get(key)
        )
        if changed:
            raise ShardError(
                f"{other.path} and {first.path} are shards of different sweeps "
                f"({', '.join(changed)} differ)"
            )
    counts = {s.shard.count for s in shards}
    if len(counts) > 1:
        raise ShardError(f"the shards split the sweep differently (K = {sorted(counts)})")
    count = counts.pop()
    seen: dict[int, Path] = {}
    for s in shards:
        if s.shard.index in seen:
            raise ShardError(f"shard {s.shard} is given twice: {seen[s.shard.index]}, {s.path}")
        seen[s.shard.index] = s.path
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        raise ShardError(f"shards {', '.join(missing)} are missing: give all {count} directories")
    if first.options.get("command") != "run" or not first.options.get("config"):
        raise ShardError("only the shards of `bench run --config C --shard I/K` can be merged")


def aggregate(directories: Sequence[Path], output_dir: Path) -> Path:
    """Merge the shards in `directories` into `output_dir` (see the module docstring)."""
    shards = [read_shard(Path(d)) for d in directories]
    if not shards:
        raise ShardError("give the output directories of the shards to merge")
    check_shards(shards)
    for s in shards:
        if s.path.resolve() == output_dir.resolve():
            raise ShardError(
                f"--output_dir {output_dir} is shard {s.shard}'s own directory: merge into a "
                "new one"
            )
    records: dict[tuple[str, int], RunRecord] = {}
    for s in shards:
        for record in RunRecords(s.path).all():
            key = (record.scenario_id, record.run_number or 0)
            if key in records:
                raise ShardError(
                    f"run {record.scenario_id} #{record.run_number} is in two shards "
                    f"(the second: {s.path}): the shards come from different datasets"
                )
            records[key] = _moved(record, s.path, output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    for s in shards:
        _copy_traces(s.path, output_dir)
    ordered = [records[key] for key in sorted(records)]
    _write_ares_outputs(ordered, shards, output_dir)
    kept = RunRecords(output_dir)
    for record in ordered:
        kept.put(record)
    options = {**shards[0].options}
    (output_dir / RECORDS_DIR / OPTIONS_JSON).write_text(
        json.dumps(options, indent=2), encoding="utf-8"
    )
    return output_dir


def _moved(record: RunRecord, shard_dir: Path, output_dir: Path) -> RunRecord:
    """The record with its trace path made that of the trace's copy in `output_dir`."""
    if not record.export_path:
        return record
    try:
        relative = Path(record.export_path).resolve().relative_to(shard_dir.resolve())
    except ValueError:
        return record  # a trace outside the shard's directory stays where it is
    return replace(record, export_path=str(output_dir / relative))


def _copy_traces(shard_dir: Path, output_dir: Path) -> None:
    for folder in (HF_DIR, LITE_DIR):
        if (shard_dir / folder).is_dir():
            shutil.copytree(shard_dir / folder, output_dir / folder, dirs_exist_ok=True)
    for trace in shard_dir.glob("*.json"):  # a one-format dump's traces
        if trace.name != STATS_JSON:
            shutil.copy2(trace, output_dir / trace.name)


def _job_duration(shards: Sequence[ShardDir], records: Sequence[RunRecord]) -> float:
    """The longest shard's job duration (they ran side by side), as its stats say."""
    durations = []
    for s in shards:
        try:
            stats = json.loads((s.path / STATS_JSON).read_text(encoding="utf-8"))
            durations.append(float(stats["statistics"]["global"]["job_duration"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return max(durations, default=sum(r.duration or 0.0 for r in records))


def _write_ares_outputs(
    records: Sequence[RunRecord], shards: Sequence[ShardDir], output_dir: Path
) -> None:
    """`output.jsonl` and `benchmark_stats.json` by ARE's writers, as `are-benchmark run` calls
    them after a run of one config."""
    from are.simulation.benchmark.cli import generate_and_save_reports
    from are.simulation.multi_scenario_runner import _export_benchmark_result_jsonl
    from are.simulation.scenarios.validation_result import MultiScenarioValidationResult

    options = shards[0].options
    # What ARE's statistics read of the runner's config.
    runner = SimpleNamespace(
        model=options.get("model"),
        model_provider=options.get("provider"),
        agent=options.get("agent"),
    )
    result = MultiScenarioValidationResult(run_config=runner)
    for record in records:
        result.add_result(record.to_result(exact=True), record.scenario_id, record.run_number)
    result.duration = _job_duration(shards, records)
    _export_benchmark_result_jsonl(result, str(output_dir))
    noise = bool(options.get("noise"))
    key = ("standard", options["config"], options.get("a2a_app_prop"), noise, noise)
    generate_and_save_reports(
        {key: result}, options.get("model") or "", options.get("provider"), str(output_dir)
    )


def main(argv: Sequence[str] | None = None, prog: str = "areasync bench aggregate") -> int:
    """`areasync bench aggregate DIR... --output_dir OUT`: merge the shards, write the report,
    print its URL; 2 with a one-line error when the directories are not one sweep's shards."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Merge the output directories of the K shards of one `areasync bench run --shard "
            "I/K` sweep into one: output.jsonl, benchmark_stats.json, the traces and the report, "
            "as one unsharded run writes them."
        ),
    )
    parser.add_argument("directories", nargs="+", type=Path, help="the shards' --output_dir")
    parser.add_argument("-o", "--output_dir", type=Path, required=True, help="where to write")
    parser.add_argument("--no-report", action="store_true", help="write no HTML report")
    options = parser.parse_args(argv)
    try:
        out = aggregate(options.directories, options.output_dir)
    except ShardError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    if not options.no_report:
        from areasync.gaia2.report import write_report

        print(write_report(out, artifacts=True).resolve().as_uri())
    return 0
