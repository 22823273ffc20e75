"""`areasync serve --workers N` with `RunawayScenario` registered as `areasync_test_runaway`,
in the front and in every session worker.

A worker imports the front's main module (as `__mp_main__`, multiprocessing's rule for
processes forked from a fork server), so the registration is at import, not under
`if __name__ == "__main__"` (tests/service/runaway_serve.py registers it in one process only).
"""

from __future__ import annotations

import sys

from are.simulation.scenarios.utils.registry import registry

from areasync.cli import main
from tests.scenarios import RunawayScenario

registry.get_all_scenarios()  # ARE's own first: discovering them later keeps this one
if RunawayScenario.scenario_id not in registry.get_all_scenarios():
    registry.register(RunawayScenario.scenario_id)(RunawayScenario)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
