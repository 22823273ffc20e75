"""Side by side: `are-benchmark run` vs `areasync bench run` on the same Gaia2 datasets.

Both commands run as subprocesses (each pays its own start-up) against the same
OpenAI-compatible stub on loopback, which answers every request after `--latency` seconds as
a model would. Prints one JSON object; each part compares wall times, verdicts
(`output.jsonl`) and `benchmark_stats.json` (timings aside).

* `mixed`: the tiny dataset (`areasync/gaia2/dataset.py`: two single-turn scenarios and two
  two-turn ones whose second user message comes `--delay` simulated seconds after turn 1; the
  scripted agent passes one of each and fails the other), `--num_runs 2`, 8 runs at once.
* `long`: one two-turn scenario whose second turn is `--long-wait` simulated seconds in
  (1,500 by default): areasync only, unless `--are-long` (ARE needs that long by construction).
* `scale`: runs per minute at 1, 8 and 64 concurrent runs (`--max_concurrent_scenarios`) on
  `--scale-runs` runs of the single-turn pair, and the per-run overhead at 1 (a run's wall time
  minus the time its model and judge requests took at the stub).

    PYTHONPATH=. python bench/gaia2.py [--parts mixed,long,scale] [--latency S] [--delay S]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from areasync.gaia2 import compare
from areasync.gaia2.dataset import BASICS, agent_scripts, write_dataset
from areasync.gaia2.stub_llm import Script, StubLLM

SINGLE_TURN = ("tiny_email", "tiny_skip")
CONCURRENCY = (1, 8, 64)


def _simulated(output_dir: Path) -> float:
    """The longest run's simulated seconds, start to last event (from ARE's traces)."""
    return max(events[-1][2] for events in compare.timeline(output_dir).values())


def _runs(output_dir: Path) -> int:
    return len(compare.verdicts(output_dir))


def _side(
    which: str,
    stub: StubLLM,
    dataset: Path,
    out: Path,
    *,
    num_runs: int,
    concurrency: int,
    timeout: float,
) -> dict[str, Any]:
    """One command's run: wall seconds, model requests and the seconds the stub spent on them."""
    args = compare.bench_args(
        dataset,
        out,
        stub.endpoint,
        num_runs=num_runs,
        extra=["--max_concurrent_scenarios", str(concurrency)],
    )
    requests_before = len(stub.requests)
    if which == "are":
        wall = compare.run_are(args, timeout=timeout)
    else:
        wall = compare.run_areasync(args, subprocess_=True, timeout=timeout)
    return {"wall_s": wall, "requests": len(stub.requests) - requests_before, "out": out}


def _pair(
    stub: StubLLM,
    dataset: Path,
    root: Path,
    *,
    num_runs: int,
    concurrency: int,
    timeout: float,
    are: bool = True,
) -> dict[str, Any]:
    sides = ("are", "areasync") if are else ("areasync",)
    got = {
        side: _side(
            side,
            stub,
            dataset,
            root / side,
            num_runs=num_runs,
            concurrency=concurrency,
            timeout=timeout,
        )
        for side in sides
    }
    report: dict[str, Any] = {
        "runs": _runs(got["areasync"]["out"]),
        "concurrency": concurrency,
        "areasync_wall_s": round(got["areasync"]["wall_s"], 2),
        "areasync_simulated_s": round(_simulated(got["areasync"]["out"]), 1),
    }
    if are:
        are_out, ours = got["are"]["out"], got["areasync"]["out"]
        report.update(
            are_wall_s=round(got["are"]["wall_s"], 2),
            are_simulated_s=round(_simulated(are_out), 1),
            ratio=round(got["are"]["wall_s"] / got["areasync"]["wall_s"], 2),
            verdicts_equal=compare.verdicts(are_out) == compare.verdicts(ours),
            stats_equal=compare.stats(are_out) == compare.stats(ours),
        )
    report["_sides"] = got
    return report


def mixed(stub: StubLLM, root: Path, delay: float) -> dict[str, Any]:
    dataset = write_dataset(root / "dataset", delay=delay, only=BASICS)
    report = _pair(stub, dataset, root, num_runs=2, concurrency=8, timeout=600.0 + 4 * delay)
    report.pop("_sides")
    return {"delay_s": delay, **report}


def long_wait(stub: StubLLM, root: Path, wait: float, are: bool) -> dict[str, Any]:
    dataset = write_dataset(root / "dataset", delay=wait, only=("tiny_delay",))
    report = _pair(
        stub, dataset, root, num_runs=1, concurrency=1, timeout=600.0 + 2 * wait, are=are
    )
    report.pop("_sides")
    return {"second_turn_at_s": wait, **report}


def scale(stub: StubLLM, root: Path, runs: int, latency: float) -> dict[str, Any]:
    dataset = write_dataset(root / "dataset", only=SINGLE_TURN)
    num_runs = max(1, runs // len(SINGLE_TURN))
    report: dict[str, Any] = {"runs": num_runs * len(SINGLE_TURN), "latency_s": latency}
    for concurrency in CONCURRENCY:
        pair = _pair(
            stub,
            dataset,
            root / f"c{concurrency}",
            num_runs=num_runs,
            concurrency=concurrency,
            timeout=3600.0,
        )
        sides = pair.pop("_sides")
        entry: dict[str, Any] = {
            "verdicts_equal": pair["verdicts_equal"],
            "stats_equal": pair["stats_equal"],
        }
        for side, got in sides.items():
            entry[f"{side}_wall_s"] = round(got["wall_s"], 2)
            entry[f"{side}_runs_per_min"] = round(60 * pair["runs"] / got["wall_s"], 1)
            if concurrency == 1:
                # Sequential: what a run costs beyond its model and judge replies.
                model_s = got["requests"] * latency
                entry[f"{side}_overhead_per_run_s"] = round(
                    (got["wall_s"] - model_s) / pair["runs"], 3
                )
                entry[f"{side}_requests_per_run"] = round(got["requests"] / pair["runs"], 2)
        entry["ratio"] = round(sides["are"]["wall_s"] / sides["areasync"]["wall_s"], 2)
        report[f"concurrency_{concurrency}"] = entry
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="mixed,long,scale")
    parser.add_argument(
        "--latency", type=float, default=0.2, help="seconds each stub reply takes (the model)"
    )
    parser.add_argument(
        "--delay", type=float, default=300.0, help="simulated seconds between the two turns"
    )
    parser.add_argument("--long-wait", type=float, default=1500.0)
    parser.add_argument("--are-long", action="store_true", help="run ARE on the long wait too")
    parser.add_argument("--scale-runs", type=int, default=64)
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    report: dict[str, Any] = {"latency_s": args.latency}
    with (
        tempfile.TemporaryDirectory() as tmp,
        StubLLM(Script(agent=agent_scripts()), latency=args.latency) as stub,
    ):
        root = Path(tmp)
        if "mixed" in parts:
            report["mixed"] = mixed(stub, root / "mixed", args.delay)
        if "long" in parts:
            report["long"] = long_wait(stub, root / "long", args.long_wait, args.are_long)
        if "scale" in parts:
            report["scale"] = scale(stub, root / "scale", args.scale_runs, args.latency)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
