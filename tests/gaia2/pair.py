"""The evaluation that runs in other processes are checked by (tests/gaia2/test_workers.py,
tests/cluster/test_batch.py): the offline single-turn pair (`tiny_email` passes, `tiny_skip`
fails) against the stub LLM, run into the same `--output_dir` path each time (ARE hashes the
output dir into its trace file names) and moved aside after, compared file by file with
`compare.comparable` against the same evaluation in one process."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from areasync.gaia2 import compare
from areasync.gaia2.cli import main as bench_main
from areasync.gaia2.compare import comparable
from areasync.gaia2.dataset import write_dataset
from areasync.gaia2.stub_llm import StubLLM

PAIR = ("tiny_email", "tiny_skip")


@dataclass(frozen=True)
class Evaluation:
    dataset: Path
    out: Path  # where every run of it writes
    local: Path  # what its run in one process wrote
    root: Path

    def set_aside(self, name: str) -> None:
        """Move the last run's output out of the way of the next."""
        shutil.move(self.out, self.root / name)


def bench(dataset: Path, out: Path, stub: StubLLM, *extra: str) -> int:
    """`areasync bench run` of `dataset` into `out`, 4 runs at once, with `extra` options."""
    os.environ.setdefault("OPENAI_API_KEY", "stub")
    args = compare.bench_args(
        dataset, out, stub.endpoint, extra=["--max_concurrent_scenarios", "4", *extra]
    )
    return bench_main(args)


def evaluated_in_one_process(root: Path, stub: StubLLM) -> Evaluation:
    """The pair's dataset under `root`, run once with every run in this process."""
    dataset = write_dataset(root / "dataset", only=PAIR)
    out = root / "out"
    assert bench(dataset, out, stub, "--workers", "0") == 0
    return Evaluation(dataset, out, out.rename(root / "local"), root)


def assert_same_outputs(out: Path, local: Path) -> None:
    ours, theirs = comparable(out), comparable(local)
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert ours[name] == theirs[name], name
