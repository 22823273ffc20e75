"""ARE's `are.simulation.tests.scenario.scenarios_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.scenario.scenarios_test import *  # noqa: F403
