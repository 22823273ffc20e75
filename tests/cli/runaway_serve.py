"""`areasync serve` with `RunawayScenario` registered as `areasync_test_runaway`.

`python -m tests.cli.runaway_serve serve --scenario areasync_test_runaway ...` is the real
command-line server (its signal handling included); only the test scenario is added, since
no ARE app offers a tool that holds the interpreter lock in C on demand.
"""

from __future__ import annotations

import sys

from are.simulation.scenarios.utils.registry import registry

from areasync.cli import main
from tests.scenarios import RunawayScenario

if __name__ == "__main__":
    registry.get_all_scenarios()  # ARE's own first: discovering them later keeps this one
    registry.register(RunawayScenario.scenario_id)(RunawayScenario)
    sys.exit(main(sys.argv[1:]))
