"""ARE's `are.simulation.tests.scenario.scenario_oracle_order_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.scenario.scenario_oracle_order_test import *  # noqa: F403
