"""Side by side: `are-benchmark run` vs `areasync bench run` on the tiny Gaia2 dataset.

Both run as subprocesses (each pays its own start-up) against the same stub LLM on loopback,
in three modes: `agent` (the default agent on the single-turn scenarios), `oracle` (the same
with `--oracle`) and `delayed` (the default agent on `tiny_delay`, whose second user message
comes `--delay` simulated seconds after turn 1: ARE idles them in real time, areasync on its
virtual wall). Prints one JSON object: wall seconds of each, the ratio, whether their verdicts
and stats agree, and for `delayed` the simulated seconds the scenario ran on each side.

    PYTHONPATH=. python bench/gaia2.py [--num-runs N] [--delay SECONDS]
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

# mode -> (scenario ids, --oracle)
MODES: dict[str, tuple[tuple[str, ...], bool]] = {
    "agent": (("tiny_email", "tiny_skip"), False),
    "oracle": (("tiny_email", "tiny_skip"), True),
    "delayed": (("tiny_delay",), False),
}


def _simulated(output_dir: Path) -> float:
    """The longest run's simulated seconds, start to last event (from ARE's traces)."""
    return max(events[-1][2] for events in compare.timeline(output_dir).values())


def measure(num_runs: int, delay: float) -> dict[str, Any]:
    report: dict[str, Any] = {"num_runs": num_runs, "delay_s": delay}
    with tempfile.TemporaryDirectory() as tmp, StubLLM(Script(agent=agent_scripts())) as stub:
        root = Path(tmp)
        for mode, (scenarios, oracle) in MODES.items():
            dataset = write_dataset(root / mode / "dataset", delay=delay, only=scenarios)
            are_out, ours_out = root / mode / "are", root / mode / "areasync"
            are_wall = compare.run_are(
                compare.bench_args(
                    dataset, are_out, stub.endpoint, oracle=oracle, num_runs=num_runs
                ),
                timeout=600.0 + 2 * delay * num_runs,
            )
            ours_wall = compare.run_areasync(
                compare.bench_args(
                    dataset, ours_out, stub.endpoint, oracle=oracle, num_runs=num_runs
                ),
                subprocess_=True,
            )
            report[mode] = {
                "scenarios": list(scenarios),
                "are_wall_s": round(are_wall, 2),
                "areasync_wall_s": round(ours_wall, 2),
                "ratio": round(are_wall / ours_wall, 2),
                "verdicts_equal": compare.verdicts(are_out) == compare.verdicts(ours_out),
                "stats_equal": compare.stats(are_out) == compare.stats(ours_out),
            }
            if mode == "delayed":
                report[mode]["are_simulated_s"] = round(_simulated(are_out), 2)
                report[mode]["areasync_simulated_s"] = round(_simulated(ours_out), 2)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-runs", type=int, default=1)
    parser.add_argument(
        "--delay",
        type=float,
        default=60.0,
        help="simulated seconds before tiny_delay's second turn (ARE idles them for real)",
    )
    args = parser.parse_args()
    print(json.dumps(measure(args.num_runs, args.delay), indent=2))


if __name__ == "__main__":
    main()
