"""ARE's `are.simulation.tests.scenario.benchmark_scenario_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.scenario.benchmark_scenario_test import *  # noqa: F403
