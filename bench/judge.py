"""Judge set-up benchmark: what preparing one judged Gaia2 scenario costs, ARE's way and ours.

    python bench/judge.py              # prints one JSON document; ~20 s on 2 cores
    python bench/judge.py --repeat 5

The scenario is the tiny dataset's `tiny_email` (`areasync.gaia2.dataset`), the judge ARE's
`GraphPerEventJudge` on a model that is never called (building a judge sends no request).

- `are`: ARE's `load_and_preprocess_scenario_str` with `are-benchmark run`'s runner config:
  what `are-benchmark run` does per scenario (import, oracle pre-run, judge, turns);
- `areasync`: `areasync.simulation.build_scenario(text, import_mode="benchmark", judge=...)`:
  what `create_session` does in its worker thread on a server started with `--judge_*` (the
  same preprocessing call; the judge's prompt templates compiled once per process).

Each is the best of `--repeat` runs, after one warm-up run of each (imports, first compiles).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any


def best_of(repeat: int, run: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "unused")  # litellm wants one; nothing is sent
    logging.getLogger("are").setLevel(logging.ERROR)

    from are.simulation.scenarios.scenario_imported_from_json.utils import (
        load_and_preprocess_scenario_str,
    )

    from areasync.bridge.judge.llm import prepare, runner_config
    from areasync.bridge.judge.options import JudgeOptions
    from areasync.gaia2.dataset import SPECS, scenario_json
    from areasync.simulation import build_scenario

    options = JudgeOptions(model="openai/judge", provider="local", endpoint="http://127.0.0.1:9")
    text = scenario_json(SPECS["tiny_email"])
    prepare(options)

    def are() -> None:
        load_and_preprocess_scenario_str(runner_config(options), text)

    def areasync() -> None:
        _scenario, sandbox = build_scenario(text, import_mode="benchmark", judge=options)
        sandbox.remove_directories()

    are()
    areasync()
    seconds = {
        "are": best_of(args.repeat, are),
        "areasync": best_of(args.repeat, areasync),
    }
    print(
        json.dumps(
            {
                "scenario": "tiny_email",
                "repeat": args.repeat,
                "seconds": {name: round(value, 4) for name, value in seconds.items()},
                "ratio": round(seconds["are"] / seconds["areasync"], 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
