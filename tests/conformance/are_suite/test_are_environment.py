"""ARE's `are.simulation.tests.environment_test`, unchanged, on SyncEnvironment.

The conftest swaps `Environment` for `SyncEnvironment` (and `time.sleep` for the virtual wall)
in the ARE module's namespace for each test, and restores both afterwards.
"""

from are.simulation.tests.environment_test import *  # noqa: F403
