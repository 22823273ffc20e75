"""Side by side: `are-benchmark run` vs `areasync bench run` on the tiny Gaia2 dataset.

Both run as subprocesses (each pays its own start-up) against the same stub LLM on loopback,
once with the default agent and once with `--oracle`; prints one JSON object: wall seconds of
each, the ratio, and whether their verdicts and stats agree.

    PYTHONPATH=. python bench/gaia2.py [--num-runs N]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from areasync.gaia2 import compare
from areasync.gaia2.dataset import agent_scripts, write_dataset
from areasync.gaia2.stub_llm import Script, StubLLM


def measure(num_runs: int) -> dict[str, Any]:
    report: dict[str, Any] = {"num_runs": num_runs}
    with tempfile.TemporaryDirectory() as tmp, StubLLM(Script(agent=agent_scripts())) as stub:
        root = Path(tmp)
        dataset = write_dataset(root / "dataset")
        for mode in ("agent", "oracle"):
            are_out, ours_out = root / mode / "are", root / mode / "areasync"
            oracle = mode == "oracle"
            are_wall = compare.run_are(
                compare.bench_args(
                    dataset, are_out, stub.endpoint, oracle=oracle, num_runs=num_runs
                )
            )
            ours_wall = compare.run_areasync(
                compare.bench_args(
                    dataset, ours_out, stub.endpoint, oracle=oracle, num_runs=num_runs
                ),
                subprocess_=True,
            )
            report[mode] = {
                "are_wall_s": round(are_wall, 2),
                "areasync_wall_s": round(ours_wall, 2),
                "ratio": round(are_wall / ours_wall, 2),
                "verdicts_equal": compare.verdicts(are_out) == compare.verdicts(ours_out),
                "stats_equal": compare.stats(are_out) == compare.stats(ours_out),
            }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-runs", type=int, default=1)
    args = parser.parse_args()
    print(json.dumps(measure(args.num_runs), indent=2))


if __name__ == "__main__":
    main()
