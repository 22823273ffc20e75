"""`areasync serve --workers N` with `RunawayScenario` and `HostileScenario` registered (as
`areasync_test_runaway`, `areasync_test_hostile`), in the front and in every session worker.

A worker imports the front's main module (as `__mp_main__`, multiprocessing's rule for
processes forked from a fork server), so the registration is at import, not under
`if __name__ == "__main__"` (tests/cli/runaway_serve.py registers it in one process only).
"""

from __future__ import annotations

import sys

from are.simulation.scenarios.utils.registry import registry

from areasync.cli import main
from tests.scenarios import HostileScenario, RunawayScenario

registry.get_all_scenarios()  # ARE's own first: discovering them later keeps this one
for scenario in (RunawayScenario, HostileScenario):
    if scenario.scenario_id not in registry.get_all_scenarios():
        registry.register(scenario.scenario_id)(scenario)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
